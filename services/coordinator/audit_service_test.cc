// Submit's checks that come before the scheduler and the scorer: a spec
// naming a file outside the coordinator's data roots is refused with the
// field named (the services under it are never reached, so none exists here).
// Validate: the same checks and the plan, for a message or YAML read as the
// CLI reads a spec file, with nothing stored.
// Watch over an in-process server: waiting watchers hold no thread.
#include "services/coordinator/audit_service.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/messages/spec_yaml.h"
#include "common/metrics/metrics.h"
#include "common/rpc/grpc_server_metrics.h"
#include "common/rpc/status_grpc.h"
#include "common/testing/async_streams.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "services/coordinator/scheduler_fixture.h"
#include "spec/planner.h"
#include "spec/test_specs.h"

namespace memaudit::coordinator {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;

// <tmp>/data (the root), <tmp>/outside/secret, <tmp>/data/escape -> ../outside.
class SubmitDataRootsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = fs::path(::testing::TempDir()) / absl::StrCat("sr-", getpid());
    fs::remove_all(base_);
    fs::create_directories(base_ / "data");
    fs::create_directories(base_ / "outside");
    std::ofstream(base_ / "outside" / "secret") << "secret";
    fs::create_directory_symlink(base_ / "outside", base_ / "data" / "escape");
    base_ = fs::canonical(base_);
    auto roots = DataRoots::Create({(base_ / "data").string()});
    MEMAUDIT_ASSERT_OK(roots);
    roots_ = *roots;
  }
  void TearDown() override { fs::remove_all(base_); }

  // Submit on a service without scheduler or scorer: only refusals return.
  grpc::Status Submit(const v1::AuditSpec& spec) {
    auto everyone = Authenticator::AllowEveryone();
    AuditServiceImpl service(everyone.get(), /*scheduler=*/nullptr, /*scorer=*/nullptr, roots_);
    v1::SubmitRequest request;
    *request.mutable_spec() = spec;
    v1::SubmitResponse response;
    grpc::ServerContext context;
    return service.Submit(&context, &request, &response);
  }

  // Validate on the same service: it needs neither scheduler nor scorer.
  grpc::Status Validate(const v1::ValidateRequest& request, v1::ValidateResponse* response,
                        Authenticator* auth = nullptr) {
    auto everyone = Authenticator::AllowEveryone();
    AuditServiceImpl service(auth != nullptr ? auth : everyone.get(), /*scheduler=*/nullptr,
                             /*scorer=*/nullptr, roots_);
    grpc::ServerContext context;
    return service.Validate(&context, &request, response);
  }
  grpc::Status ValidateYaml(const std::string& yaml, const std::string& source,
                            v1::ValidateResponse* response) {
    v1::ValidateRequest request;
    request.set_yaml(yaml);
    request.set_source_name(source);
    return Validate(request, response);
  }

  fs::path base_;
  DataRoots roots_;
};

MATCHER_P(InvalidArgumentSaying, text, "") {
  *result_listener << "code " << arg.error_code() << ": " << arg.error_message();
  return arg.error_code() == grpc::StatusCode::INVALID_ARGUMENT &&
         arg.error_message().find(text) != std::string::npos;
}

TEST_F(SubmitDataRootsTest, RefusesAFileOutsideTheRootsNamingTheField) {
  v1::AuditSpec spec = spec::SmallMembershipSpec();
  spec.mutable_membership()->mutable_dataset()->set_path("/etc/shadow");
  const grpc::Status shadow = Submit(spec);
  EXPECT_THAT(shadow,
              InvalidArgumentSaying("membership.dataset.path: must lie under a data root ("));
  EXPECT_THAT(shadow.error_message(),
              AllOf(HasSubstr((base_ / "data").string()), HasSubstr("got \"/etc/shadow\"")));

  v1::AuditSpec exposure = spec::SmallExposureSpec();
  exposure.mutable_exposure()->mutable_corpus()->clear_text();
  exposure.mutable_exposure()->mutable_corpus()->set_path("/");
  EXPECT_THAT(Submit(exposure),
              InvalidArgumentSaying("exposure.corpus.path: must lie under a data root"));
}

TEST_F(SubmitDataRootsTest, RefusesASymlinkOrDotDotThatLeavesARoot) {
  v1::AuditSpec spec = spec::SmallExposureSpec();
  spec.mutable_exposure()->mutable_corpus()->clear_text();
  spec.mutable_exposure()->mutable_corpus()->set_path((base_ / "data/escape/secret").string());
  EXPECT_THAT(Submit(spec), InvalidArgumentSaying(absl::StrCat(
                                "which resolves to \"", (base_ / "outside/secret").string())));
  spec.mutable_exposure()->mutable_corpus()->set_path((base_ / "data/../outside/secret").string());
  EXPECT_THAT(Submit(spec), InvalidArgumentSaying("exposure.corpus.path: must lie under"));
  spec.mutable_exposure()->mutable_corpus()->set_path("data/corpus.txt");
  EXPECT_THAT(Submit(spec),
              InvalidArgumentSaying("exposure.corpus.path: must be an absolute path"));
}

TEST_F(SubmitDataRootsTest, EveryKindsPathsAreChecked) {
  v1::AuditSpec unlearning;
  unlearning.mutable_unlearning()->mutable_model()->set_architecture("torchscript");
  unlearning.mutable_unlearning()->mutable_model()->set_torchscript_path("/etc/passwd");
  EXPECT_THAT(Submit(unlearning),
              InvalidArgumentSaying("unlearning.model.torchscript_path: must lie "
                                    "under a data root"));
  v1::AuditSpec forgetting;
  forgetting.mutable_forgetting()->mutable_canaries()->mutable_corpus()->set_path(
      "/proc/self/environ");
  EXPECT_THAT(Submit(forgetting),
              InvalidArgumentSaying("forgetting.canaries.corpus.path: must lie under a data root"));
}

TEST_F(SubmitDataRootsTest, ThePathProblemIsListedWithTheOthers) {
  v1::AuditSpec spec = spec::SmallMembershipSpec();
  spec.mutable_membership()->set_reference_models(3);
  spec.mutable_membership()->mutable_dataset()->set_path("/etc");
  const grpc::Status status = Submit(spec);
  EXPECT_THAT(status, InvalidArgumentSaying("membership.reference_models"));
  EXPECT_THAT(status.error_message(), HasSubstr("membership.dataset.path: must lie under"));
}

TEST_F(SubmitDataRootsTest, OnlySubmitChecksTheRoots) {
  v1::AuditSpec spec = spec::SmallMembershipSpec();
  spec.mutable_membership()->mutable_dataset()->set_path((base_ / "data/images").string());
  MEMAUDIT_EXPECT_OK(spec::ValidateSpec(spec, roots_));
  // An audit once accepted is planned and scored whatever the roots become.
  spec.mutable_membership()->mutable_dataset()->set_path("/etc/shadow");
  MEMAUDIT_EXPECT_OK(spec::ValidateSpec(spec));
  EXPECT_THAT(spec::ValidateSpec(spec, roots_),
              memaudit::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("membership.dataset.path")));
}

// A small membership audit in YAML, without a name, with the keyword `auto`.
constexpr char kSmallYaml[] = R"(
seed: 7
resources: {models_per_task: auto}
membership:
  dataset: {pool_size: 100}
  model: {hidden: [16]}
  training: {learning_rate: 0.1, momentum: 0.9, epochs: 2, batch_size: 10}
  reference_models: 8
)";

using ValidateTest = SubmitDataRootsTest;

TEST_F(ValidateTest, ReadsYamlAsTheCliReadsASpecFileAndPlansIt) {
  v1::ValidateResponse response;
  const grpc::Status status = ValidateYaml(kSmallYaml, "specs/small-audit.yaml", &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  // The spec as read, exactly as `memaudit submit specs/small-audit.yaml`
  // sends it: named after the file, `auto` left unset, no defaults.
  auto read = ParseSpecYaml(kSmallYaml, "specs/small-audit.yaml");
  MEMAUDIT_ASSERT_OK(read);
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(response.spec(), *read))
      << response.spec().DebugString();
  EXPECT_EQ(response.spec().name(), "small-audit");
  EXPECT_EQ(response.spec().resources().models_per_task(), 0u);  // auto: unset
  EXPECT_EQ(response.spec().membership().attacks_size(), 0);
  // The plan Submit makes of it.
  v1::AuditSpec prepared = *read;
  MEMAUDIT_ASSERT_OK(spec::PrepareSpec(&prepared, roots_));
  auto plan = spec::PlanAudit(prepared);
  MEMAUDIT_ASSERT_OK(plan);
  ASSERT_GT(plan->tasks.size(), 0u);
  EXPECT_EQ(response.tasks(), plan->tasks.size());
  uint64_t steps = 0;
  for (const spec::PlannedTask& t : plan->tasks) steps += t.steps_total;
  EXPECT_GT(steps, 0u);
  EXPECT_EQ(response.steps(), steps);

  // Without a source name a nameless spec is "audit".
  ASSERT_TRUE(ValidateYaml(kSmallYaml, "", &response).ok());
  EXPECT_EQ(response.spec().name(), "audit");
}

TEST_F(ValidateTest, AMessageIsAnsweredAsSent) {
  v1::ValidateRequest request;
  *request.mutable_spec() = spec::SmallMembershipSpec(4);
  request.mutable_spec()->mutable_membership()->clear_attacks();
  v1::ValidateResponse response;
  const grpc::Status status = Validate(request, &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(response.spec(), request.spec()));
  EXPECT_EQ(response.tasks(), 4u);  // one model per task
  EXPECT_GT(response.steps(), 0u);
}

// A YAML that does not read: the CLI's message, naming the source, the place
// and the field, with no details.
TEST_F(ValidateTest, AYamlThatDoesNotReadIsRefusedAsTheCliRefusesIt) {
  const std::string unknown = absl::StrReplaceAll(kSmallYaml, {{"hidden:", "hiden:"}});
  v1::ValidateResponse response;
  grpc::Status status = ValidateYaml(unknown, "small.yaml", &response);
  EXPECT_THAT(status, InvalidArgumentSaying("small.yaml: 1 unknown field(s):\n  "
                                            "membership.model.hiden: unknown field; did you "
                                            "mean \"hidden\"?"));
  EXPECT_EQ(status.error_message(), ParseSpecYaml(unknown, "small.yaml").status().message());
  EXPECT_TRUE(status.error_details().empty());

  status = ValidateYaml("seed: [1\n", "broken.yaml", &response);
  EXPECT_THAT(status, InvalidArgumentSaying("broken.yaml: not valid YAML: line "));
  status = ValidateYaml("seed: 7\nseed: 8\n", "", &response);
  EXPECT_THAT(status, InvalidArgumentSaying("<yaml>: line 2, column 1: seed: duplicate key"));
  status = ValidateYaml("resources: {models_per_task: 0}\n", "zero.yaml", &response);
  EXPECT_THAT(status, InvalidArgumentSaying("zero.yaml: resources.models_per_task: must be in"));
  EXPECT_FALSE(response.has_spec());
}

// Bounded before anything is parsed, each bound naming its field.
TEST_F(ValidateTest, TheRequestIsBoundedFieldByField) {
  v1::ValidateResponse response;
  EXPECT_THAT(Validate(v1::ValidateRequest(), &response),
              InvalidArgumentSaying("spec or yaml: required"));
  EXPECT_THAT(ValidateYaml(std::string(kMaxSpecBytes + 1, '#'), "big.yaml", &response),
              InvalidArgumentSaying("yaml: at most 1048576 bytes, as a spec file (got 1048577)"));
  EXPECT_THAT(ValidateYaml(kSmallYaml, std::string(kMaxSourceNameBytes + 1, 's'), &response),
              InvalidArgumentSaying("source_name: at most 4096 bytes (got 4097)"));
  // A message is held to Submit's bounds: an unknown field is named.
  v1::ValidateRequest request;
  *request.mutable_spec() = spec::SmallMembershipSpec(4);
  std::string bytes = request.spec().SerializeAsString() + std::string("\xb8\x3e\x01", 3);
  ASSERT_TRUE(request.mutable_spec()->ParseFromString(bytes));
  const grpc::Status unknown = Validate(request, &response);
  EXPECT_THAT(unknown, InvalidArgumentSaying("spec: unknown field 999 (varint)"));
  EXPECT_EQ(unknown.error_message(), Submit(request.spec()).error_message());
}

// A spec read whose values Submit refuses: Submit's very error, details and
// all; the data roots are checked as at Submit.
TEST_F(ValidateTest, BadValuesAreRefusedExactlyAsSubmitRefusesThem) {
  const std::string odd =
      absl::StrReplaceAll(kSmallYaml, {{"reference_models: 8", "reference_models: 7"},
                                       {"pool_size: 100", "pool_size: 100, path: /etc/shadow"}});
  v1::ValidateResponse response;
  const grpc::Status status = ValidateYaml(odd, "odd.yaml", &response);
  EXPECT_THAT(status, InvalidArgumentSaying("membership.reference_models: must be an even number"));
  EXPECT_THAT(status.error_message(), HasSubstr("membership.dataset.path: must lie under"));
  auto read = ParseSpecYaml(odd, "odd.yaml");
  MEMAUDIT_ASSERT_OK(read);
  const grpc::Status submitted = Submit(*read);
  EXPECT_EQ(status.error_message(), submitted.error_message());
  EXPECT_FALSE(status.error_details().empty());
  EXPECT_EQ(status.error_details(), submitted.error_details());

  v1::ValidateRequest kindless;
  kindless.mutable_spec()->set_name("nothing");
  EXPECT_EQ(Validate(kindless, &response).error_message(), Submit(kindless.spec()).error_message());
}

TEST_F(ValidateTest, TheCallerIsIdentifiedFirst) {
  const fs::path tokens = base_ / "tokens";
  std::ofstream(tokens) << "";
  auto auth = Authenticator::Create(tokens.string());
  MEMAUDIT_ASSERT_OK(auth);
  v1::ValidateResponse response;
  // No certificate, no token: refused before the request is looked at.
  EXPECT_EQ(Validate(v1::ValidateRequest(), &response, auth->get()).error_code(),
            grpc::StatusCode::UNAUTHENTICATED);
}

TEST(RequestIdTest, UpTo128PrintableCharactersWithoutSpaces) {
  MEMAUDIT_EXPECT_OK(CheckRequestId(""));
  MEMAUDIT_EXPECT_OK(CheckRequestId("r-0123456789abcdef"));
  MEMAUDIT_EXPECT_OK(CheckRequestId(std::string(128, '~')));
  for (const std::string& bad :
       {std::string(129, 'x'), std::string("a b"), std::string("a\tb"), std::string("a\nb"),
        std::string("caf\xc3\xa9"), std::string("a\0b", 3)}) {
    EXPECT_THAT(CheckRequestId(bad),
                memaudit::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                            HasSubstr("request_id: must be at most 128 printable")))
        << bad;
  }
}

// Watch streams followed from the test's thread alone (async_streams.h).
class AsyncWatches : public memaudit::testing::AsyncStreams<v1::AuditEvent> {
 public:
  void Watch(v1::AuditService::Stub* stub, const std::string& audit_id, uint64_t after) {
    v1::WatchRequest req;
    req.set_audit_id(audit_id);
    req.set_after_sequence(after);
    Start([&](grpc::ClientContext* ctx, grpc::CompletionQueue* cq, void* tag) {
      return stub->AsyncWatch(ctx, req, cq, tag);
    });
  }
};

class AuditWatchTest : public SchedulerFixture {
 protected:
  static constexpr int kWatchers = 200;

  void SetUp() override {
    SchedulerFixture::SetUp();
    service_ = std::make_unique<AuditServiceImpl>(everyone_.get(), scheduler_.get(),
                                                  /*scorer=*/nullptr, DataRoots());
    grpc::ServerBuilder builder;
    builder.RegisterService(service_.get());
    // As StartServing counts every call (common/rpc/serving.cc).
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> counted;
    counted.push_back(GrpcServerMetrics(&grpc_metrics_));
    builder.experimental().SetInterceptorCreators(std::move(counted));
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    stub_ = v1::AuditService::NewStub(server_->InProcessChannel(grpc::ChannelArguments()));
  }
  void TearDown() override {
    // A failed test's watches still wait: cancelled after the deadline.
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    SchedulerFixture::TearDown();
  }

  // The sequence of the audit's last event.
  uint64_t LastSequence(const std::string& audit_id) {
    auto events = scheduler_->EventsAfter(audit_id, 0, 1000);
    EXPECT_TRUE(events.ok() && !events->empty());
    return events.ok() && !events->empty() ? events->back().sequence : 0;
  }

  // Until `subscribers` wait on the scheduler's changes (the watches re-read
  // every 500 ms, subscribing again at once), handling what arrives.
  bool AwaitSubscribers(AsyncWatches& watches, size_t subscribers) {
    return watches.Pump([&] { return scheduler_->changes().subscribers() == subscribers; },
                        std::chrono::seconds(10));
  }

  // "memaudit_grpc_server_handled_total" of Watch calls ending in `code`.
  std::string WatchesHandled(const std::string& code) {
    const std::string text = metrics::Exposition(grpc_metrics_);
    const std::string series = absl::StrCat("memaudit_grpc_server_handled_total{code=\"", code,
                                            "\",method=\"/memaudit.v1.AuditService/Watch\"} ");
    const size_t at = text.find(series);
    if (at == std::string::npos) return "none";
    return text.substr(at + series.size(), text.find('\n', at) - at - series.size());
  }

  prometheus::Registry grpc_metrics_;
  std::unique_ptr<Authenticator> everyone_ = Authenticator::AllowEveryone();
  std::unique_ptr<AuditServiceImpl> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<v1::AuditService::Stub> stub_;
};

// A synchronous Watch held a server thread per stream while it waited; on
// the callback API a waiting stream is a subscription, and a change reaches
// every one of them.
TEST_F(AuditWatchTest, WaitingWatchesHoldNoThreadAndEachSeesTheChange) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  const uint64_t last = LastSequence("a");
  AsyncWatches watches;
  // One first: what gRPC starts once (pollers, callback threads) is counted
  // before.
  watches.Watch(stub_.get(), "a", last);
  ASSERT_TRUE(watches.Pump([&] { return watches.EachReceived(1); }, std::chrono::seconds(10)));
  ASSERT_TRUE(AwaitSubscribers(watches, 1));
  const int threads_before = memaudit::testing::ThreadCount();

  for (int i = 1; i < kWatchers; ++i) watches.Watch(stub_.get(), "a", last);
  // Nothing was logged after `last`: each stream's first message is the
  // audit's snapshot, then it waits.
  ASSERT_TRUE(watches.Pump([&] { return watches.EachReceived(1); }, std::chrono::seconds(30)));
  ASSERT_TRUE(AwaitSubscribers(watches, kWatchers))
      << scheduler_->changes().subscribers() << " of " << kWatchers << " watches wait";
  const int threads_waiting = memaudit::testing::ThreadCount();
  EXPECT_LT(threads_waiting - threads_before, kWatchers / 10)
      << threads_before << " threads with one watch waiting, " << threads_waiting << " with "
      << kWatchers;
  for (const auto& s : watches.streams()) {
    ASSERT_EQ(s->received.size(), 1u);
    EXPECT_EQ(s->received[0].type(), v1::PROGRESS);
    EXPECT_EQ(s->received[0].sequence(), last);
    EXPECT_FALSE(s->received[0].audit().has_spec());
  }

  // A change reaches every watch; as it ends the audit, it ends every watch.
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a"));
  ASSERT_TRUE(watches.Pump([&] { return watches.AllDone(); }, std::chrono::seconds(30)));
  for (const auto& s : watches.streams()) {
    EXPECT_TRUE(s->status.ok()) << s->status.error_message();
    ASSERT_EQ(s->received.size(), 2u);
    EXPECT_EQ(s->received[1].type(), v1::AUDIT_CANCELLED);
    EXPECT_GT(s->received[1].sequence(), last);
    EXPECT_EQ(s->received[1].audit().state(), v1::CANCELLED);
  }
  EXPECT_EQ(scheduler_->changes().subscribers(), 0u);
}

// A watch the client cancels while it waits ends at once; its subscription,
// called back later, finds the stream gone and subscribes no more.
TEST_F(AuditWatchTest, AWatchCancelledWhileItWaitsEnds) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  AsyncWatches watches;
  for (int i = 0; i < 10; ++i) watches.Watch(stub_.get(), "a", 0);
  ASSERT_TRUE(watches.Pump([&] { return watches.EachReceived(1); }, std::chrono::seconds(10)));
  ASSERT_TRUE(AwaitSubscribers(watches, 10));
  for (const auto& s : watches.streams()) s->ctx.TryCancel();
  ASSERT_TRUE(watches.Pump([&] { return watches.AllDone(); }, std::chrono::seconds(10)));
  for (const auto& s : watches.streams()) {
    EXPECT_EQ(s->status.error_code(), grpc::StatusCode::CANCELLED);
    EXPECT_EQ(s->received.front().type(), v1::SUBMITTED);
  }
  // The subscriptions time out (500 ms) into finished streams.
  EXPECT_TRUE(AwaitSubscribers(watches, 0)) << scheduler_->changes().subscribers();
  // Counted OK, the status the synchronous Watch returned once it saw the
  // call cancelled.
  EXPECT_EQ(WatchesHandled("OK"), "10");
  MEMAUDIT_EXPECT_OK(scheduler_->Cancel("a"));
}

// An ended audit's log is replayed from any sequence, then the stream ends;
// an audit that does not exist is refused as Get refuses it. The server's
// metrics count each call with its code.
TEST_F(AuditWatchTest, ReplaysAnEndedAuditAndRefusesAnUnknownOne) {
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("a", spec::SmallMembershipSpec(4)));
  MEMAUDIT_ASSERT_OK(scheduler_->Cancel("a"));
  auto logged = scheduler_->EventsAfter("a", 0, 1000);
  MEMAUDIT_ASSERT_OK(logged);
  for (uint64_t after : {uint64_t{0}, (*logged)[0].sequence}) {
    grpc::ClientContext ctx;
    v1::WatchRequest req;
    req.set_audit_id("a");
    req.set_after_sequence(after);
    auto reader = stub_->Watch(&ctx, req);
    std::vector<uint64_t> sequences;
    for (v1::AuditEvent event; reader->Read(&event);) sequences.push_back(event.sequence());
    const grpc::Status status = reader->Finish();
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::vector<uint64_t> expected;
    for (const EventRecord& e : *logged) {
      if (e.sequence > after) expected.push_back(e.sequence);
    }
    EXPECT_EQ(sequences, expected) << "after " << after;
  }

  grpc::ClientContext ctx;
  v1::WatchRequest req;
  req.set_audit_id("nope");
  auto reader = stub_->Watch(&ctx, req);
  v1::AuditEvent event;
  EXPECT_FALSE(reader->Read(&event));
  const grpc::Status status = reader->Finish();
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_EQ(status.error_message(), scheduler_->Get("nope").status().message());
  EXPECT_EQ(WatchesHandled("OK"), "2");
  EXPECT_EQ(WatchesHandled("NOT_FOUND"), "1");
}

// An empty audit id is a malformed request (INVALID_ARGUMENT naming the
// field) for every call that takes one, not an audit that is not there.
TEST_F(AuditWatchTest, AnEmptyAuditIdIsInvalidEverywhere) {
  auto expect_invalid = [](const grpc::Status& status, const char* call) {
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << call;
    EXPECT_EQ(status.error_message(), "audit_id: required") << call;
  };
  {
    grpc::ClientContext ctx;
    v1::Audit audit;
    expect_invalid(stub_->Get(&ctx, v1::GetRequest(), &audit), "Get");
  }
  {
    grpc::ClientContext ctx;
    v1::Audit audit;
    expect_invalid(stub_->Cancel(&ctx, v1::CancelRequest(), &audit), "Cancel");
  }
  {
    grpc::ClientContext ctx;
    v1::AuditResults results;
    expect_invalid(stub_->GetReport(&ctx, v1::GetReportRequest(), &results), "GetReport");
  }
  {
    grpc::ClientContext ctx;
    auto pieces = stub_->Export(&ctx, v1::ExportRequest());
    v1::ExportArray piece;
    EXPECT_FALSE(pieces->Read(&piece));
    expect_invalid(pieces->Finish(), "Export");
  }
  grpc::ClientContext ctx;
  auto reader = stub_->Watch(&ctx, v1::WatchRequest());
  v1::AuditEvent event;
  EXPECT_FALSE(reader->Read(&event));
  expect_invalid(reader->Finish(), "Watch");
}

// Diff names the side that is wrong, and compares archived results without
// the scorer.
TEST_F(AuditWatchTest, DiffNamesTheBadSideAndComparesArchivedResults) {
  const auto diff = [&](const v1::DiffRequest& req, v1::DiffResponse* resp) {
    grpc::ClientContext ctx;
    return stub_->Diff(&ctx, req, resp);
  };
  v1::DiffRequest req;
  v1::DiffResponse resp;
  grpc::Status status = diff(req, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "old_audit: set audit_id or results");

  req.mutable_old_audit()->set_audit_id("");
  status = diff(req, &resp);
  EXPECT_EQ(status.error_message(), "old_audit: audit_id: required");

  v1::AuditResults archived;
  archived.set_audit_id("a");
  archived.set_complete(true);
  *archived.mutable_spec() = spec::SmallMembershipSpec();
  archived.mutable_spec()->mutable_resources()->add_numeric_environments();  // as recorded
  *req.mutable_old_audit()->mutable_results() = archived;
  req.mutable_new_audit()->set_audit_id("nope");
  status = diff(req, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_THAT(status.error_message(), ::testing::StartsWith("new_audit: "));

  v1::AuditResults bad = archived;
  bad.mutable_spec()->mutable_membership()->set_reference_models(100000);
  *req.mutable_new_audit()->mutable_results() = bad;
  status = diff(req, &resp);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              ::testing::StartsWith("new_audit.results.spec.membership.reference_models: "));

  *req.mutable_new_audit()->mutable_results() = archived;
  MEMAUDIT_ASSERT_OK(FromGrpc(diff(req, &resp)));
  ASSERT_GT(resp.changes_size(), 0);
  for (const v1::MetricChange& c : resp.changes()) EXPECT_FALSE(c.significant()) << c.metric();
}

using AuditListTest = AuditWatchTest;

// Pages of `limit`, most recent first, filtered; a token from one page
// starts the next; the summary view leaves the spec out.
TEST_F(AuditListTest, PagesFiltersAndASummaryView) {
  for (const char* id : {"a1", "a2", "a3", "a4", "a5"}) {
    v1::AuditSpec spec = spec::SmallMembershipSpec(4);
    spec.set_name(absl::StrCat("nightly-", id));
    MEMAUDIT_ASSERT_OK(scheduler_->Submit(id, spec));
  }
  MEMAUDIT_ASSERT_OK(scheduler_->Submit("e1", spec::SmallExposureSpec()));
  auto list = [&](const v1::ListRequest& req, v1::ListResponse* resp) {
    grpc::ClientContext ctx;
    return stub_->List(&ctx, req, resp);
  };
  std::vector<std::string> seen;
  v1::ListRequest req;
  req.set_limit(2);
  req.set_kind(v1::MEMBERSHIP);
  int pages = 0;
  do {
    v1::ListResponse resp;
    ASSERT_TRUE(list(req, &resp).ok());
    for (const v1::Audit& a : resp.audits()) {
      seen.push_back(a.audit_id());
      EXPECT_FALSE(a.has_spec()) << "the summary view is the default";
    }
    req.set_page_token(resp.next_page_token());
    ++pages;
  } while (!req.page_token().empty() && pages < 10);
  EXPECT_THAT(seen, ::testing::ElementsAre("a5", "a4", "a3", "a2", "a1"));
  EXPECT_EQ(pages, 3);

  v1::ListRequest named;
  named.set_name_contains("-a3");
  named.set_view(v1::AUDIT_VIEW_FULL);
  v1::ListResponse one;
  ASSERT_TRUE(list(named, &one).ok());
  ASSERT_EQ(one.audits_size(), 1);
  EXPECT_EQ(one.audits(0).audit_id(), "a3");
  EXPECT_EQ(one.audits(0).spec().name(), "nightly-a3");
  EXPECT_TRUE(one.next_page_token().empty());

  v1::ListRequest by_state;
  by_state.set_state(v1::SUCCEEDED);
  v1::ListResponse none;
  ASSERT_TRUE(list(by_state, &none).ok());
  EXPECT_EQ(none.audits_size(), 0);

  // Each bound names its field.
  auto refused = [&](v1::ListRequest bad) {
    v1::ListResponse ignored;
    grpc::Status s = list(bad, &ignored);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    return s.error_message();
  };
  v1::ListRequest bad;
  bad.set_limit(1001);
  EXPECT_THAT(refused(bad), ::testing::HasSubstr("limit: must be at most 1000 (got 1001)"));
  bad = v1::ListRequest();
  bad.set_page_token("x1");
  EXPECT_THAT(refused(bad),
              ::testing::HasSubstr("page_token: not a token this coordinator gave you"));
  bad = v1::ListRequest();
  bad.set_kind(static_cast<v1::AuditKind>(77));
  EXPECT_THAT(refused(bad), ::testing::HasSubstr("kind: no such kind (got 77)"));
  bad = v1::ListRequest();
  bad.set_name_contains(std::string(257, 'n'));
  EXPECT_THAT(refused(bad), ::testing::HasSubstr("name_contains: at most 256 bytes"));
  bad = v1::ListRequest();
  bad.set_state(static_cast<v1::AuditState>(42));
  EXPECT_THAT(refused(bad), ::testing::HasSubstr("state: no such state (got 42)"));
  bad = v1::ListRequest();
  bad.set_view(static_cast<v1::AuditView>(9));
  EXPECT_THAT(refused(bad), ::testing::HasSubstr("view: no such view (got 9)"));
}

}  // namespace
}  // namespace memaudit::coordinator

namespace memaudit::coordinator {
namespace {

// What the call gate admits before reading a message: teams the
// AuditService (RevokeWorker administrators only), workers the
// WorkerService, both the health service, and nothing else.
TEST(CoordinatorCallPolicyTest, EachRoleReachesOnlyItsMethods) {
  const CallPolicy policy = CoordinatorCallPolicy();
  const std::vector<Role> team{Role::kTeam}, worker{Role::kWorker}, admin_only{};
  EXPECT_EQ(policy.at("/memaudit.v1.AuditService/Submit"), team);
  EXPECT_EQ(policy.at("/memaudit.v1.AuditService/Validate"), team);
  EXPECT_EQ(policy.at("/memaudit.v1.AuditService/Export"), team);
  EXPECT_EQ(policy.at("/memaudit.v1.AuditService/RevokeWorker"), admin_only);
  EXPECT_EQ(policy.at("/memaudit.v1.WorkerService/Lease"), worker);
  EXPECT_EQ(policy.at("/memaudit.v1.WorkerService/Complete"), worker);
  EXPECT_EQ(policy.at("/grpc.health.v1.Health/Check").size(), 2u);
  EXPECT_FALSE(policy.contains("/memaudit.v1.ScorerService/Ingest"));
  // Every method of both services is listed: none falls through.
  EXPECT_EQ(policy.size(),
            2u + static_cast<size_t>(google::protobuf::DescriptorPool::generated_pool()
                                         ->FindServiceByName("memaudit.v1.AuditService")
                                         ->method_count() +
                                     google::protobuf::DescriptorPool::generated_pool()
                                         ->FindServiceByName("memaudit.v1.WorkerService")
                                         ->method_count()));
  EXPECT_TRUE(Authenticator::Admit({Role::kAdmin, "root"}, admin_only).ok());
  EXPECT_EQ(Authenticator::Admit({Role::kTeam, "alpha"}, admin_only).code(),
            absl::StatusCode::kPermissionDenied);
}

}  // namespace
}  // namespace memaudit::coordinator
