// heat_inversion: recover the diffusivity κ(x, y) of a 2-D heat equation
// from temperature observations, on px × py ranks.
//
//   mpirun -n 4 heat_inversion                 # 2 × 2 patches, defaults
//   mpirun -n 2 heat_inversion --px 2 --py 1 --nx 32 --ny 32 --nt 200
//   mpirun -n 2 heat_inversion --px 2 --py 1 --nx 32 --ny 32 --nt 200
//       --kappa-min 1 --kappa-max 1.6 --sensors-every 3 --noise 0.01
//       --observe-steps 50 100 200 --reg-smooth 1e-4   (one line)
//
// Prints the L-BFGS (or, with bounds, L-BFGS-B) trace with the misfit and
// the regularization, and the relative L2 error of κ, and writes (rank 0) a
// JSON result, PNG figures of κ_true, κ and their difference (colour bar,
// axes, title, sensors) and of the convergence, and a ParaView .vti of the
// three fields. See solvers/heat_inverse.h.
#include <sys/resource.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <string>

#include "adgraph.h"
#include "core/output_file.h"
#include "examples/command_line.h"
#include "examples/grid_output.h"
#include "examples/heat_figures.h"

using namespace adgraph;

namespace {

// A bound for JSON: the number, or null when open.
nlohmann::json bound_text(double b) {
  return std::isfinite(b) ? nlohmann::json(b) : nlohmann::json(nullptr);
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const bool root = comm->rank() == 0;

  CLI::App app{
      "Recover the diffusivity of a 2-D heat equation with distributed L-BFGS"};
  solvers::HeatInverseOptions problem_options;
  solvers::HeatConfig& c = problem_options.config;
  c.nx = c.ny = 256;
  c.px = c.py = 2;
  c.nt = 2800;
  int max_iter = 100;
  double tol = 1e-10;
  std::string output = "heat_inversion.json", dump_gradient, checkpoint;
  std::string checkpoints = "auto";
  bool resume = false, replicated = false;
  examples::add_grid_options(app, c);
  app.add_option("--nt", c.nt, "time steps")->capture_default_str();
  std::string scheme = "explicit";
  app.add_option("--scheme",
                 scheme,
                 "time scheme: explicit, backward_euler or crank_nicolson "
                 "(implicit steps solve a sparse system with PETSc)")
      ->check(CLI::IsMember({"explicit", "backward_euler", "crank_nicolson"}))
      ->capture_default_str();
  app.add_option("--implicit-ksp",
                 c.implicit_solver.ksp,
                 "Krylov method of an implicit step: cg, gmres, bcgs or "
                 "preonly (with --implicit-pc lu); the step's matrix is "
                 "symmetric positive definite")
      ->check(CLI::IsMember({"cg", "gmres", "bcgs", "preonly"}))
      ->capture_default_str();
  app.add_option("--implicit-pc",
                 c.implicit_solver.pc,
                 "preconditioner of an implicit step: jacobi, bjacobi, gamg, "
                 "hypre, lu (MUMPS) or mg (geometric multigrid on the patch "
                 "grid)")
      ->check(CLI::IsMember(
          {"none", "jacobi", "bjacobi", "ilu", "gamg", "hypre", "lu", "mg"}))
      ->capture_default_str();
  app.add_option("--implicit-rtol",
                 c.implicit_solver.rtol,
                 "relative residual tolerance of an implicit step's solve; "
                 "the gradient is exact to about this much (1e-4 is enough "
                 "for the inversion, docs/PERFORMANCE.md)")
      ->check(CLI::Range(1e-16, 0.5))
      ->capture_default_str();
  app.add_option("--implicit-prefix",
                 c.implicit_solver.prefix,
                 "PETSc options prefix of an implicit step's solver: with "
                 "'heat', its KSP also reads PETSC_OPTIONS such as "
                 "-heat_ksp_monitor or -heat_ksp_rtol 1e-6")
      ->capture_default_str();
  app.add_option("--dt",
                 c.dt,
                 "time step; 0 selects 0.2 h^2 / max kappa_true (the explicit "
                 "stability rule); implicit schemes take any dt > 0")
      ->capture_default_str();
  app.add_flag("--overlap",
               c.overlap,
               "overlap each step's halo exchange with the interior update "
               "(the same results, bit for bit)");
  app.add_option("--max-iter", max_iter, "L-BFGS iteration limit")
      ->capture_default_str();
  app.add_option(
         "--tol", tol, "stop when the gradient's infinity norm is below this")
      ->capture_default_str();
  app.add_option("--output",
                 output,
                 "JSON result; PNG and VTI files are written next to it")
      ->capture_default_str();
  app.add_option("--dump-gradient",
                 dump_gradient,
                 "write dL/dkappa at kappa = 1 (raw little-endian float64, "
                 "row-major) and exit");
  app.add_option("--checkpoint",
                 checkpoint,
                 "write the optimizer state here every iteration");
  app.add_flag("--resume", resume, "continue from --checkpoint");
  app.add_option("--checkpoints",
                 checkpoints,
                 "states the time loop's adjoint keeps: all, a number of "
                 "snapshots (binomial schedule), or auto (the fewest "
                 "snapshots that recompute at most one extra sweep, about "
                 "sqrt(2 nt))")
      ->capture_default_str();
  app.add_option("--observe-steps",
                 problem_options.observe_steps,
                 "observe u at these time levels (1..nt) instead of the "
                 "final one only");
  app.add_option("--kappa-min",
                 problem_options.kappa_min,
                 "lower bound on kappa (L-BFGS-B when a bound is given)");
  app.add_option(
      "--kappa-max", problem_options.kappa_max, "upper bound on kappa");
  app.add_option("--sensors-every",
                 problem_options.sensors_every,
                 "observe only every k-th grid point in x and y (0: all)")
      ->capture_default_str();
  app.add_option("--noise",
                 problem_options.noise,
                 "Gaussian noise on the observations, relative to their RMS")
      ->capture_default_str();
  app.add_option("--seed", problem_options.seed, "seed of the noise")
      ->capture_default_str();
  app.add_option("--reg-tikhonov",
                 problem_options.reg_tikhonov,
                 "weight of the Tikhonov term |kappa - 1|^2")
      ->capture_default_str();
  app.add_option("--reg-smooth",
                 problem_options.reg_smooth,
                 "weight of the smoothness term |grad kappa|^2")
      ->capture_default_str();
  app.add_flag("--replicated",
               replicated,
               "replicate kappa on every rank (ADCME mpi_bcast style)");
  if (auto code = examples::parse_command_line(app, argc, argv, root)) {
    return *code;
  }
  problem_options.replicated = replicated;
  if (checkpoints == "all") {
    c.checkpoints = CheckpointSchedule::store_all();
  } else if (checkpoints == "auto") {
    c.checkpoints =
        CheckpointSchedule::binomial(binomial_two_sweep_snapshots(c.nt));
  } else {
    char* end = nullptr;
    const long snapshots = std::strtol(checkpoints.c_str(), &end, 10);
    if (checkpoints.empty() || *end != '\0' || snapshots < 1) {
      if (root)
        std::fprintf(stderr,
                     "heat_inversion: --checkpoints: expected all, auto or a "
                     "number of snapshots >= 1, got \"%s\"\n",
                     checkpoints.c_str());
      return 2;
    }
    c.checkpoints = CheckpointSchedule::binomial(snapshots);
  }
  solvers::parse_heat_scheme(scheme, &c.scheme);  // checked by CLI11
  if (!std::isfinite(tol) || tol < 0) {
    if (root)
      std::fprintf(stderr,
                   "heat_inversion: --tol: expected a finite number >= 0, "
                   "got %g\n",
                   tol);
    return 2;
  }
  if (resume && checkpoint.empty()) {
    if (root)
      std::fprintf(stderr,
                   "heat_inversion: --resume needs --checkpoint FILE\n");
    return 2;
  }

  try {
    // Where the results go is checked before any work (rank 0 writes).
    std::string unwritable;
    if (root) {
      try {
        check_output_path(
            dump_gradient.empty() ? output : dump_gradient,
            dump_gradient.empty() ? "--output" : "--dump-gradient");
      } catch (const OptionsError& e) {
        unwritable = e.what();
      }
    }
    unwritable = comm->bcast(unwritable, 0);
    if (!unwritable.empty())
      return report_failure("heat_inversion", unwritable, 2);
    solvers::HeatInverse problem(problem_options, comm);
    Tensor kappa = problem.kappa_start();
    if (!dump_gradient.empty()) {
      Tensor grad = problem.loss_and_gradient(kappa).second;
      if (replicated) grad = grad.reshaped({c.nx, c.ny});
      const std::vector<double> grid =
          replicated ? grad.to_vector() : examples::gather_grid(*comm, c, grad);
      if (root) {
        std::ofstream out(dump_gradient, std::ios::binary);
        out.write(reinterpret_cast<const char*>(grid.data()),
                  sizeof(double) * grid.size());
        if (!out) {
          std::fprintf(stderr,
                       "heat_inversion: cannot write %s\n",
                       dump_gradient.c_str());
          comm->abort("cannot write the gradient dump", 1);
        }
        std::printf("wrote dL/dkappa at kappa = 1 (%d x %d float64) to %s\n",
                    c.nx,
                    c.ny,
                    dump_gradient.c_str());
      }
      return 0;
    }

    if (root) {
      std::printf(
          "heat inversion: %d x %d grid, %d x %d patches on %d ranks, %d "
          "steps, dt = %.6g, %s\n",
          c.nx,
          c.ny,
          c.px,
          c.py,
          comm->size(),
          c.nt,
          solvers::heat_dt(c),
          solvers::heat_scheme_name(c.scheme));
    }
    optim::LbfgsOptions options;
    options.max_iterations = max_iter;
    options.tolerance_gradient = tol;
    options.trace = true;
    options.checkpoint_path = checkpoint;
    options.checkpoint_every = checkpoint.empty() ? 0 : 1;
    options.resume = resume;
    optim::LbfgsSummary summary = problem.fit(kappa, options);

    // What the time loop kept and recomputed in the last gradient, and the
    // peak resident memory of the busiest rank.
    const LoopStats forward = problem.loop_forward_stats();
    const LoopStats adjoint = problem.loop_adjoint_stats();
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    const double peak_rss_mb =
        comm->allreduce_max(static_cast<double>(usage.ru_maxrss) / 1024.0);

    // The loss's parts at the result (misfit, regularization).
    const solvers::HeatLossTerms terms = problem.terms(kappa);

    const double relative_error = problem.relative_kappa_error(kappa);
    const Tensor truth = problem.kappa_true();

    std::vector<double> found, exact;
    if (replicated) {
      found = kappa.to_vector();
      exact = truth.to_vector();
    } else {
      found = examples::gather_grid(*comm, c, kappa);
      exact = examples::gather_grid(*comm, c, truth);
    }
    if (root) {
      std::printf("relative L2 error of kappa: %.6e\n", relative_error);
      std::printf(
          "misfit %.6e, regularization %.6e (tikhonov %.6e, "
          "smoothness %.6e), %lld active bounds\n",
          terms.misfit,
          terms.tikhonov + terms.smoothness,
          terms.tikhonov,
          terms.smoothness,
          static_cast<long long>(summary.active_bounds));
      std::printf(
          "time loop: checkpoints %s, %lld snapshots (%.1f MB), %lld body "
          "forward steps per gradient, peak RSS %.0f MB (max over ranks)\n",
          adjoint.schedule.c_str(),
          static_cast<long long>(adjoint.max_snapshots),
          adjoint.snapshot_bytes / 1048576.0,
          static_cast<long long>(forward.forward_steps + adjoint.forward_steps),
          peak_rss_mb);
      std::vector<double> difference(found.size());
      for (std::size_t k = 0; k < found.size(); ++k)
        difference[k] = found[k] - exact[k];
      const std::string stem =
          output.size() > 5 && output.substr(output.size() - 5) == ".json"
              ? output.substr(0, output.size() - 5)
              : output;
      const double lo = *std::min_element(exact.begin(), exact.end());
      const double hi = *std::max_element(exact.begin(), exact.end());
      double span = 1e-12;
      for (double d : difference) span = std::max(span, std::fabs(d));
      const std::vector<std::string> files = {stem + "_kappa_true.png",
                                              stem + "_kappa.png",
                                              stem + "_difference.png",
                                              stem + "_convergence.png",
                                              stem + ".vti"};
      examples::FieldFigure figure;
      figure.nx = c.nx, figure.ny = c.ny, figure.h = c.h();
      figure.lo = lo, figure.hi = hi;
      figure.unit = "kappa";
      figure.sensors = &problem.sensors();
      figure.path = files[0], figure.values = &exact;
      figure.title = "true diffusivity kappa";
      bool ok = examples::write_field_figure(figure);
      figure.path = files[1], figure.values = &found;
      char title[160];
      std::snprintf(title,
                    sizeof(title),
                    "recovered kappa (%d iterations, rel. error %.2e)",
                    summary.iterations,
                    relative_error);
      figure.title = title;
      ok = examples::write_field_figure(figure) && ok;
      figure.path = files[2], figure.values = &difference;
      figure.title = "recovered - true kappa";
      figure.unit = "difference";
      figure.lo = -span, figure.hi = span, figure.diverging = true;
      ok = examples::write_field_figure(figure) && ok;
      ok = examples::write_convergence_figure(files[3],
                                              summary.f_history,
                                              summary.gradient_norm_history,
                                              problem_options.bounded()
                                                  ? "projected gradient norm"
                                                  : "gradient norm") &&
           ok;
      ok = examples::write_vti(files[4],
                               c.nx,
                               c.ny,
                               c.h(),
                               {{"kappa_true", &exact},
                                {"kappa", &found},
                                {"difference", &difference}}) &&
           ok;
      nlohmann::json result = {
          {"loss_history", summary.f_history},
          {"iterations", summary.iterations},
          {"resumed_at", summary.resumed_at},
          {"evaluations", summary.evaluations},
          {"termination", optim::termination_name(summary.termination)},
          {"relative_kappa_error", relative_error},
          {"wall_time_s", summary.seconds},
          {"ranks", comm->size()},
          {"decomposition",
           {{"px", c.px},
            {"py", c.py},
            {"nx", c.nx},
            {"ny", c.ny},
            {"nt", c.nt}}},
          {"kappa_layout", replicated ? "replicated" : "sharded"},
          {"checkpoints",
           {{"schedule", adjoint.schedule},
            {"snapshots", adjoint.max_snapshots},
            {"snapshot_mb", adjoint.snapshot_bytes / 1048576.0},
            {"forward_evaluations_per_gradient",
             forward.forward_steps + adjoint.forward_steps},
            {"taped_steps_per_gradient", adjoint.taped_steps}}},
          {"peak_rss_mb", peak_rss_mb},
          {"observe_steps", problem_options.observe_steps},
          {"misfit", terms.misfit},
          {"regularization",
           {{"tikhonov", terms.tikhonov}, {"smoothness", terms.smoothness}}},
          {"bounds",
           {{"kappa_min", bound_text(problem_options.kappa_min)},
            {"kappa_max", bound_text(problem_options.kappa_max)}}},
          {"active_bounds", summary.active_bounds},
          {"sensors", problem.sensors().size()},
          {"noise", problem_options.noise},
          {"gradient_norm_history", summary.gradient_norm_history},
          {"message", summary.message},
          {"files", files}};
      // The results first: a figure that fails must not lose them.
      write_output_file(output, result.dump(2) + "\n", "--output");
      if (!ok) comm->abort("could not write the figures next to " + output, 1);
      std::printf("wrote %s", output.c_str());
      for (const std::string& f : files) std::printf(", %s", f.c_str());
      std::printf("\n");
    }
    return 0;
  } catch (const Error& e) {
    return report_failure("heat_inversion", e.what(), 2);
  } catch (const std::bad_alloc&) {
    return report_failure("heat_inversion", "out of memory", 3);
  }
}
