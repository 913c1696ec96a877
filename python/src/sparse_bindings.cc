// Distributed sparse matrices (sparse/sparse_matrix.h) and the patch grid's
// 5-point operators (solvers/patch_operators.h) from Python:
// adgraph.sparse and adgraph.solvers.
#include "python/src/bindings.h"
#include "solvers/patch_operators.h"

namespace adgraph::python {

// SolverOptions from keyword arguments with the C++ field names.
sparse::SolverOptions solver_options(const py::dict& options) {
  using sparse::SolverOptions;
  SolverOptions o;
  OptionTable<SolverOptions>("a solve takes", "sparse.solve")
      .fields(SolverOptions::fields())
      .apply(options, o);
  std::string error;
  if (!o.is_valid(&error)) {
    const auto colon = error.find(':');
    throw OptionsError(error.substr(colon + 2), {}, {}, error.substr(0, colon));
  }
  return o;
}

namespace {

// The patch grid of `function`'s arguments, and `rank` checked against it.
solvers::HeatConfig grid_of(
    const char* function, int nx, int ny, int px, int py, int rank) {
  solvers::HeatConfig c;
  c.nx = nx, c.ny = ny, c.px = px, c.py = py;
  if (px < 1 || py < 1) {
    throw OptionsError(std::string(function) +
                           ": px and py must be >= 1, got " +
                           std::to_string(px) + " x " + std::to_string(py),
                       {},
                       {},
                       px < 1 ? "px" : "py");
  }
  const int64_t ranks = static_cast<int64_t>(px) * py;
  std::string error;
  if (ranks > (int64_t{1} << 30) ||
      !c.is_valid(static_cast<int>(ranks), &error)) {
    throw OptionsError(std::string(function) + ": " +
                       (error.empty() ? "px x py is too large" : error));
  }
  if (rank < 0 || rank >= ranks) {
    throw OptionsError(std::string(function) + ": rank must be in [0, " +
                           std::to_string(ranks) + ") for a " +
                           std::to_string(px) + " x " + std::to_string(py) +
                           " patch grid, got " + std::to_string(rank),
                       {},
                       {},
                       "rank");
  }
  return c;
}

// One sparse op on `a` with its two inputs (values, arrays or numbers).
PyValue sparse_op(const sparse::SparseMatrix& a,
                  const std::string& op,
                  py::handle first,
                  py::handle second,
                  const py::dict& options) {
  std::shared_ptr<Graph> g =
      py::isinstance<PyValue>(first) ? graph_of(first) : graph_of(second);
  PyValue x = as_value(first, g), y = as_value(second, g);
  return with_python_errors([&] {
    if (op == "matvec") return PyValue{g, sparse::matvec(a, x.value, y.value)};
    if (op == "matvec_transpose")
      return PyValue{g, sparse::matvec_transpose(a, x.value, y.value)};
    if (op == "outer") return PyValue{g, sparse::outer(a, x.value, y.value)};
    const sparse::SolverOptions o = solver_options(options);
    if (op == "solve") return PyValue{g, sparse::solve(a, x.value, y.value, o)};
    return PyValue{g, sparse::solve_transpose(a, x.value, y.value, o)};
  });
}

}  // namespace

void bind_sparse(py::module_& m) {
  py::class_<sparse::SparseMatrix>(m, "SparseMatrix")
      .def(py::init([](int64_t first_row,
                       std::vector<int64_t> row_offsets,
                       std::vector<int64_t> columns) {
             sparse::CsrPattern p;
             p.first_row = first_row;
             p.row_offsets = std::move(row_offsets);
             p.columns = std::move(columns);
             return sparse::SparseMatrix(std::move(p));
           }),
           py::arg("first_row"),
           py::arg("row_offsets"),
           py::arg("columns"))
      .def_property_readonly("local_rows",
                             [](const sparse::SparseMatrix& a) {
                               return a.pattern().local_rows();
                             })
      .def_property_readonly("local_entries",
                             [](const sparse::SparseMatrix& a) {
                               return a.pattern().local_entries();
                             })
      .def("stats", [](const sparse::SparseMatrix& a) {
        const sparse::SparseStats s = a.stats();
        py::dict d;
        d["assemblies"] = s.assemblies;
        d["setups"] = s.setups;
        d["solves"] = s.solves;
        d["transpose_solves"] = s.transpose_solves;
        d["last_iterations"] = s.last_iterations;
        d["stencil_products"] = s.stencil_products;
        return d;
      });
  m.def("_sparse_op", &sparse_op);
  m.def("_five_point_matrix", [](int nx, int ny, int px, int py, int rank) {
    return sparse::SparseMatrix(solvers::five_point_pattern(
        grid_of("five_point_matrix", nx, ny, px, py, rank), rank));
  });
  m.def("_conservative_values",
        [](py::handle kappa, int nx, int ny, int px, int py, int rank) {
          PyValue k = as_value(kappa, graph_of(kappa));
          return with_python_errors([&] {
            return PyValue{
                k.owner,
                solvers::conservative_values(
                    grid_of("conservative_values", nx, ny, px, py, rank),
                    rank,
                    k.value)};
          });
        });
  m.def(
      "_heat_matrix_values",
      [](py::handle kappa, double s, int nx, int ny, int px, int py, int rank) {
        PyValue k = as_value(kappa, graph_of(kappa));
        return with_python_errors([&] {
          return PyValue{
              k.owner,
              solvers::heat_matrix_values(
                  grid_of("heat_matrix_values", nx, ny, px, py, rank),
                  rank,
                  k.value,
                  s)};
        });
      });
}

}  // namespace adgraph::python
