#include "tokenizers/sentencepiece_tokenizer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "engine/exposure_run.h"
#include "engine/lm_scorer.h"
#include "engine/relational_run.h"
#include "engine/text_corpus.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::tokenizers {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::HasSubstr;

std::string Corpus() {
  return engine::SyntheticText(20000, 7) + "call 555 0100 now\n  two  spaces here\n";
}

std::shared_ptr<const SentencePieceTokenizer> Trained(const std::string& type = "bpe") {
  SentencePieceTraining options;
  options.vocab_size = 120;
  options.model_type = type;
  options.required_chars = "0123456789";
  auto t = SentencePieceTokenizer::Train(Corpus(), options);
  EXPECT_TRUE(t.ok()) << t.status();
  return *t;
}

TEST(SentencePieceTokenizerTest, TrainingIsDeterministic) {
  for (const char* type : {"bpe", "unigram"}) {
    const auto a = Trained(type);
    const auto b = Trained(type);
    EXPECT_EQ(a->serialized(), b->serialized()) << type;
    EXPECT_GE(a->size(), 40) << type;
    EXPECT_LE(a->size(), 121) << type;
  }
}

TEST(SentencePieceTokenizerTest, LinesAreEncodedAloneAndTextRoundTrips) {
  const auto t = Trained();
  // A newline is one token after the pieces; lines do not touch each other.
  EXPECT_EQ(t->Newline(), t->size() - 1);
  const std::vector<int64_t> a = t->Encode("the model learns");
  const std::vector<int64_t> b = t->Encode("a small corpus");
  std::vector<int64_t> both = a;
  both.push_back(t->Newline());
  both.push_back(t->Newline());
  both.insert(both.end(), b.begin(), b.end());
  EXPECT_EQ(t->Encode("the model learns\n\na small corpus"), both);
  // Lossless: spaces, leading spaces and digits come back as they were.
  for (const std::string text : {"  two  spaces here", "call 555 0100 now\nthe end\n", ""}) {
    EXPECT_EQ(t->Decode(t->Encode(text)), text);
  }
  // Subwords: fewer tokens than characters on the text it learned.
  EXPECT_LT(t->Encode(Corpus()).size(), Corpus().size() / 2);
}

TEST(SentencePieceTokenizerTest, DigitsAreTokensOfTheirOwn) {
  const auto t = Trained();
  const std::vector<int64_t> ids = t->Encode("call 5550100");
  ASSERT_GE(ids.size(), 7u);
  std::vector<int64_t> digits(ids.end() - 7, ids.end());
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(t->Decode({digits[i]}), std::string(1, "5550100"[i]));
  // Required digits the corpus never holds are pieces all the same.
  const std::vector<int64_t> unseen = t->Encode("2468");
  ASSERT_EQ(unseen.size(), 5u);  // the word-start marker, then one per digit
  for (size_t i = 1; i < 5; ++i) EXPECT_FALSE(t->IsUnknown(unseen[i])) << i;
}

TEST(SentencePieceTokenizerTest, BadOptionsAndModelsAreRefusedByName) {
  SentencePieceTraining options;
  options.vocab_size = 10;
  EXPECT_THAT(SentencePieceTokenizer::Train(Corpus(), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("vocab_size")));
  options.vocab_size = 100;
  options.model_type = "word";
  EXPECT_THAT(SentencePieceTokenizer::Train(Corpus(), options).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("model_type")));
  EXPECT_THAT(SentencePieceTokenizer::FromModel("not a model", "exposure.model.tokenizer").status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("exposure.model.tokenizer: not a SentencePiece model")));
  // A model round-trips through its bytes.
  const auto t = Trained();
  auto loaded = SentencePieceTokenizer::FromModel(t->serialized(), "f");
  MEMAUDIT_ASSERT_OK(loaded);
  EXPECT_EQ((*loaded)->Encode("the model learns a small corpus"),
            t->Encode("the model learns a small corpus"));
}

// A canary format over subword tokens: the context ends where the digits
// start, each digit hole is one position of ten tokens, and every secret's
// tokens are its line's tail.
TEST(SentencePieceTokenizerTest, CanaryDigitsEnumerateTokenByToken) {
  const auto t = Trained();
  const engine::CanaryFormat format = engine::DigitsFormat("the model saw ", 4);
  auto tokens = engine::ToTokenFormat(*t, format);
  MEMAUDIT_ASSERT_OK(tokens);
  ASSERT_EQ(tokens->length(), 4u);
  for (const auto& allowed : tokens->positions) EXPECT_EQ(allowed.size(), 10u);
  EXPECT_EQ(tokens->context.front(), t->Newline());
  auto ids = engine::SecretTokens(*t, *tokens, format, "0427");
  MEMAUDIT_ASSERT_OK(ids);
  EXPECT_EQ(t->Decode(*ids), "0427");
  EXPECT_THAT(engine::SecretTokens(*t, *tokens, format, "04").status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("does not fill")));
  // A hole character outside the vocabulary cannot be enumerated.
  const engine::CanaryFormat snow{"pin ", {"\u2603x"}, ""};
  EXPECT_THAT(engine::ToTokenFormat(*t, snow).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("format.alphabets[0]")));
}

// The Secret Sharer's shape with subword tokens: a transformer trained on
// fortunes with a SentencePiece tokenizer memorizes a canary more the more
// often it saw it, gives up the 64-times one, and each exact rank
// (branch-and-bound through the key/value cache) equals the canary's place
// among the Px of all 10^4 candidates.
TEST(SentencePieceExposureTest, ATokenTransformerShowsTheSecretSharersShape) {
  engine::ExposureRunSpec spec;
  spec.corpus_path = engine::kFortunesDir;
  spec.max_corpus_chars = 60000;
  spec.prefix = "the random number is ";
  spec.digits = 4;
  spec.repeats = {1, 4, 16, 64};
  spec.controls = 2;
  spec.lm = engine::ModelKind::kTransformerLm;
  spec.layers = 2;
  spec.embedding = 64;
  spec.heads = 4;
  spec.units = 128;
  spec.window = 32;
  spec.batch_size = 32;
  spec.epochs = 10;
  spec.optimizer.learning_rate = 3e-3;
  spec.enumerate_space = true;
  spec.seed = 11;
  spec.threads = 2;
  spec.tokenizer =
      [](const std::string& corpus) -> absl::StatusOr<std::shared_ptr<const Tokenizer>> {
    SentencePieceTraining options;
    options.vocab_size = 500;
    options.required_chars = "0123456789";
    return SentencePieceTokenizer::Train(corpus, options);
  };
  auto result = engine::RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  ASSERT_EQ(result->canaries.size(), 6u);
  ASSERT_EQ(result->space_px.size(), 10000u);
  for (size_t i = 0; i < result->canaries.size(); ++i) {
    const engine::CanaryExposure& c = result->canaries[i];
    ASSERT_TRUE(c.exact) << c.secret;
    EXPECT_NEAR(result->space_px[result->space_index[i]], c.px_bits, 1e-4) << c.secret;
    const uint64_t below = std::count_if(result->space_px.begin(), result->space_px.end(),
                                         [&](double px) { return px < c.px_bits - 1e-4; });
    const uint64_t at_most = std::count_if(result->space_px.begin(), result->space_px.end(),
                                           [&](double px) { return px <= c.px_bits + 1e-4; });
    EXPECT_GE(c.rank, below + 1) << c.secret;
    EXPECT_LE(c.rank, at_most) << c.secret;
  }
  const auto exposure = [&](size_t i) { return result->canaries[i].exposure; };
  std::printf(
      "exposure (bits) by insertions 1/4/16/64 and controls: %.2f %.2f %.2f %.2f | %.2f %.2f\n",
      exposure(0), exposure(1), exposure(2), exposure(3), exposure(4), exposure(5));
  EXPECT_GT(exposure(3), 12.0);  // 64 times: near log2 10^4
  EXPECT_LT(exposure(0), exposure(1));
  EXPECT_LT(exposure(1), exposure(2));
  EXPECT_LT(exposure(2), exposure(3));
  EXPECT_GT(exposure(3), std::max(exposure(4), exposure(5)));  // vs the controls
  EXPECT_TRUE(result->extracted);
}

// The phone book over subword tokens: the tokenizer learns from the book's
// text, the LSTM memorizes a tiny book's numbers, completed digit token by
// digit token after each name's prompt, and a re-run gives the same.
TEST(SentencePiecePhoneBookTest, ATinyBookIsMemorizedOverSubwordTokens) {
  engine::PhoneBookRunSpec spec;
  spec.records = 8;
  spec.validation_records = 8;
  spec.digits = 4;
  spec.units = 64;
  spec.embedding = 16;
  spec.batch_size = 4;
  spec.epochs = 80;
  spec.optimizer.learning_rate = 2e-2;
  spec.book_seed = 3;
  spec.model_seed = 4;
  std::string trained_on;
  spec.tokenizer =
      [&](const std::string& book) -> absl::StatusOr<std::shared_ptr<const Tokenizer>> {
    trained_on = book;
    SentencePieceTraining options;
    options.vocab_size = 64;
    options.required_chars = "'s number is .0123456789";
    return SentencePieceTokenizer::Train(book, options);
  };
  auto run = engine::RunPhoneBook(spec, nullptr);
  MEMAUDIT_ASSERT_OK(run);
  EXPECT_NE(trained_on.find(run->book.train[0].text), std::string::npos);
  const engine::PhoneBookEpoch& last = run->epochs.back();
  int exact_train = 0, exact_val = 0;
  for (size_t i = 0; i < 8; ++i) {
    EXPECT_EQ(last.predicted_train[i].size(), 4u);
    exact_train += last.predicted_train[i] == run->book.train[i].number;
    exact_val += last.predicted_val[i] == run->book.validation[i].number;
  }
  EXPECT_GE(exact_train, 6);
  EXPECT_LE(exact_val, 1);
  auto again = engine::RunPhoneBook(spec, nullptr);
  MEMAUDIT_ASSERT_OK(again);
  EXPECT_EQ(again->epochs.back().predicted_train, last.predicted_train);
}

// A team's own LM over a SentencePiece tokenizer's ids: a GRU exported by
// examples/models/export_char_lm.py --tokens V (no `vocabulary` attribute),
// and a GPT by examples/models/export_gpt.py, train and are audited through
// the tokenizer; a module of another size is refused naming what memaudit
// expected.
TEST(SentencePieceExposureTest, ATorchScriptLmOverTokenIds) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
    GTEST_SKIP() << "python3-torch is not installed";
  }
  const std::string corpus = Corpus();
  const auto tokenizer = Trained();
  const std::string dir = ::testing::TempDir() + "/sp_torchscript_" + std::to_string(getpid());
  ASSERT_EQ(std::system(("mkdir -p " + dir).c_str()), 0);
  const auto exported = [&](int64_t tokens, const std::string& script = "export_char_lm.py",
                            const std::string& flags = "--units 48 --embedding 16") {
    const std::string out = dir + "/" + script + std::to_string(tokens) + ".pt";
    const std::string cmd = std::string("/usr/bin/python3 ") + MEMAUDIT_SOURCE_DIR +
                            "/examples/models/" + script + " " + out + " --tokens " +
                            std::to_string(tokens) + " " + flags + " >/dev/null";
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  };
  engine::ExposureRunSpec spec;
  spec.corpus_text = corpus;
  spec.prefix = "pin ";
  spec.digits = 3;
  spec.repeats = {1, 40};
  spec.controls = 2;
  spec.lm = engine::ModelKind::kTorchScript;
  spec.torchscript_path = exported(tokenizer->size());
  spec.window = 24;
  spec.batch_size = 16;
  spec.epochs = 8;
  spec.optimizer.learning_rate = 0.01;
  spec.seed = 3;
  spec.tokenizer =
      [tokenizer](const std::string&) -> absl::StatusOr<std::shared_ptr<const Tokenizer>> {
    return tokenizer;
  };
  auto result = engine::RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(result);
  ASSERT_EQ(result->canaries.size(), 4u);
  EXPECT_GT(result->canaries[1].exposure, result->canaries[2].exposure);  // vs a control
  EXPECT_GT(result->canaries[1].exposure, result->canaries[3].exposure);

  // A GPT exported by examples/models/export_gpt.py trains the same way.
  spec.torchscript_path = exported(tokenizer->size(), "export_gpt.py",
                                   "--layers 1 --width 32 --heads 2 --ffn 64 --context 128");
  auto gpt = engine::RunExposure(spec, nullptr);
  MEMAUDIT_ASSERT_OK(gpt);
  EXPECT_GT(gpt->canaries[1].exposure, gpt->canaries[0].exposure);  // 40 times vs once
  // The same file as a model trained elsewhere (an exposure `target`): its
  // given secrets ranked exactly through the tokenizer, nothing trained.
  engine::ExposureRunSpec given = spec;
  given.given_model = true;
  given.given_secrets = {"123", "907"};
  auto measured = engine::RunExposure(given, nullptr);
  MEMAUDIT_ASSERT_OK(measured);
  EXPECT_EQ(measured->steps, 0u);
  ASSERT_EQ(measured->canaries.size(), 4u);
  EXPECT_EQ(measured->canaries[0].secret, "123");
  for (const engine::CanaryExposure& c : measured->canaries) EXPECT_TRUE(c.exact) << c.secret;

  spec.torchscript_path = exported(tokenizer->size() + 3);
  EXPECT_THAT(engine::RunExposure(spec, nullptr).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr(absl::StrCat("[1, 2, ", tokenizer->size(), "]"))));
}

}  // namespace
}  // namespace memaudit::tokenizers
