#include "solvers/heat_inverse.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <nlohmann/json.hpp>
#include <numbers>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/exact_sum.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"
#include "optim/lbfgsb.h"
#include "solvers/regularization.h"

namespace adgraph::solvers {

const FieldTable<HeatInverseOptions>& HeatInverseOptions::fields() {
  using O = HeatInverseOptions;
  using C = HeatConfig;
  constexpr auto c = &O::config;
  const Range counts = Range::at_least(1);
  const Range weight = Range::at_least(0).finite_only();
  static const FieldTable<O> table = {
      field("nx", c, &C::nx, counts, "interior grid points in x"),
      field("ny", c, &C::ny, counts, "interior grid points in y"),
      field("px", c, &C::px, counts, "patch rows (px x py ranks)"),
      field("py", c, &C::py, counts, "patch columns"),
      field("nt", c, &C::nt, counts, "time steps"),
      field("dt",
            c,
            &C::dt,
            Range::at_least(0).finite_only(),
            "time step; 0 selects 0.2 h^2 / max kappa_true"),
      field("scheme", c, &C::scheme, {}, "time scheme"),
      field("overlap",
            c,
            &C::overlap,
            {},
            "overlap each step's halo exchange with the interior update"),
      field("checkpoints",
            c,
            &C::checkpoints,
            {},
            "the time loop adjoint's schedule (auto: about sqrt(2 nt) "
            "snapshots)"),
      field("replicated",
            &O::replicated,
            {},
            "replicate kappa on every rank instead of sharding it"),
      field("sensors",
            &O::sensors,
            Range::at_least(0),
            "global (row, column) sensor points; empty: the whole grid"),
      field("sensors_every",
            &O::sensors_every,
            Range::at_least(0),
            "sensors at every k-th point in x and y (0: none)"),
      field("observe_steps",
            &O::observe_steps,
            Range::at_least(1),
            "observation times in [1, nt]; empty: the final time"),
      field("noise", &O::noise, weight, "noise relative to the RMS of u_obs"),
      field("seed", &O::seed, {}, "seed of the noise"),
      field("reg_tikhonov",
            &O::reg_tikhonov,
            weight,
            "weight of the Tikhonov term |kappa - 1|^2"),
      field("reg_smooth",
            &O::reg_smooth,
            weight,
            "weight of the smoothness term"),
      field("kappa_min", &O::kappa_min, {}, "lower bound on kappa"),
      field("kappa_max", &O::kappa_max, {}, "upper bound on kappa"),
  };
  return table;
}

bool HeatInverseOptions::is_valid(int ranks,
                                  std::string* error,
                                  std::string* field) const {
  auto bad = [&](const char* option, std::string why) {
    return invalid_option(error, field, option, std::move(why));
  };
  const HeatConfig& c = config;
  std::string why, name;
  if (!check_fields(fields(), *this, &why, &name))
    return bad(name.c_str(), why);
  if (!c.is_valid(ranks, &why)) return bad("HeatConfig", why);
  // An open side is ±infinity; +inf as a lower bound (or −inf as an upper
  // one) would leave no κ at all.
  if (kappa_min == std::numeric_limits<double>::infinity() ||
      kappa_max == -std::numeric_limits<double>::infinity())
    return bad("kappa_min", "a bound of kappa must be finite (or open)");
  if (kappa_min > kappa_max || std::isnan(kappa_min) || std::isnan(kappa_max))
    return bad("kappa_min", "kappa_min must be <= kappa_max");
  // The sensors sit at k/2, k/2 + k, …: none when k/2 is past the grid.
  if (const int k = sensors_every; k > 0 && !(k / 2 < c.nx && k / 2 < c.ny)) {
    return bad(
        "sensors_every",
        "every " + std::to_string(k) + "th point of a " + std::to_string(c.nx) +
            " x " + std::to_string(c.ny) + " grid selects no sensor (at most " +
            std::to_string(2 * std::min(c.nx, c.ny) - 1) + " selects one)");
  }
  for (const auto& [i, j] : sensors) {
    if (i < 0 || i >= c.nx || j < 0 || j >= c.ny) {
      return bad("sensors",
                 "sensor (" + std::to_string(i) + ", " + std::to_string(j) +
                     ") is outside the " + std::to_string(c.nx) + " x " +
                     std::to_string(c.ny) + " grid");
    }
  }
  for (std::size_t i = 0; i < observe_steps.size(); ++i) {
    const int64_t t = observe_steps[i];
    if (t < 1 || t > c.nt || (i > 0 && t <= observe_steps[i - 1])) {
      return bad("observe_steps",
                 "observation times must increase strictly within [1, " +
                     std::to_string(c.nt) + "]; entry " + std::to_string(i) +
                     " is " + std::to_string(t));
    }
  }
  return true;
}

namespace {

// The sensors given and those every k-th point selects, sorted, each once.
std::vector<std::pair<int, int>> sensor_points(const HeatInverseOptions& o) {
  std::vector<std::pair<int, int>> sensors = o.sensors;
  if (const int k = o.sensors_every; k > 0) {
    for (int i = k / 2; i < o.config.nx; i += k)
      for (int j = k / 2; j < o.config.ny; j += k) sensors.emplace_back(i, j);
  }
  std::sort(sensors.begin(), sensors.end());
  sensors.erase(std::unique(sensors.begin(), sensors.end()), sensors.end());
  return sensors;
}

}  // namespace

HeatInverse::HeatInverse(HeatInverseOptions options,
                         std::shared_ptr<Communicator> comm)
    : options_(std::move(options)),
      shared_comm_(std::move(comm)),
      comm_(*shared_comm_) {
  std::string error, field;
  if (!options_.is_valid(comm_.size(), &error, &field))
    throw OptionsError(error, {}, {}, field);
  options_.sensors = sensor_points(options_);
  patch_ = patch_of(options_.config, comm_.rank());
  graph_ = std::make_unique<Graph>();
  graph_->set_comm(shared_comm_);
  const Value kappa_patch = place_kappa();
  const Value u = solve_forward(kappa_patch);
  build_loss(u, kappa_patch);
  observe(u);
}

Value HeatInverse::place_kappa() {
  Graph& g = *graph_;
  const HeatConfig& c = options_.config;
  if (!options_.replicated) {
    kappa_ = g.placeholder("kappa", {patch_.n, patch_.m});
    return kappa_;
  }
  kappa_ = g.placeholder("kappa", {c.nx, c.ny});
  Value everywhere = mpi_bcast(kappa_, 0);
  return slice(slice(everywhere, 0, patch_.row0, patch_.row0 + patch_.n),
               1,
               patch_.col0,
               patch_.col0 + patch_.m);
}

// u at the observation times (or the final u).
Value HeatInverse::solve_forward(const Value& kappa_patch) {
  Graph& g = *graph_;
  const HeatConfig& c = options_.config;
  Value u0 = g.constant(heat_initial(c, patch_), "u0");
  Value f = g.constant(heat_source(c, patch_), "f");
  HeatSolution solution =
      heat_solve(u0, kappa_patch, f, c, options_.observe_steps);
  loop_ = solution.loop;
  return options_.observe_steps.empty() ? solution.u : solution.observed;
}

void HeatInverse::build_loss(const Value& u, const Value& kappa_patch) {
  Graph& g = *graph_;
  const bool in_time = !options_.observe_steps.empty();
  const int64_t times = static_cast<int64_t>(options_.observe_steps.size());
  obs_ = g.placeholder("u_obs", u.shape());
  // Σ misfit² over every rank's points (with sensors, Σ d ⊙ mask ⊙ d,
  // exact for a 0/1 mask), exact and rounded once on rank 0 (mpi_dot):
  // the same bits for every decomposition.
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
  misfit_ = mpi_dot(misfit, weighted, 0);
  local_loss_ = misfit_;
  // The regularization joins the graph only when asked for, so the plain
  // problem's graph (and result) is the same as without it.
  if (options_.reg_tikhonov > 0) {
    tikhonov_ = regularization_tikhonov(
        kappa_patch,
        g.constant(Tensor(kappa_patch.shape(), 1.0), "kappa0"),
        options_.reg_tikhonov);
    local_loss_ = local_loss_ + tikhonov_;
  }
  if (options_.reg_smooth > 0) {
    smoothness_ = regularization_smoothness(
        kappa_patch, options_.config, patch_, options_.reg_smooth);
    local_loss_ = local_loss_ + smoothness_;
  }
  // Replicated: the loss lives on rank 0 (mpi_sum), as optim expects.
  global_loss_ = options_.replicated ? mpi_sum(local_loss_, 0) : local_loss_;
  gradient_ = gradient(global_loss_, kappa_);
  session_ = std::make_unique<Session>(g);
}

// Observations: u at κ_true, patch by patch.
void HeatInverse::observe(const Value& u) {
  Tensor truth = kappa_true();
  observed_u_ = u;
  Tensor observations = session_->run(u, {{kappa_, truth}});
  if (options_.noise > 0) add_noise(observations);
  // The runs' feeds from now on: the observations move in once, κ is
  // copied into the same buffer on each call (no allocation, no copy of
  // the observations per evaluation).
  feeds_.emplace(obs_, std::move(observations));
  feeds_.emplace(kappa_, Tensor(kappa_.shape(), 0.0));
}

const FeedMap& HeatInverse::feeds_at(const Tensor& kappa) {
  Tensor& at = feeds_.at(kappa_);
  if (kappa.shape() == at.shape()) {
    at.array() = kappa.array();
  } else {
    at = kappa;  // the session names the feed and its shape
  }
  return feeds_;
}

namespace {

// SplitMix64 (Steele, Lea & Flood, OOPSLA 2014): a bijective 64-bit mixer.
uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

double heat_noise_deviate(uint64_t seed, uint64_t index) {
  constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull;
  const uint64_t base = seed + (2 * index + 1) * kGolden;
  const double u1 = static_cast<double>(splitmix64(base) >> 11) * 0x1p-53;
  const double u2 =
      static_cast<double>(splitmix64(base + kGolden) >> 11) * 0x1p-53;
  return std::sqrt(-2.0 * std::log(1.0 - u1)) *
         std::cos(2.0 * std::numbers::pi * u2);
}

bool HeatInverseOptions::bounded() const {
  return std::isfinite(kappa_min) || std::isfinite(kappa_max);
}

void HeatInverse::add_noise(Tensor& observations) {
  const HeatConfig& c = options_.config;
  const bool in_time = !options_.observe_steps.empty();
  const int64_t times =
      in_time ? static_cast<int64_t>(options_.observe_steps.size()) : 1;
  const int64_t plane = patch_.n * patch_.m;
  auto local_index = [&](int64_t t, int64_t i, int64_t j) {
    return t * plane + (i - patch_.row0) * patch_.m + (j - patch_.col0);
  };
  auto mine = [&](int64_t i, int64_t j) {
    return i >= patch_.row0 && i < patch_.row0 + patch_.n && j >= patch_.col0 &&
           j < patch_.col0 + patch_.m;
  };
  // The scale: RMS of the noise-free values at the sensors (every point
  // without sensors), the squares summed exactly over ranks (the same
  // bits for every decomposition) and counted.
  ExactSum squares[2];
  for (int64_t t = 0; t < times; ++t) {
    if (options_.sensors.empty()) {
      const double* v = observations.data() + t * plane;
      squares[0].add_products(v, v, plane);
      squares[1].add(static_cast<double>(plane));
    } else {
      for (const auto& [i, j] : options_.sensors) {
        if (!mine(i, j)) continue;
        const double v = observations[local_index(t, i, j)];
        squares[0].add(v * v);
        squares[1].add(1.0);
      }
    }
  }
  double sums[2];
  comm_.allreduce_exact_sums(squares, sums, 2);
  const double sigma = options_.noise * std::sqrt(sums[0] / sums[1]);
  // One deviate per global (time, row, column): counter-based, so a rank
  // draws only its own points and any decomposition gets the same noise.
  for (int64_t t = 0; t < times; ++t) {
    for (int64_t i = patch_.row0; i < patch_.row0 + patch_.n; ++i) {
      for (int64_t j = patch_.col0; j < patch_.col0 + patch_.m; ++j) {
        const uint64_t k = static_cast<uint64_t>((t * c.nx + i) * c.ny + j);
        observations[local_index(t, i, j)] +=
            sigma * heat_noise_deviate(options_.seed, k);
      }
    }
  }
}

HeatLossTerms HeatInverse::global_terms(const std::vector<Tensor>& local) {
  double v[3] = {local[0].item(), 0, 0};
  std::size_t next = 1;
  if (tikhonov_.valid()) v[1] = local[next++].item();
  if (smoothness_.valid()) v[2] = local[next++].item();
  comm_.allreduce(v, v, 3, ReduceOp::kSum);
  return {v[0], v[1], v[2]};
}

HeatLossTerms HeatInverse::terms(const Tensor& kappa) {
  std::vector<Value> fetch = {misfit_};
  if (tikhonov_.valid()) fetch.push_back(tikhonov_);
  if (smoothness_.valid()) fetch.push_back(smoothness_);
  return global_terms(session_->run(fetch, feeds_at(kappa)));
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
  auto out = session_->run({global_loss_, gradient_}, feeds_at(kappa));
  return {global(out[0].item()), std::move(out[1])};
}

double HeatInverse::loss(const Tensor& kappa) {
  return global(session_->run(global_loss_, feeds_at(kappa)).item());
}

double HeatInverse::relative_kappa_error(const Tensor& kappa) {
  // ‖κ − κ_true‖ / ‖κ_true‖ with exact sums: the same bits for every
  // decomposition.
  const Tensor truth = kappa_true();
  const Eigen::ArrayXd error = kappa.array() - truth.array();
  ExactSum squares[2];
  squares[0].add_products(error.data(), error.data(), error.size());
  squares[1].add_products(truth.data(), truth.data(), truth.size());
  double sums[2];
  if (options_.replicated) {
    sums[0] = squares[0].round(), sums[1] = squares[1].round();
  } else {
    comm_.allreduce_exact_sums(squares, sums, 2);
  }
  return std::sqrt(sums[0] / sums[1]);
}

double HeatInverse::global(double value) {
  // Replicated: rank 0 holds the mpi_sum; sharded: every rank its part.
  if (!options_.replicated) return comm_.allreduce_sum(value);
  comm_.bcast(&value, 1, 0);
  return value;
}

std::string HeatInverse::problem_description() const {
  const HeatConfig& c = options_.config;
  const auto bound = [](double b) {
    return std::isfinite(b) ? nlohmann::json(b) : nlohmann::json(nullptr);
  };
  return nlohmann::json{
      {"nx", c.nx},
      {"ny", c.ny},
      {"px", c.px},
      {"py", c.py},
      {"nt", c.nt},
      {"dt", heat_dt(c)},
      {"kappa_layout", options_.replicated ? "replicated" : "sharded"},
      {"sensors", sensors()},
      {"observe_steps", options_.observe_steps},
      {"noise", options_.noise},
      {"seed", options_.seed},
      {"reg_tikhonov", options_.reg_tikhonov},
      {"reg_smooth", options_.reg_smooth},
      {"kappa_min", bound(options_.kappa_min)},
      {"kappa_max", bound(options_.kappa_max)}}
      .dump();
}

optim::LbfgsSummary HeatInverse::fit(Tensor& kappa,
                                     optim::LbfgsOptions options) {
  if (options.checkpoint_problem.empty())
    options.checkpoint_problem = problem_description();
  const FeedMap& feeds = feeds_at(kappa);
  Tensor& at = feeds_.at(kappa_);
  // With a trace, each evaluation also fetches the loss's parts and keeps
  // their global values for the trace line of the point it accepts.
  const bool show_terms = options.trace;
  std::vector<Value> fetch = {global_loss_, gradient_};
  if (show_terms) {
    fetch.push_back(misfit_);
    if (tikhonov_.valid()) fetch.push_back(tikhonov_);
    if (smoothness_.valid()) fetch.push_back(smoothness_);
  }
  HeatLossTerms last;
  optim::Objective f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    at.array() = x.array();
    auto out = session_->run(fetch, feeds);
    grad = out[1].array().matrix();
    if (show_terms)
      last = global_terms(std::vector<Tensor>(out.begin() + 2, out.end()));
    return out[0].item();
  };
  if (show_terms) {
    options.trace_columns_header = "          misfit  regularization";
    options.trace_columns = [&last] {
      char text[64];
      std::snprintf(text,
                    sizeof(text),
                    "  %14.6e  %14.6e",
                    last.misfit,
                    last.tikhonov + last.smoothness);
      return std::string(text);
    };
  }
  Eigen::VectorXd x = kappa.array().matrix();
  optim::LbfgsSummary summary;
  if (options_.bounded()) {
    optim::Bounds box{Eigen::VectorXd::Constant(x.size(), options_.kappa_min),
                      Eigen::VectorXd::Constant(x.size(), options_.kappa_max),
                      {}};
    if (!options_.replicated) {
      // Ties between grid points go by their row-major index in the whole
      // grid: the same fit on any patch grid (the replicated κ is the
      // whole grid in that order already).
      box.global_index.reserve(x.size());
      for (int64_t i = 0; i < patch_.n; ++i)
        for (int64_t j = 0; j < patch_.m; ++j)
          box.global_index.push_back((patch_.row0 + i) * options_.config.ny +
                                     patch_.col0 + j);
    }
    summary = optim::lbfgsb(f, x, box, options, &comm_, layout());
  } else {
    summary = optim::lbfgs(f, x, options, &comm_, layout());
  }
  kappa.array() = x.array();
  return summary;
}

}  // namespace adgraph::solvers
