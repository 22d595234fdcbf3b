#include "scoring/rmia.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

absl::Status CheckPositive(absl::string_view name, absl::Span<const double> v) {
  for (size_t i = 0; i < v.size(); ++i) {
    if (!(v[i] > 0.0) || !std::isfinite(v[i])) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, "[", i, "] = ", v[i], "; probabilities must be finite and > 0"));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSide(absl::string_view side, absl::Span<const double> target, const Matrix& ref) {
  const std::string t = absl::StrCat("target_pr_", side), r = absl::StrCat("reference_pr_", side);
  MEMAUDIT_RETURN_IF_ERROR(ref.CheckShape(r));
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty(t, target.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty(absl::StrCat(r, " rows (reference models)"), ref.rows));
  MEMAUDIT_RETURN_IF_ERROR(
      CheckSameLength(t, target.size(), absl::StrCat(r, " columns"), ref.cols));
  MEMAUDIT_RETURN_IF_ERROR(CheckPositive(t, target));
  return CheckPositive(absl::StrCat(r, ".data"), ref.data);
}

absl::Status CheckAll(absl::Span<const double> tx, const Matrix& rx, absl::Span<const double> tz,
                      const Matrix& rz, const RmiaOptions& o) {
  if (!(o.gamma > 0.0) || !std::isfinite(o.gamma)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gamma = ", o.gamma, "; must be finite and > 0"));
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckProbability("a", o.a));
  MEMAUDIT_RETURN_IF_ERROR(CheckSide("x", tx, rx));
  MEMAUDIT_RETURN_IF_ERROR(CheckSide("z", tz, rz));
  if (rx.rows != rz.rows) {
    return absl::InvalidArgumentError(absl::StrCat("reference_pr_x has ", rx.rows,
                                                   " models but reference_pr_z has ", rz.rows,
                                                   "; they must be the same models"));
  }
  return absl::OkStatus();
}

// Pr(·|θ) / Pr(·) for every column.
std::vector<double> Ratios(absl::Span<const double> target, const Matrix& ref,
                           const RmiaOptions& o) {
  std::vector<double> mean(ref.cols, 0.0);
  for (size_t r = 0; r < ref.rows; ++r) {
    for (size_t c = 0; c < ref.cols; ++c) mean[c] += ref.at(r, c);
  }
  std::vector<double> ratio(ref.cols);
  for (size_t c = 0; c < ref.cols; ++c) {
    double pr = mean[c] / static_cast<double>(ref.rows);
    if (o.offline) pr = 0.5 * ((1.0 + o.a) * pr + (1.0 - o.a));
    ratio[c] = target[c] / pr;
  }
  return ratio;
}

RmiaResult Header(const RmiaOptions& o, size_t population) {
  RmiaResult r;
  r.gamma = o.gamma;
  r.a = o.a;
  r.offline = o.offline;
  r.population_size = population;
  return r;
}

}  // namespace

absl::StatusOr<RmiaResult> RmiaScores(absl::Span<const double> target_pr_x,
                                      const Matrix& reference_pr_x,
                                      absl::Span<const double> target_pr_z,
                                      const Matrix& reference_pr_z, const RmiaOptions& options) {
  MEMAUDIT_RETURN_IF_ERROR(
      CheckAll(target_pr_x, reference_pr_x, target_pr_z, reference_pr_z, options));
  const std::vector<double> lx = Ratios(target_pr_x, reference_pr_x, options);
  std::vector<double> lz = Ratios(target_pr_z, reference_pr_z, options);
  std::sort(lz.begin(), lz.end());
  RmiaResult out = Header(options, lz.size());
  out.scores.resize(lx.size());
  // lx / lz >= γ  ⇔  lz <= lx / γ (all ratios > 0).
  for (size_t i = 0; i < lx.size(); ++i) {
    const size_t beaten =
        std::upper_bound(lz.begin(), lz.end(), lx[i] / options.gamma) - lz.begin();
    out.scores[i] = static_cast<double>(beaten) / static_cast<double>(lz.size());
  }
  return out;
}

absl::StatusOr<RmiaResult> RmiaScoresDense(absl::Span<const double> target_pr_x,
                                           const Matrix& reference_pr_x,
                                           absl::Span<const double> target_pr_z,
                                           const Matrix& reference_pr_z,
                                           const RmiaOptions& options) {
  MEMAUDIT_RETURN_IF_ERROR(
      CheckAll(target_pr_x, reference_pr_x, target_pr_z, reference_pr_z, options));
  const std::vector<double> lx = Ratios(target_pr_x, reference_pr_x, options);
  const std::vector<double> lz = Ratios(target_pr_z, reference_pr_z, options);
  RmiaResult out = Header(options, lz.size());
  out.scores.resize(lx.size());
  for (size_t i = 0; i < lx.size(); ++i) {
    size_t beaten = 0;
    for (double z : lz) beaten += lx[i] / z >= options.gamma ? 1 : 0;
    out.scores[i] = static_cast<double>(beaten) / static_cast<double>(lz.size());
  }
  return out;
}

}  // namespace memaudit::scoring
