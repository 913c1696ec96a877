// solvers::HeatInverse (adgraph.solvers.HeatInverse) and the JSON driver's
// loader (adgraph.load_json) from Python.
#include <cmath>
#include <cstdio>

#include "core/exec/plan_checks.h"
#include "driver/loader.h"
#include "python/src/bindings.h"
#include "solvers/heat_inverse.h"

namespace adgraph::python {
namespace {

std::string format_double(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

// dt finite, and for the explicit scheme within its stability limit
// h²/(4·max κ), κ the true field the observations come from (the default
// dt, 0.2 h²/max κ, is 0.8 of it): beyond it the steps grow without bound
// (a loss of 1e9 and more, not an error).
void check_explicit_dt(const solvers::HeatConfig& c) {
  if (!std::isfinite(c.dt)) {
    throw OptionsError(
        "HeatInverse: dt must be a finite number >= 0 (0 "
        "selects the explicit stability rule), got " +
            format_double(c.dt),
        {},
        {},
        "dt");
  }
  if (c.scheme != solvers::HeatScheme::kExplicit || c.dt <= 0) return;
  if (c.nx < 1 || c.ny < 1) return;  // HeatInverse names those
  solvers::HeatConfig rule = c;
  rule.dt = 0;
  const double limit = solvers::heat_dt(rule) / 0.8;
  if (c.dt > limit) {
    throw OptionsError(
        "HeatInverse: dt = " + format_double(c.dt) +
            " is beyond the explicit scheme's stability limit h^2 / (4 max "
            "kappa) = " +
            format_double(limit) + " for nx = " + std::to_string(c.nx) +
            ", ny = " + std::to_string(c.ny) +
            " (the steps would grow without bound); use dt <= the limit, "
            "dt = 0 (the default rule), or an implicit scheme",
        {},
        {},
        "dt");
  }
}

// κ given to a HeatInverse method: exactly the variable's shape (this
// rank's patch, or the whole grid when replicated).
Tensor kappa_of(const solvers::HeatInverse& h,
                py::handle kappa,
                const std::string& function) {
  Tensor k = to_tensor(kappa, "HeatInverse." + function + ": kappa");
  const Shape expected = h.kappa_start().shape();
  if (k.shape() != expected) {
    throw ShapeError(
        "HeatInverse." + function + ": kappa has shape " +
            shape_string(k.shape()) + ", expected " + shape_string(expected) +
            " (" +
            (h.layout() == optim::Layout::kSharded ? "this rank's patch"
                                                   : "the whole grid") +
            ")",
        {},
        {},
        "kappa");
  }
  return k;
}

}  // namespace

// HeatInverseOptions from the keyword arguments of HeatInverse(), by their
// C++ names (HeatConfig's fields at the top level).
solvers::HeatInverseOptions heat_options(const py::dict& options) {
  using solvers::HeatConfig;
  using solvers::HeatInverseOptions;
  HeatInverseOptions o;
  OptionTable<HeatInverseOptions>("HeatInverse takes", "HeatInverse")
      .fields(HeatInverseOptions::fields())
      .apply(options, o);
  HeatConfig& c = o.config;
  check_explicit_dt(c);
  if (c.checkpoints.kind == CheckpointSchedule::Kind::kDefault)
    c.checkpoints = CheckpointSchedule::automatic();
  c.checkpoints = c.checkpoints.resolved(c.nt);
  return o;
}

namespace {

// A document loaded into a new graph on the Python world communicator.
py::dict load_json(const std::string& text, const std::string& file) {
  auto graph = std::make_shared<Graph>();
  graph->set_comm(python_world());
  graph->set_same_on_every_rank(true);
  driver::Document d;
  without_gil([&] {
    d = driver::load_document(driver::parse_document(text, file), file, *graph);
  });
  py::dict values, feeds;
  for (const auto& [name, v] : d.values)
    values[py::str(name)] = PyValue{graph, v};
  for (const auto& [v, t] : d.feeds)
    feeds[py::cast(PyValue{graph, v})] = to_array(Tensor(t));
  py::dict out;
  out["graph"] = graph;
  out["values"] = values;
  out["feeds"] = feeds;
  out["fetch"] = d.fetch;
  out["fetch_values"] = wrap(graph, d.fetch_values);
  if (d.has_optimize) {
    const driver::Optimize& o = d.optimize;
    py::dict opt;
    opt["objective"] = PyValue{graph, o.objective};
    opt["names"] = o.names;
    opt["variables"] = wrap(graph, o.variables);
    py::list start;
    for (const Tensor& t : o.start) start.append(to_array(Tensor(t)));
    opt["start"] = start;
    opt["method"] = o.bounded ? "lbfgsb" : "lbfgs";
    opt["layout"] =
        o.layout == optim::Layout::kSharded ? "sharded" : "replicated";
    out["optimize"] = opt;
  } else {
    out["optimize"] = py::none();
  }
  return out;
}

}  // namespace

void bind_documents(py::module_& m);

void bind_solvers(py::module_& m) {
  using solvers::HeatInverse;
  py::class_<HeatInverse>(m, "_HeatInverse")
      .def(py::init([](py::dict options) {
        solvers::HeatInverseOptions o = heat_options(options);
        return without_gil([&] {
          return std::make_unique<HeatInverse>(std::move(o), python_world());
        });
      }))
      .def("kappa_start",
           [](const HeatInverse& h) { return to_array(h.kappa_start()); })
      .def("kappa_true",
           [](const HeatInverse& h) { return to_array(h.kappa_true()); })
      .def("layout",
           [](const HeatInverse& h) {
             return h.layout() == optim::Layout::kSharded ? "sharded"
                                                          : "replicated";
           })
      .def("patch",
           [](const HeatInverse& h) {
             const solvers::Patch& p = h.patch();
             py::dict d;
             d["row0"] = p.row0, d["col0"] = p.col0, d["n"] = p.n, d["m"] = p.m;
             return d;
           })
      .def("sensors", &HeatInverse::sensors)
      .def("dt",
           [](const HeatInverse& h) { return solvers::heat_dt(h.config()); })
      .def("loss_and_gradient",
           [](HeatInverse& h, py::handle kappa) {
             MpiRunGuard mpi("HeatInverse.loss_and_gradient");
             const Tensor k = kappa_of(h, kappa, "loss_and_gradient");
             std::pair<double, Tensor> r =
                 without_gil([&] { return h.loss_and_gradient(k); });
             return py::make_tuple(r.first, to_array(std::move(r.second)));
           })
      .def("loss",
           [](HeatInverse& h, py::handle kappa) {
             MpiRunGuard mpi("HeatInverse.loss");
             const Tensor k = kappa_of(h, kappa, "loss");
             return without_gil([&] { return h.loss(k); });
           })
      .def("terms",
           [](HeatInverse& h, py::handle kappa) {
             MpiRunGuard mpi("HeatInverse.terms");
             const Tensor k = kappa_of(h, kappa, "terms");
             const solvers::HeatLossTerms t =
                 without_gil([&] { return h.terms(k); });
             py::dict d;
             d["misfit"] = t.misfit, d["tikhonov"] = t.tikhonov,
             d["smoothness"] = t.smoothness;
             return d;
           })
      .def("relative_kappa_error",
           [](HeatInverse& h, py::handle kappa) {
             MpiRunGuard mpi("HeatInverse.relative_kappa_error");
             const Tensor k = kappa_of(h, kappa, "relative_kappa_error");
             return without_gil([&] { return h.relative_kappa_error(k); });
           })
      .def("loop_forward_stats",
           [](const HeatInverse& h) {
             return stats_dict(h.loop_forward_stats());
           })
      .def("loop_adjoint_stats",
           [](const HeatInverse& h) {
             return stats_dict(h.loop_adjoint_stats());
           })
      .def("problem_description", &HeatInverse::problem_description)
      .def("fit", [](HeatInverse& h, py::handle kappa, py::dict options) {
        MpiRunGuard mpi("HeatInverse.fit");
        const optim::LbfgsOptions o = lbfgs_options(options);
        std::vector<Tensor> values = {kappa_of(h, kappa, "fit")};
        const optim::LbfgsSummary s =
            without_gil([&] { return h.fit(values[0], o); });
        return summary_dict(s, values);
      });
  bind_documents(m);
}

// adgraph.load_json's C++ side: the loader and the document bound.
void bind_documents(py::module_& m) {
  m.def("_load_json", &load_json, py::arg("text"), py::arg("file"));
  m.def(
      "_read_document",
      [](const std::string& file) {
        return py::bytes(driver::read_document(file));
      },
      py::arg("file"),
      "The bytes of a graph document file, at most _max_document_bytes "
      "(adgraph-run's bound); JsonError naming the file otherwise.");
  m.attr("_max_document_bytes") = driver::kMaxDocumentBytes;
}

}  // namespace adgraph::python
