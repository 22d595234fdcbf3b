#include "engine/trainer.h"

#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "engine/classifier_run.h"
#include "engine/device.h"
#include "engine/model.h"
#include "engine/optimizer.h"
#include "engine/signals.h"
#include "engine/test_util.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;
using testing::FlatParams;
using testing::Range;

ModelFactory Factory(ModelSpec spec, uint64_t seed) {
  return [spec, seed] { return BuildModel(spec, seed); };
}

ModelSpec MlpSpec(double dropout = 0) {
  ModelSpec spec;
  spec.kind = ModelKind::kMlp;
  spec.inputs = 8;
  spec.classes = 3;
  spec.hidden = {16};
  spec.dropout = dropout;
  return spec;
}

TrainerOptions Options(OptimizerKind kind, LrScheduleKind schedule = LrScheduleKind::kConstant) {
  TrainerOptions o;
  o.optimizer.kind = kind;
  o.optimizer.learning_rate =
      kind == OptimizerKind::kAdam || kind == OptimizerKind::kRmsProp ? 0.01 : 0.1;
  o.optimizer.weight_decay = 1e-4;
  o.schedule.kind = schedule;
  o.schedule.step_size = 10;
  o.schedule.gamma = 0.5;
  o.schedule.total_steps = 40;
  return o;
}

std::vector<double> TrainAndFlatten(const ModelSpec& spec, const TrainerOptions& o,
                                    uint64_t init_seed, uint64_t order_seed, uint64_t steps) {
  TensorDataset data = SyntheticBlobs(96, 8, 3, 2.0, 7);
  auto trainer = Trainer::Create(Factory(spec, init_seed), o);
  MEMAUDIT_EXPECT_OK(trainer);
  EpochSchedule schedule(Range(96), 16, order_seed);
  MEMAUDIT_EXPECT_OK((*trainer)->Train(data, schedule, steps));
  return FlatParams((*trainer)->model());
}

// The worker's --matmul-precision: a name from the list, and TF32/bf16 only
// with a CUDA default device (the CPU runs fp32 whatever is asked).
TEST(DeviceTest, MatmulPrecisionIsCheckedAgainstTheDevice) {
  EXPECT_EQ(CurrentMatmulPrecision(), MatmulPrecision::kFp32);
  EXPECT_THAT(SetMatmulPrecision("fp16"), StatusIs(absl::StatusCode::kInvalidArgument));
  MEMAUDIT_ASSERT_OK(SetDefaultDevice("cpu"));
  absl::Status s = SetMatmulPrecision("tf32");
  EXPECT_THAT(s, StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_NE(std::string(s.message()).find("--matmul-precision"), std::string::npos) << s;
  EXPECT_THAT(SetMatmulPrecision("bf16"), StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(CurrentMatmulPrecision(), MatmulPrecision::kFp32);  // failed calls change nothing
  MEMAUDIT_ASSERT_OK(SetMatmulPrecision("fp32"));
  if (torch::cuda::is_available()) {
    MEMAUDIT_ASSERT_OK(SetDefaultDevice("cuda"));
    MEMAUDIT_ASSERT_OK(SetMatmulPrecision("tf32"));
    EXPECT_TRUE(at::globalContext().allowTF32CuBLAS());
    MEMAUDIT_ASSERT_OK(SetMatmulPrecision("fp32"));
    EXPECT_FALSE(at::globalContext().allowTF32CuBLAS());
    EXPECT_FALSE(at::globalContext().allowTF32CuDNN());
    MEMAUDIT_ASSERT_OK(SetDefaultDevice("cpu"));
  }
}

// The worker's --device: runs that name no device train on the process
// default, which only a valid, present device can become.
// A worker offering several GPUs pins each task's thread to its own: the
// pin is the thread's own and outranks the process default.
TEST(DeviceTest, AThreadsDevicesOutrankTheDefaultOnThatThreadOnly) {
  EXPECT_EQ(DefaultDevice(), "cpu");
  EXPECT_EQ(ThreadDevices(), std::vector<std::string>{"cpu"});
  EXPECT_THAT(SetThreadDevices({"gpu"}), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SetThreadDevices({"cpu", "cuda"}), StatusIs(absl::StatusCode::kInvalidArgument))
      << "a pin names its device";
  EXPECT_THAT(SetThreadDevices({absl::StrCat("cuda:", CudaDeviceCount())}),
              StatusIs(absl::StatusCode::kFailedPrecondition));
  EXPECT_EQ(ThreadDevices(), std::vector<std::string>{"cpu"}) << "a refused pin changes nothing";
  MEMAUDIT_ASSERT_OK(SetThreadDevices({"cpu", "cpu"}));
  EXPECT_EQ(ThreadDevices(), (std::vector<std::string>{"cpu", "cpu"}));
  std::vector<std::string> other;
  std::thread([&other] { other = ThreadDevices(); }).join();
  EXPECT_EQ(other, std::vector<std::string>{"cpu"}) << "another thread keeps the default";
  if (CudaDeviceCount() > 0) {
    const std::string last = absl::StrCat("cuda:", CudaDeviceCount() - 1);
    MEMAUDIT_ASSERT_OK(SetThreadDevices({last}));
    EXPECT_EQ(DefaultDevice(), last);
  }
  MEMAUDIT_ASSERT_OK(SetThreadDevices({}));
  EXPECT_EQ(ThreadDevices(), std::vector<std::string>{"cpu"});
}

TEST(DeviceTest, DefaultDeviceIsCheckedAndUsedByRunsThatNameNone) {
  EXPECT_EQ(DefaultDevice(), "cpu");
  EXPECT_THAT(SetDefaultDevice("gpu"), StatusIs(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(SetDefaultDevice("cuda:x"), StatusIs(absl::StatusCode::kInvalidArgument));
  absl::StatusOr<std::string> automatic = SetDefaultDevice("auto");
  MEMAUDIT_ASSERT_OK(automatic);
  EXPECT_EQ(*automatic, torch::cuda::is_available() ? "cuda" : "cpu");
  if (!torch::cuda::is_available()) {
    absl::Status s = SetDefaultDevice("cuda").status();
    EXPECT_THAT(s, StatusIs(absl::StatusCode::kFailedPrecondition));
    EXPECT_NE(std::string(s.message()).find("--device"), std::string::npos) << s;
  }
  EXPECT_EQ(DefaultDevice(), *automatic);  // failed calls change nothing
  ModelSpec spec;
  spec.kind = ModelKind::kLogReg;
  spec.inputs = 4;
  spec.classes = 2;
  auto trainer = Trainer::Create([&] { return BuildModel(spec, 1); }, TrainerOptions{});
  MEMAUDIT_ASSERT_OK(trainer);
  EXPECT_EQ((*trainer)->device().str(), *automatic);
  MEMAUDIT_ASSERT_OK(SetDefaultDevice("cpu"));
}

TEST(LrScheduleTest, StepAndCosine) {
  OptimizerSpec opt;
  opt.learning_rate = 1.0;
  LrScheduleSpec s;
  s.kind = LrScheduleKind::kStep;
  s.step_size = 10;
  s.gamma = 0.5;
  EXPECT_DOUBLE_EQ(LearningRateAt(opt, s, 9), 1.0);
  EXPECT_DOUBLE_EQ(LearningRateAt(opt, s, 10), 0.5);
  EXPECT_DOUBLE_EQ(LearningRateAt(opt, s, 25), 0.25);
  s.kind = LrScheduleKind::kCosine;
  s.total_steps = 100;
  s.min_lr = 0.1;
  EXPECT_DOUBLE_EQ(LearningRateAt(opt, s, 0), 1.0);
  EXPECT_NEAR(LearningRateAt(opt, s, 50), 0.55, 1e-12);
  EXPECT_DOUBLE_EQ(LearningRateAt(opt, s, 100), 0.1);
  EXPECT_DOUBLE_EQ(LearningRateAt(opt, s, 1000), 0.1);
}

TEST(TrainerTest, EveryOptimizerIsDeterministicAndLearns) {
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kMomentum, OptimizerKind::kAdam,
                             OptimizerKind::kRmsProp}) {
    for (LrScheduleKind sched :
         {LrScheduleKind::kConstant, LrScheduleKind::kStep, LrScheduleKind::kCosine}) {
      TrainerOptions o = Options(kind, sched);
      auto a = TrainAndFlatten(MlpSpec(), o, 1, 2, 30);
      auto b = TrainAndFlatten(MlpSpec(), o, 1, 2, 30);
      EXPECT_EQ(a, b) << static_cast<int>(kind) << "/" << static_cast<int>(sched);
      EXPECT_NE(a, TrainAndFlatten(MlpSpec(), o, 1, 3, 30)) << "order seed must matter";
      EXPECT_NE(a, TrainAndFlatten(MlpSpec(), o, 4, 2, 30)) << "init seed must matter";
    }
    // The loss falls on separable blobs.
    TensorDataset data = SyntheticBlobs(96, 8, 3, 2.0, 7);
    auto trainer = Trainer::Create(Factory(MlpSpec(), 1), Options(kind));
    MEMAUDIT_ASSERT_OK(trainer);
    EpochSchedule schedule(Range(96), 16, 5);
    std::vector<double> losses;
    MEMAUDIT_ASSERT_OK((*trainer)->Train(data, schedule, 60, [&](uint64_t, double loss) {
      losses.push_back(loss);
      return true;
    }));
    EXPECT_LT(losses.back(), 0.5 * losses.front()) << static_cast<int>(kind);
  }
}

TEST(TrainerTest, DropoutHasItsOwnSeed) {
  TrainerOptions o = Options(OptimizerKind::kMomentum);
  auto a = TrainAndFlatten(MlpSpec(0.3), o, 1, 2, 20);
  EXPECT_EQ(a, TrainAndFlatten(MlpSpec(0.3), o, 1, 2, 20));
  o.dropout_seed = 9;
  auto c = TrainAndFlatten(MlpSpec(0.3), o, 1, 2, 20);
  EXPECT_NE(a, c);
  EXPECT_EQ(c, TrainAndFlatten(MlpSpec(0.3), o, 1, 2, 20));
}

// The generic trainer reproduces the worker's RunClassifier bit for bit.
// RunClassifier trains through the ensemble's bmm, so this holds where every
// GEMM has in x batch x out >= 400; below, LibTorch's bmm takes a naive
// kernel (docs/engine.md), hence hidden 32 and full batches of 16.
TEST(TrainerTest, MatchesRunClassifierExactly) {
  data::LabeledExamples images;
  images.count = 120;
  images.features = 16;
  images.classes = 2;
  for (uint32_t i = 0; i < images.count; ++i) {
    images.labels.push_back(i % 2);
    for (uint32_t f = 0; f < 16; ++f)
      images.pixels.push_back((i * 37 + f * 11 + (i % 2) * 90) % 256);
  }
  ClassifierRunSpec spec;
  spec.hidden = {32};
  spec.learning_rate = 0.1;
  spec.epochs = 3;
  spec.batch_size = 16;
  spec.init_seed = 11;
  spec.order_seed = 12;
  for (uint32_t i = 0; i < 96; ++i) spec.train_indices.push_back(i);
  for (uint32_t i = 0; i < 120; ++i) spec.eval_indices.push_back(i);
  auto expected = RunClassifier(images, spec, nullptr);
  MEMAUDIT_ASSERT_OK(expected);

  ModelSpec m;
  m.kind = ModelKind::kMlp;
  m.inputs = 16;
  m.classes = 2;
  m.hidden = {32};
  TrainerOptions o;
  o.optimizer.kind = OptimizerKind::kMomentum;
  o.optimizer.learning_rate = 0.1;
  o.optimizer.momentum = 0.9;
  auto trainer = Trainer::Create(Factory(m, 11), o);
  MEMAUDIT_ASSERT_OK(trainer);
  TensorDataset train = FromLabeledExamples(images, spec.train_indices);
  EpochSchedule schedule(Range(96), 16, 12);
  MEMAUDIT_ASSERT_OK((*trainer)->Train(train, schedule, expected->steps));
  TensorDataset eval = FromLabeledExamples(images, spec.eval_indices);
  torch::NoGradGuard no_grad;
  (*trainer)->model().eval();
  torch::Tensor phi = LogitScaledConfidence((*trainer)->model().Forward(eval.x()), eval.y());
  std::vector<double> got(phi.data_ptr<double>(), phi.data_ptr<double>() + phi.numel());
  EXPECT_EQ(got, expected->phi);
}

TEST(TrainerTest, OtherModelsTrain) {
  // A CNN on 8x8 "images" and both recurrent LMs on a repeating sequence.
  ModelSpec cnn;
  cnn.kind = ModelKind::kCnn;
  cnn.inputs = 64;
  cnn.classes = 3;
  cnn.hidden = {4, 8, 16};
  cnn.dropout = 0.1;
  TensorDataset blobs = SyntheticBlobs(96, 64, 3, 1.0, 3);
  auto t = Trainer::Create(Factory(cnn, 1), Options(OptimizerKind::kAdam));
  MEMAUDIT_ASSERT_OK(t);
  std::vector<double> losses;
  auto record = [&](uint64_t, double l) {
    losses.push_back(l);
    return true;
  };
  MEMAUDIT_ASSERT_OK((*t)->Train(blobs, EpochSchedule(Range(96), 16, 1), 60, record));
  EXPECT_LT(losses.back(), 0.5 * losses.front());

  torch::Tensor seq = torch::arange(0, 8, torch::kLong).repeat({16, 3});  // 16 x 24
  TensorDataset lm_data(seq.slice(1, 0, 23), seq.slice(1, 1, 24));
  for (ModelKind kind : {ModelKind::kLstmLm, ModelKind::kGruLm, ModelKind::kTransformerLm}) {
    ModelSpec lm;
    lm.kind = kind;
    lm.vocab = 8;
    lm.embedding = 8;
    lm.layers = 2;
    lm.units = 16;
    lm.dropout = 0.1;
    TrainerOptions o = Options(OptimizerKind::kAdam);
    o.optimizer.learning_rate = 0.03;
    auto lt = Trainer::Create(Factory(lm, 2), o);
    MEMAUDIT_ASSERT_OK(lt);
    losses.clear();
    MEMAUDIT_ASSERT_OK((*lt)->Train(lm_data, EpochSchedule(Range(16), 8, 1), 60, record));
    EXPECT_LT(losses.back(), 0.2 * losses.front()) << static_cast<int>(kind);
  }
}

TEST(TrainerTest, RejectsBadOptions) {
  TrainerOptions o;
  o.optimizer.learning_rate = 0;
  EXPECT_THAT(Trainer::Create(Factory(MlpSpec(), 1), o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  o = TrainerOptions();
  o.device = "nonsense";
  EXPECT_THAT(Trainer::Create(Factory(MlpSpec(), 1), o),
              StatusIs(absl::StatusCode::kInvalidArgument));
  ModelSpec bad = MlpSpec();
  bad.classes = 1;
  EXPECT_THAT(BuildModel(bad, 0), StatusIs(absl::StatusCode::kInvalidArgument));
}

}  // namespace
}  // namespace memaudit::engine
