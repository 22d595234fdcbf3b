#include "services/worker/lm_tokenizer.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "spec/dataset_facts.h"

namespace memaudit {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

std::string Corpus() {
  std::string text;
  for (int i = 0; i < 400; ++i) absl::StrAppend(&text, "the model learns line ", i % 17, "\n");
  return text;
}

TEST(LmTokenizerFactoryTest, CharactersNeedNoFactory) {
  auto factory =
      LmTokenizerFactory(v1::TokenizerSpec(), "pin 0123456789", "exposure.model.tokenizer");
  MEMAUDIT_ASSERT_OK(factory);
  EXPECT_FALSE(*factory);
}

// A trained tokenizer is built once per corpus and options; a model file
// is read when it still hashes to what Submit recorded, and refused by name
// once it changed.
TEST(LmTokenizerFactoryTest, TrainedOnceAndFilesCheckedAgainstTheirHash) {
  v1::TokenizerSpec spec;
  spec.set_kind("sentencepiece");
  spec.set_vocab_size(64);
  spec.set_model_type("bpe");
  auto factory = LmTokenizerFactory(spec, "pin 0123456789", "exposure.model.tokenizer");
  MEMAUDIT_ASSERT_OK(factory);
  auto first = (*factory)(Corpus());
  auto second = (*factory)(Corpus());
  MEMAUDIT_ASSERT_OK(first);
  MEMAUDIT_ASSERT_OK(second);
  EXPECT_EQ(first->get(), second->get());

  const std::filesystem::path dir = std::filesystem::temp_directory_path() /
                                    absl::StrCat("memaudit_lm_tokenizer_test_", getpid());
  std::filesystem::create_directories(dir);
  const std::string file = (dir / "t.model").string();
  {
    // Not a model: a file that reads but does not load.
    std::ofstream(file) << "not a model";
  }
  v1::TokenizerSpec given;
  given.set_kind("sentencepiece");
  given.set_model_path(file);
  auto hash = FilesContentHash({{"f", file}});
  MEMAUDIT_ASSERT_OK(hash);
  given.set_content_hash(*hash);
  EXPECT_THAT(
      LmTokenizerFactory(given, "", "exposure.model.tokenizer").status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("exposure.model.tokenizer.model_path: not a SentencePiece model")));
  { std::ofstream(file) << "changed"; }
  EXPECT_THAT(LmTokenizerFactory(given, "", "exposure.model.tokenizer").status(),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("exposure.model.tokenizer.content_hash: the model file changed")));
  // Past the limit: refused from its size, before it is read or hashed.
  std::filesystem::resize_file(file, (64u << 20) + 1);
  EXPECT_THAT(LmTokenizerFactory(given, "", "exposure.model.tokenizer").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exposure.model.tokenizer.model_path: a SentencePiece model of "
                                 "67108865 bytes; at most 67108864 are read")));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace memaudit
