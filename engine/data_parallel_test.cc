#include "engine/data_parallel.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "absl/time/clock.h"
#include "common/testing/status_matchers.h"
#include "engine/classifier_models.h"
#include "engine/collective_environment.h"
#include "engine/model.h"
#include "engine/test_util.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;
using testing::FlatParams;
using testing::Range;

constexpr int64_t kRows = 512;
constexpr uint32_t kBatch = 64;

ModelFactory MlpFactory(uint64_t seed, double dropout = 0) {
  ModelSpec spec;
  spec.kind = ModelKind::kMlp;
  spec.inputs = 8;
  spec.classes = 4;
  spec.hidden = {32};
  spec.dropout = dropout;
  return [spec, seed] { return BuildModel(spec, seed); };
}

TrainerOptions MomentumOptions() {
  TrainerOptions o;
  o.optimizer.kind = OptimizerKind::kSgd;
  o.optimizer.learning_rate = 0.05;
  o.optimizer.momentum = 0.9;
  o.dropout_seed = 11;
  return o;
}

TensorDataset Blobs() { return SyntheticBlobs(kRows, 8, 4, 1.0, 3); }

struct Trained {
  std::vector<std::vector<double>> params;  // per rank
  double last_loss = 0;
  double accuracy = 0;  // rank 0 on the training rows
};

double Accuracy(Model& model, const TensorDataset& data) {
  torch::NoGradGuard no_grad;
  model.eval();
  torch::Tensor predicted = model.Forward(data.x()).argmax(1);
  return predicted.eq(data.y()).to(torch::kFloat64).mean().item<double>();
}

// Trains `trainer` (a Trainer or a DataParallelTrainer) for `steps` steps of
// the blobs' epochs; records the last loss and rank 0's training accuracy.
template <typename T>
void TrainOnBlobs(T& trainer, Model& model, uint64_t steps, Trained* out) {
  const TensorDataset data = Blobs();
  const EpochSchedule schedule(Range(kRows), kBatch, 9);
  MEMAUDIT_EXPECT_OK(trainer.Train(data, schedule, steps, [&](uint64_t, double loss) {
    out->last_loss = loss;
    return true;
  }));
  EXPECT_EQ(trainer.step(), steps);
  out->accuracy = Accuracy(model, data);
}

Trained TrainDataParallel(const std::vector<std::string>& devices, uint64_t steps,
                          double dropout = 0) {
  Trained out;
  auto dp = DataParallelTrainer::Create(MlpFactory(5, dropout), MomentumOptions(), devices);
  MEMAUDIT_EXPECT_OK(dp);
  if (!dp.ok()) return out;
  TrainOnBlobs(**dp, (*dp)->rank(0).model(), steps, &out);
  for (int r = 0; r < (*dp)->world_size(); ++r) {
    out.params.push_back(FlatParams((*dp)->rank(r).model()));
  }
  return out;
}

Trained TrainOneDevice(uint64_t steps, double dropout = 0) {
  Trained out;
  auto trainer = Trainer::Create(MlpFactory(5, dropout), MomentumOptions());
  MEMAUDIT_EXPECT_OK(trainer);
  if (!trainer.ok()) return out;
  TrainOnBlobs(**trainer, (*trainer)->model(), steps, &out);
  out.params.push_back(FlatParams((*trainer)->model()));
  return out;
}

double MaxAbsDifference(const std::vector<double>& a, const std::vector<double>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Where LibTorch was built without Gloo, or its headers are missing, CPU
// ranks are refused (UNIMPLEMENTED) and these tests have nothing to check.
class DataParallelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::Status s =
        DataParallelTrainer::Create(MlpFactory(1), MomentumOptions(), {"cpu", "cpu"}).status();
    if (s.code() == absl::StatusCode::kUnimplemented) GTEST_SKIP() << s;
  }
};

TEST_F(DataParallelTest, OneRankIsThePlainTrainerBitForBit) {
  const Trained one = TrainOneDevice(40, 0.2);
  const Trained dp = TrainDataParallel({"cpu"}, 40, 0.2);
  ASSERT_EQ(dp.params.size(), 1u);
  EXPECT_EQ(dp.params[0], one.params[0]);
  EXPECT_EQ(dp.last_loss, one.last_loss);
}

// Gloo's all-reduce between two CPU ranks in one process: the replicas stay
// identical after every step, and a repeat gives the same bits.
TEST_F(DataParallelTest, TwoCpuRanksRepeatBitForBitWithIdenticalReplicas) {
  const Trained a = TrainDataParallel({"cpu", "cpu"}, 40);
  const Trained b = TrainDataParallel({"cpu", "cpu"}, 40);
  ASSERT_EQ(a.params.size(), 2u);
  ASSERT_EQ(b.params.size(), 2u);
  EXPECT_EQ(a.params[0], a.params[1]) << "the ranks' replicas diverged";
  EXPECT_EQ(a.params[0], b.params[0]) << "a repeat trained other bits";
  EXPECT_EQ(a.last_loss, b.last_loss);
  const Trained three = TrainDataParallel({"cpu", "cpu", "cpu"}, 40);
  ASSERT_EQ(three.params.size(), 3u);
  EXPECT_EQ(three.params[0], three.params[2]);
}

// The reduced gradient is the full batch's mean gradient summed in another
// order: training follows one device's up to rounding (8 epochs here).
TEST_F(DataParallelTest, TwoRanksTrainAsOneDeviceUpToRounding) {
  const uint64_t steps = 8 * kRows / kBatch;
  const Trained one = TrainOneDevice(steps);
  const Trained two = TrainDataParallel({"cpu", "cpu"}, steps);
  const Trained four = TrainDataParallel({"cpu", "cpu", "cpu", "cpu"}, steps);
  ASSERT_EQ(two.params.size(), 2u);
  ASSERT_EQ(four.params.size(), 4u);
  EXPECT_LT(MaxAbsDifference(two.params[0], one.params[0]), 1e-4);
  EXPECT_LT(MaxAbsDifference(four.params[0], one.params[0]), 1e-4);
  EXPECT_NEAR(two.last_loss, one.last_loss, 1e-5);
  EXPECT_NEAR(four.last_loss, one.last_loss, 1e-5);
  EXPECT_EQ(two.accuracy, one.accuracy);
  EXPECT_GT(one.accuracy, 0.5) << "the model learned something to compare";
}

// A model whose batch loss throws on its `fail_at`-th call: a rank whose
// device fails mid-training.
class FailingMlp : public MlpModel {
 public:
  explicit FailingMlp(int fail_at) : MlpModel(8, {32}, 4, 0), fail_at_(fail_at) {}
  torch::Tensor BatchLoss(const torch::Tensor& x, const torch::Tensor& y) override {
    if (++calls_ == fail_at_) throw std::runtime_error("device lost");
    return Model::BatchLoss(x, y);
  }

 private:
  const int fail_at_;
  int calls_ = 0;
};

// Its peer waits in the all-reduce, gives up after the timeout, and the
// step returns the failed rank's own error, not the peer's timeout (which
// alone would be UNAVAILABLE: released, no attempt spent).
TEST_F(DataParallelTest, ARankThatFailsMidStepGivesItsOwnErrorNotItsPeersTimeout) {
  int built = 0;
  const ModelFactory base = MlpFactory(5);
  const ModelFactory factory = [&built, base]() -> absl::StatusOr<std::shared_ptr<Model>> {
    if (built++ == 1) return std::shared_ptr<Model>(std::make_shared<FailingMlp>(3));
    return base();
  };
  auto dp = DataParallelTrainer::Create(factory, MomentumOptions(), {"cpu", "cpu"},
                                        std::chrono::milliseconds(1000));
  MEMAUDIT_ASSERT_OK(dp);
  const TensorDataset data = Blobs();
  const EpochSchedule schedule(Range(kRows), kBatch, 9);
  const absl::Time start = absl::Now();
  const absl::Status s = (*dp)->Train(data, schedule, 10);
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInternal));
  EXPECT_NE(s.message().find("rank 1: device lost"), absl::string_view::npos) << s;
  EXPECT_LT(absl::Now() - start, absl::Seconds(60)) << "the peer gave up waiting";
  EXPECT_EQ((*dp)->step(), 2u) << "the steps before the failure stand";
}

TEST_F(DataParallelTest, RefusesWhatItCannotTrain) {
  EXPECT_THAT(DataParallelTrainer::Create(MlpFactory(1), MomentumOptions(), {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  TrainerOptions dp_sgd = MomentumOptions();
  dp_sgd.dp.enabled = true;
  absl::Status s = DataParallelTrainer::Create(MlpFactory(1), dp_sgd, {"cpu", "cpu"}).status();
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_NE(s.message().find("DP-SGD"), absl::string_view::npos) << s;
  EXPECT_FALSE(
      DataParallelTrainer::Create(MlpFactory(1), MomentumOptions(), {"cpu", "cuda:0"}).ok());
  EXPECT_FALSE(DataParallelTrainer::Create(MlpFactory(1), MomentumOptions(), {"cpu", "tpu"}).ok());

  auto two = DataParallelTrainer::Create(MlpFactory(1), MomentumOptions(), {"cpu", "cpu"});
  MEMAUDIT_ASSERT_OK(two);
  TensorDataset data = Blobs();
  EXPECT_THAT((*two)->Step(data.Gather({0})).status(),
              StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ((*two)->step(), 0u) << "a refused step changes nothing";
  MEMAUDIT_EXPECT_OK((*two)->Step(data.Gather({0, 1, 2})));
  EXPECT_EQ((*two)->step(), 1u);
}

// What memaudit-worker sets before its first thread: a collective that times
// out throws on the waiting rank instead of aborting the process.
TEST(CollectiveEnvironmentTest, SetsBlockingWaitsAndKeepsAnOperatorsOwnChoice) {
  for (const auto& [name, value] : kCollectiveEnvironment) unsetenv(name);
  setenv("NCCL_ASYNC_ERROR_HANDLING", "3", 1);
  SetCollectiveEnvironmentDefaults();
  EXPECT_STREQ(getenv("TORCH_NCCL_BLOCKING_WAIT"), "1");
  EXPECT_STREQ(getenv("NCCL_BLOCKING_WAIT"), "1");
  EXPECT_STREQ(getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING"), "0");
  EXPECT_STREQ(getenv("NCCL_ASYNC_ERROR_HANDLING"), "3") << "set by the operator: kept";
  for (const auto& [name, value] : kCollectiveEnvironment) unsetenv(name);
}

// NCCL between two CUDA devices (a machine with one GPU skips it: NCCL
// refuses two ranks on one device).
TEST(DataParallelCudaTest, TwoDevicesRepeatBitForBitWithIdenticalReplicas) {
  if (torch::cuda::device_count() < 2) GTEST_SKIP() << "needs two CUDA devices";
  SetCollectiveEnvironmentDefaults();  // as memaudit-worker does
  const Trained a = TrainDataParallel({"cuda:0", "cuda:1"}, 40);
  const Trained b = TrainDataParallel({"cuda:0", "cuda:1"}, 40);
  ASSERT_EQ(a.params.size(), 2u);
  EXPECT_EQ(a.params[0], a.params[1]);
  EXPECT_EQ(a.params[0], b.params[0]);
}

}  // namespace
}  // namespace memaudit::engine
