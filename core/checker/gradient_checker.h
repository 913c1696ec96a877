// A public gradient checker for built-in and user ops.
//
// It compares gradients() with central finite differences, and runs a
// Taylor test: for a random direction d the remainder
//   r(ε) = |J(x + εd) − J(x) − ε ∇J·d|
// must shrink at order 2 as ε shrinks (ε = ε0·4^-k), while it stays above
// round-off. A wrong gradient leaves an O(ε) remainder (rate 1), which the
// rate test catches even when finite differences are too noisy to tell.
//
// It also checks forward mode: for each Taylor direction d, jvp() of y must
// equal ∇J·d (both summed over ranks) and pass the same Taylor test.
//
// With communication nodes the checked function is J = Σ_ranks y_rank (the
// loss is the sum of per-rank losses); every rank must call the checker.
#pragma once

#include <string>
#include <vector>

#include "core/exec/session.h"
#include "core/fields.h"
#include "core/graph.h"

namespace adgraph {

struct GradientCheckOptions {
  // Central-difference step. Range: (0, 1]. Default 1e-6.
  double step = 1e-6;
  // Largest allowed |fd − g| / max(1, |g|) per entry. Range: > 0.
  // Default 1e-7.
  double tolerance = 1e-7;
  // Number of random Taylor directions. Range: >= 0. Default 3.
  int directions = 3;
  // First Taylor step ε0; later steps are ε0·4^-k. Range: (0, 1].
  // Default 1e-2.
  double taylor_epsilon = 1e-2;
  // Number of Taylor steps. Range: [2, 20]. Default 8.
  int taylor_steps = 8;
  // Accepted deviation of the measured rate from 2. Range: (0, 1].
  // Default 0.1.
  double rate_tolerance = 0.1;
  // Seed of the random point-independent directions (mixed with the rank).
  unsigned seed = 20261122;
  // Skip the finite-difference comparison (e.g. for large inputs).
  bool finite_differences = true;
  // Also check jvp() in every Taylor direction. Needs a tangent rule for
  // every op between xs and y.
  bool check_jvp = true;
  // Largest allowed |jvp·d − ∇J·d| / max(1, |∇J·d|). Range: > 0.
  // Default 1e-9.
  double jvp_tolerance = 1e-9;

  // The fields' table (core/fields.h).
  static const FieldTable<GradientCheckOptions>& fields();
  // False with "<field>: <why>" in *error for a field out of its range.
  bool is_valid(std::string* error) const;
};

struct GradientCheckResult {
  // True when every check passed on every rank.
  bool ok = true;
  // Largest finite-difference error over all entries and ranks.
  double max_fd_error = 0.0;
  // Largest relative difference between jvp() and ∇J·d over directions.
  double max_jvp_error = 0.0;
  // Rate measured per direction (nan for a direction on which J is linear).
  std::vector<double> taylor_rates;
  // The same with jvp() as the linear term (empty without check_jvp).
  std::vector<double> jvp_taylor_rates;
  // Human-readable description of the first failure, empty when ok.
  std::string message;
};

// Checks ∂y/∂xs at the point given by `feeds`. `y` must have one element;
// every x must be a placeholder fed in `feeds`. Builds gradients(y, xs) and
// (with check_jvp) jvp(y, xs, ·) in y's graph. Throws OptionsError for invalid
// options, GraphError for a bad y or x. The result is the same on every rank.
GradientCheckResult check_gradients(Value y,
                                    const std::vector<Value>& xs,
                                    const FeedMap& feeds,
                                    const GradientCheckOptions& options = {});

}  // namespace adgraph
