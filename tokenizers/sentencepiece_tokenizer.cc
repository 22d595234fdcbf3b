#include "tokenizers/sentencepiece_tokenizer.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "tokenizers/sentencepiece_bridge.h"

namespace memaudit::tokenizers {
namespace {

// SentencePiece trains deterministically on one thread with every sentence
// and no shuffling; its one random generator is seeded all the same.
constexpr unsigned kTrainingSeed = 20261130;

std::map<std::string, std::string> TrainingOptions(const SentencePieceTraining& o) {
  return {
      {"model_type", o.model_type},
      {"vocab_size", absl::StrCat(o.vocab_size)},
      // A small corpus may not fill the vocabulary: stop below it.
      {"hard_vocab_limit", "false"},
      {"split_digits", "true"},
      {"character_coverage", "1.0"},
      {"num_threads", "1"},
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"unk_id", "0"},
      {"bos_id", "-1"},
      {"eos_id", "-1"},
      {"pad_id", "-1"},
      {"minloglevel", "2"},
  };
}

// The characters of `required` that `corpus` lacks, space-separated.
std::string MissingCharacters(const std::string& corpus, const std::string& required) {
  std::string out;
  for (size_t i = 0; i < required.size();) {
    size_t end = i + 1;
    while (end < required.size() && (static_cast<unsigned char>(required[end]) & 0xC0) == 0x80) {
      ++end;
    }
    const std::string character = required.substr(i, end - i);
    if (character != " " && corpus.find(character) == std::string::npos &&
        out.find(character) == std::string::npos) {
      absl::StrAppend(&out, out.empty() ? "" : " ", character);
    }
    i = end;
  }
  return out;
}

}  // namespace

SentencePieceTokenizer::~SentencePieceTokenizer() = default;

absl::StatusOr<std::shared_ptr<const SentencePieceTokenizer>> SentencePieceTokenizer::FromModel(
    const std::string& serialized, const std::string& field, const std::string& name) {
  if (serialized.size() > kMaxModelBytes) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": a SentencePiece model of ",
                                                   serialized.size(), " bytes; at most ",
                                                   kMaxModelBytes, " are read"));
  }
  std::string error;
  const bridge::Library* library = bridge::LoadLibrary(&error);
  if (library == nullptr) return absl::FailedPreconditionError(absl::StrCat(field, ": ", error));
  std::shared_ptr<SentencePieceTokenizer> t(new SentencePieceTokenizer());
  t->processor_ = library->Load(serialized, &error);
  if (t->processor_ == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": not a SentencePiece model (", error, ")"));
  }
  t->pieces_ = t->processor_->Pieces();
  if (t->pieces_ < 2 || t->pieces_ > static_cast<int64_t>(kMaxVocabSize) * 8) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the model has ", t->pieces_,
                                                   " pieces; 2 to ", kMaxVocabSize * 8,
                                                   " are supported"));
  }
  t->serialized_ = serialized;
  t->description_ = absl::StrCat(name, ", ", t->size(), " tokens");
  return std::shared_ptr<const SentencePieceTokenizer>(std::move(t));
}

absl::StatusOr<std::shared_ptr<const SentencePieceTokenizer>> SentencePieceTokenizer::Train(
    const std::string& corpus, const SentencePieceTraining& options) {
  if (options.model_type != "bpe" && options.model_type != "unigram") {
    return absl::InvalidArgumentError(
        absl::StrCat("model.tokenizer.model_type: must be \"bpe\" or \"unigram\" (got \"",
                     options.model_type, "\")"));
  }
  if (options.vocab_size < kMinVocabSize || options.vocab_size > kMaxVocabSize) {
    return absl::InvalidArgumentError(absl::StrCat("model.tokenizer.vocab_size: must be in [",
                                                   kMinVocabSize, ", ", kMaxVocabSize, "] (got ",
                                                   options.vocab_size, ")"));
  }
  const std::map<std::string, std::string> args = TrainingOptions(options);
  // SentencePiece's trainer and seed are process-wide: one at a time.
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::string_view> lines;
  for (absl::string_view line : absl::StrSplit(corpus, '\n', absl::SkipEmpty())) {
    lines.emplace_back(line.data(), line.size());
  }
  if (lines.empty()) {
    return absl::InvalidArgumentError("model.tokenizer: the corpus has no text to train on");
  }
  // Every corpus character is a piece (coverage 1.0); a required one the
  // corpus lacks joins through one more training line (SentencePiece's own
  // required_chars refuses characters it never sees).
  const std::string missing = MissingCharacters(corpus, options.required_chars);
  if (!missing.empty()) lines.emplace_back(missing);
  std::string serialized, error;
  const bridge::Library* library = bridge::LoadLibrary(&error);
  if (library == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("model.tokenizer: ", error));
  }
  if (!library->Train(lines, args, kTrainingSeed, &serialized, &error)) {
    return absl::InvalidArgumentError(
        absl::StrCat("model.tokenizer: SentencePiece training failed: ", error));
  }
  return FromModel(serialized, "model.tokenizer",
                   absl::StrCat("sentencepiece ", options.model_type, " trained on the corpus"));
}

int64_t SentencePieceTokenizer::size() const { return pieces_ + 1; }

bool SentencePieceTokenizer::IsUnknown(int64_t id) const {
  return id >= 0 && id < pieces_ && processor_->IsUnknown(static_cast<int>(id));
}

std::vector<int64_t> SentencePieceTokenizer::Encode(std::string_view utf8) const {
  std::vector<int64_t> out;
  std::vector<int> ids;
  size_t at = 0;
  while (true) {
    const size_t end = std::min(utf8.find('\n', at), utf8.size());
    ids.clear();
    // Encoding fails only without a loaded model: the line then adds nothing.
    if (end > at && processor_->Encode(utf8.substr(at, end - at), &ids)) {
      out.insert(out.end(), ids.begin(), ids.end());
    }
    if (end == utf8.size()) break;
    out.push_back(Newline());
    at = end + 1;
  }
  return out;
}

std::string SentencePieceTokenizer::Decode(const std::vector<int64_t>& ids) const {
  std::string out;
  std::vector<int> line;
  const auto flush = [&] {
    std::string text;
    if (!line.empty() && processor_->Decode(line, &text)) out += text;
    line.clear();
  };
  for (const int64_t id : ids) {
    if (id == Newline()) {
      flush();
      out += '\n';
    } else {
      line.push_back(id >= 0 && id < pieces_ ? static_cast<int>(id) : processor_->UnknownId());
    }
  }
  flush();
  return out;
}

}  // namespace memaudit::tokenizers
