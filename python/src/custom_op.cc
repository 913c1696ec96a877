// Ops written in Python: forward, vjp and (optionally) jvp as numpy
// functions, registered in the global registry like any C++ op.
//
// An op "name" with n inputs registers three ops:
//   name(x_1..x_n) -> y                     forward(*xs)
//   name_vjp(x_1..x_n, y, ȳ) -> x̄_1..x̄_n    vjp(xs, y, ȳ)
//   name_jvp(x_1..x_n, ẋ_1..ẋ_n) -> ẏ       jvp(xs, ẋs)   (when given)
// so its gradient and tangent are ordinary nodes (they prune, order and run
// inside loop adjoints like any other). The vjp and jvp ops have no
// derivatives of their own: gradients() or jvp() through them fails,
// naming them.
#include <cstring>

#include "python/src/bindings.h"

namespace adgraph::python {
namespace {

struct PyOp {
  std::string name;
  int num_inputs = 0;
  py::object forward, vjp, jvp, shape;
};

std::vector<std::string> input_names(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// `result` (array-like of real numbers) copied into `out`, whose shape it
// must have exactly (a flat or reshaped array of the right size is
// refused, as is None unless `none_is_zero`: a vjp's zero cotangent).
void store(py::handle result,
           Tensor& out,
           const KernelContext& c,
           const std::string& what,
           bool none_is_zero = false) {
  if (result.is_none() && none_is_zero) {
    out.array().setZero();
    return;
  }
  Tensor got;
  try {
    got = to_tensor(result, what);
  } catch (const Error& e) {
    throw RunError(what +
                       " returned something that is not an array of "
                       "real numbers: " +
                       e.detail(),
                   c.node().name,
                   c.node().op_name());
  }
  if (got.shape() != out.shape()) {
    throw RunError(what + " returned shape " + shape_string(got.shape()) +
                       ", expected " + shape_string(out.shape()) +
                       " (exactly: an array of the right size but another "
                       "shape is not reshaped)",
                   c.node().name,
                   c.node().op_name());
  }
  if (out.size() > 0) std::memcpy(out.data(), got.data(), out.bytes());
}

// Calls Python for a kernel: the GIL taken, a Python exception kept for the
// entry point and turned into a RunError naming the node.
template <class F>
void call_python(const KernelContext& c, const std::string& what, F&& f) {
  py::gil_scoped_acquire gil;
  InKernel in_kernel;
  try {
    f();
  } catch (py::error_already_set& e) {
    const std::string message = e.what();
    throw PythonKernelError(
        e, what + " raised " + message, c.node().name, c.node().op_name());
  }
}

py::tuple input_views(const KernelContext& c, int first, int n) {
  py::tuple views(n);
  for (int i = 0; i < n; ++i)
    views[i] = view_of(c.input(first + i), py::none());
  return views;
}

Shapes forward_shape(const PyOp& op, const ShapeContext& c) {
  if (op.shape.is_none()) {
    if (c.num_inputs() == 0)
      c.fail("shape", "an op without inputs needs shape=");
    return {c.input_shape(0)};
  }
  py::gil_scoped_acquire gil;
  py::list shapes;
  for (int i = 0; i < c.num_inputs(); ++i) {
    const Shape& s = c.input_shape(i);
    shapes.append(
        py::tuple(py::cast(std::vector<int64_t>(s.begin(), s.end()))));
  }
  try {
    py::object result = op.shape(shapes);
    Shape shape;
    for (py::handle e : result.cast<py::sequence>())
      shape.push_back(e.cast<int64_t>());
    if (checked_num_elements(shape) < 0)
      c.fail("shape", "shape() returned " + shape_string(shape));
    return {shape};
  } catch (py::error_already_set& e) {
    const std::string message = e.what();
    keep_python_error(e);
    c.fail("shape", "shape() raised " + message);
  } catch (py::cast_error&) {
    c.fail("shape", "shape() must return a sequence of integers");
  }
}

OpDef forward_def(const PyOp* op, const std::string& doc) {
  OpDef def(op->name,
            doc.empty() ? "an op written in Python" : doc,
            input_names("x", op->num_inputs));
  def.shape = [op](const ShapeContext& c) { return forward_shape(*op, c); };
  def.compute = [op](KernelContext& c) {
    call_python(c, "forward", [&] {
      py::object y = op->forward(*input_views(c, 0, op->num_inputs));
      store(y, c.output(0), c, "forward");
    });
  };
  def.gradient = [op](const GradientContext& c) {
    Values inputs;
    for (int i = 0; i < op->num_inputs; ++i) inputs.push_back(c.input(i));
    inputs.push_back(c.output(0));
    inputs.push_back(c.grad(0));
    return c.graph().add_node_outputs(op->name + "_vjp", inputs);
  };
  def.tangent = [op](const TangentContext& c) -> Values {
    if (op->jvp.is_none()) {
      throw GraphError(
          "the Python op was registered without jvp=, so forward mode "
          "(jvp(), check_gradients' check_jvp) cannot go through it",
          c.node().name,
          c.node().op_name());
    }
    if (!c.any_tangent()) return {Value()};
    Values inputs;
    for (int i = 0; i < op->num_inputs; ++i) inputs.push_back(c.input(i));
    for (int i = 0; i < op->num_inputs; ++i)
      inputs.push_back(c.tangent_or_zeros(i));
    return {c.graph().add_node(op->name + "_jvp", inputs)};
  };
  return def;
}

OpDef vjp_def(const PyOp* op) {
  const int n = op->num_inputs;
  OpDef def(op->name + "_vjp",
            "the cotangents of " + op->name + "'s inputs (its Python vjp)",
            input_names("x", n));
  def.inputs.push_back("y");
  def.inputs.push_back("y_bar");
  def.num_outputs = n;
  def.shape = [n](const ShapeContext& c) {
    Shapes out;
    for (int i = 0; i < n; ++i) out.push_back(c.input_shape(i));
    return out;
  };
  def.compute = [op, n](KernelContext& c) {
    call_python(c, "vjp", [&] {
      py::list xs(input_views(c, 0, n));
      py::object result = op->vjp(xs,
                                  view_of(c.input(n), py::none()),
                                  view_of(c.input(n + 1), py::none()));
      py::sequence seq;
      if (n == 1 && !py::isinstance<py::list>(result) &&
          !py::isinstance<py::tuple>(result)) {
        seq = py::make_tuple(result);
      } else if (py::isinstance<py::list>(result) ||
                 py::isinstance<py::tuple>(result)) {
        seq = result.cast<py::sequence>();
      } else {
        throw RunError("vjp returned " +
                           py::str(py::type::of(result).attr("__name__"))
                               .cast<std::string>() +
                           "; expected a list or tuple of " +
                           std::to_string(n) + " cotangents (None for zero)",
                       c.node().name,
                       c.node().op_name());
      }
      if (static_cast<int>(py::len(seq)) != n) {
        throw RunError("vjp returned " + std::to_string(py::len(seq)) +
                           " cotangents for " + std::to_string(n) + " inputs",
                       c.node().name,
                       c.node().op_name());
      }
      for (int i = 0; i < n; ++i)
        store(seq[i],
              c.output(i),
              c,
              "vjp (cotangent " + std::to_string(i) + ")",
              true);
    });
  };
  return def;
}

OpDef jvp_def(const PyOp* op) {
  const int n = op->num_inputs;
  OpDef def(op->name + "_jvp",
            "the tangent of " + op->name + "'s output (its Python jvp)",
            input_names("x", n));
  for (const std::string& t : input_names("t", n)) def.inputs.push_back(t);
  def.shape = [op](const ShapeContext& c) {
    // The forward node's shape rule on the primal inputs.
    return forward_shape(*op, c);
  };
  def.compute = [op, n](KernelContext& c) {
    call_python(c, "jvp", [&] {
      py::list xs(input_views(c, 0, n));
      py::list ts(input_views(c, n, n));
      store(op->jvp(xs, ts), c.output(0), c, "jvp");
    });
  };
  return def;
}

// custom_op's arguments, checked before anything is registered: a name
// that is a Python identifier and does not shadow the adgraph module's own
// API (ag.gradient, ag.Graph, ...), a count >= 0, and callables.
void check_registration(const std::string& name,
                        int num_inputs,
                        py::handle forward,
                        py::handle vjp,
                        py::handle jvp,
                        py::handle shape) {
  auto fail = [&](const std::string& field, const std::string& why) {
    throw OptionsError("custom_op(\"" + name + "\"): " + why, {}, {}, field);
  };
  if (!py::str(name).attr("isidentifier")().cast<bool>()) {
    fail("name",
         "an op name must be a Python identifier (letters, digits and '_', "
         "not starting with a digit): it becomes adgraph." +
             name);
  }
  if (OpRegistry::global().find(name) == nullptr) {
    py::module_ module = py::module_::import("adgraph");
    for (const std::string& taken : {name, name + "_vjp", name + "_jvp"}) {
      if (py::hasattr(module, taken.c_str())) {
        fail("name",
             "\"" + taken +
                 "\" is a name of the adgraph module's own API; an op may "
                 "not replace it (choose another name)");
      }
    }
  }
  if (num_inputs < 0) {
    fail("num_inputs", "must be >= 0, got " + std::to_string(num_inputs));
  }
  auto callable = [&](const char* field, py::handle f, bool optional) {
    if (optional && f.is_none()) return;
    if (!PyCallable_Check(f.ptr())) {
      fail(field,
           std::string("expected a callable") + (optional ? " or None" : "") +
               ", got " + py::repr(f).cast<std::string>());
    }
  };
  callable("forward", forward, false);
  callable("vjp", vjp, false);
  callable("jvp", jvp, true);
  callable("shape", shape, true);
}

}  // namespace

void bind_custom_op(py::module_& m) {
  m.def(
      "_register_python_op",
      [](const std::string& name,
         int num_inputs,
         py::object forward,
         py::object vjp,
         py::object jvp,
         py::object shape,
         const std::string& doc) {
        check_registration(name, num_inputs, forward, vjp, jvp, shape);
        OpRegistry& registry = OpRegistry::global();
        for (const std::string& taken : {name, name + "_vjp", name + "_jvp"}) {
          if (registry.find(taken) != nullptr) {
            throw GraphError(
                "an op named \"" + taken + "\" is already registered",
                {},
                {},
                "name");
          }
        }
        // Registered ops live for the process, past the interpreter: the
        // Python callables they hold are never released.
        auto* op = new PyOp{name, num_inputs, forward, vjp, jvp, shape};
        register_op(forward_def(op, doc));
        register_op(vjp_def(op));
        if (!jvp.is_none()) register_op(jvp_def(op));
      },
      py::arg("name"),
      py::arg("num_inputs"),
      py::arg("forward"),
      py::arg("vjp"),
      py::arg("jvp"),
      py::arg("shape"),
      py::arg("doc"));
}

}  // namespace adgraph::python
