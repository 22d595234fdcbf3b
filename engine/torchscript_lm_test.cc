// A team's own TorchScript character LM (torchscript_lm.h), exported by
// examples/models/export_char_lm.py, in the language-model audits.
#include "engine/torchscript_lm.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/testing/status_matchers.h"
#include "engine/exposure_run.h"
#include "engine/forgetting_lm_run.h"
#include "engine/lm_dataset.h"
#include "engine/lm_search.h"
#include "engine/relational_run.h"
#include "engine/test_util.h"
#include "engine/trainer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace memaudit::engine {
namespace {

using ::memaudit::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kPython[] = "/usr/bin/python3";  // Debian's python3-torch

// A folder of its own per test process (ctest runs tests in parallel).
std::string TempDir() {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / absl::StrCat("memaudit_ts_lm_test_", getpid());
  std::filesystem::create_directories(dir);
  return dir.string();
}

bool HaveTorch() {
  return std::system(absl::StrCat(kPython, " -c 'import torch' >/dev/null 2>&1").c_str()) == 0;
}

// Runs the example exporter; the model's path, or "" when it fails.
std::string Export(const std::string& name, const std::string& flags) {
  const std::string out = TempDir() + "/" + name;
  const std::string cmd =
      absl::StrCat(kPython, " ", MEMAUDIT_SOURCE_DIR, "/examples/models/export_char_lm.py ", out,
                   " ", flags, " >/dev/null");
  return std::system(cmd.c_str()) == 0 ? out : "";
}

std::string WriteFile(const std::string& name, const std::string& text) {
  const std::string path = TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

const std::string& Corpus() {
  static const std::string* text = new std::string(SyntheticText(5000, 3));
  return *text;
}

// A GRU with dropout (so determinism covers the module's own dropout), its
// vocabulary the corpus plus the canary prefix.
class TorchScriptLmTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!HaveTorch()) return;
    const std::string corpus = WriteFile("corpus.txt", Corpus());
    gru_ = new std::string(Export("gru.pt", "--vocabulary-from " + corpus +
                                                " --extra-chars 'pin: ' --units 48 --embedding 16"
                                                " --dropout 0.1 --seed 3"));
  }
  static void TearDownTestSuite() {
    delete gru_;
    gru_ = nullptr;
    std::filesystem::remove_all(TempDir());
  }
  void SetUp() override {
    if (gru_ == nullptr || gru_->empty()) GTEST_SKIP() << "python3-torch is not installed";
  }

  static ExposureRunSpec Spec() {
    ExposureRunSpec spec;
    spec.corpus_text = Corpus();
    spec.prefix = "pin: ";
    spec.digits = 3;
    spec.repeats = {1, 40};
    spec.controls = 2;
    spec.lm = ModelKind::kTorchScript;
    spec.torchscript_path = *gru_;
    spec.optimizer = {OptimizerKind::kAdam, 0.01};
    spec.window = 48;
    spec.batch_size = 16;
    spec.epochs = 4;
    spec.seed = 11;
    spec.reference_samples = 50;
    return spec;
  }

  static std::string* gru_;
};
std::string* TorchScriptLmTest::gru_ = nullptr;

TEST_F(TorchScriptLmTest, ExportedGruTrainsAndItsCanaryExposureIsMeasured) {
  auto a = RunExposure(Spec(), nullptr);
  MEMAUDIT_ASSERT_OK(a);
  EXPECT_NEAR(a->log2_space, 3 * std::log2(10.0), 1e-9);
  ASSERT_EQ(a->canaries.size(), 4u);
  const double chance = std::log(static_cast<double>(TorchScriptLmVocabulary(*gru_)->size()));
  EXPECT_LT(a->final_loss, 0.7 * chance) << "the module learned the corpus";
  for (const CanaryExposure& c : a->canaries) {
    EXPECT_TRUE(c.exact) << c.secret;
    EXPECT_GE(c.rank, 1u);
    EXPECT_NEAR(c.exposure, a->log2_space - std::log2(static_cast<double>(c.rank)), 1e-9);
  }
  // Inserted 40 times, the canary stands out from the never-inserted ones.
  EXPECT_GT(a->canaries[1].exposure, a->canaries[2].exposure + 2);
  EXPECT_GT(a->canaries[1].exposure, a->canaries[3].exposure + 2);
  EXPECT_EQ(a->reference_px.size(), 50u);

  // Same spec and seed, same numbers (the module's dropout included).
  auto b = RunExposure(Spec(), nullptr);
  MEMAUDIT_ASSERT_OK(b);
  EXPECT_EQ(a->final_loss, b->final_loss);
  ASSERT_EQ(b->canaries.size(), a->canaries.size());
  for (size_t i = 0; i < a->canaries.size(); ++i) {
    EXPECT_EQ(a->canaries[i].secret, b->canaries[i].secret);
    EXPECT_EQ(a->canaries[i].px_bits, b->canaries[i].px_bits);
    EXPECT_EQ(a->canaries[i].rank, b->canaries[i].rank);
  }
  EXPECT_EQ(a->reference_px, b->reference_px);
  EXPECT_EQ(a->extraction, b->extraction);

  // Another model seed draws other dropout masks and batch order.
  ExposureRunSpec other = Spec();
  other.model_seed = 12;
  auto c = RunExposure(other, nullptr);
  MEMAUDIT_ASSERT_OK(c);
  EXPECT_NE(a->final_loss, c->final_loss);
}

// Without a step method every search step re-runs the prefix: the trie's
// Px of every candidate equals scoring each candidate's whole sequence.
TEST_F(TorchScriptLmTest, PrefixRecomputingSearchEqualsNaiveScoring) {
  auto model = BuildModel(CharLmSpec(ModelKind::kTorchScript, 0, 0, 0, 0, 0, *gru_), 0);
  MEMAUDIT_ASSERT_OK(model);
  auto& lm = static_cast<LanguageModel&>(**model);
  auto vocab = TorchScriptLmVocabulary(*gru_);
  MEMAUDIT_ASSERT_OK(vocab);
  const CanaryFormat format = DigitsFormat("pin: ", 2);
  auto tokens = ToTokenFormat(*vocab, format);
  MEMAUDIT_ASSERT_OK(tokens);
  LmScorer scorer(lm);
  auto trie = EnumerateAllPx(scorer, *tokens, /*max_states=*/7);  // several groups per level
  MEMAUDIT_ASSERT_OK(trie);
  std::vector<std::vector<int64_t>> all;
  for (int i = 0; i < 100; ++i) {
    all.push_back(*SecretTokens(*vocab, *tokens, format, absl::StrCat(i / 10, i % 10)));
  }
  const std::vector<double> naive = NaivePxBits(scorer, *tokens, all);
  ASSERT_EQ(trie->size(), naive.size());
  for (size_t i = 0; i < naive.size(); ++i) EXPECT_NEAR((*trie)[i], naive[i], 1e-4) << i;
  EXPECT_NEAR(PathPxBits(scorer, *tokens, all[37]), naive[37], 1e-4);
  const ExtractionResult best = ShortestPathExtract(scorer, *tokens, 10000);
  ASSERT_TRUE(best.found);
  EXPECT_NEAR(best.px_bits, *std::min_element(naive.begin(), naive.end()), 1e-4);
}

// The module's parameters are the trainer's: checkpoints and forks carry
// them and the dropout stream, so a fork trains bit for bit like its parent.
TEST_F(TorchScriptLmTest, ForkTrainsLikeItsParent) {
  const ModelSpec spec = CharLmSpec(ModelKind::kTorchScript, 0, 0, 0, 0, 0, *gru_);
  TrainerOptions o;
  o.optimizer = {OptimizerKind::kAdam, 0.01};
  o.dropout_seed = 5;
  auto t = Trainer::Create([spec] { return BuildModel(spec, 0); }, o);
  MEMAUDIT_ASSERT_OK(t);
  EXPECT_EQ((*t)->model().parameters().size(), 7u);  // embedding, GRU (4), head (2)
  auto vocab = TorchScriptLmVocabulary(*gru_);
  MEMAUDIT_ASSERT_OK(vocab);
  TensorDataset data = LmWindows(vocab->Encode(Corpus()), 32);
  EpochSchedule schedule(testing::Range(data.size()), 8, 1);
  MEMAUDIT_ASSERT_OK((*t)->Train(data, schedule, 5));
  auto arm = (*t)->Fork();
  MEMAUDIT_ASSERT_OK(arm);
  MEMAUDIT_ASSERT_OK((*t)->Train(data, schedule, 12));
  MEMAUDIT_ASSERT_OK((*arm)->Train(data, schedule, 12));
  EXPECT_EQ(testing::FlatParams((*t)->model()), testing::FlatParams((*arm)->model()));
}

TEST_F(TorchScriptLmTest, CanaryCharacterOutsideTheVocabularyIsRefused) {
  ExposureRunSpec spec = Spec();
  spec.prefix = "Quiz ";  // 'Q' is in neither the corpus nor --extra-chars
  EXPECT_THAT(RunExposure(spec, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("model.torchscript_path"), HasSubstr("'Q' (U+0051)"),
                             HasSubstr("canary format"))));
  spec = Spec();
  spec.alphabets = {"01", "2\xC3\xA9"};  // é
  EXPECT_THAT(RunExposure(spec, nullptr), StatusIs(absl::StatusCode::kInvalidArgument,
                                                   HasSubstr("(U+00E9), which the canary format")));
  ForgettingLmRunSpec forgetting;
  forgetting.corpus_text = Corpus();
  forgetting.prefix = "Quiz ";
  forgetting.copies = {2};
  forgetting.eval_points = {0};
  forgetting.lm = ModelKind::kTorchScript;
  forgetting.torchscript_path = *gru_;
  EXPECT_THAT(RunForgettingLm(forgetting, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'Q' (U+0051)")));
}

// The other two LM audits take it too: forgetting of canaries and the
// relational phone book, at toy sizes.
TEST_F(TorchScriptLmTest, ForgettingAndPhoneBookRunWithIt) {
  ForgettingLmRunSpec f;
  f.corpus_text = Corpus();
  f.prefix = "pin: ";
  f.digits = 2;
  f.copies = {8};
  f.controls = 2;
  f.lm = ModelKind::kTorchScript;
  f.torchscript_path = *gru_;
  f.window = 32;
  f.batch_size = 8;
  f.steps_before = 10;
  f.eval_points = {0, 5};
  auto forgetting = RunForgettingLm(f, nullptr);
  MEMAUDIT_ASSERT_OK(forgetting);
  ASSERT_EQ(forgetting->points.size(), 2u);
  EXPECT_EQ(forgetting->points[1].injected.exposure.size(), 3u);

  // The phone book's names use letters the corpus may lack: a model whose
  // vocabulary is the template's and the names' alphabet.
  const std::string book =
      Export("book.pt",
             "--extra-chars \"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ "
             "'.\" --units 32 --embedding 8");
  ASSERT_FALSE(book.empty());
  PhoneBookRunSpec p;
  p.records = 8;
  p.validation_records = 4;
  p.digits = 3;
  p.lm = ModelKind::kTorchScript;
  p.torchscript_path = book;
  p.batch_size = 4;
  p.epochs = 2;
  auto phone = RunPhoneBook(p, nullptr);
  MEMAUDIT_ASSERT_OK(phone);
  ASSERT_EQ(phone->epochs.size(), 2u);
  EXPECT_EQ(phone->epochs[1].predicted_train.size(), 8u);
  EXPECT_EQ(phone->epochs[1].predicted_train[0].size(), 3u);

  p.tmpl = "{name} => {number}";  // '=' and '>' are not in its vocabulary
  EXPECT_THAT(RunPhoneBook(p, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'=' (U+003D)")));
}

TEST_F(TorchScriptLmTest, ModulesBreakingTheContractAreRefusedAtLoad) {
  const std::string dir = TempDir();
  // A classifier (no vocabulary), and a language model that looks ahead.
  const std::string mlp = dir + "/mlp.pt";
  ASSERT_EQ(std::system(absl::StrCat(kPython, " ", MEMAUDIT_SOURCE_DIR,
                                     "/tests/python/export_mlp.py ", mlp, " 8 3 16")
                            .c_str()),
            0);
  EXPECT_THAT(LoadTorchScriptLm(mlp),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("model.torchscript_path"),
                             HasSubstr("has no `vocabulary: str` attribute"))));
  const std::string script = WriteFile("lookahead.py", R"(import sys, torch
class Lookahead(torch.nn.Module):
    vocabulary: str
    def __init__(self):
        super().__init__()
        self.vocabulary = "\ufffd\nab"
        self.embed = torch.nn.Embedding(4, 4)
    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        e = self.embed(tokens)
        return e + e.mean(1, keepdim=True)  # every position sees the whole sequence
torch.manual_seed(0)
torch.jit.script(Lookahead()).save(sys.argv[1])
)");
  const std::string lookahead = dir + "/lookahead.pt";
  ASSERT_EQ(std::system(absl::StrCat(kPython, " ", script, " ", lookahead).c_str()), 0);
  EXPECT_THAT(LoadTorchScriptLm(lookahead),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("forward is not causal")));
}

TEST(CharVocabTest, FromSymbolsNeedsTheUnknownSymbolFirstAndNoRepeats) {
  auto vocab = CharVocab::FromSymbols({0xFFFD, U'b', U'a'});
  MEMAUDIT_ASSERT_OK(vocab);
  EXPECT_EQ(vocab->Id(U'b'), 1);
  EXPECT_EQ(vocab->Id(U'a'), 2);
  EXPECT_EQ(vocab->Id(U'z'), 0);
  EXPECT_THAT(CharVocab::FromSymbols({U'a', 0xFFFD}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be U+FFFD")));
  EXPECT_THAT(
      CharVocab::FromSymbols({0xFFFD, U'a', U'a'}),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'a' (U+0061) appears twice")));
}

}  // namespace
}  // namespace memaudit::engine
