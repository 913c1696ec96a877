// The heat problem's loss (forward) and loss + gradient, adgraph against the
// hand-written baseline (bench/heat_baseline.h) in the same run, at κ = 1.
//   mpirun -n P heat_bench --n 128 --m 128 --N 2 --M 1 --NT 100 --mode gradient
//   --reps 5 [--checkpoints all|N|auto] [--impl both|adgraph|handwritten]
// Times: median of reps after one warm-up, max over ranks, each from an
// MPI_Barrier; an implementation's forward and gradient (the tape floor and
// the hand-written forward) run interleaved, rep by rep, so that a drift of the
// machine's speed moves both sides of grad_over_fwd alike. impl=tape_floor is
// the hand-written forward writing every state into a tape plus one read of the
// tape, last state first, without adjoint arithmetic: the least a store-all
// gradient costs here (its grad_over_fwd is over the hand-written forward).
// Peak RSS: max over ranks (the baseline runs first, so its line shows its own
// peak; the tape floor's and adgraph's lines show the process peak).
// checkpoints= is the time loop's schedule, forward_evals= the body forward
// steps one gradient runs (the forward loop's NT plus the adjoint's
// recomputation; the hand-written loop: NT), nodes= the graph's node count.
#include <mpi.h>
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>

#include "adgraph.h"
#include "bench/bench_timing.h"
#include "bench/heat_baseline.h"

using namespace adgraph;

namespace {

double peak_rss_mb() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  double mb = u.ru_maxrss / 1024.0;
  MPI_Allreduce(MPI_IN_PLACE, &mb, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return mb;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  CLI::App app{"heat problem benchmark: adgraph against a hand-written loop"};
  int n = 64, m = 64, N = 1, M = 1, NT = 100, reps = 5;
  std::string mode = "gradient", checkpoints = "all", impl = "both";
  app.add_option("--n", n, "patch rows")->capture_default_str();
  app.add_option("--m", m, "patch columns")->capture_default_str();
  app.add_option("--N", N, "patch grid rows")->capture_default_str();
  app.add_option("--M", M, "patch grid columns")->capture_default_str();
  app.add_option("--NT", NT, "time steps")->capture_default_str();
  app.add_option("--mode", mode, "forward or gradient")
      ->check(CLI::IsMember({"forward", "gradient"}))
      ->capture_default_str();
  app.add_option("--checkpoints",
                 checkpoints,
                 "the adjoint keeps all states, N snapshots (binomial) or "
                 "auto (about sqrt(2 NT))")
      ->capture_default_str();
  app.add_option("--impl",
                 impl,
                 "which implementations to run: both (hand-written and "
                 "adgraph), one of them, or unrolled (adgraph without the "
                 "loop node: 2 nodes per step, as before loops)")
      ->check(CLI::IsMember({"both", "adgraph", "handwritten", "unrolled"}))
      ->capture_default_str();
  bool overlap = false;
  app.add_option("--overlap",
                 overlap,
                 "adgraph overlaps each step's halo exchange with the interior "
                 "update (heat_step_overlapped); false: data_exchange, then "
                 "heat_step")
      ->capture_default_str();
  app.add_option("--reps", reps, "timed repetitions")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return comm->rank() == 0 ? app.exit(e) : 2;
  }
  solvers::HeatInverseOptions o;
  o.config.nx = N * n, o.config.ny = M * m, o.config.nt = NT, o.config.px = N,
  o.config.py = M;
  o.config.overlap = overlap;
  if (checkpoints == "all") {
    o.config.checkpoints = CheckpointSchedule::store_all();
  } else if (checkpoints == "auto") {
    o.config.checkpoints =
        CheckpointSchedule::binomial(binomial_two_sweep_snapshots(NT));
  } else {
    o.config.checkpoints = CheckpointSchedule::binomial(std::stol(checkpoints));
  }
  std::string error;
  if (!o.config.is_valid(comm->size(), &error)) {
    if (comm->rank() == 0)
      std::fprintf(stderr, "heat_bench: %s\n", error.c_str());
    return 2;
  }
  const bool gradient = mode == "gradient";
  auto report = [&](const char* impl,
                    double fwd,
                    double grad,
                    double loss,
                    double gnorm,
                    const std::string& schedule,
                    int64_t forward_evals,
                    int nodes) {
    const double rss = peak_rss_mb();
    if (comm->rank() != 0) return;
    std::printf(
        "RESULT impl=%s ranks=%d n=%d m=%d N=%d M=%d Nx=%d Ny=%d NT=%d mode=%s "
        "reps=%d "
        "forward_s=%.6g gradient_s=%.6g fwd_step_s=%.6g grad_over_fwd=%.4g "
        "loss=%.17g grad_norm=%.17g peak_rss_mb=%.1f checkpoints=%s "
        "forward_evals=%lld nodes=%d\n",
        impl,
        comm->size(),
        n,
        m,
        N,
        M,
        N * n,
        M * m,
        NT,
        mode.c_str(),
        reps,
        fwd,
        gradient ? grad : 0.0,
        fwd / NT,
        gradient ? grad / fwd : 0.0,
        loss,
        gnorm,
        rss,
        schedule.c_str(),
        static_cast<long long>(forward_evals),
        nodes);
  };

  if (impl == "unrolled") {
    // The time loop unrolled into NT data_exchange + heat_step pairs.
    const solvers::HeatConfig& c = o.config;
    const solvers::Patch p = solvers::patch_of(c, comm->rank());
    Graph g;
    Value kappa = g.placeholder("kappa", {p.n, p.m});
    Value obs = g.placeholder("obs", {p.n, p.m});
    Value u = g.constant(solvers::heat_initial(c, p));
    Value f = g.constant(solvers::heat_source(c, p));
    std::array<Value, 4> edges = solvers::patch_edges(u);
    for (int t = 0; t < NT; ++t) {
      auto halos =
          data_exchange(edges[0], edges[1], edges[2], edges[3], c.px, c.py);
      solvers::HeatStep next =
          solvers::heat_step(u, kappa, f, halos, solvers::heat_dt(c), c.h());
      u = next.u;
      edges = next.edges;
    }
    Value d = u - obs;
    Value loss = dot(d, d);
    Value grad = adgraph::gradient(loss, kappa);
    Session s(g);
    const Tensor ones(Shape{p.n, p.m}, 1.0);
    const Tensor observed =
        s.run(u, {{kappa, solvers::heat_kappa_true(c, p)}, {obs, ones}});
    const FeedMap feeds{{kappa, ones}, {obs, observed}};
    double l = 0;
    Tensor gv;
    const double fwd = bench::median_time(
        reps, [&] { l = comm->allreduce_sum(s.run(loss, feeds).item()); });
    const double gs =
        gradient ? bench::median_time(reps,
                                      [&] {
                                        auto out = s.run({loss, grad}, feeds);
                                        gv = std::move(out[1]);
                                      })
                 : 0.0;
    const double g2 =
        gradient ? comm->allreduce_sum(gv.array().square().sum()) : 0.0;
    report("unrolled", fwd, gs, l, std::sqrt(g2), "all", NT, g.num_nodes());
    return 0;
  }
  if (impl != "adgraph") {
    bench::HeatBaseline base(o.config, comm->rank());
    const solvers::Patch p = solvers::patch_of(o.config, comm->rank());
    base.set_observations(solvers::heat_kappa_true(o.config, p).to_vector());
    std::vector<double> kappa(p.n * p.m, 1.0), grad;
    double loss = 0;
    std::vector<std::function<void()>> passes = {
        [&] { loss = base.run(kappa, nullptr); }};
    if (gradient) passes.push_back([&] { base.run(kappa, &grad); });
    const std::vector<double> t = bench::median_times(reps, passes);
    double g2 = 0;
    for (double v : grad) g2 += v * v;
    report("handwritten",
           t[0],
           gradient ? t[1] : 0.0,
           comm->allreduce_sum(loss),
           std::sqrt(comm->allreduce_sum(g2)),
           "all",
           NT,
           0);
    // The store-all floor, after the line above so that its peak RSS is the
    // baseline's own: the taped forward and one read of the tape, no
    // adjoint arithmetic (grad_norm= prints the states' sum, kept live).
    if (gradient) {
      double taped_sum = 0;
      const std::vector<double> floor =
          bench::median_times(reps,
                              {[&] { loss = base.run(kappa, nullptr); },
                               [&] { taped_sum = base.tape_floor(kappa); }});
      report("tape_floor",
             floor[0],
             floor[1],
             comm->allreduce_sum(loss),
             comm->allreduce_sum(taped_sum),
             "all",
             NT,
             0);
    }
  }
  if (impl != "handwritten") {
    solvers::HeatInverse problem(o, comm);
    const Tensor kappa = problem.kappa_start();
    double loss = 0;
    Tensor grad;
    std::vector<std::function<void()>> passes = {
        [&] { loss = problem.loss(kappa); }};
    if (gradient) {
      passes.push_back([&] {
        auto out = problem.loss_and_gradient(kappa);
        grad = std::move(out.second);
      });
    }
    const std::vector<double> t = bench::median_times(reps, passes);
    const double fwd = t[0], gs = gradient ? t[1] : 0.0;
    const double g2 =
        gradient ? comm->allreduce_sum(grad.array().square().sum()) : 0.0;
    const LoopStats f = problem.loop_forward_stats();
    const LoopStats a = problem.loop_adjoint_stats();
    report("adgraph",
           fwd,
           gs,
           loss,
           std::sqrt(g2),
           gradient ? a.schedule : f.schedule,
           gradient ? f.forward_steps + a.forward_steps : f.forward_steps,
           problem.num_nodes());
  }
  return 0;
}
