#include "scoring/logistic_regression.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "common/base/status_macros.h"
#include "scoring/validation.h"

namespace memaudit::scoring {
namespace {

double Sigmoid(double t) {
  return t >= 0 ? 1.0 / (1.0 + std::exp(-t)) : std::exp(t) / (1.0 + std::exp(t));
}

// log(1 + e^t) without overflow.
double Softplus(double t) { return t > 0 ? t + std::log1p(std::exp(-t)) : std::log1p(std::exp(t)); }

// Solves A s = b for symmetric positive (semi)definite A (d × d, row-major)
// by Cholesky, adding a tiny ridge if a pivot vanishes.
std::vector<double> SolveSpd(std::vector<double> a, std::vector<double> b, size_t d) {
  for (double jitter = 0.0;; jitter = jitter == 0.0 ? 1e-12 : jitter * 100) {
    std::vector<double> l(d * d, 0.0);
    bool ok = true;
    for (size_t i = 0; i < d && ok; ++i) {
      for (size_t j = 0; j <= i; ++j) {
        double s = a[i * d + j] + (i == j ? jitter : 0.0);
        for (size_t k = 0; k < j; ++k) s -= l[i * d + k] * l[j * d + k];
        if (i == j) {
          if (!(s > 0.0)) {
            ok = false;
            break;
          }
          l[i * d + i] = std::sqrt(s);
        } else {
          l[i * d + j] = s / l[j * d + j];
        }
      }
    }
    if (!ok) continue;
    for (size_t i = 0; i < d; ++i) {  // L y = b
      for (size_t k = 0; k < i; ++k) b[i] -= l[i * d + k] * b[k];
      b[i] /= l[i * d + i];
    }
    for (size_t i = d; i-- > 0;) {  // Lᵀ s = y
      for (size_t k = i + 1; k < d; ++k) b[i] -= l[k * d + i] * b[k];
      b[i] /= l[i * d + i];
    }
    return b;
  }
}

}  // namespace

absl::StatusOr<LogisticRegression> LogisticRegression::Fit(const Matrix& x,
                                                           absl::Span<const uint8_t> y,
                                                           const LogisticRegressionOptions& o) {
  MEMAUDIT_RETURN_IF_ERROR(x.CheckShape("x"));
  MEMAUDIT_RETURN_IF_ERROR(CheckNonEmpty("x rows (samples)", x.rows));
  MEMAUDIT_RETURN_IF_ERROR(CheckSameLength("x rows", x.rows, "y", y.size()));
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("x.data", x.data));
  MEMAUDIT_RETURN_IF_ERROR(CheckBinary("y", y));
  size_t pos = 0;
  for (uint8_t v : y) pos += v;
  if (pos == 0 || pos == y.size()) {
    return absl::InvalidArgumentError("y must contain both classes (0 and 1)");
  }
  if (!(o.l2 >= 0.0) || !std::isfinite(o.l2)) {
    return absl::InvalidArgumentError(absl::StrCat("l2 = ", o.l2, "; must be finite and >= 0"));
  }
  const size_t n = x.rows, f = x.cols, d = f + 1;  // parameter 0 is the intercept
  std::vector<double> mean(f, 0.0), scale(f, 1.0);
  if (o.standardize) {
    for (size_t i = 0; i < n; ++i) {
      for (size_t j = 0; j < f; ++j) mean[j] += x.at(i, j) / static_cast<double>(n);
    }
    for (size_t j = 0; j < f; ++j) {
      double ss = 0.0;
      for (size_t i = 0; i < n; ++i) ss += (x.at(i, j) - mean[j]) * (x.at(i, j) - mean[j]);
      const double sd = std::sqrt(ss / static_cast<double>(n));
      scale[j] = sd > 0.0 ? sd : 1.0;
    }
  }
  Matrix z(n, d);
  for (size_t i = 0; i < n; ++i) {
    z.at(i, 0) = 1.0;
    for (size_t j = 0; j < f; ++j) z.at(i, j + 1) = (x.at(i, j) - mean[j]) / scale[j];
  }
  std::vector<double> beta(d, 0.0), eta(n, 0.0);
  auto objective = [&](const std::vector<double>& b) {
    double v = 0.0;
    for (size_t i = 0; i < n; ++i) {
      double e = 0.0;
      for (size_t k = 0; k < d; ++k) e += z.at(i, k) * b[k];
      v += Softplus(e) - (y[i] ? e : 0.0);
    }
    for (size_t k = 1; k < d; ++k) v += 0.5 * o.l2 * b[k] * b[k];
    return v;
  };
  LogisticRegression model;
  double current = objective(beta);
  for (size_t it = 0; it < o.max_iterations; ++it) {
    std::vector<double> grad(d, 0.0), hess(d * d, 0.0);
    for (size_t i = 0; i < n; ++i) {
      double e = 0.0;
      for (size_t k = 0; k < d; ++k) e += z.at(i, k) * beta[k];
      const double p = Sigmoid(e), w = p * (1.0 - p), r = p - (y[i] ? 1.0 : 0.0);
      for (size_t k = 0; k < d; ++k) {
        grad[k] += r * z.at(i, k);
        for (size_t m = 0; m <= k; ++m) hess[k * d + m] += w * z.at(i, k) * z.at(i, m);
      }
    }
    for (size_t k = 0; k < d; ++k) {
      for (size_t m = 0; m < k; ++m) hess[m * d + k] = hess[k * d + m];
    }
    for (size_t k = 1; k < d; ++k) {
      grad[k] += o.l2 * beta[k];
      hess[k * d + k] += o.l2;
    }
    const std::vector<double> step = SolveSpd(hess, grad, d);
    // Backtracking keeps Newton monotone far from the optimum.
    double t = 1.0;
    std::vector<double> next(d);
    double value = current;
    for (int halving = 0; halving < 40; ++halving, t *= 0.5) {
      for (size_t k = 0; k < d; ++k) next[k] = beta[k] - t * step[k];
      value = objective(next);
      if (value <= current) break;
    }
    double largest = 0.0;
    for (size_t k = 0; k < d; ++k) largest = std::max(largest, std::abs(t * step[k]));
    beta = next;
    current = value;
    model.iterations_ = it + 1;
    if (largest <= o.tolerance) {
      model.converged_ = true;
      break;
    }
  }
  model.weights_.resize(f);
  model.intercept_ = beta[0];
  for (size_t j = 0; j < f; ++j) {
    model.weights_[j] = beta[j + 1] / scale[j];
    model.intercept_ -= model.weights_[j] * mean[j];
  }
  return model;
}

absl::StatusOr<std::vector<double>> LogisticRegression::PredictProbability(const Matrix& x) const {
  MEMAUDIT_RETURN_IF_ERROR(x.CheckShape("x"));
  if (x.cols != weights_.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("x has ", x.cols, " features; the model has ", weights_.size()));
  }
  MEMAUDIT_RETURN_IF_ERROR(CheckFinite("x.data", x.data));
  std::vector<double> p(x.rows);
  for (size_t i = 0; i < x.rows; ++i) {
    double e = intercept_;
    for (size_t j = 0; j < x.cols; ++j) e += weights_[j] * x.at(i, j);
    p[i] = Sigmoid(e);
  }
  return p;
}

}  // namespace memaudit::scoring
