#include "solvers/heat_inverse.h"

#include "core/error.h"
#include "core/gradients.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph::solvers {

HeatInverse::HeatInverse(HeatInverseOptions options, Communicator& comm)
    : options_(std::move(options)), comm_(comm) {
  const HeatConfig& c = options_.config;
  std::string error;
  if (!c.is_valid(comm.size(), &error))
    throw OptionsError(error, {}, {}, "HeatConfig");
  for (const auto& [i, j] : options_.sensors) {
    if (i < 0 || i >= c.nx || j < 0 || j >= c.ny) {
      throw OptionsError("sensor (" + std::to_string(i) + ", " +
                             std::to_string(j) + ") is outside the " +
                             std::to_string(c.nx) + " x " +
                             std::to_string(c.ny) + " grid",
                         {},
                         {},
                         "sensors");
    }
  }
  patch_ = patch_of(c, comm.rank());
  graph_ = std::make_unique<Graph>();
  Graph& g = *graph_;
  g.set_comm(Communicator::world());

  Value kappa_patch;
  if (options_.replicated) {
    kappa_ = g.placeholder("kappa", {c.nx, c.ny});
    Value everywhere = mpi_bcast(kappa_, 0);
    kappa_patch =
        slice(slice(everywhere, 0, patch_.row0, patch_.row0 + patch_.n),
              1,
              patch_.col0,
              patch_.col0 + patch_.m);
  } else {
    kappa_ = g.placeholder("kappa", {patch_.n, patch_.m});
    kappa_patch = kappa_;
  }
  Value u0 = g.constant(heat_initial(c, patch_), "u0");
  Value f = g.constant(heat_source(c, patch_), "f");
  for (std::size_t i = 0; i < options_.observe_steps.size(); ++i) {
    const int64_t t = options_.observe_steps[i];
    if (t < 1 || t > c.nt || (i > 0 && t <= options_.observe_steps[i - 1])) {
      throw OptionsError(
          "observation times must increase strictly within "
          "[1, " +
              std::to_string(c.nt) + "]; entry " + std::to_string(i) + " is " +
              std::to_string(t),
          {},
          {},
          "observe_steps");
    }
  }
  HeatSolution solution =
      heat_solve(u0, kappa_patch, f, c, options_.observe_steps);
  loop_ = solution.loop;
  const bool in_time = !options_.observe_steps.empty();
  const int64_t times = static_cast<int64_t>(options_.observe_steps.size());
  Value u = in_time ? solution.observed : solution.u;
  obs_ = g.placeholder("u_obs", u.shape());
  // Σ misfit² as dot(d, d): one pass over the patch instead of a square
  // and a sum (with sensors, dot(d, mask ⊙ d), exact for a 0/1 mask).
  Value misfit = u - obs_;
  Value weighted = misfit;
  if (!options_.sensors.empty()) {
    Tensor mask(u.shape(), 0.0);
    const int64_t plane = patch_.n * patch_.m;
    for (int64_t k = 0; k < (in_time ? times : 1); ++k) {
      for (const auto& [i, j] : options_.sensors) {
        const int64_t li = i - patch_.row0, lj = j - patch_.col0;
        if (li >= 0 && li < patch_.n && lj >= 0 && lj < patch_.m)
          mask[k * plane + li * patch_.m + lj] = 1.0;
      }
    }
    weighted = misfit * g.constant(mask, "sensor_mask");
  }
  local_loss_ = dot(misfit, weighted);
  // Replicated: the loss lives on rank 0 (mpi_sum), as optim expects.
  global_loss_ = options_.replicated ? mpi_sum(local_loss_, 0) : local_loss_;
  gradient_ = gradient(global_loss_, kappa_);
  session_ = std::make_unique<Session>(g);

  // Observations: u^NT at κ_true, patch by patch.
  Tensor truth = kappa_true();
  observations_ = session_->run(u, {{kappa_, truth}});
}

HeatInverse::~HeatInverse() = default;

LoopStats HeatInverse::loop_forward_stats() const { return loop_stats(loop_); }

LoopStats HeatInverse::loop_adjoint_stats() const {
  const std::vector<Value> adjoints = loop_adjoints(loop_);
  if (adjoints.empty()) return {};
  return loop_stats(adjoints.back());
}

optim::Layout HeatInverse::layout() const {
  return options_.replicated ? optim::Layout::kReplicated
                             : optim::Layout::kSharded;
}

Tensor HeatInverse::kappa_start() const { return Tensor(kappa_.shape(), 1.0); }

Tensor HeatInverse::kappa_true() const {
  if (!options_.replicated) return heat_kappa_true(options_.config, patch_);
  Patch whole;
  whole.n = options_.config.nx;
  whole.m = options_.config.ny;
  return heat_kappa_true(options_.config, whole);
}

std::pair<double, Tensor> HeatInverse::loss_and_gradient(const Tensor& kappa) {
  auto out = session_->run({global_loss_, gradient_},
                           {{kappa_, kappa}, {obs_, observations_}});
  return {global(out[0].item()), std::move(out[1])};
}

double HeatInverse::loss(const Tensor& kappa) {
  return global(
      session_->run(global_loss_, {{kappa_, kappa}, {obs_, observations_}})
          .item());
}

double HeatInverse::global(double value) {
  // Replicated: rank 0 holds the mpi_sum; sharded: every rank its part.
  if (!options_.replicated) return comm_.allreduce_sum(value);
  comm_.bcast(&value, 1, 0);
  return value;
}

optim::LbfgsSummary HeatInverse::fit(Tensor& kappa,
                                     const optim::LbfgsOptions& options) {
  FeedMap feeds{{kappa_, kappa}, {obs_, observations_}};
  Tensor& at = feeds[kappa_];
  optim::Objective f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    at.array() = x.array();
    auto out = session_->run({global_loss_, gradient_}, feeds);
    grad = out[1].array().matrix();
    return out[0].item();
  };
  Eigen::VectorXd x = kappa.array().matrix();
  optim::LbfgsSummary summary = optim::lbfgs(f, x, options, &comm_, layout());
  kappa.array() = x.array();
  return summary;
}

}  // namespace adgraph::solvers
