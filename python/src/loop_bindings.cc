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

void bind_loop(py::module_& m) {
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
         py::handle checkpoints,
         std::vector<int64_t> output_steps,
         const std::string& name) {
        if (init.empty() && invariants.empty())
          throw GraphError("a loop needs at least one carry or invariant");
        check_node_name(name, "loop");
        std::shared_ptr<Graph> owner =
            init.empty() ? invariants[0].owner : init[0].owner;
        LoopOptions options;
        options.name = name;
        options.checkpoints = schedule_from(checkpoints).resolved(trips);
        options.output_steps = output_steps;
        const std::string label = name.empty() ? "loop" : name;
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
      py::arg("checkpoints") = py::none(),
      py::arg("output_steps") = std::vector<int64_t>{},
      py::arg("name") = "");
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
