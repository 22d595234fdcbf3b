#include "scoring/nelder_mead.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace memaudit::scoring {

NelderMeadResult NelderMead(const std::function<double(const std::vector<double>&)>& f,
                            const std::vector<double>& start, const std::vector<double>& step,
                            const NelderMeadOptions& options) {
  const size_t n = start.size();
  NelderMeadResult result;
  auto eval = [&](const std::vector<double>& x) {
    ++result.evaluations;
    const double v = f(x);
    return std::isnan(v) ? std::numeric_limits<double>::infinity() : v;
  };
  std::vector<std::vector<double>> pts(n + 1, start);
  std::vector<double> val(n + 1);
  for (size_t i = 0; i < n; ++i) pts[i + 1][i] += step[i];
  for (size_t i = 0; i <= n; ++i) val[i] = eval(pts[i]);

  std::vector<size_t> order(n + 1);
  std::vector<double> centroid(n), trial(n), trial2(n);
  auto along = [&](double t, std::vector<double>& out, const std::vector<double>& worst) {
    for (size_t k = 0; k < n; ++k) out[k] = centroid[k] + t * (worst[k] - centroid[k]);
  };
  while (true) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return val[a] < val[b]; });
    const size_t best = order[0], worst = order[n], second = order[n - 1];
    double x_spread = 0.0;
    for (size_t i = 1; i <= n; ++i) {
      for (size_t k = 0; k < n; ++k) {
        x_spread = std::max(x_spread, std::abs(pts[order[i]][k] - pts[best][k]));
      }
    }
    if (val[worst] - val[best] <= options.f_tolerance && x_spread <= options.x_tolerance) {
      result.converged = true;
      break;
    }
    if (result.evaluations >= options.max_evaluations) break;

    std::fill(centroid.begin(), centroid.end(), 0.0);
    for (size_t i = 0; i < n; ++i) {
      for (size_t k = 0; k < n; ++k) centroid[k] += pts[order[i]][k] / static_cast<double>(n);
    }
    along(-1.0, trial, pts[worst]);  // reflection
    const double fr = eval(trial);
    if (fr < val[best]) {
      along(-2.0, trial2, pts[worst]);  // expansion
      const double fe = eval(trial2);
      if (fe < fr) {
        pts[worst] = trial2;
        val[worst] = fe;
      } else {
        pts[worst] = trial;
        val[worst] = fr;
      }
      continue;
    }
    if (fr < val[second]) {
      pts[worst] = trial;
      val[worst] = fr;
      continue;
    }
    // Contraction: outside if the reflection improved on the worst point.
    const bool outside = fr < val[worst];
    along(outside ? -0.5 : 0.5, trial2, pts[worst]);
    const double fc = eval(trial2);
    if (fc < (outside ? fr : val[worst])) {
      pts[worst] = trial2;
      val[worst] = fc;
      continue;
    }
    for (size_t i = 1; i <= n; ++i) {  // shrink toward the best vertex
      auto& p = pts[order[i]];
      for (size_t k = 0; k < n; ++k) p[k] = pts[best][k] + 0.5 * (p[k] - pts[best][k]);
      val[order[i]] = eval(p);
    }
  }
  const size_t best = static_cast<size_t>(std::min_element(val.begin(), val.end()) - val.begin());
  result.x = pts[best];
  result.value = val[best];
  return result;
}

}  // namespace memaudit::scoring
