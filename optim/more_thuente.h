// Moré–Thuente line search: a step satisfying the strong Wolfe conditions
// found with safeguarded cubic and quadratic steps over an interval of
// uncertainty (J. J. Moré and D. J. Thuente, "Line search algorithms with
// guaranteed sufficient decrease", ACM TOMS 20(3), 1994; the MINPACK-2
// routine dcsrch that L-BFGS-B and SciPy use). L-BFGS-B (optim/lbfgsb.h)
// searches with it so its iterates follow the published algorithm. Memory
// O(1); each trial step costs one evaluation of f and ∇f.
#pragma once

#include <string>

#include "optim/line_search.h"

namespace adgraph::optim {

struct MoreThuenteOptions {
  // Sufficient decrease: φ(α) ≤ φ(0) + ftol·α·φ'(0). Range (0, gtol).
  // Default 1e-3 (L-BFGS-B's).
  double ftol = 1e-3;
  // Curvature: |φ'(α)| ≤ gtol·|φ'(0)|. Range (ftol, 1). Default 0.9.
  double gtol = 0.9;
  // Relative width of the interval of uncertainty below which the search
  // stops with a warning. Range (0, 1). Default 0.1.
  double xtol = 0.1;
  // Trial steps allowed. Range >= 1. Default 20 (L-BFGS-B's limit).
  int max_evaluations = 20;

  // The fields' table (core/fields.h); the front ends read it as
  // LbfgsOptions' "line_search_bounded".
  static const FieldTable<MoreThuenteOptions>& fields();
  // False (and the reason in *error, "line_search_bounded.<field>: <why>")
  // when a member is out of its range, or ftol >= gtol.
  bool is_valid(std::string* error) const;
};

enum class MoreThuenteStatus {
  kConverged,  // both Wolfe conditions hold at the returned step
  kWarning,    // rounding, xtol, or the step hit stpmin/stpmax: the
               // step is usable (L-BFGS-B accepts it)
  kTooManyEvaluations,
  kError,  // invalid input (a step outside [stpmin, stpmax], …)
};

struct MoreThuenteResult {
  MoreThuenteStatus status = MoreThuenteStatus::kError;
  double alpha = 0.0;  // the step last evaluated
  double phi = 0.0;    // φ and φ' there
  double dphi = 0.0;
  int evaluations = 0;
};

// Searches from α = `initial` in [stpmin, stpmax] for φ'(0) = `dphi0` < 0.
// φ is evaluated at every step the search tries, the last one being the
// result's α (so the caller's point is that of the last evaluation).
// Deterministic: the same inputs give the same trial steps on every rank.
MoreThuenteResult line_search_more_thuente(const LineFunction& f,
                                           double phi0,
                                           double dphi0,
                                           double initial,
                                           double stpmin,
                                           double stpmax,
                                           const MoreThuenteOptions& options);

}  // namespace adgraph::optim
