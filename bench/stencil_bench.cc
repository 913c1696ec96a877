// Fused stencil kernels (grid/stencil.h) against hand-written loops and
// their hand-written adjoints (bench/stencil_baseline.h, built with the
// same flags in this process), and the heat equation written with the
// stencil API against the built-in heat_step (solvers/heat_solver.h):
//   mpirun -n P stencil_bench [--case all|wave2d|diffusion3d|heat2d]
//     [--reps 5] [--n N] [--steps T] [--shots S] [--procs PZxPX[xPY]]
//     [--checkpoints all|binomial:K] [--cold]
// Cases (defaults; --n and --steps override every selected case's):
//   wave2d       256², S = 3 shots (u: [S, n, n], c²: [n, n]), 500 leapfrog
//                steps u⁺ = 2u − u⁻ + c²·lap(u) (u⁻ = 0 at the first
//                step), gradient wrt c²;
//   diffusion3d  96³, 50 steps u⁺ = u + (dt·κ)·lap(u), 7 points, dt = 0.1,
//                gradient wrt κ;
//   heat2d       256², 500 steps of u⁺ = u + (dt/h²)·κ·lap(u) + dt·f, the
//                built-in heat_solve (impl=builtin) against one stencil
//                node per step written in heat_step's operation order
//                (impl=adgraph), gradient wrt κ.
// Every case: reads past the grid give 0; loss ½Σ(u_T − d)² over every
// rank (adgraph: mpi_total); the time loop's schedule is --checkpoints
// (the hand-written adjoint always stores every state). The process grid
// is --procs (default P×1[×1]; fewer entries than axes are padded with 1),
// the hand-written loops exchange their halos with MPI_Sendrecv.
//
// Output, per case: one RESULT line per implementation, reference first
// (hand or builtin), then adgraph with its times over the reference's
// (forward_ratio, gradient_ratio), `check=ok` when losses agree to 1e-12
// and gradients to 1e-10 (relative: max |a − b| over max |b|, every rank),
// the largest relative difference, and for heat2d `bitwise=yes|no`; a KERNELS
// line with what grid::kernel_cache_stats() counted during adgraph's first use
// (compile_s: the slowest rank's seconds; compiled, loaded: summed over
// ranks) and the kernel folder. A failed check exits with status 1.
//
// Method. Every implementation runs on one thread (omp_set_num_threads(1)).
// First a memory pass, one implementation at a time, reference
// first: build it, run one gradient (its seconds are first_use_s, which for
// adgraph includes compiling or loading the kernels), read the peak RSS
// since a reset (/proc/self/clear_refs "5"; the process peak where that is
// refused: peak_rss_scope=process), then free it (malloc_trim). Then both
// are built again and timed: forward and gradient, interleaved rep by rep
// (bench::median_times: one warm-up, then the median of --reps rounds, each
// run from an MPI_Barrier, the slowest rank's time). --cold points
// ADGRAPH_KERNEL_CACHE at a new empty folder (shared by the ranks, removed
// at exit), so first_use_s shows a compile; without it the usual folder is
// used, and a second run shows a warm cache.
#include <malloc.h>
#include <mpi.h>
#include <omp.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "adgraph.h"
#include "bench/bench_timing.h"
#include "bench/stencil_baseline.h"

using namespace adgraph;

using bench::BenchOptions;
using bench::Problem;

namespace {

constexpr double kLossTolerance = 1e-12;
constexpr double kGradientTolerance = 1e-10;

// ---- Implementations --------------------------------------------------------

// One implementation of a case: the global loss (on every rank), and with
// it this rank's gradient patch (skipped when `grad` is null).
class Runner {
 public:
  virtual ~Runner() = default;
  virtual double forward() = 0;
  virtual double gradient(std::vector<double>* grad) = 0;
};

template <int kDim, bool kWave>
class HandRunner final : public Runner {
 public:
  explicit HandRunner(const Problem& p)
      : loop_(p.layout, p.rank, p.batch, p.steps, p.dt, p.u0, p.d), x_(p.x) {}
  double forward() override { return loop_.forward(x_); }
  double gradient(std::vector<double>* grad) override {
    return loop_.gradient(x_, grad != nullptr ? grad : &scratch_);
  }

 private:
  bench::HandStencilLoop<kDim, kWave> loop_;
  std::vector<double> x_, scratch_;
};

// A graph whose loss depends on the placeholder x (the coefficient patch),
// and the gradient of it; the loss is rank 0's mpi_total, broadcast.
class GraphRunner final : public Runner {
 public:
  using Build = std::function<Value(Graph&, Value x)>;
  GraphRunner(const Problem& p, const Build& build) : graph_(new Graph) {
    graph_->set_comm(Communicator::world());
    const Shape local = p.layout.local_shape(p.rank);
    x_ = graph_->placeholder("x", local);
    loss_ = build(*graph_, x_);
    grad_ = adgraph::gradient(loss_, x_);
    feeds_[x_] = Tensor(local, p.x);
    session_ = std::make_unique<Session>(*graph_);
  }
  double forward() override { return broadcast(session_->run(loss_, feeds_)); }
  double gradient(std::vector<double>* grad) override {
    std::vector<Tensor> out = session_->run({loss_, grad_}, feeds_);
    if (grad != nullptr) *grad = out[1].to_vector();
    session_->recycle(std::move(out[1]));
    return broadcast(out[0]);
  }

 private:
  static double broadcast(const Tensor& loss) {
    double v = loss.item();
    MPI_Bcast(&v, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return v;
  }
  std::unique_ptr<Graph> graph_;
  std::unique_ptr<Session> session_;
  Value x_, loss_, grad_;
  FeedMap feeds_;
};

// Σ of the 2·ndim neighbours of u, axis by axis, low side first, then
// − 2·ndim·u: the hand-written loops' and heat_step's order.
grid::StencilExpr laplacian(const grid::StencilExpr& u, int ndim) {
  grid::StencilExpr sum(0.0);
  for (int a = 0; a < ndim; ++a) {
    for (int side : {-1, 1}) {
      grid::Offset o(ndim, 0);
      o[a] = side;
      sum = a == 0 && side == -1 ? u.shift(o) : sum + u.shift(o);
    }
  }
  return sum - 2.0 * ndim * u;
}

Value misfit_loss(Graph& g, Value u, const Problem& p, const Shape& shape) {
  Value r = u - g.constant(Tensor(shape, p.d));
  return 0.5 * mpi_total(r * r);
}

Value build_wave(Graph& g, Value c2, const Problem& p, const grid::Grid& gr) {
  Shape shape = gr.local_shape();
  shape.insert(shape.begin(), p.batch);
  LoopOptions options;
  options.checkpoints = p.schedule;
  LoopResult r = loop(
      p.steps,
      {g.constant(Tensor(shape, p.u0)), g.constant(Tensor::zeros(shape))},
      {c2},
      [&](const LoopArgs& a) {
        const grid::StencilExpr u = grid::field(a.carries[0]),
                                um = grid::field(a.carries[1]),
                                c = grid::field(a.invariants[0]);
        Value next = grid::stencil(gr, 2.0 * u - um + c * laplacian(u, 2));
        return LoopStep{{next, a.carries[0]}, {}};
      },
      options);
  return misfit_loss(g, r.carries[0], p, shape);
}

Value build_diffusion(Graph& g,
                      Value kappa,
                      const Problem& p,
                      const grid::Grid& gr) {
  const Shape shape = gr.local_shape();
  LoopOptions options;
  options.checkpoints = p.schedule;
  LoopResult r = loop(
      p.steps,
      {g.constant(Tensor(shape, p.u0))},
      {kappa},
      [&](const LoopArgs& a) {
        const grid::StencilExpr u = grid::field(a.carries[0]);
        const grid::StencilExpr k = grid::field(a.invariants[0]);
        return LoopStep{{grid::stencil(gr, u + p.dt * k * laplacian(u, 3))},
                        {}};
      },
      options);
  return misfit_loss(g, r.carries[0], p, shape);
}

// heat_step's point, y = u + coef·κ·lap + dt·f, operation for operation.
Value build_heat_stencil(Graph& g,
                         Value kappa,
                         const Problem& p,
                         const grid::Grid& gr) {
  const Shape shape = gr.local_shape();
  LoopOptions options;
  options.checkpoints = p.schedule;
  LoopResult r = loop(
      p.steps,
      {g.constant(Tensor(shape, p.u0))},
      {kappa, g.constant(Tensor(shape, p.f))},
      [&](const LoopArgs& a) {
        const grid::StencilExpr u = grid::field(a.carries[0]),
                                k = grid::field(a.invariants[0]),
                                f = grid::field(a.invariants[1]);
        return LoopStep{
            {grid::stencil(gr, u + p.coef * k * laplacian(u, 2) + p.dt * f)},
            {}};
      },
      options);
  return misfit_loss(g, r.carries[0], p, shape);
}

Value build_heat_builtin(Graph& g, Value kappa, const Problem& p) {
  const Shape shape = kappa.shape();
  Value u = solvers::heat_solve(g.constant(Tensor(shape, p.u0)),
                                kappa,
                                g.constant(Tensor(shape, p.f)),
                                p.heat);
  return misfit_loss(g, u, p, shape);
}

// The reference (index 0: hand or builtin) and adgraph's runner of a case.
using Factory = std::function<std::unique_ptr<Runner>()>;

std::vector<std::pair<std::string, Factory>> implementations(
    const Problem& p, std::shared_ptr<grid::Grid> gr) {
  auto graph = [p, gr](Value (*build)(
                   Graph&, Value, const Problem&, const grid::Grid&)) {
    return [p, gr, build] {
      return std::unique_ptr<Runner>(new GraphRunner(
          p, [&](Graph& g, Value x) { return build(g, x, p, *gr); }));
    };
  };
  if (p.name == "wave2d") {
    return {{"hand", [p] { return std::make_unique<HandRunner<2, true>>(p); }},
            {"adgraph", graph(build_wave)}};
  }
  if (p.name == "diffusion3d") {
    return {{"hand", [p] { return std::make_unique<HandRunner<3, false>>(p); }},
            {"adgraph", graph(build_diffusion)}};
  }
  return {{"builtin",
           [p] {
             return std::unique_ptr<Runner>(
                 new GraphRunner(p, [&](Graph& g, Value x) {
                   return build_heat_builtin(g, x, p);
                 }));
           }},
          {"adgraph", graph(build_heat_stencil)}};
}

// ---- Measurements -----------------------------------------------------------

// Resets the kernel's peak-RSS mark; false where that is refused.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return static_cast<bool>(f);
}

// The peak RSS since the last reset (VmHWM), in MiB, max over ranks.
double peak_rss_mb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  double mb = 0.0;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) mb = std::atof(line.c_str() + 6) / 1024;
  MPI_Allreduce(MPI_IN_PLACE, &mb, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mb;
}

double max_over_ranks(double v) {
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return v;
}

struct Measured {
  std::string impl;
  double first_use_s = 0, peak_mb = 0, forward_s = 0, gradient_s = 0;
  double loss = 0;
  std::vector<double> grad;
  bool scoped_peak = true;
};

// The memory pass: each implementation alone, one gradient, reference
// first; prints the KERNELS line after adgraph's first use.
std::vector<Measured> first_use(
    const Problem& p,
    const std::vector<std::pair<std::string, Factory>>& impls) {
  std::vector<Measured> out;
  for (const auto& [name, make] : impls) {
    Measured m;
    m.impl = name;
    malloc_trim(0);
    m.scoped_peak = reset_peak_rss();
    const grid::KernelCacheStats before = grid::kernel_cache_stats();
    {
      std::unique_ptr<Runner> r = make();
      MPI_Barrier(MPI_COMM_WORLD);
      const double t0 = MPI_Wtime();
      m.loss = r->gradient(&m.grad);
      m.first_use_s = max_over_ranks(MPI_Wtime() - t0);
      m.peak_mb = peak_rss_mb();
    }
    const grid::KernelCacheStats after = grid::kernel_cache_stats();
    double sums[2] = {static_cast<double>(after.compiled - before.compiled),
                      static_cast<double>(after.loaded - before.loaded)};
    MPI_Allreduce(MPI_IN_PLACE, sums, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    const double compile_s =
        max_over_ranks(after.compile_seconds - before.compile_seconds);
    if (name == "adgraph" && p.rank == 0) {
      std::printf(
          "KERNELS case=%s compile_s=%.3f compiled=%.0f loaded=%.0f "
          "folder=%s\n",
          p.name.c_str(),
          compile_s,
          sums[0],
          sums[1],
          grid::kernel_cache_folder().c_str());
    }
    out.push_back(std::move(m));
  }
  return out;
}

// The timing pass: both built, forward and gradient interleaved.
void time_both(const std::vector<std::pair<std::string, Factory>>& impls,
               int reps,
               std::vector<Measured>& m) {
  std::unique_ptr<Runner> a = impls[0].second(), b = impls[1].second();
  const std::vector<double> t =
      bench::median_times(reps,
                          {[&] { a->forward(); },
                           [&] { b->forward(); },
                           [&] { a->gradient(nullptr); },
                           [&] { b->gradient(nullptr); }});
  m[0].forward_s = t[0], m[1].forward_s = t[1];
  m[0].gradient_s = t[2], m[1].gradient_s = t[3];
}

struct Agreement {
  double loss_rel = 0, grad_rel = 0;
  bool bitwise = true;
  bool ok() const {
    return loss_rel <= kLossTolerance && grad_rel <= kGradientTolerance;
  }
};

// adgraph (a) against the reference (b), over every rank.
Agreement compare(const Measured& a, const Measured& b) {
  Agreement r;
  r.loss_rel = std::abs(a.loss - b.loss) / std::abs(b.loss);
  double diff = 0, scale = 0;
  int same = a.loss == b.loss && a.grad == b.grad ? 1 : 0;
  for (std::size_t i = 0; i < b.grad.size() && i < a.grad.size(); ++i) {
    diff = std::max(diff, std::abs(a.grad[i] - b.grad[i]));
    scale = std::max(scale, std::abs(b.grad[i]));
  }
  if (a.grad.size() != b.grad.size()) diff = INFINITY;
  diff = max_over_ranks(diff);
  scale = max_over_ranks(scale);
  MPI_Allreduce(MPI_IN_PLACE, &same, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  r.grad_rel = scale > 0 ? diff / scale : diff;
  r.bitwise = same == 1;
  return r;
}

void report(const Problem& p,
            const BenchOptions& o,
            const Measured& m,
            const Measured* reference,
            const Agreement* agree) {
  if (p.rank != 0) return;
  std::printf(
      "RESULT case=%s impl=%s ranks=%d procs=%s n=%lld steps=%d batch=%lld "
      "checkpoints=%s reps=%d forward_s=%.6g gradient_s=%.6g "
      "peak_rss_mb=%.1f first_use_s=%.4g loss=%.17g",
      p.name.c_str(),
      m.impl.c_str(),
      p.layout.num_ranks(),
      bench::procs_text(p.layout.procs).c_str(),
      static_cast<long long>(p.layout.shape[0]),
      p.steps,
      static_cast<long long>(p.batch),
      m.impl == "hand" ? "all" : p.schedule.describe().c_str(),
      o.reps,
      m.forward_s,
      m.gradient_s,
      m.peak_mb,
      m.first_use_s,
      m.loss);
  if (!m.scoped_peak) std::printf(" peak_rss_scope=process");
  if (reference != nullptr) {
    // Bitwise equality is in reach for heat2d only: the hand-written
    // losses are plain sums, mpi_total's are exact.
    if (p.name == "heat2d")
      std::printf(" bitwise=%s", agree->bitwise ? "yes" : "no");
    std::printf(
        " forward_ratio=%.3f gradient_ratio=%.3f loss_rel_diff=%.3g "
        "max_rel_diff=%.3g check=%s",
        m.forward_s / reference->forward_s,
        m.gradient_s / reference->gradient_s,
        agree->loss_rel,
        agree->grad_rel,
        agree->ok() ? "ok" : "FAILED");
  }
  std::printf("\n");
  std::fflush(stdout);
}

// Runs one case; false when adgraph disagrees with the reference.
bool run_case(const Problem& p, const BenchOptions& o) {
  auto gr = std::make_shared<grid::Grid>(
      p.layout.shape, p.layout.procs, p.layout.periodic, Communicator::world());
  const auto impls = implementations(p, gr);
  std::vector<Measured> m = first_use(p, impls);
  const Agreement agree = compare(m[1], m[0]);
  time_both(impls, o.reps, m);
  report(p, o, m[0], nullptr, nullptr);
  report(p, o, m[1], &m[0], &agree);
  if (!agree.ok() && p.rank == 0) {
    std::fprintf(stderr,
                 "stencil_bench: %s: adgraph disagrees with %s: loss %.17g vs "
                 "%.17g (relative %.3g, tolerance %.0e), gradient relative "
                 "difference %.3g (tolerance %.0e)\n",
                 p.name.c_str(),
                 m[0].impl.c_str(),
                 m[1].loss,
                 m[0].loss,
                 agree.loss_rel,
                 kLossTolerance,
                 agree.grad_rel,
                 kGradientTolerance);
  }
  return agree.ok();
}

// --cold: a new kernel folder made by rank 0, used by every rank.
std::string use_cold_cache() {
  char path[4096] = {0};
  if (Communicator::world()->rank() == 0) {
    const std::string tmpl =
        (std::filesystem::temp_directory_path() / "adgraph-kernels-XXXXXX")
            .string();
    std::snprintf(path, sizeof path, "%s", tmpl.c_str());
    if (mkdtemp(path) == nullptr) path[0] = '\0';
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (path[0] != '\0') setenv("ADGRAPH_KERNEL_CACHE", path, 1);
  return path;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  CLI::App app{
      "fused stencil kernels against hand-written loops and adjoints, and "
      "heat through the stencil API against the built-in heat_step"};
  BenchOptions o;
  app.add_option("--case", o.which, "the case to run, or all")
      ->check(CLI::IsMember({"all", "wave2d", "diffusion3d", "heat2d"}))
      ->capture_default_str();
  app.add_option("--reps", o.reps, "timed rounds (>= 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--n",
                 o.n,
                 "grid points per axis (>= 1; 0: 256 for wave2d and heat2d, "
                 "96 for diffusion3d)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--steps",
                 o.steps,
                 "time steps (>= 1; 0: 500 for wave2d and heat2d, 50 for "
                 "diffusion3d)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  app.add_option("--shots", o.shots, "wave2d's shots (batch, >= 1)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--procs",
                 o.procs,
                 "process grid PZxPX (3-D: PZxPYxPX), padded with 1; default "
                 "Px1");
  app.add_option("--checkpoints",
                 o.checkpoints,
                 "adgraph's loop schedule: all or binomial:K")
      ->capture_default_str();
  app.add_flag(
      "--cold", o.cold, "compile the kernels into a new, empty folder");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return comm->rank() == 0 ? app.exit(e) : 2;
  }
  // One thread everywhere: the built-in heat_step splits a patch of 16 384
  // points or more over OpenMP's threads, the kernels and the hand loops
  // do not.
  omp_set_num_threads(1);
  std::vector<std::string> cases = {"wave2d", "diffusion3d", "heat2d"};
  if (o.which != "all") cases = {o.which};
  std::vector<Problem> problems(cases.size());
  for (std::size_t k = 0; k < cases.size(); ++k) {
    const std::string error = bench::make_problem(
        cases[k], o, comm->rank(), comm->size(), &problems[k]);
    if (!error.empty()) {
      if (comm->rank() == 0)
        std::fprintf(stderr, "stencil_bench: %s\n", error.c_str());
      return 2;
    }
  }
  const std::string cold = o.cold ? use_cold_cache() : std::string();
  bool ok = true;
  for (const Problem& p : problems) ok = run_case(p, o) && ok;
  if (!cold.empty()) {
    MPI_Barrier(MPI_COMM_WORLD);
    std::error_code ec;
    if (comm->rank() == 0) std::filesystem::remove_all(cold, ec);
  }
  return ok ? 0 : 1;
}
