#include "common/base/seeding.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"

namespace memaudit {
namespace {

TEST(SeedingTest, DeriveSeedIsPureAndSeparatesRolesAndIndices) {
  EXPECT_EQ(DeriveSeed(7, "init", 3), DeriveSeed(7, "init", 3));
  EXPECT_NE(DeriveSeed(7, "init", 3), DeriveSeed(7, "init", 4));
  EXPECT_NE(DeriveSeed(7, "init", 3), DeriveSeed(7, "order", 3));
  EXPECT_NE(DeriveSeed(7, "init", 3), DeriveSeed(8, "init", 3));
}

TEST(SeedingTest, SplitMixMatchesReferenceVector) {
  // First outputs of SplitMix64 seeded with 0 (Vigna's reference implementation).
  SplitMix64 rng(0);
  EXPECT_EQ(rng.Next(), 0xe220a8397b1dcdafULL);
  EXPECT_EQ(rng.Next(), 0x6e789e6aa1b965f4ULL);
}

TEST(SeedingTest, PermutationIsAPermutationAndDeterministic) {
  std::vector<uint32_t> p = SeededPermutation(42, 1000);
  EXPECT_EQ(p, SeededPermutation(42, 1000));
  EXPECT_NE(p, SeededPermutation(43, 1000));
  std::vector<uint32_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (uint32_t i = 0; i < 1000; ++i) EXPECT_EQ(sorted[i], i);
}

TEST(SeedingTest, AuditPoolIsDistinctAndBounded) {
  std::vector<uint32_t> pool = AuditPool(1, 60000, 500);
  ASSERT_EQ(pool.size(), 500u);
  std::set<uint32_t> unique(pool.begin(), pool.end());
  EXPECT_EQ(unique.size(), 500u);
  EXPECT_LT(*unique.rbegin(), 60000u);
  EXPECT_EQ(AuditPool(1, 10, 50).size(), 10u);
}

TEST(SeedingTest, PopulationIsDisjointFromThePool) {
  const std::vector<uint32_t> pool = AuditPool(1, 1000, 300);
  const std::vector<uint32_t> population = AuditPopulation(1, 1000, 300, 200);
  ASSERT_EQ(population.size(), 200u);
  std::set<uint32_t> all(pool.begin(), pool.end());
  all.insert(population.begin(), population.end());
  EXPECT_EQ(all.size(), 500u);
  // The pool does not depend on whether a population is drawn.
  EXPECT_EQ(AuditPool(1, 1000, 300), pool);
  EXPECT_EQ(AuditPopulation(1, 1000, 900, 200).size(), 100u);
}

TEST(SeedingTest, KeepMatrixPutsEachExampleInExactlyHalfTheModels) {
  KeepMatrix keep = BuildKeepMatrix(9, 16, 300);
  for (uint32_t j = 0; j < 300; ++j) {
    int in = 0;
    for (uint32_t m = 0; m < 16; ++m) in += keep.in(m, j);
    EXPECT_EQ(in, 8) << "example " << j;
  }
  // Rows differ: each model gets its own half.
  int same = 0;
  for (uint32_t j = 0; j < 300; ++j) same += keep.in(0, j) == keep.in(1, j);
  EXPECT_LT(same, 200);
  EXPECT_EQ(keep.bits, BuildKeepMatrix(9, 16, 300).bits);
}

TEST(SeedingTest, KeepMatrixRowsDoNotDependOnTheModelCount) {
  KeepMatrix small = BuildKeepMatrix(4, 16, 101);
  KeepMatrix large = BuildKeepMatrix(4, 64, 101);
  for (uint32_t m = 0; m < 16; ++m) {
    for (uint32_t j = 0; j < 101; ++j) ASSERT_EQ(small.in(m, j), large.in(m, j));
  }
  // Paired models split the examples between them.
  for (uint32_t j = 0; j < 101; ++j) EXPECT_NE(large.in(6, j), large.in(7, j));
}

}  // namespace
}  // namespace memaudit
