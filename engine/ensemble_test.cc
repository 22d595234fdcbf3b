#include "engine/ensemble.h"

#include "common/seeding.h"
#include "engine/test_util.h"
#include "engine/trainer.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using testing::FlatParams;

ModelSpec Spec(ModelKind kind) {
  ModelSpec spec;
  spec.kind = kind;
  spec.inputs = 24;
  spec.classes = 4;
  if (kind == ModelKind::kMlp) spec.hidden = {32};
  return spec;
}

TrainerOptions Options(OptimizerKind kind) {
  TrainerOptions o;
  o.optimizer.kind = kind;
  o.optimizer.learning_rate = kind == OptimizerKind::kAdam ? 0.01 : 0.1;
  o.optimizer.weight_decay = 1e-4;
  o.schedule.kind = LrScheduleKind::kCosine;
  o.schedule.total_steps = 30;
  return o;
}

// Member k alone, through the plain generic trainer.
std::vector<double> TrainAlone(const ModelSpec& spec, const TrainerOptions& o,
                               const TensorDataset& data, const EnsembleMember& m, uint32_t batch,
                               uint64_t steps) {
  auto t = Trainer::Create([&] { return BuildModel(spec, m.init_seed); }, o);
  EXPECT_TRUE(t.ok());
  EXPECT_TRUE((*t)->Train(data, EpochSchedule(m.pool, batch, m.order_seed), steps).ok());
  return FlatParams((*t)->model());
}

std::vector<double> MemberFlat(EnsembleTrainer& e, int64_t k) {
  std::vector<double> out;
  for (const auto& p : e.model().MemberParameters(k)) {
    torch::Tensor t = p.detach().to(torch::kFloat64).contiguous().reshape({-1});
    out.insert(out.end(), t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  }
  return out;
}

std::vector<EnsembleMember> Members(int k, uint32_t pool_size, bool equal_sizes) {
  std::vector<EnsembleMember> members;
  for (int i = 0; i < k; ++i) {
    EnsembleMember m;
    m.init_seed = 100 + i;
    m.order_seed = 200 + i;
    const uint32_t size = equal_sizes ? pool_size : pool_size - 7 * i;
    for (uint32_t r : AuditPool(300 + i, 200, size)) m.pool.push_back(r);
    members.push_back(std::move(m));
  }
  return members;
}

// Equal subset sizes: every member is bit-identical to training it alone.
TEST(EnsembleTest, MembersMatchTrainingAloneBitExact) {
  TensorDataset data = SyntheticBlobs(200, 24, 4, 1.5, 1);
  for (ModelKind kind : {ModelKind::kLogReg, ModelKind::kMlp}) {
    for (OptimizerKind opt : {OptimizerKind::kMomentum, OptimizerKind::kAdam}) {
      for (int k : {1, 3}) {
        std::vector<EnsembleMember> members = Members(k, 96, true);
        auto e = EnsembleTrainer::Create(Spec(kind), Options(opt), members, 32);
        ASSERT_TRUE(e.ok()) << e.status();
        ASSERT_TRUE((*e)->Train(data, 25).ok());
        for (int i = 0; i < k; ++i) {
          EXPECT_EQ(MemberFlat(**e, i),
                    TrainAlone(Spec(kind), Options(opt), data, members[i], 32, 25))
              << "kind " << static_cast<int>(kind) << " opt " << static_cast<int>(opt) << " K=" << k
              << " member " << i;
        }
      }
    }
  }
}

// Unequal subset sizes force padded, masked rows in some steps.
TEST(EnsembleTest, UnequalSubsetsMatchTrainingAlone) {
  TensorDataset data = SyntheticBlobs(200, 24, 4, 1.5, 1);
  std::vector<EnsembleMember> members = Members(3, 100, false);
  auto e = EnsembleTrainer::Create(Spec(ModelKind::kMlp), Options(OptimizerKind::kMomentum),
                                   members, 32);
  ASSERT_TRUE(e.ok());
  ASSERT_TRUE((*e)->Train(data, 25).ok());
  for (int i = 0; i < 3; ++i) {
    std::vector<double> alone = TrainAlone(Spec(ModelKind::kMlp), Options(OptimizerKind::kMomentum),
                                           data, members[i], 32, 25);
    std::vector<double> together = MemberFlat(**e, i);
    ASSERT_EQ(alone.size(), together.size());
    double max_diff = 0;
    for (size_t j = 0; j < alone.size(); ++j)
      max_diff = std::max(max_diff, std::abs(alone[j] - together[j]));
    EXPECT_LE(max_diff, 1e-5) << "member " << i;
  }
  torch::Tensor logits = (*e)->Logits(data.x());
  EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{3, 200, 4}));
}

TEST(EnsembleTest, RejectsUnsupportedSpecs) {
  ModelSpec cnn = Spec(ModelKind::kMlp);
  cnn.kind = ModelKind::kCnn;
  EXPECT_FALSE(
      EnsembleTrainer::Create(cnn, Options(OptimizerKind::kSgd), Members(2, 50, true), 8).ok());
  EXPECT_FALSE(
      EnsembleTrainer::Create(Spec(ModelKind::kMlp), Options(OptimizerKind::kSgd), {}, 8).ok());
}

}  // namespace
}  // namespace memaudit::engine
