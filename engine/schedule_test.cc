#include "engine/schedule.h"

#include <map>
#include <set>

#include "common/testing/status_matchers.h"
#include "engine/test_util.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using testing::Range;

TEST(ScheduleTest, EpochsVisitEveryRowOnce) {
  EpochSchedule s(Range(10), 4, 1);
  EXPECT_EQ(s.steps_per_epoch(), 3u);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int64_t> seen;
    for (uint64_t k = 0; k < 3; ++k) {
      BatchPlan p = s.At(epoch * 3 + k);
      EXPECT_EQ(p.ids.size(), k < 2 ? 4u : 2u);
      seen.insert(p.ids.begin(), p.ids.end());
    }
    EXPECT_EQ(seen, std::multiset<int64_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  }
  EXPECT_NE(s.At(0).ids, s.At(3).ids);  // reshuffled per epoch
}

// At() keeps the last epoch's permutation; the answer must still depend on
// the step alone, whatever was asked before.
TEST(ScheduleTest, EpochScheduleIsAPureFunctionOfTheStep) {
  EpochSchedule walked(Range(50), 8, 3);
  std::vector<std::vector<int64_t>> in_order;
  for (uint64_t step = 0; step < 35; ++step) in_order.push_back(walked.At(step).ids);
  EpochSchedule jumping(Range(50), 8, 3);
  for (uint64_t step : {34u, 0u, 20u, 7u, 21u, 6u, 13u, 14u}) {
    EXPECT_EQ(jumping.At(step).ids, in_order[step]) << step;
  }
}

TEST(ScheduleTest, PoisonTrainsOnBothThenCleanOnly) {
  std::vector<int64_t> clean = Range(20), poison = {100, 101};
  auto s = PoisonSchedule(clean, poison, 4, 12, 3);
  MEMAUDIT_ASSERT_OK(s);
  std::set<int64_t> before, after;
  for (uint64_t t = 0; t < 12; ++t)
    for (int64_t id : (*s)->At(t).ids) before.insert(id);
  for (uint64_t t = 12; t < 40; ++t)
    for (int64_t id : (*s)->At(t).ids) after.insert(id);
  EXPECT_TRUE(before.count(100) && before.count(101));
  EXPECT_FALSE(after.count(100) || after.count(101));
  // The baseline (no poison) sees the same clean order after t_i.
  auto baseline = PoisonSchedule(clean, {}, 4, 12, 3);
  for (uint64_t t = 12; t < 40; ++t) EXPECT_EQ((*s)->At(t).ids, (*baseline)->At(t).ids);
}

TEST(ScheduleTest, InjectKSteps) {
  std::vector<int64_t> clean = Range(16), poison = {100, 101, 102};
  InjectOptions o;
  o.t_i = 8;
  o.repeats = 3;
  auto s = InjectSchedule(clean, poison, 2, o, 5);
  MEMAUDIT_ASSERT_OK(s);
  EXPECT_EQ(InjectionSteps(3, 2, o), 6u);  // 3 passes x 2 batches
  for (uint64_t t = 0; t < 8; ++t) EXPECT_TRUE((*s)->At(t).advance_lr);
  std::map<int64_t, int> counts;
  for (uint64_t t = 8; t < 14; ++t) {
    BatchPlan p = (*s)->At(t);
    EXPECT_FALSE(p.advance_lr);
    for (int64_t id : p.ids) ++counts[id];
  }
  EXPECT_EQ(counts, (std::map<int64_t, int>{{100, 3}, {101, 3}, {102, 3}}));
  // Prefix and post-injection clean steps line up with the baseline.
  auto baseline = InjectSchedule(clean, {}, 2, o, 5);
  for (uint64_t t = 0; t < 8; ++t) EXPECT_EQ((*s)->At(t).ids, (*baseline)->At(t).ids);
  for (uint64_t k = 0; k < 20; ++k) EXPECT_EQ((*s)->At(14 + k).ids, (*baseline)->At(8 + k).ids);
}

TEST(ScheduleTest, InjectDupInBatchKeepsTheBatchSize) {
  std::vector<int64_t> clean = Range(50), poison = {100, 101, 102};
  InjectOptions o;
  o.t_i = 4;
  o.repeats = 5;
  o.mode = InjectMode::kDupInBatch;
  auto s = InjectSchedule(clean, poison, 10, o, 5);
  MEMAUDIT_ASSERT_OK(s);
  EXPECT_EQ(InjectionSteps(3, 10, o), 2u);  // 2 unique rows x 5 copies per batch
  BatchPlan first = (*s)->At(4), second = (*s)->At(5);
  EXPECT_EQ(first.ids.size(), 10u);
  EXPECT_EQ(second.ids.size(), 10u);
  EXPECT_EQ(std::count(first.ids.begin(), first.ids.end(), 100), 5);
  EXPECT_EQ(std::count(first.ids.begin(), first.ids.end(), 101), 5);
  EXPECT_EQ(std::count(second.ids.begin(), second.ids.end(), 102), 5);  // + 5 clean fillers
  o.repeats = 11;
  EXPECT_FALSE(InjectSchedule(clean, poison, 10, o, 5).ok());
}

}  // namespace
}  // namespace memaudit::engine
