#include "scoring/relational.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"

namespace memaudit::scoring {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ') {
      if (!cur.empty()) out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(std::move(cur));
  return out;
}

// F1 of two bags of units.
double BagF1(const std::vector<std::string>& pred, const std::vector<std::string>& gold) {
  if (pred.empty() || gold.empty()) return pred.empty() && gold.empty() ? 1.0 : 0.0;
  std::map<std::string, int> count;
  for (const auto& t : gold) ++count[t];
  int common = 0;
  for (const auto& t : pred) {
    auto it = count.find(t);
    if (it != count.end() && it->second > 0) {
      --it->second;
      ++common;
    }
  }
  if (common == 0) return 0.0;
  const double p = static_cast<double>(common) / pred.size();
  const double r = static_cast<double>(common) / gold.size();
  return 2 * p * r / (p + r);
}

std::vector<std::string> Digits(absl::string_view s) {
  std::vector<std::string> out;
  for (char c : s) {
    if (IsDigit(c)) out.emplace_back(1, c);
  }
  return out;
}

double Score(absl::string_view pred, absl::string_view gold, SuccessMetric metric) {
  switch (metric) {
    case SuccessMetric::kExactMatch:
      return NormalizeAnswer(pred) == NormalizeAnswer(gold) ? 1.0 : 0.0;
    case SuccessMetric::kDigitF1:
      return BagF1(Digits(pred), Digits(gold));
    case SuccessMetric::kTokenF1:
      return BagF1(Split(NormalizeAnswer(pred)), Split(NormalizeAnswer(gold)));
  }
  return 0.0;
}

absl::StatusOr<double> MeanSuccess(absl::string_view name, absl::Span<const QaPrediction> set,
                                   SuccessMetric metric) {
  if (set.empty()) return absl::InvalidArgumentError(absl::StrCat(name, " must not be empty"));
  double sum = 0.0;
  for (size_t i = 0; i < set.size(); ++i) {
    auto s = AnswerSuccess(set[i].prediction, set[i].references, metric);
    if (!s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, "[", i, "]: ", s.status().message()));
    }
    sum += *s;
  }
  return sum / static_cast<double>(set.size());
}

}  // namespace

std::string RemoveDigits(absl::string_view text) {
  std::string out;
  for (char c : text) {
    if (!IsDigit(c)) out.push_back(c);
  }
  return out;
}

bool ContainsDigit(absl::string_view text) {
  return std::any_of(text.begin(), text.end(), IsDigit);
}

std::string NormalizeAnswer(absl::string_view text) {
  std::string lower;
  for (char c : text) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (std::ispunct(u)) continue;
    lower.push_back(std::isspace(u) ? ' ' : static_cast<char>(std::tolower(u)));
  }
  std::string out;
  for (const std::string& tok : Split(lower)) {
    if (tok == "a" || tok == "an" || tok == "the") continue;
    if (!out.empty()) out.push_back(' ');
    out += tok;
  }
  return out;
}

absl::StatusOr<double> AnswerSuccess(absl::string_view prediction,
                                     absl::Span<const std::string> references,
                                     SuccessMetric metric) {
  if (references.empty()) return absl::InvalidArgumentError("references must not be empty");
  double best = 0.0;
  for (const auto& ref : references) best = std::max(best, Score(prediction, ref, metric));
  return best;
}

absl::StatusOr<std::vector<double>> RecordSuccesses(absl::Span<const QaPrediction> set,
                                                    SuccessMetric metric) {
  std::vector<double> out;
  out.reserve(set.size());
  for (size_t i = 0; i < set.size(); ++i) {
    auto s = AnswerSuccess(set[i].prediction, set[i].references, metric);
    if (!s.ok())
      return absl::InvalidArgumentError(absl::StrCat("[", i, "]: ", s.status().message()));
    out.push_back(*s);
  }
  return out;
}

absl::StatusOr<RelationalMemorization> ComputeRelationalMemorization(
    absl::Span<const QaPrediction> train, absl::Span<const QaPrediction> validation,
    SuccessMetric metric) {
  MEMAUDIT_ASSIGN_OR_RETURN(auto s_train, MeanSuccess("train", train, metric));
  MEMAUDIT_ASSIGN_OR_RETURN(auto s_val, MeanSuccess("validation", validation, metric));
  return RelationalMemorization{s_train, s_val, s_train - s_val};
}

}  // namespace memaudit::scoring
