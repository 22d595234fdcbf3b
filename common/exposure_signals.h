// The observations an exposure task sends the scorer (point "final", run =
// the model index). Observation stays a generic vector of doubles, so text
// (secrets, the extracted candidate) travels as UTF-8 bytes, one per value.
#ifndef MEMAUDIT_COMMON_EXPOSURE_SIGNALS_H_
#define MEMAUDIT_COMMON_EXPOSURE_SIGNALS_H_

#include <string>
#include <vector>

namespace memaudit::exposure {

// One value per canary, in canary order (inserted canaries in spec order,
// then the controls).
inline constexpr char kRepeats[] = "repeats";
inline constexpr char kPxBits[] = "px_bits";
inline constexpr char kRank[] = "rank";
inline constexpr char kExact[] = "exact";  // 1 exact, 0 budget ran out
inline constexpr char kRankQueries[] = "rank_queries";
// The secrets' UTF-8 bytes, each secret followed by '\n'.
inline constexpr char kSecretsUtf8[] = "secrets_utf8";
// Px (bits) of the |S| reference candidates; sent when the estimator needs it.
inline constexpr char kReferencePxBits[] = "reference_px_bits";
// {attempted, extracted, queries, then the candidate's UTF-8 bytes}.
inline constexpr char kExtraction[] = "extraction";
inline constexpr size_t kExtractionHeader = 3;
// {log2|R|, training steps, final loss (nats/char)}.
inline constexpr char kModel[] = "model";
inline constexpr size_t kModelValues = 3;

inline const std::vector<std::string>& EstimatorNames() {
  static const auto* names = new std::vector<std::string>{"exact", "sampled", "extrapolated"};
  return *names;
}

// Whether `estimator` ("exact", "sampled", "extrapolated", "all") needs the
// reference sample.
inline bool NeedsReferences(const std::string& estimator) { return estimator != "exact"; }

inline void AppendBytes(const std::string& text, std::vector<double>* out) {
  for (unsigned char c : text) out->push_back(static_cast<double>(c));
}

}  // namespace memaudit::exposure

#endif  // MEMAUDIT_COMMON_EXPOSURE_SIGNALS_H_
