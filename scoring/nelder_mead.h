// Derivative-free minimization (Nelder–Mead simplex, standard coefficients
// 1, 2, ½, ½). Deterministic: same start, same result.
#ifndef MEMAUDIT_SCORING_NELDER_MEAD_H_
#define MEMAUDIT_SCORING_NELDER_MEAD_H_

#include <cstddef>
#include <functional>
#include <vector>

namespace memaudit::scoring {

struct NelderMeadOptions {
  size_t max_evaluations = 5000;
  // Stop when the simplex's function values span <= f_tolerance and its
  // vertices lie within x_tolerance of the best one (max norm).
  double f_tolerance = 1e-10;
  double x_tolerance = 1e-9;
};

struct NelderMeadResult {
  std::vector<double> x;
  double value = 0.0;
  size_t evaluations = 0;
  bool converged = false;
};

// Minimizes f from `start`, with the initial simplex start + step[i]·e_i.
// f may return +inf (or NaN, treated as +inf) for infeasible points.
NelderMeadResult NelderMead(const std::function<double(const std::vector<double>&)>& f,
                            const std::vector<double>& start, const std::vector<double>& step,
                            const NelderMeadOptions& options = {});

}  // namespace memaudit::scoring

#endif  // MEMAUDIT_SCORING_NELDER_MEAD_H_
