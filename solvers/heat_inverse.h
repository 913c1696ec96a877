// The heat inverse problem: recover κ from observations of u at time NT.
//
//   L(κ) = Σ_t Σ_ij (u^t_ij(κ) − u_obs^t_ij)²   over the whole grid, or
//   over a list of sensor points, at the final time t = NT or at the listed
//   observation times; u_obs = u(κ_true) (solvers/heat_solver.h).
//
// κ is either sharded (each rank's variable is its own n × m patch, the
// scalable default; optim Layout::kSharded) or replicated (ADCME's
// mpi_bcast(K) style: every rank feeds the whole Nx × Ny grid, rank 0's copy
// is broadcast, each rank slices its patch, the loss is mpi_sum'ed onto
// rank 0; Layout::kReplicated).
#pragma once

#include <memory>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/loop.h"
#include "core/session.h"
#include "optim/lbfgs.h"
#include "solvers/heat_solver.h"

namespace adgraph {
class Communicator;
}

namespace adgraph::solvers {

struct HeatInverseOptions {
  HeatConfig config;
  // Replicated κ (whole grid on every rank) instead of sharded patches.
  bool replicated = false;
  // Global (row, column) sensor points; empty means the whole grid.
  std::vector<std::pair<int, int>> sensors;
  // Observation times t in [1, nt], strictly increasing (a per-step output
  // of the time loop); empty means the final time only.
  std::vector<int64_t> observe_steps;
};

class HeatInverse final {
 public:
  // Validates the options against the communicator (throws OptionsError,
  // identically on every rank), builds the graph and computes u_obs.
  // Collective.
  HeatInverse(HeatInverseOptions options, Communicator& comm);
  ~HeatInverse();
  HeatInverse(const HeatInverse&) = delete;
  HeatInverse& operator=(const HeatInverse&) = delete;

  const Patch& patch() const { return patch_; }
  const HeatConfig& config() const { return options_.config; }
  optim::Layout layout() const;

  // The variable's start value (κ = 1) and true value, in the variable's
  // shape: the patch (sharded) or the whole grid (replicated).
  Tensor kappa_start() const;
  Tensor kappa_true() const;

  // Global loss and this rank's gradient at κ (in the variable's shape).
  // Collective.
  std::pair<double, Tensor> loss_and_gradient(const Tensor& kappa);
  // Global loss only (forward run). Collective.
  double loss(const Tensor& kappa);
  // Counters of the last run (peak live bytes, nodes executed).
  const RunStats& last_run() const { return session_->stats(); }
  // The time loop's last forward run and its adjoint's last run (empty
  // stats before the first gradient).
  LoopStats loop_forward_stats() const;
  LoopStats loop_adjoint_stats() const;
  // Nodes of the problem's graph (it does not grow with nt).
  int num_nodes() const { return graph_->num_nodes(); }

  // Minimises L from `kappa` (overwritten). Collective.
  optim::LbfgsSummary fit(Tensor& kappa, const optim::LbfgsOptions& options);

 private:
  // The global loss from this rank's value of global_loss_. Collective.
  double global(double value);

  HeatInverseOptions options_;
  Communicator& comm_;
  Patch patch_;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
  Value kappa_, local_loss_, global_loss_, gradient_, obs_, loop_;
  Tensor observations_;
};

}  // namespace adgraph::solvers
