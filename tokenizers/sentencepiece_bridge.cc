// The libmemaudit_sentencepiece.so module (sentencepiece_bridge.h): the
// only code that includes SentencePiece's headers.
#include "tokenizers/sentencepiece_bridge.h"

#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <unordered_map>
#include <utility>

namespace memaudit::tokenizers::bridge {
namespace {

class LineIterator final : public sentencepiece::SentenceIterator {
 public:
  explicit LineIterator(const std::vector<std::string_view>& lines) : lines_(lines) { Load(); }
  bool done() const override { return at_ >= lines_.size(); }
  void Next() override {
    ++at_;
    Load();
  }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return {}; }

 private:
  void Load() {
    if (!done()) line_.assign(lines_[at_].data(), lines_[at_].size());
  }
  const std::vector<std::string_view>& lines_;
  size_t at_ = 0;
  std::string line_;
};

class SentencePieceProcessor final : public Processor {
 public:
  sentencepiece::SentencePieceProcessor sp;

  int Pieces() const override { return sp.GetPieceSize(); }
  bool IsUnknown(int id) const override { return sp.IsUnknown(id); }
  int UnknownId() const override { return sp.unk_id(); }
  bool Encode(std::string_view line, std::vector<int>* ids) const override {
    return sp.Encode(line, ids).ok();
  }
  bool Decode(const std::vector<int>& ids, std::string* text) const override {
    return sp.Decode(ids, text).ok();
  }
};

class SentencePieceLibrary final : public Library {
 public:
  std::unique_ptr<Processor> Load(const std::string& serialized,
                                  std::string* error) const override {
    auto processor = std::make_unique<SentencePieceProcessor>();
    const sentencepiece::util::Status loaded = processor->sp.LoadFromSerializedProto(serialized);
    if (!loaded.ok()) {
      *error = loaded.ToString();
      return nullptr;
    }
    return processor;
  }

  bool Train(const std::vector<std::string_view>& lines,
             const std::map<std::string, std::string>& options, unsigned seed,
             std::string* serialized, std::string* error) const override {
    sentencepiece::SetRandomGeneratorSeed(seed);
    const std::unordered_map<std::string, std::string> args(options.begin(), options.end());
    LineIterator it(lines);
    const sentencepiece::util::Status trained =
        sentencepiece::SentencePieceTrainer::Train(args, &it, serialized);
    if (!trained.ok()) *error = trained.ToString();
    return trained.ok();
  }
};

}  // namespace
}  // namespace memaudit::tokenizers::bridge

extern "C" __attribute__((visibility("default"))) const memaudit::tokenizers::bridge::Library*
memaudit_sentencepiece_library() {
  static const auto* library = new memaudit::tokenizers::bridge::SentencePieceLibrary();
  return library;
}
