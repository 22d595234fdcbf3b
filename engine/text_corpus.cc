#include "engine/text_corpus.h"

#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/base/seeding.h"
#include "common/base/status_macros.h"
#include "common/training/held_out_lines.h"

namespace memaudit::engine {
namespace {

// "'x' (U+0078)", the newline shown as '\n', for messages.
std::string CodePointName(char32_t c) {
  char hex[16];
  std::snprintf(hex, sizeof(hex), "U+%04X", static_cast<unsigned>(c));
  const std::string shown = c == U'\n' ? "\\n" : EncodeUtf8({c});
  return absl::StrCat("'", shown, "' (", hex, ")");
}

}  // namespace

std::vector<char32_t> DecodeUtf8(std::string_view s) {
  std::vector<char32_t> out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = s[i];
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    char32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char cc = s[i + k];
      ok = (cc >> 6) == 2;
      cp = (cp << 6) | (cc & 0x3f);
    }
    if (!ok) {
      out.push_back(0xFFFD);
      ++i;
    } else {
      out.push_back(cp);
      i += len;
    }
  }
  return out;
}

std::string EncodeUtf8(const std::vector<char32_t>& cps) {
  std::string out;
  for (char32_t cp : cps) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (cp & 0x3f));
    }
  }
  return out;
}

namespace {

// Every regular file under `dir` (symbolic links not followed), appended to
// `files`. POSIX rather than std::filesystem's directory iterator, which
// crashed in the engine module a GPU host's compiler built (docs/gpu.md).
absl::Status ListFiles(const std::string& dir, std::vector<std::string>& files) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return absl::UnavailableError(absl::StrCat("corpus.path: cannot list ", dir));
  std::vector<std::string> subdirs;
  while (const dirent* entry = readdir(d)) {
    const std::string name = entry->d_name;
    if (name == "." || name == "..") continue;
    std::string child = absl::StrCat(dir, "/", name);
    struct stat st;
    if (lstat(child.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) subdirs.push_back(std::move(child));
    if (S_ISREG(st.st_mode)) files.push_back(std::move(child));
  }
  closedir(d);
  for (const std::string& sub : subdirs) MEMAUDIT_RETURN_IF_ERROR(ListFiles(sub, files));
  return absl::OkStatus();
}

// Path order, component by component ("a/z" before "a-b"): '/' sorts first.
bool PathLess(const std::string& a, const std::string& b) {
  return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    const int kx = x == '/' ? -1 : static_cast<unsigned char>(x);
    const int ky = y == '/' ? -1 : static_cast<unsigned char>(y);
    return kx < ky;
  });
}

// strfile's index files ("x.dat"; a file named ".dat" has no extension).
bool IsFortuneIndex(const std::string& file) {
  const std::string name = file.substr(file.rfind('/') + 1);
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".dat") == 0;
}

}  // namespace

absl::StatusOr<std::string> ReadTextCorpus(const std::string& path) {
  std::vector<std::string> files;
  struct stat st;
  const bool found = stat(path.c_str(), &st) == 0;
  if (found && S_ISDIR(st.st_mode)) {
    std::string root = path;
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    MEMAUDIT_RETURN_IF_ERROR(ListFiles(root, files));
    files.erase(std::remove_if(files.begin(), files.end(), IsFortuneIndex), files.end());
    std::sort(files.begin(), files.end(), PathLess);
  } else if (found && S_ISREG(st.st_mode)) {
    files.push_back(path);
  } else {
    return absl::NotFoundError(absl::StrCat("corpus.path: ", path, " is not a file or folder"));
  }
  if (files.empty()) return absl::NotFoundError(absl::StrCat("corpus.path: no files under ", path));
  std::string text;
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) return absl::UnavailableError(absl::StrCat("corpus.path: cannot read ", f));
    std::ostringstream buf;
    buf << in.rdbuf();
    text += buf.str();
    if (!text.empty() && text.back() != '\n') text += '\n';
  }
  return EncodeUtf8(DecodeUtf8(text));  // normalises invalid bytes to U+FFFD
}

std::string SyntheticText(size_t chars, uint64_t seed) {
  static const char* kWords[] = {"the",  "model", "learns", "a",     "small", "corpus",  "of",
                                 "text", "and",   "then",   "we",    "audit", "what",    "it",
                                 "saw",  "once",  "or",     "twice", "in",    "training"};
  SplitMix64 rng(seed);
  std::string out;
  while (out.size() < chars) {
    const uint64_t words = 3 + rng.Uniform(8);
    for (uint64_t w = 0; w < words; ++w) {
      if (w) out += ' ';
      out += kWords[rng.Uniform(sizeof(kWords) / sizeof(kWords[0]))];
    }
    out += ".\n";
  }
  return out;
}

CharVocab CharVocab::Build(const std::string& utf8_text) {
  std::vector<char32_t> cps = DecodeUtf8(utf8_text);
  std::set<char32_t> distinct(cps.begin(), cps.end());
  distinct.erase(0xFFFD);
  CharVocab v;
  v.symbols_.push_back(0xFFFD);
  for (char32_t c : distinct) v.symbols_.push_back(c);
  for (size_t i = 0; i < v.symbols_.size(); ++i) v.ids_[v.symbols_[i]] = static_cast<int64_t>(i);
  return v;
}

absl::StatusOr<CharVocab> CharVocab::FromSymbols(const std::vector<char32_t>& symbols) {
  if (symbols.empty() || symbols[0] != 0xFFFD) {
    return absl::InvalidArgumentError("vocabulary: the first symbol must be U+FFFD (unknown)");
  }
  CharVocab v;
  v.symbols_ = symbols;
  for (size_t i = 0; i < symbols.size(); ++i) {
    if (!v.ids_.emplace(symbols[i], static_cast<int64_t>(i)).second) {
      return absl::InvalidArgumentError(absl::StrCat("vocabulary: ", CodePointName(symbols[i]),
                                                     " appears twice (ids ", v.ids_[symbols[i]],
                                                     " and ", i, ")"));
    }
  }
  return v;
}

int64_t CharVocab::Id(char32_t cp) const {
  auto it = ids_.find(cp);
  return it == ids_.end() ? 0 : it->second;
}

std::vector<int64_t> CharVocab::Encode(std::string_view utf8) const {
  std::vector<int64_t> out;
  for (char32_t c : DecodeUtf8(utf8)) out.push_back(Id(c));
  return out;
}

std::string CharVocab::Describe() const { return absl::StrCat("characters, ", size(), " symbols"); }

std::string CharVocab::Decode(const std::vector<int64_t>& ids) const {
  std::vector<char32_t> cps;
  for (int64_t id : ids) cps.push_back(id >= 0 && id < size() ? symbols_[id] : 0xFFFD);
  return EncodeUtf8(cps);
}

absl::StatusOr<std::string> LoadCorpus(const std::string& inline_text, const std::string& path,
                                       uint64_t max_chars) {
  std::string text = inline_text;
  if (text.empty()) {
    MEMAUDIT_ASSIGN_OR_RETURN(std::string read, ReadTextCorpus(path.empty() ? kFortunesDir : path));
    text = std::move(read);
  }
  if (max_chars > 0 && text.size() > max_chars) text.resize(text.rfind('\n', max_chars) + 1);
  return text;
}

CanaryFormat FormatFor(const std::string& prefix, uint32_t digits,
                       const std::vector<std::string>& alphabets) {
  return alphabets.empty() ? DigitsFormat(prefix, static_cast<int>(digits))
                           : CanaryFormat{prefix, alphabets, ""};
}

CharVocab CanaryVocab(const std::string& text, const CanaryFormat& format) {
  std::string symbols = "0123456789\n" + format.prefix + format.suffix;
  for (const std::string& a : format.alphabets) symbols += a;
  return CharVocab::Build(text + symbols);
}

absl::Status RequireCharacters(const CharVocab& vocab, const std::string& utf8,
                               const std::string& field, const std::string& what) {
  for (char32_t c : DecodeUtf8(utf8)) {
    if (vocab.Id(c) != 0 || c == 0xFFFD) continue;
    return absl::InvalidArgumentError(absl::StrCat(field, ": the model's vocabulary lacks ",
                                                   CodePointName(c), ", which ", what,
                                                   " needs; add it to the model's vocabulary"));
  }
  return absl::OkStatus();
}

std::string CanaryCharacters(const CanaryFormat& format) {
  std::string out = "\n" + format.prefix + format.suffix;
  for (const std::string& a : format.alphabets) out += a;
  return out;
}

CanaryFormat DigitsFormat(const std::string& prefix, int digits) {
  CanaryFormat f;
  f.prefix = prefix;
  f.alphabets.assign(digits, "0123456789");
  return f;
}

double Log2SpaceSize(const CanaryFormat& format) {
  double bits = 0;
  for (const auto& a : format.alphabets) bits += std::log2(DecodeUtf8(a).size());
  return bits;
}

absl::StatusOr<std::vector<std::string>> DrawSecrets(const CanaryFormat& format, size_t count,
                                                     uint64_t seed) {
  std::vector<std::vector<char32_t>> alphabets;
  for (size_t i = 0; i < format.alphabets.size(); ++i) {
    alphabets.push_back(DecodeUtf8(format.alphabets[i]));
    if (alphabets.back().empty()) {
      return absl::InvalidArgumentError(absl::StrCat("format.alphabets[", i, "]: empty"));
    }
  }
  if (Log2SpaceSize(format) < 62 && std::exp2(Log2SpaceSize(format)) < count) {
    return absl::InvalidArgumentError(
        absl::StrCat("count: ", count, " secrets do not fit a space of 2^", Log2SpaceSize(format)));
  }
  SplitMix64 rng(DeriveSeed(seed, "canary.secrets", 0));
  std::set<std::string> seen;
  std::vector<std::string> out;
  while (out.size() < count) {
    std::vector<char32_t> s;
    for (const auto& a : alphabets) s.push_back(a[rng.Uniform(a.size())]);
    std::string secret = EncodeUtf8(s);
    if (seen.insert(secret).second) out.push_back(secret);
  }
  return out;
}

std::string CanaryText(const CanaryFormat& format, const std::string& secret) {
  return format.prefix + secret + format.suffix;
}

std::string InsertCanaries(const std::string& text, const CanaryFormat& format,
                           const std::vector<Canary>& canaries, uint64_t seed) {
  std::vector<std::pair<std::string, uint32_t>> lines;
  for (const Canary& c : canaries) lines.emplace_back(CanaryText(format, c.secret), c.repeats);
  return InsertLines(text, lines, DeriveSeed(seed, "canary.positions", 0));
}

}  // namespace memaudit::engine
