#include "engine/lm_membership_signals.h"

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace memaudit::engine {

size_t ZlibBytes(const std::string& text) {
  uLongf size = compressBound(static_cast<uLong>(text.size()));
  std::vector<Bytef> out(size);
  if (compress2(out.data(), &size, reinterpret_cast<const Bytef*>(text.data()),
                static_cast<uLong>(text.size()), 9) != Z_OK) {
    return text.size();  // unreachable with a bound-sized buffer
  }
  return size;
}

double MeanOfLowest(std::vector<double> values, double fraction) {
  if (values.empty()) return 0;
  const size_t k = std::clamp<size_t>(
      static_cast<size_t>(std::ceil(fraction * static_cast<double>(values.size()))), 1,
      values.size());
  std::partial_sort(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), values.end());
  return std::accumulate(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(k), 0.0) /
         static_cast<double>(k);
}

LmMembershipScores MembershipScores(const TokenLogProbs& tokens, const std::string& text) {
  const std::vector<double>& lp = tokens.log_prob;
  LmMembershipScores s;
  const double sum = std::accumulate(lp.begin(), lp.end(), 0.0);
  s.loss = sum / static_cast<double>(std::max<size_t>(lp.size(), 1));
  s.zlib = sum / static_cast<double>(std::max<size_t>(ZlibBytes(text), 1));
  s.min_k = MeanOfLowest(lp, kMinKFraction);
  std::vector<double> z(lp.size());
  for (size_t t = 0; t < lp.size(); ++t) {
    // A point mass (stddev 0) has nothing to normalise by: its z is 0.
    z[t] = tokens.stddev[t] > 0 ? (lp[t] - tokens.mean[t]) / tokens.stddev[t] : 0;
  }
  s.min_k_plus = MeanOfLowest(z, kMinKFraction);
  return s;
}

}  // namespace memaudit::engine
