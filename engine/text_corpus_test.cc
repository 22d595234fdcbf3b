#include "engine/text_corpus.h"

#include <filesystem>
#include <fstream>

#include "common/testing/status_matchers.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;

TEST(TextCorpusTest, Utf8RoundTripAndVocabulary) {
  const std::string s = "héllo wörld €1 \xF0\x9F\x98\x80";
  EXPECT_EQ(EncodeUtf8(DecodeUtf8(s)), s);
  EXPECT_EQ(DecodeUtf8("a\xFF"
                       "b"),
            (std::vector<char32_t>{U'a', 0xFFFD, U'b'}));
  CharVocab v = CharVocab::Build(s);
  EXPECT_EQ(v.Decode(v.Encode(s)), s);
  EXPECT_EQ(v.Id(U'Z'), 0);
  EXPECT_EQ(CharVocab::Build(s).Encode("wörld"), v.Encode("wörld"));  // deterministic
}

TEST(TextCorpusTest, ReadsFilesAndFolders) {
  const auto dir = std::filesystem::temp_directory_path() / "memaudit_corpus_test";
  std::filesystem::remove_all(dir);  // what a run stopped midway left
  std::filesystem::create_directories(dir / "sub");
  std::ofstream(dir / "b.txt") << "second";
  std::ofstream(dir / "sub" / "a.txt") << "third\n";
  std::ofstream(dir / "a.txt") << "first\n";
  std::ofstream(dir / "a.dat") << "\x01\x02";
  // Path order, folder by folder: sub/a.txt before sub-b.txt (as strings the
  // other way round); a symbolic link is not read.
  std::ofstream(dir / "sub-b.txt") << "fourth\n";
  std::filesystem::create_symlink(dir / "a.txt", dir / "link.txt");
  auto text = ReadTextCorpus(dir.string());
  MEMAUDIT_ASSERT_OK(text);
  EXPECT_EQ(*text, "first\nsecond\nthird\nfourth\n");
  auto trailing = ReadTextCorpus(dir.string() + "/");
  MEMAUDIT_ASSERT_OK(trailing);
  EXPECT_EQ(*trailing, *text);
  auto one = ReadTextCorpus((dir / "b.txt").string());
  MEMAUDIT_ASSERT_OK(one);
  EXPECT_EQ(*one, "second\n");
  EXPECT_THAT(ReadTextCorpus((dir / "missing").string()), StatusIs(absl::StatusCode::kNotFound));
  std::filesystem::remove_all(dir);
  if (std::filesystem::exists(kFortunesDir)) {
    auto fortunes = ReadTextCorpus(kFortunesDir);
    MEMAUDIT_ASSERT_OK(fortunes);
    EXPECT_GT(fortunes->size(), 100000u);
  }
}

TEST(TextCorpusTest, CanariesAreInsertedTheirRepeatCountAndControlsNever) {
  CanaryFormat f = DigitsFormat("the random number is ", 9);
  EXPECT_NEAR(Log2SpaceSize(f), 29.897, 1e-3);
  auto secrets = DrawSecrets(f, 4, 7);
  MEMAUDIT_ASSERT_OK(secrets);
  ASSERT_EQ(secrets->size(), 4u);
  EXPECT_EQ(*secrets, *DrawSecrets(f, 4, 7));
  EXPECT_NE(*secrets, *DrawSecrets(f, 4, 8));
  const std::string base = SyntheticText(5000, 3);
  std::vector<Canary> canaries = {
      {(*secrets)[0], 1}, {(*secrets)[1], 4}, {(*secrets)[2], 16}, {(*secrets)[3], 0}};
  const std::string text = InsertCanaries(base, f, canaries, 9);
  for (const Canary& c : canaries) {
    const std::string line = "\n" + CanaryText(f, c.secret) + "\n";
    size_t count = 0;
    for (size_t p = ("\n" + text).find(line); p != std::string::npos;
         p = ("\n" + text).find(line, p + 1)) {
      ++count;
    }
    EXPECT_EQ(count, c.repeats) << c.secret;
  }
  EXPECT_EQ(text.size(), base.size() + 21 * (f.prefix.size() + 10));
  EXPECT_FALSE(DrawSecrets(DigitsFormat("", 1), 11, 0).ok());
}

}  // namespace
}  // namespace memaudit::engine
