#include "scoring/lira.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/normal.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

using Center = LiraOptions::Center;

absl::Status CheckLiraInputs(const Matrix& phi, const KeepMatrix& keep) {
  MEMAUDIT_RETURN_IF_ERROR(phi.CheckShape("phi"));
  MEMAUDIT_RETURN_IF_ERROR(keep.CheckShape("keep"));
  if (phi.rows != keep.rows || phi.cols != keep.cols) {
    return absl::InvalidArgumentError(absl::StrCat("phi (", phi.rows, " x ", phi.cols,
                                                   ") and keep (", keep.rows, " x ", keep.cols,
                                                   ") must have the same shape"));
  }
  if (phi.rows < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "phi has ", phi.rows, " model(s); LiRA needs at least 2 (target + reference)"));
  }
  if (phi.cols == 0) return absl::InvalidArgumentError("phi must have at least one example");
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("phi.data", phi.data));
  return CheckBinary("keep.data", keep.data);
}

// Summary of one reference set (the IN or OUT values of one example).
struct SetStats {
  size_t n = 0;
  double centre = 0.0;   // median or mean
  double sd = 0.0;       // population std about the mean, before the floor
  double res_sum = 0.0;  // Σ (value − centre), for the pooled σ
  double res_sq = 0.0;   // Σ (value − centre)²
};

double Floored(double sd) { return std::max(sd, kLiraSigmaFloor); }

// Population std of pooled residuals given their count, sum and square sum.
double PooledSigma(double count, double sum, double sq) {
  if (count == 0) return kLiraSigmaFloor;
  const double mean = sum / count;
  return Floored(std::sqrt(std::max(0.0, sq / count - mean * mean)));
}

// σ_in / σ_out are already floored; `in` is ignored offline.
double Score(double x, const SetStats& in, const SetStats& out, double sd_in, double sd_out,
             const LiraOptions& options, size_t* skipped) {
  const bool online = options.online;
  if (out.n == 0 || (online && in.n == 0)) {
    ++*skipped;
    return 0.0;
  }
  if (!online && options.two_sided) return -LogNormalPdf(x, out.centre, sd_out);
  if (!online) return LogNormalCdf((x - out.centre) / sd_out);
  return LogNormalPdf(x, in.centre, sd_in) - LogNormalPdf(x, out.centre, sd_out);
}

// --- Direct computation (one target) ---------------------------------------

SetStats DirectStats(std::vector<double>& v, Center center) {
  SetStats s;
  s.n = v.size();
  if (v.empty()) return s;
  const double n = static_cast<double>(v.size());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / n;
  double ss = 0.0;
  for (double x : v) ss += (x - mean) * (x - mean);
  s.sd = std::sqrt(ss / n);
  if (center == Center::kMean) {
    s.centre = mean;
  } else {
    std::sort(v.begin(), v.end());
    const size_t h = v.size() / 2;
    s.centre = v.size() % 2 == 1 ? v[h] : 0.5 * (v[h - 1] + v[h]);
  }
  return s;
}

// Two-pass population std of a residual list, floored.
double DirectPooledSigma(const std::vector<double>& r) {
  if (r.empty()) return kLiraSigmaFloor;
  const double mean = std::accumulate(r.begin(), r.end(), 0.0) / static_cast<double>(r.size());
  double ss = 0.0;
  for (double x : r) ss += (x - mean) * (x - mean);
  return Floored(std::sqrt(ss / static_cast<double>(r.size())));
}

// --- Leave-one-out statistics (all targets) --------------------------------

// One example's IN (or OUT) values sorted once; the statistics of the set
// without any one model then cost O(1).
class LooSet {
 public:
  void Build(const double* x, const uint8_t* flags, uint8_t want, size_t n_models, Center center) {
    center_ = center;
    sorted_.clear();
    for (size_t m = 0; m < n_models; ++m) {
      if (flags[m] == want) sorted_.emplace_back(x[m], static_cast<uint32_t>(m));
    }
    if (center == Center::kMedian) std::sort(sorted_.begin(), sorted_.end());
    pos_.resize(n_models);
    shift_ = 0.0;
    for (size_t i = 0; i < sorted_.size(); ++i) {
      pos_[sorted_[i].second] = static_cast<uint32_t>(i);
      shift_ += sorted_[i].first;
    }
    // Sums are taken about the set's own mean so that the subtracted
    // one-pass variance does not lose digits to a large common offset.
    if (!sorted_.empty()) shift_ /= static_cast<double>(sorted_.size());
    sum_ = sq_ = 0.0;
    for (const auto& [v, m] : sorted_) {
      sum_ += v - shift_;
      sq_ += (v - shift_) * (v - shift_);
    }
  }

  SetStats All() const { return Make(sorted_.size(), sum_, sq_, kNone); }

  // `model` must belong to the set.
  SetStats Without(size_t model) const {
    const double y = x(model) - shift_;
    return Make(sorted_.size() - 1, sum_ - y, sq_ - y * y, pos_[model]);
  }

 private:
  static constexpr size_t kNone = SIZE_MAX;

  double x(size_t model) const { return sorted_[pos_[model]].first; }

  // k-th smallest value once index `skip` is removed.
  double Kth(size_t k, size_t skip) const { return sorted_[k < skip ? k : k + 1].first; }

  SetStats Make(size_t n, double sum, double sq, size_t skip) const {
    SetStats s;
    s.n = n;
    if (n == 0) return s;
    const double dn = static_cast<double>(n);
    const double mean_y = sum / dn;
    s.sd = std::sqrt(std::max(0.0, sq / dn - mean_y * mean_y));
    if (center_ == Center::kMean) {
      s.centre = shift_ + mean_y;
    } else {
      const size_t h = n / 2;
      s.centre = n % 2 == 1 ? Kth(h, skip) : 0.5 * (Kth(h - 1, skip) + Kth(h, skip));
    }
    const double c = s.centre - shift_;
    s.res_sum = sum - dn * c;
    s.res_sq = sq - 2.0 * c * sum + dn * c * c;
    return s;
  }

  Center center_ = Center::kMedian;
  std::vector<std::pair<double, uint32_t>> sorted_;
  std::vector<uint32_t> pos_;
  double shift_ = 0.0, sum_ = 0.0, sq_ = 0.0;
};

// Pooled residual accumulators, one per target.
struct Pool {
  std::vector<double> count, sum, sq;
  explicit Pool(size_t n) : count(n, 0.0), sum(n, 0.0), sq(n, 0.0) {}
  void Add(size_t t, const SetStats& s) {
    count[t] += static_cast<double>(s.n);
    sum[t] += s.res_sum;
    sq[t] += s.res_sq;
  }
  double Sigma(size_t t) const { return PooledSigma(count[t], sum[t], sq[t]); }
};

// Per target t, the population std of every IN value of the models other
// than t (reference_variance): each model's IN count, sum and square sum
// about the mean of all IN values, summed over every model but t.
std::vector<double> ReferenceSigmas(const Matrix& phi, const KeepMatrix& keep) {
  const size_t n = phi.rows, m = phi.cols;
  double shift = 0.0, all = 0.0;
  for (size_t r = 0; r < n; ++r) {
    for (size_t j = 0; j < m; ++j) {
      if (keep.at(r, j)) {
        shift += phi.at(r, j);
        all += 1.0;
      }
    }
  }
  if (all > 0) shift /= all;
  std::vector<double> count(n, 0.0), sum(n, 0.0), sq(n, 0.0);
  for (size_t r = 0; r < n; ++r) {
    for (size_t j = 0; j < m; ++j) {
      if (!keep.at(r, j)) continue;
      const double y = phi.at(r, j) - shift;
      count[r] += 1.0;
      sum[r] += y;
      sq[r] += y * y;
    }
  }
  const double c = std::accumulate(count.begin(), count.end(), 0.0);
  const double s = std::accumulate(sum.begin(), sum.end(), 0.0);
  const double q = std::accumulate(sq.begin(), sq.end(), 0.0);
  std::vector<double> sigma(n);
  for (size_t t = 0; t < n; ++t) sigma[t] = PooledSigma(c - count[t], s - sum[t], q - sq[t]);
  return sigma;
}

// Columns are processed in blocks gathered into a column-major scratch
// buffer: phi is row-major (model-major), so reading one example's N values
// directly would touch N cache lines per example.
constexpr size_t kBlock = 64;

// Calls fn(b, x, k, in, out) for the b-th example of each block, where x / k
// point at the example's N values / keep flags and in / out are its reference
// sets; then flush(j0, width) once per block so fn can write per-block
// buffers that flush scatters.
template <typename PerExample, typename Flush>
void ForEachExample(const Matrix& phi, const KeepMatrix& keep, Center center, PerExample fn,
                    Flush flush) {
  const size_t n = phi.rows, m = phi.cols;
  std::vector<double> col(kBlock * n);
  std::vector<uint8_t> kcol(kBlock * n);
  LooSet in, out;
  for (size_t j0 = 0; j0 < m; j0 += kBlock) {
    const size_t width = std::min(kBlock, m - j0);
    for (size_t r = 0; r < n; ++r) {
      const double* prow = phi.row(r) + j0;
      const uint8_t* krow = keep.row(r) + j0;
      for (size_t b = 0; b < width; ++b) {
        col[b * n + r] = prow[b];
        kcol[b * n + r] = krow[b];
      }
    }
    for (size_t b = 0; b < width; ++b) {
      const double* x = &col[b * n];
      const uint8_t* k = &kcol[b * n];
      in.Build(x, k, 1, n, center);
      out.Build(x, k, 0, n, center);
      fn(b, x, k, in, out);
    }
    flush(j0, width);
  }
}

}  // namespace

absl::StatusOr<std::vector<double>> LiraScores(const Matrix& phi, const KeepMatrix& keep,
                                               size_t target, const LiraOptions& options,
                                               LiraDiagnostics* diagnostics) {
  MEMAUDIT_RETURN_IF_ERROR(CheckLiraInputs(phi, keep));
  if (target >= phi.rows) {
    return absl::InvalidArgumentError(
        absl::StrCat("target = ", target, "; must be < number of models ", phi.rows));
  }
  const size_t n = phi.rows, m = phi.cols;
  std::vector<SetStats> in_stats(m), out_stats(m);
  std::vector<double> in_res, out_res;  // pooled residuals (fixed variance)
  std::vector<double> in_vals, out_vals;
  for (size_t j = 0; j < m; ++j) {
    in_vals.clear();
    out_vals.clear();
    for (size_t r = 0; r < n; ++r) {
      if (r == target) continue;
      (keep.at(r, j) ? in_vals : out_vals).push_back(phi.at(r, j));
    }
    in_stats[j] = DirectStats(in_vals, options.center);
    out_stats[j] = DirectStats(out_vals, options.center);
    if (options.fixed_variance) {
      for (double v : in_vals) in_res.push_back(v - in_stats[j].centre);
      for (double v : out_vals) out_res.push_back(v - out_stats[j].centre);
    }
  }
  double pooled_in = 0.0, pooled_out = 0.0;
  if (options.reference_variance) {
    std::vector<double> raw_in;  // every IN value of the references
    for (size_t j = 0; j < m; ++j) {
      for (size_t r = 0; r < n; ++r) {
        if (r != target && keep.at(r, j)) raw_in.push_back(phi.at(r, j));
      }
    }
    pooled_in = pooled_out = DirectPooledSigma(raw_in);
  } else if (options.fixed_variance) {
    pooled_in = DirectPooledSigma(in_res);
    pooled_out = DirectPooledSigma(out_res);
  }
  const bool one_sigma = options.fixed_variance || options.reference_variance;
  size_t skipped = 0;
  std::vector<double> scores(m);
  for (size_t j = 0; j < m; ++j) {
    const double sd_in = one_sigma ? pooled_in : Floored(in_stats[j].sd);
    const double sd_out = one_sigma ? pooled_out : Floored(out_stats[j].sd);
    scores[j] =
        Score(phi.at(target, j), in_stats[j], out_stats[j], sd_in, sd_out, options, &skipped);
  }
  if (diagnostics != nullptr) {
    diagnostics->skipped = skipped;
    diagnostics->pooled_sigma_in.clear();
    diagnostics->pooled_sigma_out.clear();
    if (one_sigma) {
      diagnostics->pooled_sigma_in.push_back(pooled_in);
      diagnostics->pooled_sigma_out.push_back(pooled_out);
    }
  }
  return scores;
}

absl::StatusOr<std::vector<double>> LiraScoresAllTargets(const Matrix& phi, const KeepMatrix& keep,
                                                         const LiraOptions& options,
                                                         LiraDiagnostics* diagnostics) {
  MEMAUDIT_RETURN_IF_ERROR(CheckLiraInputs(phi, keep));
  const size_t n = phi.rows, m = phi.cols;
  // The target's own value sits in IN when keep = 1 and in OUT otherwise;
  // the other set is used whole.
  auto stats_for = [](size_t t, const uint8_t* k, const LooSet& in, const LooSet& out) {
    return k[t] ? std::make_pair(in.Without(t), out.All())
                : std::make_pair(in.All(), out.Without(t));
  };

  Pool pool_in(n), pool_out(n);
  if (options.fixed_variance) {
    // Pass 1: pooled residual sums per target (the σ must be known before
    // any score); pass 2 re-sorts rather than holding N × M centres.
    ForEachExample(
        phi, keep, options.center,
        [&](size_t, const double*, const uint8_t* k, const LooSet& in, const LooSet& out) {
          for (size_t t = 0; t < n; ++t) {
            auto [si, so] = stats_for(t, k, in, out);
            pool_in.Add(t, si);
            pool_out.Add(t, so);
          }
        },
        [](size_t, size_t) {});
  }
  std::vector<double> sigma_in(n), sigma_out(n);
  for (size_t t = 0; t < n; ++t) {
    sigma_in[t] = pool_in.Sigma(t);
    sigma_out[t] = pool_out.Sigma(t);
  }
  if (options.reference_variance) sigma_in = sigma_out = ReferenceSigmas(phi, keep);
  const bool one_sigma = options.fixed_variance || options.reference_variance;

  std::vector<double> scores(n * m);
  std::vector<double> block(kBlock * n);
  size_t skipped = 0;
  ForEachExample(
      phi, keep, options.center,
      [&](size_t b, const double* x, const uint8_t* k, const LooSet& in, const LooSet& out) {
        for (size_t t = 0; t < n; ++t) {
          auto [si, so] = stats_for(t, k, in, out);
          const double sd_in = one_sigma ? sigma_in[t] : Floored(si.sd);
          const double sd_out = one_sigma ? sigma_out[t] : Floored(so.sd);
          block[b * n + t] = Score(x[t], si, so, sd_in, sd_out, options, &skipped);
        }
      },
      [&](size_t j0, size_t width) {
        for (size_t t = 0; t < n; ++t) {
          double* dst = scores.data() + t * m + j0;
          for (size_t b = 0; b < width; ++b) dst[b] = block[b * n + t];
        }
      });
  if (diagnostics != nullptr) {
    diagnostics->skipped = skipped;
    diagnostics->pooled_sigma_in.clear();
    diagnostics->pooled_sigma_out.clear();
    if (one_sigma) {
      diagnostics->pooled_sigma_in = sigma_in;
      diagnostics->pooled_sigma_out = sigma_out;
    }
  }
  return scores;
}

absl::StatusOr<std::vector<double>> LossScores(absl::Span<const double> losses) {
  MEMAUDIT_RETURN_IF_ERROR(CheckNoNaN("losses", losses));
  std::vector<double> scores(losses.size());
  for (size_t i = 0; i < losses.size(); ++i) scores[i] = -losses[i];
  return scores;
}

}  // namespace memaudit::scoring
