// Golden values for the determinism contract (docs/architecture.md,
// "Determinism"): a task's data and seeds are pure functions of (audit seed,
// role, index), and they must stay the same across versions, compilers and
// standard libraries.
//
// Do not update these values to make a test pass. A change to any of them
// breaks the reproducibility of every past audit (its pool, its models'
// training sets, seeds or data order would differ) and silently wrong-foots
// content-keyed reuse of trained models. Such a change must be deliberate,
// announced as breaking, and then these values recomputed.
//
// Long sequences are pinned by their first values plus a Fingerprint of the
// whole sequence.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "audits/membership/tasks.h"
#include "common/base/seeding.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

// FNV-1a over each value's eight bytes, low byte first: the same on every
// platform.
template <typename T>
uint64_t Fingerprint(const std::vector<T>& values) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (T v : values) {
    const uint64_t x = static_cast<uint64_t>(v);
    for (int b = 0; b < 8; ++b) {
      h ^= (x >> (8 * b)) & 0xff;
      h *= 0x100000001b3ULL;
    }
  }
  return h;
}

template <typename T>
std::vector<T> First8(const std::vector<T>& values) {
  return std::vector<T>(values.begin(), values.begin() + std::min<size_t>(8, values.size()));
}

// The small membership audit the pins below describe: seed 7, a pool of 100
// from Fashion-MNIST's 60000 training images, 4 reference models.
constexpr uint64_t kSeed = 7;
constexpr uint32_t kDatasetSize = 60000;
constexpr uint32_t kPoolSize = 100;
constexpr uint32_t kModels = 4;

// The dataset rows model `model` trains on, as audits/membership/worker_task.cc
// selects them: pool positions whose keep bit is set, in pool order.
std::vector<uint32_t> TrainingRows(uint32_t model) {
  const std::vector<uint32_t> pool = AuditPool(kSeed, kDatasetSize, kPoolSize);
  const KeepMatrix keep = BuildKeepMatrix(kSeed, kModels, kPoolSize);
  std::vector<uint32_t> rows;
  for (uint32_t j = 0; j < kPoolSize; ++j) {
    if (keep.in(model, j)) rows.push_back(pool[j]);
  }
  return rows;
}

TEST(SeedingGoldenTest, DeriveSeed) {
  EXPECT_EQ(DeriveSeed(0, "", 0), 0x3618135991a5fcb3ULL);
  EXPECT_EQ(DeriveSeed(7, "pool", 0), 0xd107b34fbb745bd8ULL);
  EXPECT_EQ(DeriveSeed(7, "keep_pair", 0), 0xcfcfae91b78e8200ULL);
  EXPECT_EQ(DeriveSeed(7, "reference_model/init", 3), 0x5fbb4e03fa9aae2aULL);
  EXPECT_EQ(DeriveSeed(7, "reference_model/order", 3), 0x85f997ddff04a954ULL);
  EXPECT_EQ(DeriveSeed(~uint64_t{0}, "epoch", 12345), 0x9ebc5f96a5afcc18ULL);
  // Seeds the per-kind docs (docs/audits/) name.
  EXPECT_EQ(DeriveSeed(7, "forgetting/pool", 0), 0x2a5ade88f2226c6eULL);
  EXPECT_EQ(DeriveSeed(7, "unlearning/pool", 0), 0x088be7ce085e9b9dULL);
  EXPECT_EQ(DeriveSeed(7, "relational/phone_book", 0), 0x20a5256633a42359ULL);
  EXPECT_EQ(DeriveSeed(7, "canary_model", 0), 0xb512eb498acebaedULL);
}

TEST(SeedingGoldenTest, GeneratorsAndPermutation) {
  SplitMix64 rng(1234);
  std::vector<uint64_t> dice;
  for (int i = 0; i < 8; ++i) dice.push_back(rng.Uniform(6));
  EXPECT_EQ(dice, (std::vector<uint64_t>{1, 2, 4, 3, 3, 5, 4, 5}));
  SplitMix64 doubles(1234);
  EXPECT_EQ(doubles.UniformDouble(), 0x1.7619ec365e303p-1);
  EXPECT_EQ(doubles.UniformDouble(), 0x1.2f8f426c9be0cp-1);
  EXPECT_EQ(SeededPermutation(42, 10), (std::vector<uint32_t>{0, 9, 5, 8, 6, 4, 7, 2, 1, 3}));
}

TEST(SeedingGoldenTest, AuditPoolAndPopulation) {
  const std::vector<uint32_t> pool = AuditPool(kSeed, kDatasetSize, kPoolSize);
  ASSERT_EQ(pool.size(), kPoolSize);
  EXPECT_EQ(First8(pool),
            (std::vector<uint32_t>{54848, 37011, 53765, 58344, 1705, 43243, 44320, 35356}));
  EXPECT_EQ(Fingerprint(pool), 0xe2eace00404525f0ULL);

  const std::vector<uint32_t> population = AuditPopulation(kSeed, kDatasetSize, kPoolSize, 50);
  ASSERT_EQ(population.size(), 50u);
  EXPECT_EQ(First8(population),
            (std::vector<uint32_t>{58911, 56130, 48101, 28739, 20843, 49942, 57562, 33284}));
  EXPECT_EQ(Fingerprint(population), 0x9e4d4cca7f847c5fULL);
}

// Other kinds draw their pools through a derived seed
// (audits/{forgetting,unlearning}/worker_task.cc).
TEST(SeedingGoldenTest, DerivedPoolsOfOtherKinds) {
  const std::vector<uint32_t> forgetting =
      AuditPool(DeriveSeed(kSeed, "forgetting/pool", 0), kDatasetSize, kPoolSize);
  EXPECT_EQ(First8(forgetting),
            (std::vector<uint32_t>{59578, 50025, 36676, 18737, 11657, 10849, 10757, 28966}));
  EXPECT_EQ(Fingerprint(forgetting), 0x39f04d39609c0cfcULL);
  const std::vector<uint32_t> unlearning =
      AuditPool(DeriveSeed(kSeed, "unlearning/pool", 0), kDatasetSize, kPoolSize);
  EXPECT_EQ(First8(unlearning),
            (std::vector<uint32_t>{20995, 22059, 42712, 36483, 7089, 47028, 38903, 24115}));
  EXPECT_EQ(Fingerprint(unlearning), 0xf7d253c95f568b15ULL);
}

TEST(SeedingGoldenTest, KeepMatrix) {
  const KeepMatrix keep = BuildKeepMatrix(kSeed, kModels, kPoolSize);
  EXPECT_EQ(Fingerprint(keep.bits), 0x0d4e445c325c0625ULL);
  // Small enough to spell out: an odd example count (the extra example goes
  // to the even model) and an odd model count (the last pair is half used).
  const KeepMatrix odd = BuildKeepMatrix(kSeed, 3, 11);
  std::vector<std::string> rows(3);
  for (uint32_t m = 0; m < 3; ++m) {
    for (uint32_t j = 0; j < 11; ++j) rows[m] += odd.in(m, j) ? '1' : '0';
  }
  EXPECT_EQ(rows, (std::vector<std::string>{"00101111001", "11010000110", "01011111000"}));
}

// Which dataset rows each model trains on, and with which seeds.
TEST(SeedingGoldenTest, MembershipTrainingSetsAndSeeds) {
  struct Golden {
    std::vector<uint32_t> first;
    uint64_t fingerprint;
    uint64_t init_seed;
    uint64_t order_seed;
  };
  const std::vector<Golden> golden = {
      {{53765, 58344, 43243, 44320, 31514, 53818, 32887, 14702},
       0x3a40d3bcb2b98f4bULL,
       0x3bc0ccff264ec320ULL,
       0x08bad281aa9976f5ULL},
      {{54848, 37011, 1705, 35356, 46198, 39617, 52851, 29545},
       0x5dc1cf474c084b42ULL,
       0xe40a5a537555d70cULL,
       0x4cb4fd0dd87d6af5ULL},
      {{54848, 37011, 58344, 43243, 46198, 39617, 32887, 968},
       0x92fb7580f9d8867aULL,
       0xf1c6661976fd6409ULL,
       0xe10df2d4b3f5458bULL},
      {{53765, 1705, 44320, 35356, 52851, 29545, 31514, 53818},
       0x1595c30c141c13d7ULL,
       0x5fbb4e03fa9aae2aULL,
       0x85f997ddff04a954ULL},
  };
  const std::string role = membership::kModelRole;
  for (uint32_t m = 0; m < kModels; ++m) {
    SCOPED_TRACE(testing::Message() << "model " << m);
    const std::vector<uint32_t> rows = TrainingRows(m);
    EXPECT_EQ(rows.size(), kPoolSize / 2);
    EXPECT_EQ(First8(rows), golden[m].first);
    EXPECT_EQ(Fingerprint(rows), golden[m].fingerprint);
    EXPECT_EQ(DeriveSeed(kSeed, role + "/init", m), golden[m].init_seed);
    EXPECT_EQ(DeriveSeed(kSeed, role + "/order", m), golden[m].order_seed);
  }
}

// The rows model 1 visits in epochs 0 and 1, as engine/schedule.cc orders
// them: epoch e permutes the training rows by
// DeriveSeed(DeriveSeed(seed, role + "/order", index), "epoch", e).
TEST(SeedingGoldenTest, MembershipDataOrder) {
  const std::vector<uint32_t> rows = TrainingRows(1);
  const uint64_t order_seed = DeriveSeed(kSeed, std::string(membership::kModelRole) + "/order", 1);
  auto epoch = [&](uint64_t e) {
    std::vector<uint32_t> visited;
    for (uint32_t i : SeededPermutation(DeriveSeed(order_seed, "epoch", e),
                                        static_cast<uint32_t>(rows.size()))) {
      visited.push_back(rows[i]);
    }
    return visited;
  };
  const std::vector<uint32_t> first = epoch(0);
  EXPECT_EQ(First8(first),
            (std::vector<uint32_t>{35356, 47193, 19926, 58060, 46994, 37011, 41009, 1118}));
  EXPECT_EQ(Fingerprint(first), 0xf1922bafc834a5caULL);
  const std::vector<uint32_t> second = epoch(1);
  EXPECT_EQ(First8(second),
            (std::vector<uint32_t>{52851, 39617, 33749, 23775, 45038, 1536, 46304, 8217}));
  EXPECT_EQ(Fingerprint(second), 0xeffdfab2b7dfeaf6ULL);
}

// A membership task packs models [t * P, min(N, (t + 1) * P)); the index in
// every seed above is the model's, so packing must not move these ranges.
TEST(SeedingGoldenTest, MembershipTaskPacking) {
  v1::AuditSpec spec;
  spec.set_name("test");
  spec.mutable_membership()->set_reference_models(10);
  spec.mutable_resources()->set_models_per_task(4);
  ASSERT_EQ(membership::TaskCount(spec), 3u);
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  for (uint32_t t = 0; t < 3; ++t) {
    const membership::ModelRange r = membership::TaskModels(spec, t);
    ranges.emplace_back(r.first, r.count);
  }
  EXPECT_EQ(ranges, (std::vector<std::pair<uint32_t, uint32_t>>{{0, 4}, {4, 4}, {8, 2}}));
}

}  // namespace
}  // namespace memaudit
