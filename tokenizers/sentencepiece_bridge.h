// SentencePiece behind a module boundary. Debian's libsentencepiece carries
// its own copy of protobuf-lite and exports it, and the programs load the
// system libprotobuf for gRPC: in one symbol scope the two copies call into
// each other and crash. So SentencePiece is only ever loaded in a module
// of its own (libmemaudit_sentencepiece.so, sentencepiece_bridge.cc) opened
// with RTLD_DEEPBIND, which binds it and its libraries to their own copy;
// the programs see this plain C++ interface (one libstdc++ on both sides).
#ifndef MEMAUDIT_TOKENIZERS_SENTENCEPIECE_BRIDGE_H_
#define MEMAUDIT_TOKENIZERS_SENTENCEPIECE_BRIDGE_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace memaudit::tokenizers::bridge {

class Processor {
 public:
  virtual ~Processor() = default;
  virtual int Pieces() const = 0;
  virtual bool IsUnknown(int id) const = 0;
  virtual int UnknownId() const = 0;
  // One line (no newline) to ids; false on failure.
  virtual bool Encode(std::string_view line, std::vector<int>* ids) const = 0;
  virtual bool Decode(const std::vector<int>& ids, std::string* text) const = 0;
};

class Library {
 public:
  virtual ~Library() = default;
  // nullptr with `error` set when `serialized` is not a model.
  virtual std::unique_ptr<Processor> Load(const std::string& serialized,
                                          std::string* error) const = 0;
  // Trains a model on `lines` (each a sentence) with SentencePiece's named
  // options; false with `error` set. Not thread-safe: callers hold one lock
  // (the trainer's seed is process-wide).
  virtual bool Train(const std::vector<std::string_view>& lines,
                     const std::map<std::string, std::string>& options, unsigned seed,
                     std::string* serialized, std::string* error) const = 0;
};

// The module's one export.
inline constexpr char kLibrarySymbol[] = "memaudit_sentencepiece_library";
using LibraryFunction = const Library* (*)();

// The module, loaded once: from beside the program, or its ../lib/memaudit/
// folder; nullptr with `error` naming where it looked.
const Library* LoadLibrary(std::string* error);

}  // namespace memaudit::tokenizers::bridge

#endif  // MEMAUDIT_TOKENIZERS_SENTENCEPIECE_BRIDGE_H_
