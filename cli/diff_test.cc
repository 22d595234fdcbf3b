#include "cli/diff.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::cli {
namespace {

using ::testing::HasSubstr;

TEST(DiffTableTest, MarksWorseChangesAndCountsTheSignificantOnes) {
  spec::MetricChange worse;
  worse.metric = "loss.auc";
  worse.old_reading = spec::MetricReading{0.6, 0.58, 0.62};
  worse.new_reading = spec::MetricReading{0.7, 0.68, 0.72};
  worse.difference = spec::DifferenceOf(*worse.new_reading, *worse.old_reading);
  worse.significant = worse.worse = true;
  spec::MetricChange missing;
  missing.metric = "rmia.auc";
  missing.new_reading = spec::MetricReading{0.5, 0.4, 0.6};
  const std::string table = DiffTable({worse, missing}, "old.json", "new.json");
  EXPECT_THAT(table, HasSubstr("WORSE"));
  EXPECT_THAT(table, HasSubstr("rmia.auc"));
  EXPECT_THAT(table, HasSubstr("1 of 2 metrics changed significantly (1 worse)"));
}

}  // namespace
}  // namespace memaudit::cli
