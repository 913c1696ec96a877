// L-BFGS-B: limited-memory BFGS with bound constraints l ≤ x ≤ u, for
// replicated and sharded variables.
//
// Algorithm: R. H. Byrd, P. Lu, J. Nocedal and C. Zhu, "A limited memory
// algorithm for bound constrained optimization", SIAM J. Sci. Comput.
// 16(5), 1995, as revised by J. L. Morales and J. Nocedal, ACM TOMS 38(1),
// 2011 (L-BFGS-B 3.0, the code behind SciPy's method="L-BFGS-B"). Each
// iteration finds the generalized Cauchy point along the projected
// steepest-descent path, minimises the compact limited-memory model over
// the variables still free there, and searches along the result with the
// Moré–Thuente line search (optim/more_thuente.h); the first step is
// 1/‖d‖₂ unless every variable has both bounds. Memory: 2·m local vectors
// plus O(m²) scalars; cost per iteration: one or more evaluations, O(m·n)
// work plus a sort of the breakpoints, and O(1) global reductions (with
// sharded variables, the breakpoints the Cauchy search passes are gathered
// in batches).
//
// Every rank runs in lockstep on bit-identical scalars, as optim::lbfgs.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <vector>

#include "optim/lbfgs.h"

namespace adgraph::optim {

// Per-entry bounds of this rank's part of x (the same layout as x).
// −infinity / +infinity leave a side open; an empty vector leaves that side
// open for every entry. lower[i] == upper[i] fixes entry i.
struct Bounds {
  Eigen::VectorXd lower, upper;
  // Optional: each entry's place in one numbering of all the variables
  // that does not depend on how they are split (e.g. a grid point's
  // row-major index in the whole grid). Breakpoints and limiting steps that
  // tie are then taken in this order, so the result is bitwise the same on
  // any split (issue #36; the sums are exact anyway). Empty: ties go by
  // rank, then local index. Distinct across ranks when given.
  std::vector<int64_t> global_index;
};

// What SciPy's L-BFGS-B reports for a termination (its `message`), e.g.
// "CONVERGENCE: NORM_OF_PROJECTED_GRADIENT_<=_PGTOL".
const char* lbfgsb_message(Termination t);

// Minimises f over the box from `x` (overwritten with the result).
// options.tolerance_gradient bounds the projected gradient's ‖·‖∞ (SciPy's
// pgtol) and options.tolerance_function the relative reduction of f (SciPy's
// factr·ε; SciPy's defaults are 1e-5 and 2.220446049250313e-09);
// options.line_search_bounded configures the line search. A start outside
// the box is projected onto it (as SciPy does), not refused.
//
// Throws OptionsError (the same on every rank) for invalid options, bounds
// of the wrong length, NaN bounds or lower > upper (naming the first bad
// entry and its rank), and Error for an unreadable or mismatched checkpoint
// (including one written with other bounds or without bounds). A failed
// line search is a termination reason, not an exception.
LbfgsSummary lbfgsb(const Objective& objective,
                    Eigen::VectorXd& x,
                    const Bounds& bounds,
                    const LbfgsOptions& options = {},
                    CommContext* comm = nullptr,
                    Layout layout = Layout::kReplicated);

}  // namespace adgraph::optim
