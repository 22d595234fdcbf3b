#include "common/base/nearest_name.h"

#include <algorithm>

namespace memaudit {
namespace {

size_t EditDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::optional<std::string> NearestName(const std::string& typed,
                                       const std::vector<std::string>& known) {
  constexpr size_t kMaxEdits = 2;
  if (typed.size() > kMaxComparedBytes) return std::nullopt;
  std::optional<std::string> best;
  size_t best_distance = kMaxEdits + 1;
  for (const std::string& k : known) {
    const size_t d = k.rfind(typed, 0) == 0 && !typed.empty() ? 1 : EditDistance(typed, k);
    if (d < best_distance) {
      best = k;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace memaudit
