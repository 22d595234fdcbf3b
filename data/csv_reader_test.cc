#include "data/csv_reader.h"

#include <string>

#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::data {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(CsvReaderTest, TextLabelsAreClassesInSortedOrder) {
  auto t =
      ParseCsv("a,\"label\",b\n1.5,dog,2\n-1,cat,0.25\r\n3,\"dog\",4e2\n\n\r\n", "t.csv", "label");
  MEMAUDIT_ASSERT_OK(t);
  EXPECT_EQ(t->count, 3u);
  EXPECT_EQ(t->features, 2u);
  EXPECT_EQ(t->shape, (std::vector<uint32_t>{2}));
  EXPECT_EQ(t->classes, 2u);
  EXPECT_EQ(t->class_names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(t->labels, (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(t->values, (std::vector<float>{1.5f, 2, -1, 0.25f, 3, 400}));
  EXPECT_TRUE(t->pixels.empty());
  EXPECT_TRUE(t->content_hash.empty());
}

TEST(CsvReaderTest, IntegerLabelsAreTheirOwnClasses) {
  auto t = ParseCsv("y,x1,x2\n4,0.5,1\n0,1,2\n4,2,3", "n.csv", "y");
  MEMAUDIT_ASSERT_OK(t);
  EXPECT_EQ(t->labels, (std::vector<uint8_t>{4, 0, 4}));
  EXPECT_EQ(t->classes, 5u);
  EXPECT_TRUE(t->class_names.empty());
  EXPECT_EQ(t->values, (std::vector<float>{0.5f, 1, 1, 2, 2, 3}));
  // An integer label outside [0, 255] is refused, naming its row; a column
  // with any non-integer is text, whatever numbers it also holds.
  EXPECT_THAT(ParseCsv("y,x\n7,1\n300,2\n", "n.csv", "y"),
              memaudit::testing::StatusIs(absl::StatusCode::kInvalidArgument,
                                          ::testing::HasSubstr("row 2: integer label 300")));
  auto text = ParseCsv("y,x\n300,1\ncat,2\n", "n.csv", "y");
  MEMAUDIT_ASSERT_OK(text);
  EXPECT_EQ(text->class_names, (std::vector<std::string>{"300", "cat"}));
}

TEST(CsvReaderTest, ErrorsNameTheFieldTheLineAndTheColumn) {
  EXPECT_THAT(ParseCsv("a,label,b\n1,x,2\n3,y,oops\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "path: /d/t.csv line 3 column 'b': 'oops' is not a number"));
  EXPECT_THAT(ParseCsv("a,b\n1,2\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "label_column: /d/t.csv has no column 'label' in its header (columns: "
                       "'a', 'b')"));
  EXPECT_THAT(ParseCsv("a,label\n1,0\n2\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "path: /d/t.csv line 3 has 1 cells where the header has 2"));
  EXPECT_THAT(ParseCsv("a,label\n1,0\n\n2,1\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("line 3 is empty")));
  EXPECT_THAT(ParseCsv("a,label\n1,0\nnan,1\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not a finite number")));
  EXPECT_THAT(ParseCsv("a,label\n1,0\n2,0\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       StartsWith("label_column: /d/t.csv has one class")));
  EXPECT_THAT(ParseCsv("label\n0\n1\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no feature column")));
  EXPECT_THAT(ParseCsv("a,label\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "path: /d/t.csv has 0 rows; between 1 "
                       "and 2147483647 are read"));
  EXPECT_THAT(ParseCsv("", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no header line")));
  EXPECT_THAT(ParseCsv("label,a,label\n0,1,0\n", "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("two columns named")));
  std::string many = "a,label\n";
  for (int i = 0; i < 300; ++i) many += "1,c" + std::to_string(i) + "\n";
  EXPECT_THAT(ParseCsv(many, "/d/t.csv", "label"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("label_column: /d/t.csv"),
                             HasSubstr("more than 256 distinct labels"))));
}

}  // namespace
}  // namespace memaudit::data
