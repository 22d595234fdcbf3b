// Portable and native numerics through real processes (common/training/numerics.h):
// a portable audit computes the same bits whatever kernels the environment
// asks the libraries for, and a native audit stays within one numeric class.
#include "common/training/numerics.h"

#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "audits/membership/attacks.h"
#include "common/messages/spec_yaml.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"

namespace memaudit::testing {
namespace {

using ::testing::HasSubstr;

// What a machine of another CPU type would pick, forced by environment: no
// vectorised ATen kernels, oneDNN's SSE4.1 kernels, OpenBLAS's Prescott ones.
const std::vector<std::string>& OtherKernels() {
  static const auto* env = new std::vector<std::string>{
      "ATEN_CPU_CAPABILITY=default", "DNNL_MAX_CPU_ISA=SSE41", "OPENBLAS_CORETYPE=Prescott"};
  return *env;
}

// Enough arithmetic that the kernels' rounding shows in the numbers.
v1::AuditSpec NumericsSpec(const std::string& numerics) {
  v1::AuditSpec spec = TinyMembershipSpec(4, 4);
  spec.mutable_membership()->mutable_model()->set_hidden(0, 64);
  spec.mutable_resources()->set_numerics(numerics);
  return spec;
}

class NumericsTest : public ClusterTest {
 protected:
  // Runs `spec` on a fresh cluster of workers started with `env` each.
  v1::AuditResults RunWith(const v1::AuditSpec& spec,
                           const std::vector<std::vector<std::string>>& worker_envs,
                           const std::string& suffix) {
    StartCluster(/*workers=*/0, /*lease_ttl_ms=*/10000, suffix);
    for (const std::vector<std::string>& env : worker_envs) {
      EXPECT_TRUE(cluster_->AddWorker(env).ok());
    }
    Finished done;
    RunToCompletion(spec, &done);
    cluster_->Stop();
    return done.results;
  }
};

TEST_F(NumericsTest, APortableAuditIgnoresWhatKernelsTheEnvironmentAsksFor) {
  if (!CpuHasPortableIsa()) GTEST_SKIP() << "no AVX2 and FMA";
  const v1::AuditResults pinned = RunWith(NumericsSpec("portable"), {{}}, "-pinned");
  const v1::AuditResults forced =
      RunWith(NumericsSpec("portable"), {OtherKernels(), {}}, "-forced");
  ASSERT_TRUE(pinned.complete() && forced.complete());
  EXPECT_EQ(Numbers(forced), Numbers(pinned))
      << "two workers, one told to use other kernels, gave other bits";
  EXPECT_EQ(pinned.spec().resources().numerics(), "portable");
  // The results record what trained them: both workers, whatever their
  // environment asked for, in one environment of AVX2 kernels.
  ASSERT_EQ(forced.spec().resources().numeric_environments_size(), 1);
  const std::string& trained_on = forced.spec().resources().numeric_environments(0);
  EXPECT_THAT(trained_on, ::testing::StartsWith("cpu; LibTorch "));
  EXPECT_THAT(trained_on, HasSubstr("; ATen AVX2;"));
  EXPECT_THAT(trained_on, ::testing::ContainsRegex("; oneDNN [0-9.]+ avx2;"));
  EXPECT_THAT(trained_on, ::testing::ContainsRegex("; OpenBLAS [0-9.]+ Haswell$"));

  // The same environment in native mode does change the numbers: the pin
  // above is what kept them.
  worker_args_ = {"--numerics", "native"};
  const v1::AuditResults native = RunWith(NumericsSpec("native"), {OtherKernels()}, "-native");
  EXPECT_NE(Numbers(native), Numbers(pinned));
  EXPECT_THAT(native.spec().resources().numeric_class(), HasSubstr("/DNNL_MAX_CPU_ISA=SSE41"));
  ASSERT_EQ(native.spec().resources().numeric_environments_size(), 1);
  EXPECT_THAT(native.spec().resources().numeric_environments(0),
              ::testing::ContainsRegex("; ATen NO AVX; oneDNN [0-9.]+ sse41; OpenBLAS [0-9.]+ "
                                       "Prescott$"));
}

// The cross-machine check: the quickstart prints these numbers on every
// x86-64 machine with AVX2 and FMA (README.md shows them). Here one worker is
// told to use other kernels and the other to use AVX2's, as on two machines.
TEST_F(NumericsTest, TheQuickstartPrintsTheRecordedNumbersOnEveryMachine) {
  if (!CpuHasPortableIsa()) GTEST_SKIP() << "no AVX2 and FMA";
  absl::StatusOr<v1::AuditSpec> spec =
      LoadSpecFile(MEMAUDIT_SOURCE_DIR "/examples/quickstart.yaml");
  MEMAUDIT_ASSERT_OK(spec);
  const v1::AuditResults results =
      RunWith(*spec,
              {OtherKernels(),
               {"ATEN_CPU_CAPABILITY=avx2", "DNNL_MAX_CPU_ISA=AVX2", "OPENBLAS_CORETYPE=Haswell"}},
              "");
  struct Recorded {
    const char* attack;
    double auc, tpr_at_1pct, tpr_at_01pct;
  };
  // Captured with scripts/readme-numbers.sh (2-core AMD EPYC, AVX-512).
  const Recorded recorded[] = {
      {"lira_online", 0.70475587109375, 0.1135625, 0.041375},
      {"lira_offline", 0.668155568359375, 0.09115625, 0.03165625},
      {"lira_online_fixed_variance", 0.7082091845703125, 0.10871875, 0.03746875},
      {"lira_offline_fixed_variance", 0.6669373017578125, 0.08134375, 0.02359375},
      {"rmia", 0.7092837314453125, 0.12653125, 0.03953125},
      {"loss", 0.586034376953125, 0.0110625, 0.0015},
  };
  ASSERT_EQ(results.attacks_size(), 6);
  for (int i = 0; i < 6; ++i) {
    const v1::AttackResult& a = results.attacks(i);
    SCOPED_TRACE(recorded[i].attack);
    EXPECT_EQ(membership::AttackName(a.attack()), recorded[i].attack);
    EXPECT_EQ(a.auc(), recorded[i].auc);
    ASSERT_EQ(a.operating_points_size(), 2);
    EXPECT_EQ(a.operating_points(0).tpr(), recorded[i].tpr_at_1pct);
    EXPECT_EQ(a.operating_points(1).tpr(), recorded[i].tpr_at_01pct);
  }
}

TEST_F(NumericsTest, ANativeAuditRunsOnWorkersOfOneNumericClassOnly) {
  worker_args_ = {"--numerics", "native"};
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/0));
  // Two classes on one machine: one worker caps oneDNN at AVX2.
  MEMAUDIT_ASSERT_OK(cluster_->AddWorker());
  MEMAUDIT_ASSERT_OK(cluster_->AddWorker({"DNNL_MAX_CPU_ISA=AVX2"}));
  Finished done;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(NumericsSpec("native"), &done));
  const std::string chosen = done.results.spec().resources().numeric_class();
  ASSERT_THAT(chosen, ::testing::StartsWith("native/"));
  // Every task ran on the worker of the chosen class; the other took none.
  const bool capped = chosen.find("DNNL_MAX_CPU_ISA=AVX2") != std::string::npos;
  const std::string ran = HttpGet(cluster_->worker_metrics_port(capped ? 1 : 0), "/metrics");
  const std::string idle = HttpGet(cluster_->worker_metrics_port(capped ? 0 : 1), "/metrics");
  EXPECT_THAT(ran, HasSubstr("memaudit_worker_tasks_total{outcome=\"succeeded\"} 4"));
  EXPECT_THAT(idle, ::testing::Not(HasSubstr("outcome=\"succeeded\"} 4")));
  // The audit's events name the class it joined.
  bool named = false;
  MEMAUDIT_EXPECT_OK(client_->Watch(done.audit_id, [&](const v1::AuditEvent& e) {
    named = named || e.message().find(absl::StrCat("numeric class ", chosen)) != std::string::npos;
    return true;
  }));
  EXPECT_TRUE(named);
  EXPECT_EQ(done.results.spec().resources().numerics(), "native");
}

}  // namespace
}  // namespace memaudit::testing
