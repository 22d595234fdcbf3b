// `memaudit run` and `memaudit validate` as a user runs them.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/messages/export_arrays.h"
#include "common/security/tls.h"
#include "gmock/gmock.h"
#include "memaudit/v1/audit.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

std::string WriteSpec(const std::string& dir, const std::string& yaml) {
  std::system(absl::StrCat("mkdir -p '", dir, "'").c_str());
  const std::string path = dir + "/spec.yaml";
  std::ofstream(path) << yaml;
  return path;
}

constexpr char kTinySpec[] = R"(name: tiny-cli
seed: 5
membership:
  dataset: {pool_size: 200}
  model: {hidden: [32]}
  training: {learning_rate: 0.1, momentum: 0.9, epochs: 3, batch_size: 16}
  reference_models: 4
)";

nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return nlohmann::json::parse(buffer.str());
}

TEST(CliRunTest, TwoRunsWithTheSameSeedPrintIdenticalNumbers) {
  const std::string dir = FreshTestDir();
  const std::string spec = WriteSpec(dir, kTinySpec);
  Output first = Shell(absl::StrCat(Memaudit(), " run ", spec, " --workers 2 --dir ", dir,
                                    "/one --json ", dir, "/one.json"));
  ASSERT_EQ(first.exit_code, 0) << first.text;
  EXPECT_THAT(first.text, HasSubstr("lira_online"));
  EXPECT_THAT(first.text, HasSubstr("TPR@0.1%FPR"));
  Output second = Shell(absl::StrCat(Memaudit(), " run ", spec, " --workers 1 --dir ", dir,
                                     "/two --json ", dir, "/two.json"));
  ASSERT_EQ(second.exit_code, 0) << second.text;
  nlohmann::json a = ReadJson(dir + "/one.json");
  nlohmann::json b = ReadJson(dir + "/two.json");
  EXPECT_NE(a["audit_id"], b["audit_id"]);
  const std::string a_id = a["audit_id"];
  a.erase("audit_id");
  b.erase("audit_id");
  EXPECT_EQ(a, b) << "same spec and seed must give the same numbers, whatever the worker count";
  // Four models: per-example-variance LiRA is undefined and left out, and
  // the results say why, in the JSON and under the table.
  EXPECT_EQ(a["attacks"].size(), 4u);
  ASSERT_EQ(a["warnings"].size(), 2u);
  EXPECT_EQ(a["warnings"][0]["code"], "few_reference_models");
  EXPECT_THAT(first.text, HasSubstr("warning (attacks_left_out): lira_online, lira_offline not "
                                    "run: undefined with 4 reference models"));
  // The run directory keeps the databases, the logs and the results.
  EXPECT_TRUE(std::ifstream(dir + "/one/results.json").good());
  EXPECT_TRUE(std::ifstream(dir + "/one/coordinator.log").good());

  // The archived results rebuild the report with no service running (the
  // coordinator address points at nothing).
  Output offline =
      Shell(absl::StrCat("MEMAUDIT_COORDINATOR=127.0.0.1:1 ", Memaudit(), " report ", dir,
                         "/one.json --html ", dir, "/offline.html --csv ", dir, "/csv"));
  ASSERT_EQ(offline.exit_code, 0) << offline.text;
  EXPECT_THAT(offline.text, HasSubstr("lira_online_fixed_variance"));
  EXPECT_THAT(offline.text, HasSubstr("warning (few_reference_models)"));
  std::stringstream html;
  html << std::ifstream(dir + "/offline.html").rdbuf();
  EXPECT_THAT(html.str(), HasSubstr("<h2>Warnings</h2>"));
  EXPECT_THAT(html.str(), HasSubstr("tiny-cli"));
  EXPECT_TRUE(std::ifstream(dir + "/csv/attacks.csv").good());
  // The per-example data archived beside results.json, the same for the same
  // spec and seed, exports with no service too; NumPy recomputes every
  // attack's AUC from it alone.
  auto one = ReadExportFile(dir + "/one/per_example.pb");
  auto two = ReadExportFile(dir + "/two/per_example.pb");
  ASSERT_TRUE(one.ok() && two.ok()) << one.status() << two.status();
  ASSERT_EQ(one->size(), two->size());
  for (size_t i = 0; i < one->size(); ++i) {
    EXPECT_EQ((*one)[i].audit_id(), a_id);
    (*one)[i].clear_audit_id();
    (*two)[i].clear_audit_id();
    EXPECT_EQ((*one)[i].SerializeAsString(), (*two)[i].SerializeAsString()) << (*one)[i].name();
  }
  Output exported =
      Shell(absl::StrCat("MEMAUDIT_COORDINATOR=127.0.0.1:1 ", Memaudit(), " report ", dir,
                         "/one/results.json --export ", dir, "/arrays --npz ", dir, "/arrays.npz"));
  ASSERT_EQ(exported.exit_code, 0) << exported.text;
  EXPECT_TRUE(std::ifstream(dir + "/arrays/schema.json").good());
  EXPECT_TRUE(std::ifstream(dir + "/arrays/keep.csv").good());
  std::ofstream(dir + "/auc.py") << R"PY(
import json, sys, numpy as np
z = np.load(sys.argv[1])
results = json.load(open(sys.argv[2]))
truth = z['keep'][z['target_model']]
for a in results['attacks']:
    s = z['score_' + a['attack'].lower()]
    m, n = s[truth == 1], s[truth == 0]
    auc = ((m[:, None] > n[None, :]).sum() + 0.5 * (m[:, None] == n[None, :]).sum()) / (m.size * n.size)
    print(a['attack'].lower(), 'agrees' if abs(auc - a['auc']) < 1e-12 else f'{auc} != {a["auc"]}')
)PY";
  Output numpy = Shell(absl::StrCat("/usr/bin/python3 ", dir, "/auc.py ", dir, "/arrays.npz ", dir,
                                    "/one/results.json"));
  ASSERT_EQ(numpy.exit_code, 0) << numpy.text;
  EXPECT_EQ(numpy.text,
            "lira_online_fixed_variance agrees\nlira_offline_fixed_variance agrees\nrmia agrees\n"
            "loss agrees\n");
  // Another audit's archive is refused, naming both audits.
  Output mismatched = Shell(absl::StrCat(Memaudit(), " report ", dir, "/one/results.json --npz ",
                                         dir, "/x.npz --per-example ", dir, "/two/per_example.pb"));
  EXPECT_EQ(mismatched.exit_code, 2) << mismatched.text;
  EXPECT_THAT(mismatched.text, HasSubstr("the per-example data of audit"));
  // Without the archive, the export says which file it needs.
  Output no_archive =
      Shell(absl::StrCat(Memaudit(), " report ", dir, "/one.json --export ", dir, "/nothing"));
  EXPECT_EQ(no_archive.exit_code, 2) << no_archive.text;
  EXPECT_THAT(no_archive.text, HasSubstr("per_example.pb"));

  // Something else than a results document is refused, naming the file.
  Output wrong = Shell(absl::StrCat(Memaudit(), " report ", spec));
  EXPECT_EQ(wrong.exit_code, 2) << wrong.text;
  EXPECT_THAT(wrong.text, HasSubstr("not a memaudit results document"));
}

// The workers `run` starts offer the threads a task of the spec needs: a
// spec asking for 2 per task (examples/secret-sharer.yaml does) runs.
TEST(CliRunTest, AnAuditOfTwoThreadsPerTaskRuns) {
  const std::string dir = FreshTestDir();
  const std::string spec =
      WriteSpec(dir, absl::StrCat(kTinySpec, "resources: {threads_per_task: 2}\n"));
  Output out = Shell(absl::StrCat(Memaudit(), " run ", spec, " -w 1 --dir ", dir, "/run"));
  ASSERT_EQ(out.exit_code, 0) << out.text;
  EXPECT_THAT(out.text, HasSubstr("lira_online_fixed_variance"));
}

// Every model the target in turn: each number has its re-run interval. One
// chosen target: there is no model-to-model spread to measure, so none.
TEST(CliRunTest, ReRunIntervalsArePrintedUnlessOneModelIsTheTarget) {
  const std::string dir = FreshTestDir();
  Output every = Shell(absl::StrCat(Memaudit(), " run ", WriteSpec(dir + "/every", kTinySpec),
                                    " -w 1 --dir ", dir, "/every/run"));
  ASSERT_EQ(every.exit_code, 0) << every.text;
  EXPECT_THAT(every.text, HasSubstr("re-run 95%"));
  EXPECT_THAT(every.text, ::testing::Not(HasSubstr("n/a")));
  // The table ends with how the models computed and what trained them.
  EXPECT_THAT(every.text, HasSubstr("\nnumerics: portable"));
  EXPECT_THAT(every.text,
              ::testing::ContainsRegex("\ntrained on: cpu; LibTorch [^\n]*; ATen AVX2;"));
  std::stringstream html;
  html << std::ifstream(dir + "/every/run/report.html").rdbuf();
  EXPECT_THAT(html.str(), HasSubstr("<tr><th>trained on</th><td>cpu; LibTorch "));
  EXPECT_EQ(
      ReadJson(dir + "/every/run/results.json")["spec"]["resources"]["numeric_environments"].size(),
      1u);
  Output one = Shell(absl::StrCat(
      Memaudit(), " run ", WriteSpec(dir + "/one", absl::StrCat(kTinySpec, "  target_model: 0\n")),
      " -w 1 --dir ", dir, "/one/run"));
  ASSERT_EQ(one.exit_code, 0) << one.text;
  EXPECT_THAT(one.text, HasSubstr("n/a"));
}

TEST(CliRunTest, TimingsPrintsOneLineOfEveryPhase) {
  const std::string dir = FreshTestDir();
  const std::string spec = WriteSpec(dir, kTinySpec);
  Output out =
      Shell(absl::StrCat(Memaudit(), " run ", spec, " -w 1 --timings --dir ", dir, "/run"));
  ASSERT_EQ(out.exit_code, 0) << out.text;
  const size_t at = out.text.find("timings: ");
  ASSERT_NE(at, std::string::npos) << out.text;
  const std::string line = out.text.substr(at, out.text.find('\n', at) - at);
  std::istringstream fields(line.substr(std::string("timings: ").size()));
  std::vector<std::string> names;
  std::string field;
  while (fields >> field) {
    const size_t eq = field.find('=');
    ASSERT_NE(eq, std::string::npos) << line;
    names.push_back(field.substr(0, eq));
    const double seconds = std::stod(field.substr(eq + 1));
    EXPECT_GE(seconds, 0) << field;  // every phase happened: none is nan
  }
  EXPECT_EQ(names, (std::vector<std::string>{"start_s", "submit_s", "first_lease_s", "tasks_s",
                                             "scoring_s", "report_s", "shutdown_s", "overhead_s",
                                             "total_s"}));
}

// What `memaudit run` ends with, and what a rollout of the services does:
// an idle worker waits in a Lease long-poll and a client watches an audit
// that waits for a worker (it needs a GPU). Stopping must end both at once,
// with every process exiting 0 on its own: no long-poll, shutdown deadline
// or polling interval waited out.
TEST(CliRunTest, AnIdleClusterWithAWaitingWatchStopsAtOnce) {
  cli::ClusterOptions options;
  options.dir = FreshTestDir() + "/cluster";
  options.workers = 1;
  options.bin_dir = MEMAUDIT_BIN_DIR;
  // Far longer than the bound below: a worker that waited its long-poll out
  // would fail the test every time, not by chance.
  options.worker_args = {"--lease-wait-ms", "30000"};
  auto cluster = cli::EmbeddedCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  // The worker has registered (and long-polls from then on).
  const auto registered = std::chrono::steady_clock::now();
  while (HttpGet((*cluster)->coordinator_metrics_port(), "/metrics")
             .find("memaudit_coordinator_workers_connected 1\n") == std::string::npos) {
    ASSERT_LT(std::chrono::steady_clock::now() - registered, std::chrono::seconds(60))
        << Slurp(options.dir + "/worker-0.log");
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  auto channel = MakeChannel((*cluster)->coordinator_address(), (*cluster)->client_credentials());
  ASSERT_TRUE(channel.ok()) << channel.status();
  v1::AuditSpec spec = TinyMembershipSpec(4, 1);
  spec.mutable_resources()->set_gpus_per_task(1);  // no CPU worker takes it
  auto submitted = cli::Client((*cluster)->coordinator_address(), *channel).Submit(spec);
  ASSERT_TRUE(submitted.ok()) << submitted.status();

  // The watch is read on its own thread while the cluster stops, and its
  // channel closed once it ends: a gRPC server's shutdown waits for its
  // clients' connections to close (or its deadline), and a client with no
  // call in flight never reads the server's GOAWAY (why `memaudit run`
  // closes its own before stopping the cluster).
  std::atomic<bool> watching{false};
  grpc::Status watched;
  std::thread watcher([&, channel = *std::move(channel)]() mutable {
    {
      auto stub = v1::AuditService::NewStub(channel);
      grpc::ClientContext ctx;
      v1::WatchRequest req;
      req.set_audit_id(submitted->audit_id());
      auto reader = stub->Watch(&ctx, req);
      v1::AuditEvent event;
      while (reader->Read(&event)) watching = true;  // "submitted", then it waits
      watched = reader->Finish();
    }
    channel.reset();
  });
  const auto subscribed = std::chrono::steady_clock::now();
  while (!watching && std::chrono::steady_clock::now() - subscribed < std::chrono::seconds(30)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(watching);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));

  const auto start = std::chrono::steady_clock::now();
  (*cluster)->Stop();
  const double stop_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  watcher.join();
  EXPECT_LT(stop_s, 1.0) << "see the logs in " << options.dir;
  EXPECT_EQ((*cluster)->worker(0)->Wait(), 0);
  EXPECT_EQ((*cluster)->coordinator()->Wait(), 0);
  EXPECT_EQ((*cluster)->scorer()->Wait(), 0);
  // Ended by the coordinator's shutdown ("watch again"), not cancelled at
  // its deadline.
  EXPECT_EQ(watched.error_code(), grpc::StatusCode::UNAVAILABLE) << watched.error_message();
}

// A batch worker (--exit-when-idle) exits 0 on its own: its main no longer
// waits for a shutdown signal once the loop has ended.
TEST(CliRunTest, AWorkerProcessExitsOnItsOwnOnceIdle) {
  cli::ClusterOptions options;
  options.dir = FreshTestDir() + "/cluster";
  options.workers = 1;
  options.bin_dir = MEMAUDIT_BIN_DIR;
  options.worker_args = {"--exit-when-idle", "1", "--lease-wait-ms", "200"};
  auto cluster = cli::EmbeddedCluster::Start(options);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  ASSERT_TRUE((*cluster)->worker(0)->WaitFor(30000)) << Slurp(options.dir + "/worker-0.log");
  EXPECT_EQ((*cluster)->worker(0)->Wait(), 0) << Slurp(options.dir + "/worker-0.log");
}

TEST(CliRunTest, ValidateExplainsEveryProblem) {
  const std::string dir = FreshTestDir();
  const std::string spec = WriteSpec(dir, R"(membership:
  dataset: {pool_size: 4}
  training: {learning_rate: 0, epochs: 1}
  reference_models: 5
)");
  Output out = Shell(absl::StrCat(Memaudit(), " validate ", spec));
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.text, HasSubstr("3 problem(s)"));
  EXPECT_THAT(out.text, HasSubstr("membership.dataset.pool_size"));
  EXPECT_THAT(out.text, HasSubstr("membership.training.learning_rate"));
  EXPECT_THAT(out.text, HasSubstr("membership.reference_models"));

  const std::string good = WriteSpec(dir + "/good", kTinySpec);
  Output ok = Shell(absl::StrCat(Memaudit(), " validate ", good));
  EXPECT_EQ(ok.exit_code, 0) << ok.text;
  EXPECT_THAT(ok.text, HasSubstr("valid membership audit"));
}

TEST(CliRunTest, ValidateNamesUnknownFieldsAndQuickstartIsValid) {
  const std::string dir = FreshTestDir();
  // An unknown field is listed with the spec's other problems, and the
  // nearest real field suggested.
  const std::string spec =
      WriteSpec(dir,
                "membership:\n  dataset: {pool_size: 200}\n  training: {learning_rate: 0.1, "
                "epochs: 1}\n  refrence_models: 4\n  reference_models: 5\n");
  Output out = Shell(absl::StrCat(Memaudit(), " validate ", spec));
  EXPECT_EQ(out.exit_code, 2);
  EXPECT_THAT(out.text, HasSubstr("2 problem(s)"));
  EXPECT_THAT(out.text, HasSubstr("membership.refrence_models: unknown field; did you mean "
                                  "\"reference_models\"?"));
  EXPECT_THAT(out.text, HasSubstr("membership.reference_models: must be an even number"));
  for (const char* example :
       {"quickstart.yaml", "secret-sharer.yaml", "secret-sharer-transformer.yaml",
        "secret-sharer-tokens.yaml", "secret-sharer-replicates.yaml"}) {
    Output valid =
        Shell(absl::StrCat(Memaudit(), " validate ", MEMAUDIT_SOURCE_DIR, "/examples/", example));
    EXPECT_EQ(valid.exit_code, 0) << example << ": " << valid.text;
  }
}

TEST(CliRunTest, ABadDeviceIsRefusedBeforeAnythingStarts) {
  const std::string dir = FreshTestDir();
  Output out = Shell(absl::StrCat(Memaudit(), " run ", MEMAUDIT_SOURCE_DIR,
                                  "/examples/quickstart.yaml --device gpu --dir ", dir, "/run"));
  EXPECT_EQ(out.exit_code, 2) << out.text;
  EXPECT_THAT(out.text, HasSubstr("--device: \"gpu\" is not a device"));
  EXPECT_THAT(out.text, ::testing::Not(HasSubstr("starting scorer")));
  // The worker itself refuses CUDA where there is none, naming the flag.
  Output worker = Shell(absl::StrCat("timeout 20 ", MEMAUDIT_BIN_DIR,
                                     "/memaudit-worker --device cuda:0 "
                                     "--coordinator 127.0.0.1:1 --metrics-listen 127.0.0.1:0"));
  if (worker.text.find("training on cuda") != std::string::npos) {
    GTEST_SKIP() << "this machine has CUDA";
  }
  EXPECT_EQ(worker.exit_code, 1) << worker.text;
  EXPECT_THAT(worker.text, HasSubstr("--device: \"cuda:0\" but this machine has no usable CUDA"));
}

TEST(CliRunTest, AReducedPrecisionOnTheCpuIsRefusedBeforeAnythingStarts) {
  const std::string dir = FreshTestDir();
  const std::string run = absl::StrCat(Memaudit(), " run ", MEMAUDIT_SOURCE_DIR,
                                       "/examples/quickstart.yaml --dir ", dir, "/run");
  Output bad = Shell(run + " --matmul-precision fp16");
  EXPECT_EQ(bad.exit_code, 2) << bad.text;
  EXPECT_THAT(bad.text, HasSubstr("--matmul-precision: \"fp16\" is not a precision"));
  Output cpu = Shell(run + " --device cpu --matmul-precision tf32");
  EXPECT_NE(cpu.exit_code, 0) << cpu.text;
  EXPECT_THAT(cpu.text, HasSubstr("--matmul-precision: \"tf32\" needs a CUDA device"));
  EXPECT_THAT(cpu.text, ::testing::Not(HasSubstr("starting scorer")));
  // The worker checks it too.
  Output worker = Shell(absl::StrCat("timeout 20 ", MEMAUDIT_BIN_DIR,
                                     "/memaudit-worker --matmul-precision bf16 "
                                     "--coordinator 127.0.0.1:1 --metrics-listen 127.0.0.1:0"));
  EXPECT_EQ(worker.exit_code, 1) << worker.text;
  EXPECT_THAT(worker.text, HasSubstr("--matmul-precision: \"bf16\" needs a CUDA device"));
}

// Copies `binaries` (names, space-separated) from the build into `dir`,
// without the engine module that lies beside them there.
bool CopyWithoutEngine(const std::string& binaries, const std::string& dir) {
  return Shell(absl::StrCat("mkdir -p ", dir, " && cd ", MEMAUDIT_BIN_DIR, " && cp ", binaries, " ",
                            dir, "/"))
             .exit_code == 0;
}

// memaudit-worker loads its engine (libmemaudit_engine.so) from beside
// itself or ../lib/memaudit/: a copy without it says so and exits 1, where a
// worker that could train nothing would otherwise lease tasks.
TEST(CliRunTest, AWorkerWithoutItsEngineModuleSaysSoAndExits) {
  const std::string dir = FreshTestDir();
  ASSERT_TRUE(CopyWithoutEngine("memaudit-worker", dir));
  Output worker = Shell(absl::StrCat("timeout 20 ", dir,
                                     "/memaudit-worker --insecure --coordinator 127.0.0.1:1 "
                                     "--metrics-listen 127.0.0.1:0"));
  EXPECT_EQ(worker.exit_code, 1) << worker.text;
  EXPECT_THAT(worker.text, HasSubstr("libmemaudit_engine.so not found (looked for"));
}

// When every worker of `memaudit run` exits (here: no engine module beside
// it), no task can run: the run says why and stops, instead of waiting for
// ever (`timeout` fails the test if it hangs).
TEST(CliRunTest, ARunWhoseWorkersAllExitSaysWhyAndStops) {
  const std::string dir = FreshTestDir();
  const std::string bin = dir + "/bin";
  ASSERT_TRUE(
      CopyWithoutEngine("memaudit memaudit-coordinator memaudit-scorer memaudit-worker", bin));
  Output out = Shell(absl::StrCat("timeout 60 ", bin, "/memaudit run ", MEMAUDIT_SOURCE_DIR,
                                  "/examples/quickstart.yaml --workers 2 --dir ", dir, "/run"));
  EXPECT_EQ(out.exit_code, 3) << out.text;
  EXPECT_THAT(out.text, HasSubstr("every worker exited, so no task can run"));
  EXPECT_THAT(out.text, HasSubstr("worker-0 exited with status 1"));
  EXPECT_THAT(out.text, HasSubstr("worker-1 exited with status 1"));
  EXPECT_THAT(out.text, HasSubstr("libmemaudit_engine.so not found"));
  // The services were stopped, not left behind.
  // ([m]: the pattern must not match pgrep's own shell.)
  EXPECT_NE(Shell(absl::StrCat("pgrep -f '", bin, "/[m]emaudit-'")).exit_code, 0);
}

TEST(CliRunTest, RemoteCommandsExplainAnUnreachableCoordinator) {
  Output out = Shell(absl::StrCat(Memaudit(), " status --insecure --coordinator 127.0.0.1:1"));
  EXPECT_EQ(out.exit_code, 3);
  EXPECT_THAT(out.text, HasSubstr("not reachable"));
  EXPECT_THAT(out.text, HasSubstr("--coordinator"));
}

}  // namespace
}  // namespace memaudit::testing
