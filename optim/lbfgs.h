// Limited-memory BFGS for replicated and sharded variables.
//
// Algorithm: the two-loop recursion (Nocedal & Wright, "Numerical
// Optimization", 2nd ed., Algorithm 7.4/7.5) with H0 = (sᵀy / yᵀy)·I and a
// strong-Wolfe line search (optim/line_search.h). First step: α = 1/‖g‖₂
// (capped at 1), then α = 1. Memory: 2·m local vectors plus O(m) scalars.
// Cost per iteration: one or more objective evaluations plus O(m·n) work
// and a handful of global reductions.
//
// Every rank runs the optimiser in lockstep. Every global quantity (f, dot
// products, norms) is reduced and then broadcast from rank 0, so all ranks
// hold bit-identical scalars and take identical decisions.
#pragma once

#include <Eigen/Core>
#include <array>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

#include "core/enum_names.h"
#include "core/fields.h"
#include "optim/line_search.h"
#include "optim/more_thuente.h"

namespace adgraph {
class CommContext;
}

namespace adgraph::optim {

// How the variable vector is laid out across ranks.
enum class Layout {
  // Every rank holds the whole x (ADCME's mpi_bcast(θ) style): rank 0's f
  // and ∇f are broadcast after each evaluation and the other ranks' values
  // are ignored. The loss must therefore live on rank 0 (e.g. built with
  // mpi_sum onto rank 0) and x must enter the graph through mpi_bcast from
  // rank 0, so that rank 0's gradient is the whole gradient. A loss that
  // every rank holds (e.g. through mpi_allreduce) needs kSharded-style
  // summing instead: with bcast, rank 0's ∇f then sums every rank's loss
  // while f is rank 0's alone.
  kReplicated,
  // Each rank holds its own slice of x (its patch of κ). f is the sum over
  // ranks of the returned values; ∇f stays local; dot products are summed.
  kSharded,
};

enum class Termination {
  kGradientNorm,      // ‖∇f‖∞ ≤ tolerance_gradient
  kFunctionChange,    // relative change of f ≤ tolerance_function
  kMaxIterations,     // iterations reached max_iterations
  kMaxEvaluations,    // evaluations reached max_evaluations
  kLineSearchFailed,  // no step satisfied the strong Wolfe conditions
  kNotFinite,         // f or ∇f at the start point is NaN or infinite
};

constexpr auto enum_names(Termination) {
  using T = Termination;
  return std::array{EnumName{T::kGradientNorm, "gradient_norm"},
                    EnumName{T::kFunctionChange, "function_change"},
                    EnumName{T::kMaxIterations, "max_iterations"},
                    EnumName{T::kMaxEvaluations, "max_evaluations"},
                    EnumName{T::kLineSearchFailed, "line_search_failed"},
                    EnumName{T::kNotFinite, "not_finite"}};
}

// name_of(t), as a C string.
const char* termination_name(Termination t);

struct LbfgsOptions {
  // History size m. Range [1, 1000]. Default 10.
  int history = 10;
  // Stop when ‖∇f‖∞ (over all ranks) ≤ this. Range: finite, >= 0.
  // Default 1e-8.
  double tolerance_gradient = 1e-8;
  // Stop when (f_k − f_{k+1}) / max(|f_k|, |f_{k+1}|, 1) ≤ this.
  // Range: finite, >= 0; 0 disables the test. Default 0.
  double tolerance_function = 0.0;
  // Iteration limit. Range >= 0. Default 1000.
  int max_iterations = 1000;
  // Objective evaluation limit. Range >= 1. Default 100000.
  int max_evaluations = 100000;
  // Line-search parameters (c1, c2, max_step, evaluations per search).
  LineSearchOptions line_search;
  // lbfgsb() searches with Moré–Thuente instead, as L-BFGS-B does; its
  // parameters (ftol, gtol, xtol, evaluations per search).
  MoreThuenteOptions line_search_bounded;
  // Print `Iter  Function value  Gradient norm  time` lines on rank 0.
  bool trace = false;
  // Where the trace goes; nullptr means std::cout. Not owned.
  std::ostream* trace_stream = nullptr;
  // Extra trace columns: `trace_columns_header` ends the header line and
  // `trace_columns()` (when set) ends each iteration's line. It describes
  // the point just accepted, which is the last one the objective evaluated
  // (both line searches stop on an evaluation), so an objective can record
  // what to show. Called on rank 0 only; it must not communicate.
  std::string trace_columns_header;
  std::function<std::string()> trace_columns;
  // Write a checkpoint every this many iterations (0: never). Range >= 0.
  int checkpoint_every = 0;
  // Checkpoint path prefix; rank r writes "<path>.rank<r>of<P>". Required
  // when checkpoint_every > 0 or resume is true.
  std::string checkpoint_path;
  // Continue from the checkpoint at checkpoint_path instead of starting at
  // x. The run then ends exactly where the uninterrupted run would have.
  bool resume = false;
  // What the objective is, as a flat JSON object ({"nx": 64, "px": 2, …}):
  // recorded in every checkpoint; resuming with a different one is refused,
  // naming each field that differs. Empty: not recorded nor checked.
  std::string checkpoint_problem;

  // The fields' table (core/fields.h): name, range, doc of each setting the
  // front ends expose. The line searches have their own.
  static const FieldTable<LbfgsOptions>& fields();
  // False with "<field>: <why>" in *error for a field out of its range (or
  // a line search's), or a checkpoint path missing.
  bool is_valid(std::string* error) const;
};

struct LbfgsSummary {
  Termination termination = Termination::kMaxIterations;
  std::string message;
  int iterations = 0;
  int evaluations = 0;
  double initial_f = 0.0;
  double final_f = 0.0;
  // ‖∇f‖∞ at the final point, over all ranks; with bounds (lbfgsb) the
  // norm of the projected gradient.
  double gradient_norm = 0.0;
  // Variables at one of their bounds at the final point, over all ranks
  // (lbfgsb; 0 without bounds).
  int64_t active_bounds = 0;
  double seconds = 0.0;
  // f after each iteration, starting with f(x0).
  std::vector<double> f_history;
  // gradient_norm after each iteration, starting at x0.
  std::vector<double> gradient_norm_history;
  // Iteration number of the checkpoint resumed from (-1 if none).
  int resumed_at = -1;
};

// Evaluates f at x, writes ∇f (this rank's part) into `grad` (already sized
// like x) and returns this rank's f. Called in lockstep on every rank.
using Objective =
    std::function<double(const Eigen::VectorXd& x, Eigen::VectorXd& grad)>;

// Minimises f from `x` (overwritten with the result). `comm` may be nullptr
// for a single process. Throws OptionsError for invalid options and Error
// for an unreadable or mismatched checkpoint (the same on every rank). A
// failed line search is a termination reason, not an exception.
LbfgsSummary lbfgs(const Objective& objective,
                   Eigen::VectorXd& x,
                   const LbfgsOptions& options = {},
                   CommContext* comm = nullptr,
                   Layout layout = Layout::kReplicated);

}  // namespace adgraph::optim
