// Forward mode on the heat problem: the directional derivative L̇ of the
// loss along a direction κ̇ (jvp) against the forward run and the full
// gradient, for adgraph and for the hand-written loop (bench/heat_baseline.h)
// in the same run.
//
//   OMP_NUM_THREADS=1 mpirun -n P -x OMP_NUM_THREADS
//     build/bench/heat_jvp_bench --n 256 --m 256 --N 1 --M 1 --NT 100
//
// One line per implementation:
//   RESULT impl= ranks= Nx= Ny= NT= forward_s= jvp_s= gradient_s=
//   jvp_over_fwd= grad_over_fwd= jvp_peak_mb= grad_peak_mb= dot_error=
// (times: median of reps after a warm-up, max over ranks; peak_mb: adgraph's
// largest live tensor bytes in the run, max over ranks, nan for the loop;
// dot_error: |L̇ − ⟨∇L, κ̇⟩| / |L̇| summed over ranks).
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>

#include "adgraph.h"
#include "bench/bench_timing.h"
#include "bench/heat_baseline.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  const bool root = comm->rank() == 0;
  CLI::App app{"heat problem: jvp against forward and gradient"};
  int n = 64, m = 64, N = 1, M = 1, NT = 100, reps = 5;
  app.add_option("--n", n, "patch rows")->capture_default_str();
  app.add_option("--m", m, "patch columns")->capture_default_str();
  app.add_option("--N", N, "patch grid rows")->capture_default_str();
  app.add_option("--M", M, "patch grid columns")->capture_default_str();
  app.add_option("--NT", NT, "time steps")->capture_default_str();
  app.add_option("--reps", reps, "timed repetitions")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return root ? app.exit(e) : 2;
  }
  solvers::HeatConfig c;
  c.nx = N * n, c.ny = M * m, c.nt = NT, c.px = N, c.py = M;
  std::string error;
  if (!c.is_valid(comm->size(), &error)) {
    if (root) std::fprintf(stderr, "heat_jvp_bench: %s\n", error.c_str());
    return 2;
  }
  const solvers::Patch p = solvers::patch_of(c, comm->rank());
  std::vector<double> kappa(p.n * p.m, 1.0), kappa_dot(p.n * p.m);
  for (int64_t k = 0; k < p.n * p.m; ++k) kappa_dot[k] = 1.0 + 0.1 * (k % 7);
  const Tensor kappa_t(Shape{p.n, p.m}, kappa);
  const Tensor kappa_dot_t(Shape{p.n, p.m}, kappa_dot);

  auto report = [&](const char* impl,
                    const std::vector<double>& t,
                    double jvp_mb,
                    double grad_mb,
                    double local_jvp,
                    double local_dot) {
    const double l_dot = comm->allreduce_sum(local_jvp);
    const double g_dot = comm->allreduce_sum(local_dot);
    jvp_mb = comm->allreduce_max(jvp_mb);
    grad_mb = comm->allreduce_max(grad_mb);
    if (!root) return;
    std::printf(
        "RESULT impl=%s ranks=%d Nx=%d Ny=%d NT=%d forward_s=%.6g jvp_s=%.6g "
        "gradient_s=%.6g jvp_over_fwd=%.3g grad_over_fwd=%.3g "
        "jvp_peak_mb=%.3g grad_peak_mb=%.3g dot_error=%.2g\n",
        impl,
        comm->size(),
        c.nx,
        c.ny,
        NT,
        t[0],
        t[1],
        t[2],
        t[1] / t[0],
        t[2] / t[0],
        jvp_mb,
        grad_mb,
        std::fabs(l_dot - g_dot) / std::fabs(l_dot));
  };

  {
    bench::HeatBaseline base(c, comm->rank());
    base.set_observations(solvers::heat_kappa_true(c, p).to_vector());
    std::vector<double> grad;
    double l_dot = 0;
    const auto t =
        bench::median_times(reps,
                            {[&] { base.run(kappa, nullptr); },
                             [&] { l_dot = base.tangent(kappa, kappa_dot); },
                             [&] { base.run(kappa, &grad); }});
    double dot = 0;
    for (std::size_t k = 0; k < grad.size(); ++k) dot += grad[k] * kappa_dot[k];
    report("handwritten", t, NAN, NAN, l_dot, dot);
  }
  {
    // The observations, the jvp and the gradient each get their own graph,
    // so each is measured alone (a run executes only the collectives it
    // needs, but one graph would share the loop's caches).
    Tensor obs;
    {
      Graph g;
      obs = Session(g).run(
          solvers::heat_solve(g.constant(solvers::heat_initial(c, p)),
                              g.constant(solvers::heat_kappa_true(c, p)),
                              g.constant(solvers::heat_source(c, p)),
                              c));
    }
    struct Problem {
      Graph g;
      Value k, k_dot, loss, derivative;
    };
    auto build = [&](Problem& pr, bool forward_mode) {
      pr.k = pr.g.placeholder("kappa", {p.n, p.m});
      pr.k_dot = pr.g.placeholder("kappa_dot", {p.n, p.m});
      Value u = solvers::heat_solve(pr.g.constant(solvers::heat_initial(c, p)),
                                    pr.k,
                                    pr.g.constant(solvers::heat_source(c, p)),
                                    c);
      pr.loss = sum(square(u - pr.g.constant(obs)));
      pr.derivative =
          forward_mode ? jvp(pr.loss, pr.k, pr.k_dot) : gradient(pr.loss, pr.k);
    };
    Problem fwd, grad;
    build(fwd, true);
    build(grad, false);
    Session fwd_session(fwd.g), grad_session(grad.g);
    double jvp_mb = 0, grad_mb = 0, local_jvp = 0;
    Tensor gv;
    const auto t = bench::median_times(
        reps,
        {[&] {
           fwd_session.run(fwd.loss, {{fwd.k, kappa_t}});
         },
         [&] {
           local_jvp = fwd_session
                           .run({fwd.loss, fwd.derivative},
                                {{fwd.k, kappa_t}, {fwd.k_dot, kappa_dot_t}})[1]
                           .item();
           jvp_mb = fwd_session.stats().peak_live_bytes / 1048576.0;
         },
         [&] {
           gv = grad_session.run({grad.loss, grad.derivative},
                                 {{grad.k, kappa_t}})[1];
           grad_mb = grad_session.stats().peak_live_bytes / 1048576.0;
         }});
    report("adgraph",
           t,
           jvp_mb,
           grad_mb,
           local_jvp,
           (gv.array() * kappa_dot_t.array()).sum());
  }
  return 0;
}
