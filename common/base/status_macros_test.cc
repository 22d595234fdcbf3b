#include "common/base/status_macros.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest-spi.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::memaudit::testing::IsOk;
using ::memaudit::testing::IsOkAndHolds;
using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::DescribeMatcher;
using ::testing::ElementsAre;
using ::testing::Eq;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;
using ::testing::StringMatchResultListener;

// Counts calls, so the tests see that each macro evaluates its argument once.
struct Calls {
  int n = 0;
  absl::Status Status(absl::Status s) {
    ++n;
    return s;
  }
  template <typename T>
  absl::StatusOr<T> Value(absl::StatusOr<T> v) {
    ++n;
    return v;
  }
};

absl::Status ReturnIfErrorInStatus(Calls& calls, absl::Status s, bool& reached_end) {
  MEMAUDIT_RETURN_IF_ERROR(calls.Status(std::move(s)));
  reached_end = true;
  return absl::OkStatus();
}

absl::StatusOr<int> ReturnIfErrorInStatusOr(Calls& calls, absl::Status s) {
  MEMAUDIT_RETURN_IF_ERROR(calls.Status(std::move(s)));
  return 7;
}

TEST(ReturnIfError, OkContinues) {
  Calls calls;
  bool reached_end = false;
  EXPECT_TRUE(ReturnIfErrorInStatus(calls, absl::OkStatus(), reached_end).ok());
  EXPECT_TRUE(reached_end);
  EXPECT_EQ(calls.n, 1);
}

TEST(ReturnIfError, ErrorReturnsItUnchanged) {
  Calls calls;
  bool reached_end = false;
  const absl::Status s =
      ReturnIfErrorInStatus(calls, absl::NotFoundError("no such audit"), reached_end);
  EXPECT_EQ(s, absl::NotFoundError("no such audit"));
  EXPECT_FALSE(reached_end);
  EXPECT_EQ(calls.n, 1);
}

TEST(ReturnIfError, WorksInStatusOrFunctions) {
  Calls calls;
  absl::StatusOr<int> ok = ReturnIfErrorInStatusOr(calls, absl::OkStatus());
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 7);
  absl::StatusOr<int> bad = ReturnIfErrorInStatusOr(calls, absl::UnavailableError("later"));
  EXPECT_EQ(bad.status(), absl::UnavailableError("later"));
  EXPECT_EQ(calls.n, 2);
}

TEST(ReturnIfError, DanglingElseSafe) {
  auto f = [](bool check) -> absl::Status {
    if (check)
      MEMAUDIT_RETURN_IF_ERROR(absl::InternalError("checked"));
    else
      return absl::AbortedError("else branch");
    return absl::OkStatus();
  };
  EXPECT_EQ(f(true).code(), absl::StatusCode::kInternal);
  EXPECT_EQ(f(false).code(), absl::StatusCode::kAborted);
}

absl::Status AssignAuto(Calls& calls, absl::StatusOr<int> v, int& out) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto x, calls.Value(std::move(v)));
  out = x;
  return absl::OkStatus();
}

TEST(AssignOrReturn, AutoDeclaration) {
  Calls calls;
  int out = 0;
  EXPECT_TRUE(AssignAuto(calls, 5, out).ok());
  EXPECT_EQ(out, 5);
  EXPECT_EQ(calls.n, 1);
  EXPECT_EQ(AssignAuto(calls, absl::InvalidArgumentError("bad"), out),
            absl::InvalidArgumentError("bad"));
  EXPECT_EQ(out, 5);
  EXPECT_EQ(calls.n, 2);
}

absl::StatusOr<size_t> AssignTwice(Calls& calls, absl::StatusOr<std::vector<int>> a,
                                   absl::StatusOr<std::string> b) {
  // Two in one scope need distinct temporaries.
  MEMAUDIT_ASSIGN_OR_RETURN(std::vector<int> v, calls.Value(std::move(a)));
  MEMAUDIT_ASSIGN_OR_RETURN(const std::string& s, calls.Value(std::move(b)));
  return v.size() + s.size();
}

TEST(AssignOrReturn, ExplicitTypesAndReferencesInStatusOrFunction) {
  Calls calls;
  EXPECT_THAT(AssignTwice(calls, std::vector<int>{1, 2, 3}, std::string("ab")), IsOkAndHolds(5u));
  EXPECT_EQ(calls.n, 2);
  EXPECT_THAT(AssignTwice(calls, absl::DataLossError("a"), std::string("ab")),
              StatusIs(absl::StatusCode::kDataLoss, "a"));
  EXPECT_EQ(calls.n, 3);  // the second expression is never evaluated
  EXPECT_THAT(AssignTwice(calls, std::vector<int>{}, absl::OutOfRangeError("b")),
              StatusIs(absl::StatusCode::kOutOfRange, "b"));
  EXPECT_EQ(calls.n, 5);
}

absl::Status AssignExisting(absl::StatusOr<std::unique_ptr<int>> v, std::unique_ptr<int>& out) {
  MEMAUDIT_ASSIGN_OR_RETURN(out, std::move(v));
  return absl::OkStatus();
}

TEST(AssignOrReturn, MoveOnlyIntoExistingVariable) {
  std::unique_ptr<int> out;
  ASSERT_TRUE(AssignExisting(std::make_unique<int>(3), out).ok());
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(*out, 3);
  EXPECT_EQ(AssignExisting(absl::CancelledError("stop"), out).code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(*out, 3);
}

template <typename A, typename B>
absl::StatusOr<std::pair<A, B>> MakePair(A a, B b) {
  return std::make_pair(a, b);
}

absl::StatusOr<int> AssignWithCommas() {
  // Commas in the expression need no parentheses; in the lhs they do.
  MEMAUDIT_ASSIGN_OR_RETURN((std::pair<int, int> p), MakePair<int, int>(1, 2));
  MEMAUDIT_ASSIGN_OR_RETURN((auto [a, b]), MakePair<int, int>(10, 20));
  return p.first + p.second + a + b;
}

TEST(AssignOrReturn, ParenthesisedLhsWithCommas) {
  EXPECT_THAT(AssignWithCommas(), IsOkAndHolds(33));
}

// --- Matchers -------------------------------------------------------------

template <typename M, typename T>
std::string Explain(const M& matcher, const T& value) {
  StringMatchResultListener listener;
  ::testing::ExplainMatchResult(matcher, value, &listener);
  return listener.str();
}

TEST(IsOk, MatchesStatusAndStatusOr) {
  EXPECT_THAT(absl::OkStatus(), IsOk());
  EXPECT_THAT(absl::StatusOr<int>(3), IsOk());
  EXPECT_THAT(absl::InternalError("boom"), Not(IsOk()));
  EXPECT_THAT(absl::StatusOr<int>(absl::InternalError("boom")), Not(IsOk()));
  EXPECT_FALSE(::testing::Value(absl::InternalError("boom"), IsOk()));
}

TEST(IsOk, ExplainsWithTheStatus) {
  EXPECT_EQ(Explain(IsOk(), absl::NotFoundError("no audit a1")),
            "which has status NOT_FOUND: no audit a1");
  EXPECT_EQ(Explain(IsOk(), absl::StatusOr<int>(absl::NotFoundError("no audit a1"))),
            "which has status NOT_FOUND: no audit a1");
  EXPECT_EQ(DescribeMatcher<absl::Status>(IsOk()), "is OK");
  EXPECT_EQ(DescribeMatcher<absl::Status>(IsOk(), /*negation=*/true), "is not OK");
}

TEST(StatusIs, MatchesCode) {
  const absl::Status s = absl::InvalidArgumentError("spec.trials must be positive");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kFailedPrecondition)));
  EXPECT_THAT(absl::OkStatus(), StatusIs(absl::StatusCode::kOk));
  EXPECT_THAT(absl::OkStatus(), Not(StatusIs(absl::StatusCode::kInvalidArgument)));
  const absl::StatusOr<std::string> so = absl::UnavailableError("down");
  EXPECT_THAT(so, StatusIs(absl::StatusCode::kUnavailable));
  EXPECT_THAT(so, Not(StatusIs(absl::StatusCode::kInternal)));
  EXPECT_THAT(absl::StatusOr<int>(1), StatusIs(absl::StatusCode::kOk));
}

TEST(StatusIs, MatchesCodeAndMessage) {
  const absl::Status s = absl::InvalidArgumentError("spec.trials must be positive");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.trials")));
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument, "spec.trials must be positive"));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("spec.fpr"))));
  EXPECT_THAT(s, Not(StatusIs(absl::StatusCode::kNotFound, HasSubstr("spec.trials"))));
  EXPECT_THAT(s, StatusIs(Not(absl::StatusCode::kOk), StartsWith("spec.")));
  EXPECT_THAT(absl::StatusOr<int>(absl::AbortedError("x")),
              StatusIs(absl::StatusCode::kAborted, Eq("x")));
}

TEST(StatusIs, ExplainsWithTheStatus) {
  const absl::Status s = absl::InvalidArgumentError("spec.trials must be positive");
  EXPECT_EQ(Explain(StatusIs(absl::StatusCode::kNotFound), s),
            "which has status INVALID_ARGUMENT: spec.trials must be positive, whose code does "
            "not match");
  EXPECT_THAT(Explain(StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("fpr")), s),
              AllOf(HasSubstr("INVALID_ARGUMENT: spec.trials must be positive"),
                    HasSubstr("whose message does not match")));
  EXPECT_EQ(DescribeMatcher<absl::Status>(StatusIs(absl::StatusCode::kNotFound, "gone")),
            "has a status code that is equal to NOT_FOUND, and has an error message that is "
            "equal to \"gone\"");
}

TEST(IsOkAndHolds, MatchesValue) {
  const absl::StatusOr<std::vector<int>> v = std::vector<int>{1, 2};
  EXPECT_THAT(v, IsOkAndHolds(ElementsAre(1, 2)));
  EXPECT_THAT(v, Not(IsOkAndHolds(ElementsAre(2, 1))));
  EXPECT_THAT(absl::StatusOr<int>(absl::InternalError("e")), Not(IsOkAndHolds(0)));
  EXPECT_THAT(absl::StatusOr<std::string>("abc"), IsOkAndHolds(HasSubstr("b")));
}

TEST(IsOkAndHolds, ExplainsValueOrStatus) {
  EXPECT_EQ(Explain(IsOkAndHolds(4), absl::StatusOr<int>(3)), "which holds 3");
  EXPECT_EQ(Explain(IsOkAndHolds(4), absl::StatusOr<int>(absl::InternalError("e"))),
            "which has status INTERNAL: e");
  EXPECT_EQ(DescribeMatcher<absl::StatusOr<int>>(IsOkAndHolds(4)),
            "is OK and has a value that is equal to 4");
}

// --- Assertion macros -------------------------------------------------------

TEST(AssertionMacros, PassOnOk) {
  MEMAUDIT_EXPECT_OK(absl::OkStatus());
  MEMAUDIT_ASSERT_OK(absl::StatusOr<int>(1));
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto x, absl::StatusOr<int>(41));
  EXPECT_EQ(x + 1, 42);
  MEMAUDIT_ASSERT_OK_AND_ASSIGN((std::pair<int, int> p), MakePair<int, int>(1, 2));
  EXPECT_EQ(p.second, 2);
  int existing = 0;
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(existing, absl::StatusOr<int>(9));
  EXPECT_EQ(existing, 9);
}

void ExpectOkOn(const absl::Status& s) { MEMAUDIT_EXPECT_OK(s); }
void AssertOkOn(const absl::StatusOr<int>& s) { MEMAUDIT_ASSERT_OK(s); }
void AssertOkAndAssignOn(absl::StatusOr<int> s, bool& reached) {
  MEMAUDIT_ASSERT_OK_AND_ASSIGN(int x, std::move(s));
  reached = x > 0;
}

TEST(AssertionMacros, FailWithTheStatus) {
  EXPECT_NONFATAL_FAILURE(ExpectOkOn(absl::PermissionDeniedError("no entry")),
                          "PERMISSION_DENIED: no entry");
  EXPECT_FATAL_FAILURE(AssertOkOn(absl::ResourceExhaustedError("full")),
                       "RESOURCE_EXHAUSTED: full");
  static bool reached = false;
  EXPECT_FATAL_FAILURE(AssertOkAndAssignOn(absl::FailedPreconditionError("not yet"), reached),
                       "FAILED_PRECONDITION: not yet");
  EXPECT_FALSE(reached);
}

}  // namespace
}  // namespace memaudit
