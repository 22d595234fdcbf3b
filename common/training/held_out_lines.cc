#include "common/training/held_out_lines.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/base/seeding.h"

namespace memaudit {
namespace {

// The first `length` code points of `line`.
std::string CodePointPrefix(const std::string& line, size_t length) {
  size_t seen = 0;
  for (size_t i = 0; i < line.size(); ++i) {
    if ((static_cast<unsigned char>(line[i]) & 0xC0) != 0x80 && seen++ == length) {
      return line.substr(0, i);
    }
  }
  return line;
}

}  // namespace

size_t CodePointCount(absl::string_view text) {
  size_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80 ? 1 : 0;
  return n;
}

size_t DistinctLongLines(const std::string& text, size_t length) {
  std::set<absl::string_view> seen;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (CodePointCount(line) >= length) seen.insert(line);
  }
  return seen.size();
}

absl::StatusOr<HeldOutLines> HoldOutLines(const std::string& text, size_t length, size_t count,
                                          uint64_t seed, const std::string& field,
                                          const LineCut& cut, const std::string& unit) {
  const std::vector<std::string> lines = absl::StrSplit(text, '\n');
  // Distinct candidates in order of first appearance: a repeated line is
  // drawn at most once, and the draw does not depend on how often it repeats.
  // Each with its sequence, the line's first `length` units.
  std::vector<std::pair<std::string, std::string>> candidates;
  std::set<std::string> seen;
  for (const std::string& line : lines) {
    if (seen.count(line) > 0) continue;
    std::optional<std::string> sequence;
    if (cut) {
      sequence = cut(line, length);
    } else if (CodePointCount(line) >= length) {
      sequence = CodePointPrefix(line, length);
    }
    if (!sequence) continue;
    seen.insert(line);
    candidates.emplace_back(line, *std::move(sequence));
  }
  if (candidates.size() < count) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": the corpus has ", candidates.size(),
                                                   " distinct lines of at least ", length, " ",
                                                   unit, "; ", count, " are needed"));
  }
  // A partial Fisher-Yates shuffle: the first `count` are the draw.
  SplitMix64 rng(DeriveSeed(seed, "held_out_lines", 0));
  for (size_t i = 0; i < count; ++i) {
    std::swap(candidates[i], candidates[i + rng.Uniform(candidates.size() - i)]);
  }
  std::set<std::string> chosen;
  HeldOutLines out;
  for (size_t i = 0; i < count; ++i) {
    chosen.insert(candidates[i].first);
    out.sequences.push_back(candidates[i].second);
  }
  for (size_t i = 0; i < lines.size(); ++i) {
    if (chosen.count(lines[i]) > 0) continue;
    out.text += lines[i];
    if (i + 1 < lines.size()) out.text += '\n';
  }
  return out;
}

std::string InsertLines(const std::string& text,
                        const std::vector<std::pair<std::string, uint32_t>>& lines,
                        uint64_t rng_seed) {
  std::vector<size_t> line_starts = {0};
  for (size_t i = 0; i + 1 < text.size(); ++i) {
    if (text[i] == '\n') line_starts.push_back(i + 1);
  }
  // (position, line); a stable sort keeps same-position inserts in order.
  std::vector<std::pair<size_t, const std::string*>> inserts;
  SplitMix64 rng(rng_seed);
  for (const auto& [line, times] : lines) {
    for (uint32_t r = 0; r < times; ++r) {
      inserts.emplace_back(line_starts[rng.Uniform(line_starts.size())], &line);
    }
  }
  std::stable_sort(inserts.begin(), inserts.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  size_t pos = 0;
  for (const auto& [at, line] : inserts) {
    out.append(text, pos, at - pos);
    out += *line;
    out += '\n';
    pos = at;
  }
  out.append(text, pos, std::string::npos);
  return out;
}

}  // namespace memaudit
