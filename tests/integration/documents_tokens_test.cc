// Membership of documents over SentencePiece tokens, with a team's GPT over
// that tokenizer's ids as the target (the tokenizer's model file given).
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/testing/status_matchers.h"
#include "gmock/gmock.h"
#include "tests/integration/cluster_fixture.h"
#include "tests/integration/tiny_specs.h"
#include "tokenizers/sentencepiece_tokenizer.h"

namespace memaudit::testing {
namespace {

class DocumentsTokensTest : public ClusterTest {};

// The reference transformers and the target read one tokenizer file; the
// sequences are cut from its tokens, and the target's members are the pool
// sequences whose tokens occur in the first half of the text's lines. The
// GPT is untrained: what is checked is the plumbing, not its leakage.
TEST_F(DocumentsTokensTest, AGptOverSubwordTokensIsTheTargetOfADocumentsAudit) {
  const std::string dir = FreshTestDir("documents-tokens");
  ASSERT_EQ(Shell(absl::StrCat("mkdir -p ", dir)).exit_code, 0);
  const std::string text = WordText(8000);
  std::ofstream(dir + "/corpus.txt") << text;
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  std::string members;
  for (size_t i = 0; i < lines.size() / 2; ++i) absl::StrAppend(&members, lines[i], "\n");
  std::ofstream(dir + "/members.txt") << members;
  tokenizers::SentencePieceTraining options;
  options.vocab_size = 100;
  auto tokenizer = tokenizers::SentencePieceTokenizer::Train(text, options);
  MEMAUDIT_ASSERT_OK(tokenizer);
  std::ofstream(dir + "/t.model", std::ios::binary) << (*tokenizer)->serialized();
  const Output exported = Shell(absl::StrCat("/usr/bin/python3 ", MEMAUDIT_SOURCE_DIR,
                                             "/examples/models/export_gpt.py ", dir,
                                             "/gpt.pt --tokens ", (*tokenizer)->size(),
                                             " --layers 1 --width 32 --heads 2 --ffn 64 "
                                             "--context 64"));
  if (exported.exit_code != 0) GTEST_SKIP() << "python3-torch: " << exported.text;
  data_roots_ = {dir};
  ASSERT_NO_FATAL_FAILURE(StartCluster(/*workers=*/1));

  v1::AuditSpec spec = TinyDocumentsSpec();
  v1::MembershipAudit* m = spec.mutable_membership();
  m->set_reference_models(4);
  m->set_population_size(20);
  v1::MembershipDocuments* d = m->mutable_documents();
  d->mutable_corpus()->set_path(dir + "/corpus.txt");
  d->mutable_corpus()->clear_max_chars();
  d->set_sequence_tokens(16);
  d->set_pool_size(40);
  d->mutable_training()->set_epochs(2);
  d->mutable_model()->mutable_tokenizer()->set_kind("sentencepiece");
  d->mutable_model()->mutable_tokenizer()->set_model_path(dir + "/t.model");
  m->mutable_target()->set_torchscript_path(dir + "/gpt.pt");
  m->mutable_target()->set_members_path(dir + "/members.txt");
  Finished run;
  ASSERT_NO_FATAL_FAILURE(RunToCompletion(spec, &run));
  const v1::AuditResults* results = &run.results;
  EXPECT_THAT(results->spec().membership().documents().model().tokenizer().content_hash(),
              ::testing::StartsWith("sha256:"));
  EXPECT_EQ(results->members() + results->non_members(), 40u);
  EXPECT_GT(results->members(), 0u);
  EXPECT_GT(results->non_members(), 0u);
  EXPECT_GT(results->attacks_size(), 0);
  for (const v1::AttackResult& a : results->attacks()) {
    EXPECT_GE(a.auc(), 0.0);
    EXPECT_LE(a.auc(), 1.0);
  }
}

}  // namespace
}  // namespace memaudit::testing
