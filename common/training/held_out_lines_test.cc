#include "common/training/held_out_lines.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit {
namespace {

using ::testing::HasSubstr;

const char kText[] =
    "a short line\n"
    "the quick brown fox jumps over the lazy dog\n"
    "pack my box with five dozen liquor jugs\n"
    "the quick brown fox jumps over the lazy dog\n"
    "héllo wörld, sphinx of black quartz judge my vow\n"
    "tiny\n";

TEST(HeldOutLinesTest, DrawsDistinctLongLinesAndRemovesEveryCopy) {
  auto held = HoldOutLines(kText, 20, 3, 7, "extractable");
  ASSERT_TRUE(held.ok()) << held.status();
  ASSERT_EQ(held->sequences.size(), 3u);
  for (const std::string& s : held->sequences) {
    EXPECT_EQ(CodePointCount(s), 20u) << s;
    EXPECT_EQ(held->text.find(s), std::string::npos) << "held out: " << s;
  }
  EXPECT_EQ(held->text, "a short line\ntiny\n");
  // Code points, not bytes: the accented line's prefix is 20 characters.
  auto accented = HoldOutLines("héllo wörld, sphinx of black quartz\n", 12, 1, 1, "f");
  ASSERT_TRUE(accented.ok());
  EXPECT_EQ(accented->sequences[0], "héllo wörld,");
  // The same seed draws the same lines; the draw depends on the seed.
  EXPECT_EQ(HoldOutLines(kText, 20, 2, 7, "f")->sequences,
            HoldOutLines(kText, 20, 2, 7, "f")->sequences);
  bool differs = false;
  for (uint64_t seed = 0; seed < 16 && !differs; ++seed) {
    differs = HoldOutLines(kText, 20, 1, seed, "f")->sequences !=
              HoldOutLines(kText, 20, 1, 7, "f")->sequences;
  }
  EXPECT_TRUE(differs);
}

TEST(HeldOutLinesTest, TooFewLinesNameTheFieldAndTheCount) {
  auto held = HoldOutLines(kText, 20, 4, 7, "exposure.extractable.sequences");
  ASSERT_FALSE(held.ok());
  EXPECT_THAT(std::string(held.status().message()),
              HasSubstr("exposure.extractable.sequences: the corpus has 3 distinct lines of at "
                        "least 20 characters; 4 are needed"));
}

TEST(HeldOutLinesTest, InsertsEachLineItsTimesAtLineStarts) {
  const std::string text = "one\ntwo\nthree\n";
  const std::string out = InsertLines(text, {{"AAA", 3}, {"BBB", 0}, {"CCC", 1}}, 5);
  const std::vector<std::string> lines = absl::StrSplit(out, '\n');
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "AAA"), 3);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "BBB"), 0);
  EXPECT_EQ(std::count(lines.begin(), lines.end(), "CCC"), 1);
  EXPECT_EQ(CodePointCount(out), CodePointCount(text) + 4 * 4);
  EXPECT_EQ(InsertLines(text, {{"AAA", 3}}, 5), InsertLines(text, {{"AAA", 3}}, 5));
}

}  // namespace
}  // namespace memaudit
