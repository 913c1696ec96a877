// Loops from Python: adgraph.LoopArgs, _loop (python/adgraph's loop),
// loop_stats and loop_adjoints.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "python/src/bindings.h"

namespace adgraph::python {
namespace {

struct PyLoopArgs {
  std::vector<PyValue> carries, invariants;
  PyValue step;
  std::shared_ptr<Graph> graph;
};

// A loop body's carries or outputs: a Value, or a list or tuple of Values
// (numbers and arrays become constants of the body).
std::vector<Value> values_from(py::handle object,
                               const std::shared_ptr<Graph>& g,
                               const std::string& loop,
                               const std::string& what) {
  auto fail = [&](const std::string& got) {
    throw GraphError("the body of loop \"" + loop + "\" returned " + got +
                         " as its " + what +
                         "; expected a Value or a list of Values (or a pair "
                         "(carries, outputs))",
                     {},
                     {},
                     "body");
  };
  std::vector<Value> out;
  if (py::isinstance<PyValue>(object)) return {as_value(object, g).value};
  if (!py::isinstance<py::list>(object) && !py::isinstance<py::tuple>(object))
    fail(py::repr(object).cast<std::string>());
  for (py::handle item : object) {
    if (py::isinstance<PyValue>(item)) {
      out.push_back(as_value(item, g).value);
      continue;
    }
    try {
      out.push_back(as_value(item, g).value);  // a number or an array
    } catch (const ShapeError&) {
      fail("a list holding " + py::repr(item).cast<std::string>());
    }
  }
  return out;
}

// The C++ body of a loop whose body is the Python function `body`.
LoopBodyFn python_body(py::function body, const std::string& label) {
  return [body, label](const LoopArgs& a) {
    // Values of the body graph do not own it (the loop node does):
    // they share a scope that closes when the body returns.
    auto scope = std::make_shared<BodyScope>();
    scope->loop = label;
    std::shared_ptr<Graph> g(a.graph, BodyGraphRef{scope});
    struct Close {
      std::shared_ptr<BodyScope> scope;
      ~Close() { scope->open = false; }
    } close{scope};
    PyLoopArgs args{wrap(g, a.carries), wrap(g, a.invariants), {g, a.step}, g};
    try {
      py::object result = body(args);
      LoopStep step;
      if (py::isinstance<py::tuple>(result) && py::len(result) == 2 &&
          !py::isinstance<PyValue>(result.cast<py::tuple>()[0])) {
        auto pair = result.cast<py::tuple>();
        step.carries = values_from(pair[0], g, label, "carries");
        step.outputs = values_from(pair[1], g, label, "outputs");
      } else {
        step.carries = values_from(result, g, label, "carries");
      }
      return step;
    } catch (py::error_already_set& e) {
      const std::string what = e.what();
      keep_python_error(e);
      throw GraphError("the body of loop \"" + label + "\" raised " + what);
    }
  };
}

}  // namespace

// The Python forms of a checkpoint schedule (bindings.h).
CheckpointSchedule schedule_from(py::handle spec) {
  if (spec.is_none()) return CheckpointSchedule::graph_default();
  // A str or an int reads as its JSON form, with the same message; other
  // values (the older dicts among them) are named by their repr.
  const bool text_or_count =
      PyUnicode_Check(spec.ptr()) ||
      (PyLong_Check(spec.ptr()) && !PyBool_Check(spec.ptr()));
  std::string error;
  std::optional<CheckpointSchedule> s;
  try {
    s = CheckpointSchedule::from_json(to_json(spec, "checkpoints"), &error);
  } catch (const GraphError&) {
  }
  if (s) return *s;
  if (!text_or_count || error.empty())  // error: an int beyond 64 bits
    error = CheckpointSchedule::refusal(py::repr(spec).cast<std::string>());
  throw OptionsError(error, {}, {}, "checkpoints");
}

namespace option_checks {

FieldValue field_value(const FieldInfo& f,
                       py::handle v,
                       const std::string& function) {
  const std::string& name = f.name;
  switch (f.type) {
    case FieldType::kBool:
      return option_value<bool>(v, function, name);
    case FieldType::kInteger: {
      if (PyBool_Check(v.ptr()) ||
          !(PyLong_Check(v.ptr()) || is_numpy(v, "integer")))
        bad_option(function, name, "an integer", v);
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(
          py::int_(py::reinterpret_borrow<py::object>(v)).ptr(), &overflow);
      if (overflow != 0) {
        throw OptionsError("must be " + f.range.text() + ", got " +
                               py::str(v).cast<std::string>(),
                           {},
                           {},
                           name);
      }
      return static_cast<int64_t>(x);
    }
    case FieldType::kReal:
      return option_value<double>(v, function, name);
    case FieldType::kText:
      return option_value<std::string>(v, function, name);
    case FieldType::kSchedule:
      return schedule_from(v);
    case FieldType::kIntegers:
      return option_value<std::vector<int64_t>>(v, function, name);
    case FieldType::kIntPairs:
      return option_value<IntPairs>(v, function, name);
  }
  bad_option(function, name, "a value", v);
}

}  // namespace option_checks

namespace {

// A table's fields for Python: name, type, range, choices, doc and the
// default as JSON text.
template <class O>
py::list fields_of(const FieldTable<O>& table) {
  py::list out;
  for (const Field<O>& f : table) {
    py::dict d;
    d["name"] = f.name;
    d["type"] = std::string(name_of(f.type));
    d["range"] = f.range.text();
    d["choices"] = f.choices;
    d["doc"] = f.doc;
    d["default"] = field_json(f.get(O{})).dump();
    d["low"] = f.range.low;
    d["high"] = f.range.high;
    d["low_open"] = f.range.low_open;
    d["high_open"] = f.range.high_open;
    d["finite"] = f.range.finite;
    out.append(d);
  }
  return out;
}

// ag.loop's keywords: every one through LoopOptions' table (its type,
// range and message), an unknown one named with the table's names.
LoopOptions loop_options(const py::dict& keywords) {
  LoopOptions options;
  OptionTable<LoopOptions>("loop takes", "loop")
      .fields(LoopOptions::fields())
      .apply(keywords, options);
  check_node_name(options.name, "loop");
  return options;
}

template <class O>
std::string values_of(const O& o) {
  return fields_json(field_values(O::fields(), o)).dump();
}

// The options struct `kind` as the public functions read `options`
// (minimize and its line_search and line_search_bounded, loop,
// check_gradients, HeatInverse, sparse.solve), every field as JSON text:
// what reached the struct.
std::string options_of(const std::string& kind, const py::dict& options) {
  std::string error;
  if (kind == "LbfgsOptions") return values_of(lbfgs_options(options));
  if (kind == "GradientCheckOptions") {
    const GradientCheckOptions o = check_options(options);
    if (!o.is_valid(&error))
      throw OptionsError(error, {}, {}, "GradientCheckOptions");
    return values_of(o);
  }
  if (kind == "HeatInverseOptions") return values_of(heat_options(options));
  if (kind == "SolverOptions") return values_of(solver_options(options));
  if (kind == "LoopOptions") return values_of(loop_options(options));
  // The line searches as minimize reads them: LbfgsOptions' line_search
  // and line_search_bounded.
  if (kind == "LineSearchOptions") {
    py::dict lbfgs;
    lbfgs["line_search"] = options;
    return values_of(lbfgs_options(lbfgs).line_search);
  }
  if (kind == "MoreThuenteOptions") {
    py::dict lbfgs;
    lbfgs["line_search_bounded"] = options;
    return values_of(lbfgs_options(lbfgs).line_search_bounded);
  }
  throw OptionsError("no options struct " + kind);
}

}  // namespace

// adgraph's settings from Python: the schedule grammar and the options
// structs' field tables (for tests and tools).
void bind_settings(py::module_& m) {
  m.def(
      "_option_fields",
      [] {
        py::dict d;
        d["LbfgsOptions"] = fields_of(optim::LbfgsOptions::fields());
        d["LineSearchOptions"] = fields_of(optim::LineSearchOptions::fields());
        d["MoreThuenteOptions"] =
            fields_of(optim::MoreThuenteOptions::fields());
        d["LoopOptions"] = fields_of(LoopOptions::fields());
        d["HeatInverseOptions"] =
            fields_of(solvers::HeatInverseOptions::fields());
        d["SolverOptions"] = fields_of(sparse::SolverOptions::fields());
        d["GradientCheckOptions"] = fields_of(GradientCheckOptions::fields());
        return d;
      },
      "Every options struct's field table (name, type, range, default).");
  m.def("_options",
        &options_of,
        py::arg("kind"),
        py::arg("options"),
        "The options struct `kind` as its public function reads `options` "
        "(JSON text of every field).");
  m.def(
      "checkpoint_schedule",
      [](py::handle spec, int64_t steps) {
        const CheckpointSchedule s = schedule_from(spec);
        return py::make_tuple(s.to_string(),
                              (steps > 0 ? s.resolved(steps) : s).describe());
      },
      py::arg("checkpoints"),
      py::arg("steps") = 0,
      "Reads a checkpoint schedule as loop() does: returns its canonical "
      "text (all, auto, N, every:K, budget:BYTES) and, with `steps`, its "
      "description once \"auto\" is fixed for that many steps. Raises "
      "OptionsError naming \"checkpoints\" for a malformed one.");
}

void bind_loop(py::module_& m) {
  bind_settings(m);
  py::class_<PyLoopArgs>(m, "LoopArgs", "What a loop body receives.")
      .def_readonly(
          "carries", &PyLoopArgs::carries, "c_t, one Value per carry.")
      .def_readonly(
          "invariants", &PyLoopArgs::invariants, "The loop-invariant inputs.")
      .def_readonly(
          "step", &PyLoopArgs::step, "The step index t as a scalar Value.")
      .def_readonly(
          "graph", &PyLoopArgs::graph, "The body's own graph (for constants).");
  m.def(
      "_loop",
      [](int64_t trips,
         const std::vector<PyValue>& init,
         const std::vector<PyValue>& invariants,
         py::function body,
         const py::dict& keywords) {
        if (init.empty() && invariants.empty())
          throw GraphError("a loop needs at least one carry or invariant");
        LoopOptions options = loop_options(keywords);
        options.checkpoints = options.checkpoints.resolved(trips);
        std::shared_ptr<Graph> owner =
            init.empty() ? invariants[0].owner : init[0].owner;
        const std::string label = options.name.empty() ? "loop" : options.name;
        const LoopBodyFn build = python_body(body, label);
        return with_python_errors([&] {
          LoopResult r =
              loop(trips, unwrap(init), unwrap(invariants), build, options);
          return py::make_tuple(wrap(owner, r.carries),
                                wrap(owner, r.outputs),
                                PyValue{owner, r.node});
        });
      },
      py::arg("trips"),
      py::arg("init"),
      py::arg("invariants"),
      py::arg("body"),
      py::arg("options"),
      "A loop node; `options` holds LoopOptions' fields by name (name, "
      "checkpoints, output_steps).");
  m.def(
      "loop_stats",
      [](const PyValue& node) { return stats_dict(loop_stats(node.value)); },
      py::arg("node"),
      "What the last run of a loop (or its adjoint) did.");
  m.def(
      "loop_adjoints",
      [](const PyValue& node) {
        return wrap(node.owner, loop_adjoints(node.value));
      },
      py::arg("node"),
      "The loop_adjoint nodes gradients() built for a loop.");
}

}  // namespace adgraph::python
