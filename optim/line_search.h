// Strong-Wolfe line search.
//
// Algorithm 3.5 (bracketing) and 3.6 (zoom, with safeguarded cubic
// interpolation) of Nocedal & Wright, "Numerical Optimization", 2nd ed.
// Near a minimiser the decrease c1·α·φ'(0) falls below the round-off of f;
// there the sufficient-decrease test is replaced by Hager & Zhang's
// approximate Wolfe condition φ'(α) ≤ (2·c1 − 1)·φ'(0), allowed only when
// φ(α) ≤ φ(0) + ε·|φ(0)| (SIAM J. Optim. 16(1), 2005, eq. 4.1).
// Memory O(1); each trial step costs one evaluation of f and ∇f.
#pragma once

#include <functional>
#include <string>

#include "core/fields.h"

namespace adgraph::optim {

// φ(α) = f(x + α d) and φ'(α) = ∇f(x + α d)·d for a trial step α; the
// callback evaluates both at once (one objective evaluation).
using LineFunction =
    std::function<void(double alpha, double* phi, double* dphi)>;

struct LineSearchOptions {
  // Sufficient decrease: φ(α) ≤ φ(0) + c1·α·φ'(0). Range (0, c2). 1e-4.
  double c1 = 1e-4;
  // Curvature: |φ'(α)| ≤ c2·|φ'(0)|. Range (c1, 1). 0.9.
  double c2 = 0.9;
  // Largest step tried. Range > 0. 1e20.
  double max_step = 1e20;
  // Evaluations allowed per search. Range >= 1. 20.
  int max_evaluations = 20;
  // ε of the approximate Wolfe test; 0 disables it. Range [0, 1e-6]. 1e-12.
  double approximate_wolfe_epsilon = 1e-12;

  // The fields' table (core/fields.h).
  static const FieldTable<LineSearchOptions>& fields();
  // False (and the reason in *error, "line_search.<field>: <why>") when a
  // member is out of its range, or c1 >= c2.
  bool is_valid(std::string* error) const;
};

struct LineSearchResult {
  bool found = false;
  // The accepted step (or the best one seen, when not found).
  double alpha = 0.0;
  double phi = 0.0;
  double dphi = 0.0;
  int evaluations = 0;
};

// Searches from α = `initial` > 0 for a step satisfying the strong Wolfe
// conditions. `phi0` and `dphi0` are φ(0) and φ'(0) < 0. Deterministic: the
// same inputs give the same trial steps on every rank.
//
// The result is the accepted step or, when none is found, the best one
// seen. `keep`, when given, is called right after `f` evaluated the step
// that becomes that result (each new best, and the accepted step), so a
// caller can keep that point's x and ∇f without tracking the best itself.
//
// Throws OptionsError for invalid options, a non-negative φ'(0) or an
// initial step that is not positive.
LineSearchResult line_search_strong_wolfe(
    const LineFunction& f,
    double phi0,
    double dphi0,
    double initial,
    const LineSearchOptions& options,
    const std::function<void()>& keep = {});

}  // namespace adgraph::optim
