#include "scoring/fixed_bound_uniform.h"

#include <cstdint>
#include <vector>

#include "common/base/seeding.h"
#include "gtest/gtest.h"

namespace memaudit::scoring {
namespace {

constexpr uint64_t kMax = ~uint64_t{0};

// Bounds of every size, with 2^63 + 1 rejecting about half of all draws.
const std::vector<uint64_t> kBounds = {1,
                                       2,
                                       3,
                                       7,
                                       10000,
                                       (uint64_t{1} << 31) - 1,
                                       uint64_t{1} << 32,
                                       (uint64_t{1} << 32) + 15,
                                       (uint64_t{1} << 62) + 1,
                                       uint64_t{1} << 63,
                                       (uint64_t{1} << 63) + 1,
                                       kMax - 1,
                                       kMax};

TEST(FixedBoundUniformTest, DrawsWhatUniformDrawsAndAdvancesTheSame) {
  for (uint64_t bound : kBounds) {
    SplitMix64 expected(bound * 31 + 7), actual(bound * 31 + 7);
    const FixedBoundUniform draw(bound);
    for (int i = 0; i < 20000; ++i) {
      ASSERT_EQ(draw(actual), expected.Uniform(bound)) << "bound " << bound << " draw " << i;
    }
    EXPECT_EQ(actual.Next(), expected.Next()) << "bound " << bound;
  }
}

TEST(FixedBoundUniformTest, RemainderIsExactAtTheEdges) {
  SplitMix64 rng(3);
  for (uint64_t bound : kBounds) {
    const FixedBoundUniform draw(bound);
    std::vector<uint64_t> xs = {0, 1, bound - 1, bound, kMax, kMax - 1, kMax - bound};
    if (bound < kMax) xs.push_back(bound + 1);
    if (bound <= kMax / 2) xs.push_back(2 * bound - 1);
    for (int i = 0; i < 10000; ++i) xs.push_back(rng.Next());
    for (uint64_t x : xs) ASSERT_EQ(draw.Remainder(x), x % bound) << x << " % " << bound;
  }
}

}  // namespace
}  // namespace memaudit::scoring
