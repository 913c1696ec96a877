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
#include <optional>
#include <string>
#include <utility>

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

// What the command line asks for.
struct Arguments {
  solvers::HeatInverseOptions problem;
  // The optimizer's limits (heat_inversion's own defaults: 100 iterations,
  // ‖∇f‖∞ <= 1e-10); fit() adds the trace and the checkpoints.
  optim::LbfgsOptions lbfgs;
  std::string output = "heat_inversion.json", dump_gradient, checkpoint;
  bool resume = false, print_options = false;

  Arguments() {
    solvers::HeatConfig& c = problem.config;
    c.nx = c.ny = 256;
    c.px = c.py = 2;
    c.nt = 2800;
    c.checkpoints = CheckpointSchedule::automatic();
    lbfgs.max_iterations = 100;
    lbfgs.tolerance_gradient = 1e-10;
  }
};

// LbfgsOptions' fields this example takes, from its table: the limits and
// the history (the checkpoints are --checkpoint and --resume, the trace is
// always on).
const FieldTable<optim::LbfgsOptions>& lbfgs_fields() {
  static const FieldTable<optim::LbfgsOptions> table = [] {
    FieldTable<optim::LbfgsOptions> t;
    for (const char* name : {"history",
                             "max_iterations",
                             "max_evaluations",
                             "tolerance_gradient",
                             "tolerance_function"})
      t.push_back(*find_field(optim::LbfgsOptions::fields(), name));
    return t;
  }();
  return table;
}

// --max-iter and --tol: the older spellings of --max-iterations and
// --tolerance-gradient, the same fields of the table under a second name.
const FieldTable<optim::LbfgsOptions>& lbfgs_aliases() {
  static const FieldTable<optim::LbfgsOptions> table = [] {
    FieldTable<optim::LbfgsOptions> t;
    for (auto [alias, name] : {std::pair{"max_iter", "max_iterations"},
                               std::pair{"tol", "tolerance_gradient"}}) {
      Field<optim::LbfgsOptions> f =
          *find_field(optim::LbfgsOptions::fields(), name);
      f.doc = "the same as --" + f.name;
      std::replace(f.doc.begin(), f.doc.end(), '_', '-');
      f.name = alias;
      t.push_back(std::move(f));
    }
    return t;
  }();
  return table;
}

// The optimizer's options as fit() runs them.
optim::LbfgsOptions run_options(const Arguments& a) {
  optim::LbfgsOptions options = a.lbfgs;
  options.trace = true;
  options.checkpoint_path = a.checkpoint;
  options.checkpoint_every = a.checkpoint.empty() ? 0 : 1;
  options.resume = a.resume;
  return options;
}

// The optimizer, its checkpoints and the time loop's, where results go.
void add_run_options(CLI::App& app, Arguments& a) {
  // The optimizer's fields from LbfgsOptions' table (--max-iterations,
  // --tolerance-gradient, …), and --max-iter, --tol.
  examples::add_field_options(app, lbfgs_fields(), a.lbfgs);
  examples::add_field_options(app, lbfgs_aliases(), a.lbfgs);
  app.add_option("--output",
                 a.output,
                 "JSON result; PNG and VTI files are written next to it")
      ->capture_default_str();
  app.add_option("--dump-gradient",
                 a.dump_gradient,
                 "write dL/dkappa at kappa = 1 (raw little-endian float64, "
                 "row-major) and exit");
  app.add_option("--checkpoint",
                 a.checkpoint,
                 "write the optimizer state here every iteration");
  app.add_flag("--resume", a.resume, "continue from --checkpoint");
}

// What CLI11 cannot check: the optimizer's ranges (LbfgsOptions' table),
// --resume's file.
// Returns the exit code of a bad argument (rank 0 says why).
std::optional<int> finish_arguments(Arguments& a, bool root) {
  auto bad = [root](const std::string& why) {
    if (root) std::fprintf(stderr, "heat_inversion: %s\n", why.c_str());
    return 2;
  };
  std::string error;
  if (!a.lbfgs.is_valid(&error)) return bad(error);
  if (a.resume && a.checkpoint.empty())
    return bad("--resume needs --checkpoint FILE");
  return std::nullopt;
}

// --print-options: the problem's, the implicit solver's and the
// optimizer's fields as JSON after the options' own check (as HeatInverse
// makes it, for px·py ranks; the optimizer's as fit() runs it).
int print_options(const Arguments& a, bool root) {
  const solvers::HeatInverseOptions& p = a.problem;
  std::string error, field;
  const int64_t ranks = int64_t{p.config.px} * p.config.py;
  if (!p.is_valid(static_cast<int>(std::min<int64_t>(ranks, 1 << 30)),
                  &error,
                  &field)) {
    if (root)
      std::fprintf(
          stderr, "heat_inversion: %s: %s\n", field.c_str(), error.c_str());
    return 2;
  }
  const nlohmann::json out = {
      {"HeatInverseOptions",
       fields_json(field_values(solvers::HeatInverseOptions::fields(), p))},
      {"SolverOptions",
       fields_json(field_values(sparse::SolverOptions::fields(),
                                p.config.implicit_solver))},
      {"LbfgsOptions",
       fields_json(
           field_values(optim::LbfgsOptions::fields(), run_options(a)))}};
  if (root) std::printf("%s\n", out.dump().c_str());
  return 0;
}

// Where the results go, checked on rank 0 before any work: "" or why not.
std::string unwritable_output(const Arguments& a, Communicator& comm) {
  std::string why;
  if (comm.rank() == 0) {
    const bool dump = !a.dump_gradient.empty();
    try {
      check_output_path(dump ? a.dump_gradient : a.output,
                        dump ? "--dump-gradient" : "--output");
    } catch (const OptionsError& e) {
      why = e.what();
    }
  }
  return comm.bcast(why, 0);
}

// --dump-gradient: dL/dκ at the start point, written by rank 0.
void dump_gradient(solvers::HeatInverse& problem,
                   const Arguments& a,
                   Communicator& comm) {
  const solvers::HeatConfig& c = a.problem.config;
  Tensor grad = problem.loss_and_gradient(problem.kappa_start()).second;
  if (a.problem.replicated) grad = grad.reshaped({c.nx, c.ny});
  const std::vector<double> grid = a.problem.replicated
                                       ? grad.to_vector()
                                       : examples::gather_grid(comm, c, grad);
  if (comm.rank() != 0) return;
  std::ofstream out(a.dump_gradient, std::ios::binary);
  out.write(reinterpret_cast<const char*>(grid.data()),
            sizeof(double) * grid.size());
  if (!out) {
    std::fprintf(
        stderr, "heat_inversion: cannot write %s\n", a.dump_gradient.c_str());
    comm.abort("cannot write the gradient dump", 1);
  }
  std::printf("wrote dL/dkappa at kappa = 1 (%d x %d float64) to %s\n",
              c.nx,
              c.ny,
              a.dump_gradient.c_str());
}

// Fits κ from the start point with the options the arguments ask for.
optim::LbfgsSummary fit(solvers::HeatInverse& problem,
                        const Arguments& a,
                        Communicator& comm,
                        Tensor& kappa) {
  const solvers::HeatConfig& c = a.problem.config;
  if (comm.rank() == 0) {
    std::printf(
        "heat inversion: %d x %d grid, %d x %d patches on %d ranks, %d "
        "steps, dt = %.6g, %s\n",
        c.nx,
        c.ny,
        c.px,
        c.py,
        comm.size(),
        c.nt,
        solvers::heat_dt(c),
        solvers::heat_scheme_name(c.scheme));
  }
  kappa = problem.kappa_start();
  return problem.fit(kappa, run_options(a));
}

// What the run found and cost, on every rank (the fields on rank 0).
struct Outcome {
  optim::LbfgsSummary summary;
  LoopStats forward, adjoint;  // the time loop's, in the last gradient
  double peak_rss_mb = 0;      // of the busiest rank
  solvers::HeatLossTerms terms;
  double relative_error = 0;
  std::vector<double> found, exact, difference;  // κ, κ_true, κ − κ_true
};

// Collective: the statistics, the loss's parts and the gathered fields.
Outcome measure(solvers::HeatInverse& problem,
                const Arguments& a,
                Communicator& comm,
                const Tensor& kappa,
                optim::LbfgsSummary summary) {
  Outcome o;
  o.summary = std::move(summary);
  o.forward = problem.loop_forward_stats();
  o.adjoint = problem.loop_adjoint_stats();
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  o.peak_rss_mb =
      comm.allreduce_max(static_cast<double>(usage.ru_maxrss) / 1024.0);
  o.terms = problem.terms(kappa);
  o.relative_error = problem.relative_kappa_error(kappa);
  const Tensor truth = problem.kappa_true();
  if (a.problem.replicated) {
    o.found = kappa.to_vector();
    o.exact = truth.to_vector();
  } else {
    o.found = examples::gather_grid(comm, a.problem.config, kappa);
    o.exact = examples::gather_grid(comm, a.problem.config, truth);
  }
  o.difference.resize(o.found.size());
  for (std::size_t k = 0; k < o.found.size(); ++k)
    o.difference[k] = o.found[k] - o.exact[k];
  return o;
}

void print_outcome(const Outcome& o) {
  std::printf("relative L2 error of kappa: %.6e\n", o.relative_error);
  std::printf(
      "misfit %.6e, regularization %.6e (tikhonov %.6e, "
      "smoothness %.6e), %lld active bounds\n",
      o.terms.misfit,
      o.terms.tikhonov + o.terms.smoothness,
      o.terms.tikhonov,
      o.terms.smoothness,
      static_cast<long long>(o.summary.active_bounds));
  std::printf(
      "time loop: checkpoints %s, %lld snapshots (%.1f MB), %lld body "
      "forward steps per gradient, peak RSS %.0f MB (max over ranks)\n",
      o.adjoint.schedule.c_str(),
      static_cast<long long>(o.adjoint.max_snapshots),
      o.adjoint.snapshot_bytes / 1048576.0,
      static_cast<long long>(o.forward.forward_steps + o.adjoint.forward_steps),
      o.peak_rss_mb);
}

// The figure and field files next to `output`: κ_true, κ, their
// difference, the convergence, a .vti of the three fields.
std::vector<std::string> figure_files(const std::string& output) {
  const bool json =
      output.size() > 5 && output.substr(output.size() - 5) == ".json";
  const std::string stem = json ? output.substr(0, output.size() - 5) : output;
  return {stem + "_kappa_true.png",
          stem + "_kappa.png",
          stem + "_difference.png",
          stem + "_convergence.png",
          stem + ".vti"};
}

// Writes figure_files(); false if one could not be written.
bool write_figures(const solvers::HeatInverse& problem,
                   const Arguments& a,
                   const Outcome& o,
                   const std::vector<std::string>& files) {
  const solvers::HeatConfig& c = a.problem.config;
  double span = 1e-12;
  for (double d : o.difference) span = std::max(span, std::fabs(d));
  examples::FieldFigure figure;
  figure.nx = c.nx, figure.ny = c.ny, figure.h = c.h();
  figure.lo = *std::min_element(o.exact.begin(), o.exact.end());
  figure.hi = *std::max_element(o.exact.begin(), o.exact.end());
  figure.unit = "kappa";
  figure.sensors = &problem.sensors();
  figure.path = files[0], figure.values = &o.exact;
  figure.title = "true diffusivity kappa";
  bool ok = examples::write_field_figure(figure);
  figure.path = files[1], figure.values = &o.found;
  char title[160];
  std::snprintf(title,
                sizeof(title),
                "recovered kappa (%d iterations, rel. error %.2e)",
                o.summary.iterations,
                o.relative_error);
  figure.title = title;
  ok = examples::write_field_figure(figure) && ok;
  figure.path = files[2], figure.values = &o.difference;
  figure.title = "recovered - true kappa";
  figure.unit = "difference";
  figure.lo = -span, figure.hi = span, figure.diverging = true;
  ok = examples::write_field_figure(figure) && ok;
  ok = examples::write_convergence_figure(
           files[3],
           o.summary.f_history,
           o.summary.gradient_norm_history,
           a.problem.bounded() ? "projected gradient norm" : "gradient norm") &&
       ok;
  return examples::write_vti(files[4],
                             c.nx,
                             c.ny,
                             c.h(),
                             {{"kappa_true", &o.exact},
                              {"kappa", &o.found},
                              {"difference", &o.difference}}) &&
         ok;
}

// The JSON result (--output).
nlohmann::json result_json(const solvers::HeatInverse& problem,
                           const Arguments& a,
                           const Outcome& o,
                           int ranks,
                           const std::vector<std::string>& files) {
  const solvers::HeatConfig& c = a.problem.config;
  const optim::LbfgsSummary& summary = o.summary;
  return {
      {"loss_history", summary.f_history},
      {"iterations", summary.iterations},
      {"resumed_at", summary.resumed_at},
      {"evaluations", summary.evaluations},
      {"termination", optim::termination_name(summary.termination)},
      {"relative_kappa_error", o.relative_error},
      {"wall_time_s", summary.seconds},
      {"ranks", ranks},
      {"decomposition",
       {{"px", c.px}, {"py", c.py}, {"nx", c.nx}, {"ny", c.ny}, {"nt", c.nt}}},
      {"kappa_layout", a.problem.replicated ? "replicated" : "sharded"},
      {"checkpoints",
       {{"schedule", o.adjoint.schedule},
        {"snapshots", o.adjoint.max_snapshots},
        {"snapshot_mb", o.adjoint.snapshot_bytes / 1048576.0},
        {"forward_evaluations_per_gradient",
         o.forward.forward_steps + o.adjoint.forward_steps},
        {"taped_steps_per_gradient", o.adjoint.taped_steps}}},
      {"peak_rss_mb", o.peak_rss_mb},
      {"observe_steps", a.problem.observe_steps},
      {"misfit", o.terms.misfit},
      {"regularization",
       {{"tikhonov", o.terms.tikhonov}, {"smoothness", o.terms.smoothness}}},
      {"bounds",
       {{"kappa_min", bound_text(a.problem.kappa_min)},
        {"kappa_max", bound_text(a.problem.kappa_max)}}},
      {"active_bounds", summary.active_bounds},
      {"sensors", problem.sensors().size()},
      {"noise", a.problem.noise},
      {"gradient_norm_history", summary.gradient_norm_history},
      {"message", summary.message},
      {"files", files}};
}

// Rank 0: the summary lines, the JSON result, then the figures (a figure
// that fails must not lose the results).
void report(const solvers::HeatInverse& problem,
            const Arguments& a,
            const Outcome& o,
            Communicator& comm) {
  print_outcome(o);
  const std::vector<std::string> files = figure_files(a.output);
  const bool ok = write_figures(problem, a, o, files);
  const nlohmann::json result = result_json(problem, a, o, comm.size(), files);
  write_output_file(a.output, result.dump(2) + "\n", "--output");
  if (!ok) comm.abort("could not write the figures next to " + a.output, 1);
  std::printf("wrote %s", a.output.c_str());
  for (const std::string& f : files) std::printf(", %s", f.c_str());
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const bool root = comm->rank() == 0;

  CLI::App app{
      "Recover the diffusivity of a 2-D heat equation with distributed L-BFGS"};
  Arguments a;
  // The problem's options from its field table (HeatConfig's by their own
  // names: --nx, --nt, --scheme, --checkpoints, …), the implicit step's
  // solver from SolverOptions' (--implicit-ksp, …).
  examples::add_field_options(
      app, solvers::HeatInverseOptions::fields(), a.problem);
  examples::add_field_options(app,
                              sparse::SolverOptions::fields(),
                              a.problem.config.implicit_solver,
                              "implicit-");
  add_run_options(app, a);
  app.add_flag("--print-options",
               a.print_options,
               "check the problem's options, print them as JSON and exit");
  if (auto code = examples::parse_command_line(app, argc, argv, root))
    return *code;
  if (auto code = finish_arguments(a, root)) return *code;
  if (a.print_options) return print_options(a, root);

  try {
    const std::string unwritable = unwritable_output(a, *comm);
    if (!unwritable.empty())
      return report_failure("heat_inversion", unwritable, 2);
    solvers::HeatInverse problem(a.problem, comm);
    if (!a.dump_gradient.empty()) {
      dump_gradient(problem, a, *comm);
      return 0;
    }
    Tensor kappa;
    optim::LbfgsSummary summary = fit(problem, a, *comm, kappa);
    const Outcome outcome =
        measure(problem, a, *comm, kappa, std::move(summary));
    if (root) report(problem, a, outcome, *comm);
    return 0;
  } catch (const Error& e) {
    return report_failure("heat_inversion", e.what(), 2);
  } catch (const std::bad_alloc&) {
    return report_failure("heat_inversion", "out of memory", 3);
  }
}
