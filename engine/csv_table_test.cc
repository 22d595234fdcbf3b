#include "engine/csv_table.h"

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

TEST(CsvTableTest, ParsesFeaturesAndMapsLabels) {
  auto t = ParseCsvTable("a,label,b\n1.5,cat,2\n-1,dog,0.25\r\n3,cat,4\n", "label");
  MEMAUDIT_ASSERT_OK(t);
  EXPECT_EQ(t->labels, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(t->feature_names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(t->data.x().sizes(), (std::vector<int64_t>{3, 2}));
  EXPECT_FLOAT_EQ(t->data.x()[1][1].item<float>(), 0.25f);
  EXPECT_EQ(t->data.y()[1].item<int64_t>(), 1);
}

TEST(CsvTableTest, ErrorsNameTheProblem) {
  EXPECT_THAT(ParseCsvTable("a,b\n1,2\n", "label"), StatusIs(absl::StatusCode::kInvalidArgument));
  auto bad = ParseCsvTable("a,label\nx,1\n", "label");
  EXPECT_NE(bad.status().message().find("column 'a'"), std::string::npos);
  EXPECT_FALSE(ParseCsvTable("a,label\n1\n", "label").ok());
  EXPECT_THAT(ReadCsvTable("/nonexistent.csv", "label"), StatusIs(absl::StatusCode::kNotFound));
}

}  // namespace
}  // namespace memaudit::engine
