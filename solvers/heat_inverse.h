// The heat inverse problem: recover κ from observations of u.
//
//   L(κ) = Σ_t Σ_ij (u^t_ij(κ) − u_obs^t_ij)²  +  α_T‖κ − 1‖²  +  α_S‖∇κ‖²
//
// The misfit runs over the whole grid or over sensor points (a list, or
// every k-th point), at the final time t = NT or at the listed observation
// times; u_obs = u(κ_true) (solvers/heat_solver.h) plus optional Gaussian
// noise. The regularization terms are solvers/regularization.h's; κ may be
// held in [kappa_min, kappa_max] (L-BFGS-B, optim/lbfgsb.h).
//
// κ is either sharded (each rank's variable is its own n × m patch, the
// scalable default; optim Layout::kSharded) or replicated (ADCME's
// mpi_bcast(K) style: every rank feeds the whole Nx × Ny grid, rank 0's copy
// is broadcast, each rank slices its patch, the loss is mpi_sum'ed onto
// rank 0; Layout::kReplicated).
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/exec/session.h"
#include "core/graph.h"
#include "core/loops/loop.h"
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
  // Sensors at every k-th point in both directions, global rows and
  // columns k/2, k/2 + k, … (added to `sensors`); 0: none. Range >= 0.
  int sensors_every = 0;
  // Observation times t in [1, nt], strictly increasing (a per-step output
  // of the time loop); empty means the final time only.
  std::vector<int64_t> observe_steps;
  // Gaussian noise added to u_obs: standard deviation noise × the RMS of
  // the noise-free observations at the sensors (all times); the deviate at
  // global (time k, row i, column j) is heat_noise_deviate(seed,
  // (k·nx + i)·ny + j), so every decomposition sees the same noise.
  // Range >= 0.
  double noise = 0.0;
  uint64_t seed = 0;
  // α_T of the Tikhonov term α_T‖κ − κ₀‖², κ₀ = 1 (the start). Range >= 0.
  double reg_tikhonov = 0.0;
  // α_S of the smoothness term α_S Σ (κ_p − κ_q)² over neighbouring grid
  // points (solvers/regularization.h). Range >= 0.
  double reg_smooth = 0.0;
  // Bounds on κ for fit() (L-BFGS-B when either is finite). kappa_min <=
  // kappa_max. Defaults: unbounded (plain L-BFGS).
  double kappa_min = -std::numeric_limits<double>::infinity();
  double kappa_max = std::numeric_limits<double>::infinity();

  bool bounded() const;
  // The fields' table (core/fields.h), HeatConfig's at the top level by
  // their own names (nx, …, checkpoints); what Python's HeatInverse and
  // heat_inversion's command line take.
  static const FieldTable<HeatInverseOptions>& fields();
  // True when these options describe a problem on `ranks` ranks;
  // otherwise false, with the reason in *error and the option's name in
  // *field (if given): "HeatConfig" for the configuration's own checks
  // (HeatConfig::is_valid), else the member's name.
  bool is_valid(int ranks,
                std::string* error,
                std::string* field = nullptr) const;
};

// A standard normal deviate for `index` of stream `seed`: Box–Muller on two
// uniforms u = (SplitMix64(seed + (2·index + 1 [+ 1])·φ) >> 11)·2⁻⁵³, φ =
// 0x9e3779b97f4a7c15: z = √(−2 ln(1 − u₁))·cos(2π u₂). Counter-based (no
// state), reproducible in any language (bench/scipy_lbfgsb_reference.py).
double heat_noise_deviate(uint64_t seed, uint64_t index);

// The global value of each part of L at one κ.
struct HeatLossTerms {
  double misfit = 0.0;
  double tikhonov = 0.0;
  double smoothness = 0.0;
};

class HeatInverse final {
 public:
  // Validates the options against the communicator (throws OptionsError,
  // identically on every rank), builds the graph on it and computes u_obs.
  // Collective over `comm`, which may be a sub-communicator: its ranks are
  // the patches, and no other rank takes part.
  HeatInverse(HeatInverseOptions options, std::shared_ptr<Communicator> comm);
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
  // The parts of the global loss at κ. Collective.
  HeatLossTerms terms(const Tensor& kappa);
  // ‖κ − κ_true‖₂ / ‖κ_true‖₂ over the whole grid. Collective.
  double relative_kappa_error(const Tensor& kappa);
  // The global sensor points (row, column), sorted, without repeats.
  const std::vector<std::pair<int, int>>& sensors() const {
    return options_.sensors;
  }
  // The observations this rank fits (its patch, noise included).
  const Tensor& observations() const { return feeds_.at(obs_); }
  // Counters of the last run (peak live bytes, nodes executed).
  const RunStats& last_run() const { return session_->stats(); }
  // The time loop's last forward run and its adjoint's last run (empty
  // stats before the first gradient).
  LoopStats loop_forward_stats() const;
  LoopStats loop_adjoint_stats() const;
  // Nodes of the problem's graph (it does not grow with nt).
  int num_nodes() const { return graph_->num_nodes(); }

  // What the objective depends on (grid, patches, steps, dt, κ layout,
  // sensors, observed steps, noise, seed, regularization, bounds) as a JSON
  // object: fit() records it in its checkpoints (unless the options carry
  // their own), so a resume of another problem is refused by field.
  std::string problem_description() const;

  // Minimises L from `kappa` (overwritten), with L-BFGS-B when the options
  // bound κ. With options.trace, the trace also shows the misfit and the
  // regularization of each iterate. Collective.
  optim::LbfgsSummary fit(Tensor& kappa, optim::LbfgsOptions options);

 private:
  // The global loss from this rank's value of global_loss_. Collective.
  double global(double value);
  // Global sums of this rank's values of the loss terms. Collective.
  HeatLossTerms global_terms(const std::vector<Tensor>& local);
  void add_noise(Tensor& observations);
  // The graph, phase by phase: κ's patch on this rank (fed, or sliced
  // from the broadcast grid), the time loop, the loss, the observations.
  Value place_kappa();
  Value solve_forward(const Value& kappa_patch);
  void build_loss(const Value& u, const Value& kappa_patch);
  void observe(const Value& u);
  // feeds_ with κ set to `kappa`.
  const FeedMap& feeds_at(const Tensor& kappa);

  HeatInverseOptions options_;
  std::shared_ptr<Communicator> shared_comm_;
  Communicator& comm_;
  Patch patch_;
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
  Value kappa_, local_loss_, global_loss_, gradient_, obs_, loop_;
  Value misfit_, tikhonov_, smoothness_;  // this rank's parts
  Value observed_u_;
  FeedMap feeds_;  // the observations and the last κ fed
};

}  // namespace adgraph::solvers
