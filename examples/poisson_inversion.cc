// poisson_inversion: ADCME's Poisson inversion on px × py ranks. Recover
// κ(x, y) in A(κ) u = f, where A is the conservative operator
// (solvers/patch_operators.h), from u itself: u_exact = x(1−x)y(1−y),
// κ_true = 1 + x² + y², f := A(κ_true)·u_exact on the grid (so the
// observations are u_exact exactly), loss Σ (u − u_exact)² over all points.
// Each evaluation is one distributed CG solve (PETSc) and its adjoint one
// more.
//
//   mpirun -n 4 poisson_inversion --nx 64 --ny 64 --px 2 --py 2
//   mpirun -n 4 poisson_inversion --param nn      # κ = |NN_θ(x, y) + 5|
//
// --param field fits κ per point (sharded, L-BFGS-B with κ >= 0.1 so A
// stays positive definite); --param nn fits the 921 weights of a
// [2, 20, 20, 20, 1] tanh network, replicated and broadcast from rank 0
// (mpi_bcast), as ADCME does. Rank 0 writes a JSON result, PNG figures of
// κ true / recovered / difference and the convergence, and a ParaView .vti.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "adgraph.h"
#include "core/output_file.h"
#include "examples/command_line.h"
#include "examples/grid_output.h"
#include "examples/heat_figures.h"
#include "solvers/dense_network.h"
#include "solvers/patch_operators.h"

using namespace adgraph;

namespace {

struct Settings {
  solvers::HeatConfig grid;
  std::string param = "field";
  int max_iter = 200;
  double tol = 1e-10;
  sparse::SolverOptions solver;
  std::string output = "poisson_inversion.json", dump_solution, dump_gradient;
};

double u_exact_at(double x, double y) { return x * (1 - x) * y * (1 - y); }
double kappa_true_at(double x, double y) { return 1 + x * x + y * y; }

template <class F>
Tensor point_field(const solvers::HeatConfig& c, const solvers::Patch& p, F f) {
  Tensor t(Shape{p.n, p.m});
  const double h = c.h();
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.m; ++j)
      t[i * p.m + j] = f((p.row0 + i + 1) * h, (p.col0 + j + 1) * h);
  return t;
}

// The patch's points as network inputs: [n·m, 2] rows (x, y).
Tensor coordinates(const solvers::HeatConfig& c, const solvers::Patch& p) {
  Tensor t(Shape{p.n * p.m, 2});
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t j = 0; j < p.m; ++j) {
      t[2 * (i * p.m + j)] = (p.row0 + i + 1) * c.h();
      t[2 * (i * p.m + j) + 1] = (p.col0 + j + 1) * c.h();
    }
  }
  return t;
}

const solvers::DenseNetwork kNetwork{{2, 20, 20, 20, 1}};

struct Problem {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  Value variable, kappa, u, loss;
  Tensor start;
  optim::Layout layout = optim::Layout::kSharded;
};

// f = A(κ_true)·u_exact on this rank's patch.
Tensor right_hand_side(const Settings& s, int rank) {
  const solvers::Patch p = solvers::patch_of(s.grid, rank);
  Graph g;
  sparse::SparseMatrix a(solvers::five_point_pattern(s.grid, rank));
  Value kappa = g.constant(point_field(s.grid, p, kappa_true_at));
  Value f = sparse::matvec(a,
                           solvers::conservative_values(s.grid, rank, kappa),
                           g.constant(point_field(s.grid, p, u_exact_at)));
  Session session(g);
  return session.run(f);
}

// The loss as a function of κ (a field) or of θ (the network).
Problem build_problem(const Settings& s, const std::string& param, int rank) {
  const solvers::Patch p = solvers::patch_of(s.grid, rank);
  Problem pr;
  Graph& g = *pr.graph;
  bind_communicator(g);
  if (param == "field") {
    pr.variable = g.placeholder("kappa", {p.n, p.m});
    pr.kappa = pr.variable;
    pr.start = Tensor(Shape{p.n, p.m}, 1.0);
  } else {
    pr.variable = g.placeholder("theta", {kNetwork.parameter_count()});
    Value net = kNetwork.apply(mpi_bcast(pr.variable),
                               g.constant(coordinates(s.grid, p)));
    pr.kappa = reshape(abs(net + 5.0), {p.n, p.m});
    pr.start = kNetwork.initial_parameters(20261126);
    pr.layout = optim::Layout::kReplicated;
  }
  sparse::SparseMatrix a(solvers::five_point_pattern(s.grid, rank));
  Value f = g.constant(right_hand_side(s, rank));
  pr.u = sparse::solve(
      a, solvers::conservative_values(s.grid, rank, pr.kappa), f, s.solver);
  Value misfit =
      sum(square(pr.u - g.constant(point_field(s.grid, p, u_exact_at))));
  // The replicated layout reads rank 0's loss: the sum over ranks lands there.
  pr.loss = param == "field" ? misfit : mpi_sum(misfit);
  return pr;
}

void write_grid(Communicator& comm,
                const Settings& s,
                const Tensor& local,
                const std::string& path,
                const char* what) {
  std::vector<double> grid = examples::gather_grid(comm, s.grid, local);
  if (comm.rank() != 0) return;
  write_output_file(path,
                    std::string(reinterpret_cast<const char*>(grid.data()),
                                grid.size() * sizeof(double)),
                    what);
  std::printf("wrote %s (%d x %d float64, row-major) to %s\n",
              what + 7,
              s.grid.nx,
              s.grid.ny,
              path.c_str());
}

// --dump-solution: u at κ_true; --dump-gradient: dL/dκ at κ = 1.
void write_dumps(Communicator& comm, const Settings& s) {
  const solvers::Patch p = solvers::patch_of(s.grid, comm.rank());
  Problem field = build_problem(s, "field", comm.rank());
  Session session(*field.graph);
  if (!s.dump_solution.empty()) {
    Tensor u = session.run(
        field.u, {{field.variable, point_field(s.grid, p, kappa_true_at)}});
    write_grid(comm, s, u, s.dump_solution, "--dump-solution");
  }
  if (!s.dump_gradient.empty()) {
    Value grad = gradient(field.loss, field.variable);
    Tensor g =
        session.run(grad, {{field.variable, Tensor(Shape{p.n, p.m}, 1.0)}});
    write_grid(comm, s, g, s.dump_gradient, "--dump-gradient");
  }
}

struct Fit {
  optim::LbfgsSummary summary;
  Tensor kappa;  // this rank's patch
};

Fit fit(const Settings& s, int rank) {
  Problem pr = build_problem(s, s.param, rank);
  optim::LbfgsOptions options;
  options.max_iterations = s.max_iter;
  options.tolerance_gradient = s.tol;
  options.trace = rank == 0;
  std::vector<Tensor> values = {pr.start};
  Fit out;
  if (s.param == "field") {
    optim::VariableBounds bounds;
    bounds.lower = {Tensor(pr.start.shape(), 0.1)};
    out.summary = optim::minimize(
        pr.loss, {pr.variable}, values, bounds, {}, options, pr.layout);
    out.kappa = values[0];
  } else {
    out.summary =
        optim::minimize(pr.loss, {pr.variable}, values, {}, options, pr.layout);
    Session session(*pr.graph);
    out.kappa = session.run(pr.kappa, {{pr.variable, values[0]}});
  }
  return out;
}

bool write_figures(const Settings& s,
                   const std::string& stem,
                   const std::vector<double>& found,
                   const std::vector<double>& exact,
                   const Fit& result,
                   double relative_error) {
  std::vector<double> difference(found.size());
  double span = 1e-12;
  for (std::size_t k = 0; k < found.size(); ++k) {
    difference[k] = found[k] - exact[k];
    span = std::max(span, std::fabs(difference[k]));
  }
  examples::FieldFigure figure;
  figure.nx = s.grid.nx, figure.ny = s.grid.ny, figure.h = s.grid.h();
  figure.lo = *std::min_element(exact.begin(), exact.end());
  figure.hi = *std::max_element(exact.begin(), exact.end());
  figure.unit = "kappa";
  figure.path = stem + "_kappa_true.png", figure.values = &exact;
  figure.title = "true kappa = 1 + x^2 + y^2";
  bool ok = examples::write_field_figure(figure);
  char title[160];
  std::snprintf(title,
                sizeof title,
                "recovered kappa (%s, %d iterations, rel. error %.2e)",
                s.param.c_str(),
                result.summary.iterations,
                relative_error);
  figure.path = stem + "_kappa.png", figure.values = &found,
  figure.title = title;
  ok = examples::write_field_figure(figure) && ok;
  figure.path = stem + "_difference.png", figure.values = &difference;
  figure.title = "recovered - true kappa", figure.unit = "difference";
  figure.lo = -span, figure.hi = span, figure.diverging = true;
  ok = examples::write_field_figure(figure) && ok;
  ok = examples::write_convergence_figure(
           stem + "_convergence.png",
           result.summary.f_history,
           result.summary.gradient_norm_history,
           s.param == "field" ? "projected gradient norm" : "gradient norm") &&
       ok;
  return examples::write_vti(stem + ".vti",
                             s.grid.nx,
                             s.grid.ny,
                             s.grid.h(),
                             {{"kappa_true", &exact},
                              {"kappa", &found},
                              {"difference", &difference}}) &&
         ok;
}

void report(Communicator& comm, const Settings& s, const Fit& result) {
  const solvers::Patch p = solvers::patch_of(s.grid, comm.rank());
  const Tensor truth = point_field(s.grid, p, kappa_true_at);
  const double err2 =
      comm.allreduce_sum((result.kappa.array() - truth.array()).square().sum());
  const double ref2 = comm.allreduce_sum(truth.array().square().sum());
  const double relative_error = std::sqrt(err2 / ref2);
  const std::vector<double> found =
      examples::gather_grid(comm, s.grid, result.kappa);
  const std::vector<double> exact = examples::gather_grid(comm, s.grid, truth);
  if (comm.rank() != 0) return;
  std::printf("relative L2 error of kappa: %.6e\n", relative_error);
  const std::string stem =
      s.output.size() > 5 && s.output.substr(s.output.size() - 5) == ".json"
          ? s.output.substr(0, s.output.size() - 5)
          : s.output;
  const bool figures =
      write_figures(s, stem, found, exact, result, relative_error);
  const optim::LbfgsSummary& sum = result.summary;
  nlohmann::json out = {
      {"param", s.param},
      {"parameters",
       s.param == "field" ? int64_t{s.grid.nx} * s.grid.ny
                          : kNetwork.parameter_count()},
      {"iterations", sum.iterations},
      {"evaluations", sum.evaluations},
      {"termination", optim::termination_name(sum.termination)},
      {"loss_history", sum.f_history},
      {"gradient_norm_history", sum.gradient_norm_history},
      {"relative_kappa_error", relative_error},
      {"wall_time_s", sum.seconds},
      {"ranks", comm.size()},
      {"decomposition",
       {{"px", s.grid.px},
        {"py", s.grid.py},
        {"nx", s.grid.nx},
        {"ny", s.grid.ny}}},
      {"solver", s.solver.to_attrs()},
      {"figures_written", figures}};
  write_output_file(s.output, out.dump(2) + "\n", "--output");
  std::printf("wrote %s and %s_*.png, %s.vti\n",
              s.output.c_str(),
              stem.c_str(),
              stem.c_str());
}

void add_options(CLI::App& app, Settings& s) {
  solvers::HeatConfig& c = s.grid;
  c.nx = c.ny = 64;
  s.solver.ksp = "cg";
  s.solver.pc = "gamg";
  s.solver.symmetric = true;
  examples::add_grid_options(app, c);
  app.add_option(
         "--param", s.param, "what is fitted: field (kappa per point) or nn")
      ->check(CLI::IsMember({"field", "nn"}))
      ->capture_default_str();
  app.add_option("--max-iter", s.max_iter, "L-BFGS iteration limit")
      ->capture_default_str();
  app.add_option("--tol", s.tol, "stop when the gradient norm falls below this")
      ->capture_default_str();
  app.add_option("--pc", s.solver.pc, "preconditioner of the CG solve")
      ->check(CLI::IsMember(
          {"none", "jacobi", "bjacobi", "ilu", "gamg", "hypre", "lu"}))
      ->capture_default_str();
  app.add_option("--output", s.output, "JSON result (figures beside it)")
      ->capture_default_str();
  app.add_option("--dump-solution",
                 s.dump_solution,
                 "write u at kappa_true (global row-major float64) and exit");
  app.add_option("--dump-gradient",
                 s.dump_gradient,
                 "write dL/dkappa at kappa = 1 (field; global row-major "
                 "float64) and exit");
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const bool root = comm->rank() == 0;
  CLI::App app{
      "Recover the coefficient of a Poisson problem (ADCME's inversion) "
      "with distributed sparse solves and L-BFGS"};
  Settings s;
  add_options(app, s);
  if (auto code = examples::parse_command_line(app, argc, argv, root))
    return *code;
  try {
    std::string error;
    if (!s.grid.is_valid(comm->size(), &error)) throw OptionsError(error);
    if (s.dump_solution.empty() && s.dump_gradient.empty()) {
      check_output_path(s.output, "--output");
    }
    if (!s.dump_solution.empty())
      check_output_path(s.dump_solution, "--dump-solution");
    if (!s.dump_gradient.empty())
      check_output_path(s.dump_gradient, "--dump-gradient");
    if (!s.dump_solution.empty() || !s.dump_gradient.empty()) {
      write_dumps(*comm, s);
      return 0;
    }
    if (root) {
      std::printf(
          "poisson inversion: %d x %d grid, %d x %d patches on %d ranks, "
          "param %s, cg + %s\n",
          s.grid.nx,
          s.grid.ny,
          s.grid.px,
          s.grid.py,
          comm->size(),
          s.param.c_str(),
          s.solver.pc.c_str());
    }
    report(*comm, s, fit(s, comm->rank()));
  } catch (const Error& e) {
    return report_failure("poisson_inversion", e.what(), 1);
  }
  return 0;
}
