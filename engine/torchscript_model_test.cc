#include "engine/torchscript_model.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/testing/status_matchers.h"
#include "common/training/model_limits.h"
#include "engine/signals.h"
#include "engine/test_util.h"
#include "engine/trainer.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

// A Python that can import torch: Debian's python3-torch installs for
// /usr/bin/python3, which a pyenv or venv python3 on PATH may shadow.
std::string PythonWithTorch() {
  for (const char* py : {"/usr/bin/python3", "python3"}) {
    if (std::system((std::string(py) + " -c 'import torch' >/dev/null 2>&1").c_str()) == 0)
      return py;
  }
  return "";
}

// Exports tests/python/export_mlp.py's model; empty if python3-torch is absent.
std::string ExportModel() {
  const std::string python = PythonWithTorch();
  if (python.empty()) return "";
  const std::string path =
      (std::filesystem::temp_directory_path() / "memaudit_ts_model_test.pt").string();
  const std::string cmd =
      python + " " + MEMAUDIT_SOURCE_DIR + "/tests/python/export_mlp.py " + path + " 8 3 16";
  return std::system(cmd.c_str()) == 0 ? path : "";
}

TEST(TorchScriptModelTest, TrainsAndScoresLikeABuiltInModel) {
  const std::string path = ExportModel();
  if (path.empty()) GTEST_SKIP() << "python3-torch is not installed";
  ModelSpec spec;
  spec.kind = ModelKind::kTorchScript;
  spec.torchscript_path = path;
  TrainerOptions o;
  o.optimizer.kind = OptimizerKind::kAdam;
  o.optimizer.learning_rate = 0.01;
  ModelFactory factory = [spec] { return BuildModel(spec, 0); };
  auto t = Trainer::Create(factory, o);
  MEMAUDIT_ASSERT_OK(t);
  EXPECT_EQ((*t)->model().parameters().size(), 4u);
  TensorDataset data = SyntheticBlobs(96, 8, 3, 2.0, 7);
  EpochSchedule schedule(testing::Range(96), 16, 1);
  std::vector<double> losses;
  MEMAUDIT_ASSERT_OK((*t)->Train(data, schedule, 20, [&](uint64_t, double l) {
    losses.push_back(l);
    return true;
  }));
  // Checkpoints and forks work on the aliased parameters too.
  auto arm = (*t)->Fork();
  MEMAUDIT_ASSERT_OK(arm);
  MEMAUDIT_ASSERT_OK((*t)->Train(data, schedule, 60, [&](uint64_t, double l) {
    losses.push_back(l);
    return true;
  }));
  MEMAUDIT_ASSERT_OK((*arm)->Train(data, schedule, 60));
  EXPECT_EQ(testing::FlatParams((*t)->model()), testing::FlatParams((*arm)->model()));
  EXPECT_LT(losses.back(), 0.5 * losses.front());
  torch::NoGradGuard no_grad;
  (*t)->model().eval();
  torch::Tensor phi = LogitScaledConfidence((*t)->model().Forward(data.x()), data.y());
  EXPECT_EQ(phi.size(0), 96);
  EXPECT_GT(phi.mean().item<double>(), 0);  // confident on its training data
  std::filesystem::remove(path);
}

TEST(TorchScriptModelTest, ModulePastTheParameterLimitIsRefusedAtLoad) {
  const std::string python = PythonWithTorch();
  if (python.empty()) GTEST_SKIP() << "python3-torch is not installed";
  const std::string path =
      (std::filesystem::temp_directory_path() / "memaudit_ts_oversized_test.pt").string();
  const std::string cmd = python + " " + MEMAUDIT_SOURCE_DIR +
                          "/tests/python/export_oversized.py " + path + " 300000000";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  ModelSpec spec;
  spec.kind = ModelKind::kTorchScript;
  spec.torchscript_path = path;
  EXPECT_THAT(BuildModel(spec, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::HasSubstr("the module has 3e+08 parameters; at most 2.5e+08")));
  std::filesystem::remove(path);
}

TEST(TorchScriptModelTest, FilePastTheSizeLimitIsRefusedBeforeItIsRead) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / "memaudit_ts_huge_file_test.pt";
  { std::ofstream touch(path); }
  std::filesystem::resize_file(path, kMaxTorchScriptBytes + 1);  // sparse: no disk used
  ModelSpec spec;
  spec.kind = ModelKind::kTorchScript;
  spec.torchscript_path = path.string();
  EXPECT_THAT(BuildModel(spec, 0), StatusIs(absl::StatusCode::kInvalidArgument,
                                            ::testing::HasSubstr("bytes; at most 2147483648")));
  std::filesystem::remove(path);
}

TEST(TorchScriptModelTest, MissingFileIsAnInvalidArgument) {
  ModelSpec spec;
  spec.kind = ModelKind::kTorchScript;
  spec.torchscript_path = "/nonexistent/model.pt";
  EXPECT_THAT(BuildModel(spec, 0), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::engine
