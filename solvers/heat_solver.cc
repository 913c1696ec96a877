#include "solvers/heat_solver.h"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <optional>

#include "core/loops/loop.h"
#include "core/op.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/halo.h"
#include "ops/elementwise.h"
#include "solvers/heat_step.h"
#include "solvers/patch_operators.h"

namespace adgraph::solvers {
namespace {

template <class F>
Tensor field(const HeatConfig& config, const Patch& patch, F f) {
  Tensor t(Shape{patch.n, patch.m});
  const double h = config.h();
  for (int64_t i = 0; i < patch.n; ++i) {
    for (int64_t j = 0; j < patch.m; ++j) {
      t[i * patch.m + j] =
          f((patch.row0 + i + 1) * h, (patch.col0 + j + 1) * h);
    }
  }
  return t;
}

// The implicit time loop: one sparse solve per step (and one sparse
// product for Crank–Nicolson) with the matrices' values assembled from κ
// once, outside the loop, so the preconditioner is set up once per run.
// Each row P is divided by κ_P: (diag(1/κ) − θ·dt·Δ_h) u⁺ =
// (diag(1/κ) + (1 − θ)·dt·Δ_h) u + dt·f/κ is the same system, symmetric
// positive definite, so CG solves it and the adjoint solves with the
// matrix itself.
HeatSolution implicit_heat_solve(Value u0,
                                 Value kappa,
                                 Value f,
                                 const HeatConfig& config,
                                 LoopOptions options) {
  const int rank = bind_communicator(u0.graph()).rank();
  const double dt = heat_dt(config);
  const bool crank_nicolson = config.scheme == HeatScheme::kCrankNicolson;
  const double theta = crank_nicolson ? 0.5 : 1.0;
  const sparse::CsrPattern pattern = five_point_pattern(config, rank);
  sparse::SolverOptions solver = config.implicit_solver;
  sparse::SparseMatrix rhs(pattern);
  sparse::SparseMatrix lhs(pattern,
                           nullptr,
                           solver.pc == "mg"
                               ? patch_prolongations(config, rank)
                               : std::vector<sparse::Prolongation>{});
  solver.symmetric = true;
  Value inv_kappa = 1.0 / kappa;
  std::vector<Value> invariants = {
      scaled_heat_matrix_values(config, rank, inv_kappa, -theta * dt),
      dt * f * inv_kappa};
  if (crank_nicolson) {
    invariants.push_back(
        scaled_heat_matrix_values(config, rank, inv_kappa, (1 - theta) * dt));
  } else {
    invariants.push_back(inv_kappa);
  }
  const bool observing = !options.output_steps.empty();
  LoopResult r = loop(
      config.nt,
      {u0},
      invariants,
      [&](const LoopArgs& a) {
        const Values& in = a.invariants;
        Value u = a.carries[0];
        Value b = crank_nicolson ? sparse::matvec(rhs, in[2], u) + in[1]
                                 : u * in[2] + in[1];
        LoopStep step;
        step.carries = {sparse::solve(lhs, in[0], b, solver)};
        if (observing) step.outputs = {step.carries[0]};
        return step;
      },
      std::move(options));
  HeatSolution s;
  s.u = r.carries[0];
  if (observing) s.observed = r.outputs[0];
  s.loop = r.node;
  return s;
}

double kappa_true_at(double x, double y) {
  return 1 + 0.5 * std::exp(-((x - 0.5) * (x - 0.5) + (y - 0.5) * (y - 0.5)) /
                            0.05);
}

}  // namespace

bool HeatConfig::is_valid(int ranks, std::string* error) const {
  auto bad = [&](const std::string& msg) {
    *error = msg;
    return false;
  };
  if (nx < 1 || ny < 1) return bad("nx and ny must be >= 1");
  if (px < 1 || py < 1) return bad("px and py must be >= 1");
  if (nt < 1) return bad("nt must be >= 1");
  if (!(dt >= 0) || !std::isfinite(dt)) {
    return bad(
        "dt must be a finite number >= 0 (0 selects the default "
        "rule), got " +
        std::to_string(dt));
  }
  const int64_t patches = int64_t{px} * py;  // 65536 x 65536 overflows int
  if (patches != ranks) {
    return bad("px x py = " + std::to_string(px) + " x " + std::to_string(py) +
               " = " + std::to_string(patches) +
               " patches need as many ranks, but there are " +
               std::to_string(ranks));
  }
  if (nx < px || ny < py) {
    return bad("a " + std::to_string(nx) + " x " + std::to_string(ny) +
               " grid has too few rows or columns for " + std::to_string(px) +
               " x " + std::to_string(py) + " patches of at least one point");
  }
  std::string solver_error;
  if (!implicit_solver.is_valid(&solver_error)) {
    return bad("implicit_solver." + solver_error);
  }
  if (overlap && scheme != HeatScheme::kExplicit) {
    return bad("overlap applies to the explicit scheme only");
  }
  if (scheme != HeatScheme::kExplicit && implicit_solver.pc == "mg" &&
      (nx % px != 0 || ny % py != 0 || (nx / px) % 2 != 0 ||
       (ny / py) % 2 != 0 || nx < 16 || ny < 16)) {
    return bad(
        "implicit_solver.pc: \"mg\" halves every patch, so all patches "
        "must have the same even number of rows and of columns (nx = " +
        std::to_string(nx) + " on px = " + std::to_string(px) +
        ", ny = " + std::to_string(ny) + " on py = " + std::to_string(py) +
        "), and nx and ny must be at least 16");
  }
  return true;
}

Patch patch_of(const HeatConfig& config, int rank) {
  // k points on q patches: the first k % q patches take one more.
  auto split =
      [](int64_t k, int64_t q, int64_t at, int64_t* size, int64_t* first) {
        const int64_t base = k / q, extra = k % q;
        *size = base + (at < extra ? 1 : 0);
        *first = at * base + std::min(at, extra);
      };
  Patch p;
  p.I = rank / config.py;
  p.J = rank % config.py;
  split(config.nx, config.px, p.I, &p.n, &p.row0);
  split(config.ny, config.py, p.J, &p.m, &p.col0);
  return p;
}

Tensor heat_initial(const HeatConfig& config, const Patch& patch) {
  return field(config, patch, [](double x, double y) {
    return std::sin(std::numbers::pi * x) * std::sin(std::numbers::pi * y);
  });
}

Tensor heat_kappa_true(const HeatConfig& config, const Patch& patch) {
  return field(config, patch, kappa_true_at);
}

Tensor heat_source(const HeatConfig& config, const Patch& patch) {
  return field(config, patch, [](double, double) { return 1.0; });
}

double heat_default_dt(const HeatConfig& config) {
  const double h = config.h();
  double max_kappa = 0;
  for (int i = 0; i < config.nx; ++i) {
    for (int j = 0; j < config.ny; ++j) {
      max_kappa = std::max(max_kappa, kappa_true_at((i + 1) * h, (j + 1) * h));
    }
  }
  return 0.2 * h * h / max_kappa;
}

double heat_dt(const HeatConfig& config) {
  return config.dt > 0 ? config.dt : heat_default_dt(config);
}

const char* heat_scheme_name(HeatScheme scheme) {
  return name_of(scheme).data();
}

bool parse_heat_scheme(const std::string& name, HeatScheme* scheme) {
  const std::optional<HeatScheme> s = parse_enum<HeatScheme>(name);
  if (s) *scheme = *s;
  return s.has_value();
}

HeatSolution heat_solve(Value u0,
                        Value kappa,
                        Value f,
                        const HeatConfig& config,
                        const std::vector<int64_t>& observe_steps) {
  const double dt = heat_dt(config), h = config.h();
  const bool observing = !observe_steps.empty();
  LoopOptions options;
  options.name = "heat_loop";
  options.checkpoints = config.checkpoints.resolved(config.nt);
  // Level t is the carry after loop step t − 1.
  for (int64_t t : observe_steps) options.output_steps.push_back(t - 1);
  if (config.scheme != HeatScheme::kExplicit) {
    return implicit_heat_solve(u0, kappa, f, config, std::move(options));
  }
  // What each neighbour needs of a patch: its edge rows and columns. Each
  // step produces its state's edges; the first come from patch_edges.
  std::array<Value, 4> edges = patch_edges(u0);
  LoopResult r = loop(
      config.nt,
      {u0, edges[0], edges[1], edges[2], edges[3]},
      {kappa, f},
      [&](const LoopArgs& a) {
        const Values& c = a.carries;
        HeatStep next;
        if (config.overlap) {
          next = heat_step_overlapped(c[0],
                                      a.invariants[0],
                                      a.invariants[1],
                                      {c[1], c[2], c[3], c[4]},
                                      config.px,
                                      config.py,
                                      dt,
                                      h);
        } else {
          auto halos =
              data_exchange(c[1], c[2], c[3], c[4], config.px, config.py);
          next =
              heat_step(c[0], a.invariants[0], a.invariants[1], halos, dt, h);
        }
        LoopStep step;
        step.carries = {
            next.u, next.edges[0], next.edges[1], next.edges[2], next.edges[3]};
        if (observing) step.outputs = {next.u};
        return step;
      },
      options);
  HeatSolution s;
  s.u = r.carries[0];
  if (observing) s.observed = r.outputs[0];
  s.loop = r.node;
  return s;
}

Value heat_solve(Value u0, Value kappa, Value f, const HeatConfig& config) {
  return heat_solve(u0, kappa, f, config, {}).u;
}

}  // namespace adgraph::solvers
