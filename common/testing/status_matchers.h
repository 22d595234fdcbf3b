// gmock matchers and assertions for absl::Status and absl::StatusOr<T>
// (Debian's Abseil has no absl/status/status_matchers.h).
//
//   EXPECT_THAT(status_or_statusor, IsOk());
//   EXPECT_THAT(status_or_statusor, StatusIs(absl::StatusCode::kNotFound));
//   EXPECT_THAT(status_or_statusor, StatusIs(absl::StatusCode::kInvalidArgument,
//                                            HasSubstr("spec.trials")));
//   EXPECT_THAT(statusor, IsOkAndHolds(ElementsAre(1, 2)));
//   MEMAUDIT_EXPECT_OK(expr);  MEMAUDIT_ASSERT_OK(expr);
//   MEMAUDIT_ASSERT_OK_AND_ASSIGN(auto x, expr);
//
// The code and message arguments of StatusIs are matchers or values (the
// message is matched as a std::string). Failures print the status.
// MEMAUDIT_ASSERT_OK_AND_ASSIGN's lhs follows MEMAUDIT_ASSIGN_OR_RETURN
// (common/base/status_macros.h): a variable or declaration without unparenthesised
// commas; it expands to several statements.
#ifndef MEMAUDIT_COMMON_TESTING_STATUS_MATCHERS_H_
#define MEMAUDIT_COMMON_TESTING_STATUS_MATCHERS_H_

#include <ostream>
#include <string>
#include <type_traits>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/base/status_macros.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::testing {
namespace status_internal {

inline const absl::Status& GetStatus(const absl::Status& status) { return status; }

template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& status_or) {
  return status_or.status();
}

// IsOk(): for absl::Status and absl::StatusOr<T>.
class IsOkMatcher {
 public:
  template <typename T>
  bool MatchAndExplain(const T& actual, ::testing::MatchResultListener* listener) const {
    const absl::Status& status = GetStatus(actual);
    if (status.ok()) {
      *listener << "which is OK";
      return true;
    }
    *listener << "which has status " << status;
    return false;
  }
  void DescribeTo(std::ostream* os) const { *os << "is OK"; }
  void DescribeNegationTo(std::ostream* os) const { *os << "is not OK"; }
};

// StatusIs(code[, message]): for absl::Status and absl::StatusOr<T>.
class StatusIsMatcher {
 public:
  StatusIsMatcher(::testing::Matcher<absl::StatusCode> code,
                  ::testing::Matcher<const std::string&> message)
      : code_(std::move(code)), message_(std::move(message)) {}

  template <typename T>
  bool MatchAndExplain(const T& actual, ::testing::MatchResultListener* listener) const {
    const absl::Status& status = GetStatus(actual);
    *listener << "which has status " << status;
    ::testing::StringMatchResultListener code_listener;
    if (!code_.MatchAndExplain(status.code(), &code_listener)) {
      *listener << ", whose code does not match";
      if (!code_listener.str().empty()) *listener << " (" << code_listener.str() << ")";
      return false;
    }
    ::testing::StringMatchResultListener message_listener;
    if (!message_.MatchAndExplain(std::string(status.message()), &message_listener)) {
      *listener << ", whose message does not match";
      if (!message_listener.str().empty()) *listener << " (" << message_listener.str() << ")";
      return false;
    }
    return true;
  }
  void DescribeTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeTo(os);
    *os << ", and has an error message that ";
    message_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << "has a status code that ";
    code_.DescribeNegationTo(os);
    *os << ", or has an error message that ";
    message_.DescribeNegationTo(os);
  }

 private:
  ::testing::Matcher<absl::StatusCode> code_;
  ::testing::Matcher<const std::string&> message_;
};

// IsOkAndHolds(m) for one StatusOr type (StatusOrRef may be a const reference).
template <typename StatusOrRef>
class IsOkAndHoldsMatcherImpl : public ::testing::MatcherInterface<StatusOrRef> {
 public:
  using value_type = typename std::decay_t<StatusOrRef>::value_type;

  template <typename InnerMatcher>
  explicit IsOkAndHoldsMatcherImpl(InnerMatcher&& inner)
      : inner_(::testing::SafeMatcherCast<const value_type&>(std::forward<InnerMatcher>(inner))) {}

  void DescribeTo(std::ostream* os) const override {
    *os << "is OK and has a value that ";
    inner_.DescribeTo(os);
  }
  void DescribeNegationTo(std::ostream* os) const override {
    *os << "is not OK, or has a value that ";
    inner_.DescribeNegationTo(os);
  }
  bool MatchAndExplain(StatusOrRef actual,
                       ::testing::MatchResultListener* listener) const override {
    if (!actual.ok()) {
      *listener << "which has status " << actual.status();
      return false;
    }
    ::testing::StringMatchResultListener inner_listener;
    const bool matches = inner_.MatchAndExplain(*actual, &inner_listener);
    *listener << "which holds " << ::testing::PrintToString(*actual);
    if (!inner_listener.str().empty()) *listener << ", " << inner_listener.str();
    return matches;
  }

 private:
  ::testing::Matcher<const value_type&> inner_;
};

template <typename InnerMatcher>
class IsOkAndHoldsMatcher {
 public:
  explicit IsOkAndHoldsMatcher(InnerMatcher inner) : inner_(std::move(inner)) {}

  template <typename StatusOrRef>
  operator ::testing::Matcher<StatusOrRef>() const {  // NOLINT(google-explicit-constructor)
    return ::testing::Matcher<StatusOrRef>(new IsOkAndHoldsMatcherImpl<StatusOrRef>(inner_));
  }

 private:
  InnerMatcher inner_;
};

}  // namespace status_internal

inline ::testing::PolymorphicMatcher<status_internal::IsOkMatcher> IsOk() {
  return ::testing::MakePolymorphicMatcher(status_internal::IsOkMatcher());
}

template <typename CodeMatcher, typename MessageMatcher>
::testing::PolymorphicMatcher<status_internal::StatusIsMatcher> StatusIs(CodeMatcher code,
                                                                         MessageMatcher message) {
  return ::testing::MakePolymorphicMatcher(status_internal::StatusIsMatcher(
      ::testing::MatcherCast<absl::StatusCode>(std::move(code)),
      ::testing::MatcherCast<const std::string&>(std::move(message))));
}

template <typename CodeMatcher>
::testing::PolymorphicMatcher<status_internal::StatusIsMatcher> StatusIs(CodeMatcher code) {
  return StatusIs(std::move(code), ::testing::_);
}

template <typename InnerMatcher>
status_internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>> IsOkAndHolds(
    InnerMatcher&& inner) {
  return status_internal::IsOkAndHoldsMatcher<std::decay_t<InnerMatcher>>(
      std::forward<InnerMatcher>(inner));
}

}  // namespace memaudit::testing

#define MEMAUDIT_EXPECT_OK(...) EXPECT_THAT((__VA_ARGS__), ::memaudit::testing::IsOk())
#define MEMAUDIT_ASSERT_OK(...) ASSERT_THAT((__VA_ARGS__), ::memaudit::testing::IsOk())

#define MEMAUDIT_ASSERT_OK_AND_ASSIGN(lhs, ...)        \
  MEMAUDIT_STATUS_MATCHERS_ASSERT_OK_AND_ASSIGN_IMPL_( \
      MEMAUDIT_STATUS_MACROS_CONCAT_(memaudit_assert_status_or_, __COUNTER__), lhs, __VA_ARGS__)
#define MEMAUDIT_STATUS_MATCHERS_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, ...)               \
  auto statusor = (__VA_ARGS__);                                                              \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) {                                                   \
    FAIL() << "Value of: " #__VA_ARGS__ "\nExpected: is OK\n  Actual: " << statusor.status(); \
  }                                                                                           \
  MEMAUDIT_STATUS_MACROS_UNPARENTHESIZE_(lhs) = std::move(*statusor)

#endif  // MEMAUDIT_COMMON_TESTING_STATUS_MATCHERS_H_
