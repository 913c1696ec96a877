#include "solvers/regularization.h"

#include "mpi_ops/halo.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph::solvers {
namespace {

// Σ (a − b)² in one pass.
Value squared_distance(Value a, Value b) {
  Value d = a - b;
  return dot(d, d);
}

}  // namespace

Value regularization_tikhonov(Value kappa, Value kappa0, double alpha) {
  return alpha * squared_distance(kappa, kappa0);
}

Value regularization_smoothness(Value kappa,
                                const HeatConfig& config,
                                const Patch& patch,
                                double alpha) {
  const int64_t n = patch.n, m = patch.m;
  Graph& g = kappa.graph();
  // Every rank exchanges its edges (the same communication on every rank);
  // it uses what arrives from the right and from below.
  auto halos = data_exchange(slice(kappa, 1, 0, 1),
                             slice(kappa, 1, m - 1, m),
                             slice(kappa, 0, 0, 1),
                             slice(kappa, 0, n - 1, n),
                             config.px,
                             config.py);
  Value total = g.scalar(0.0);
  if (m > 1) {
    total = total +
            squared_distance(slice(kappa, 1, 1, m), slice(kappa, 1, 0, m - 1));
  }
  if (n > 1) {
    total = total +
            squared_distance(slice(kappa, 0, 1, n), slice(kappa, 0, 0, n - 1));
  }
  // The pairs across the right and lower edges, weighted 0 where the grid
  // ends there. Every rank consumes both halos: a rank whose fetch did not
  // need the exchange would not run it, and its neighbours would wait.
  const double right = patch.J + 1 < config.py ? 1.0 : 0.0;
  const double down = patch.I + 1 < config.px ? 1.0 : 0.0;
  total = total +
          right * squared_distance(halos[1], slice(kappa, 1, m - 1, m)) +
          down * squared_distance(halos[3], slice(kappa, 0, n - 1, n));
  return alpha * total;
}

}  // namespace adgraph::solvers
