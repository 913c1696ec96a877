// Graph, Value, Communicator, nodes by op name, derivatives and loops.
#include <mpi.h>

#include <cstdlib>

#include "python/src/bindings.h"

namespace adgraph::python {
namespace {

// The programs' deadline (ADGRAPH_COMM_DEADLINE, else 300 s) on `comm`.
std::shared_ptr<Communicator> with_program_deadline(
    std::shared_ptr<Communicator> comm) {
  const char* set = std::getenv("ADGRAPH_COMM_DEADLINE");
  if (set == nullptr || *set == '\0')
    comm->set_deadline(kProgramDeadlineSeconds);
  return comm;
}

}  // namespace

py::dict stats_dict(const LoopStats& s) {
  py::dict d;
  d["forward_steps"] = s.forward_steps;
  d["taped_steps"] = s.taped_steps;
  d["max_snapshots"] = s.max_snapshots;
  d["snapshot_bytes"] = s.snapshot_bytes;
  d["schedule"] = s.schedule;
  return d;
}

std::shared_ptr<Communicator> python_world() {
  static std::shared_ptr<Communicator> world = [] {
    return with_program_deadline(
        Communicator::duplicate(MPI_Comm_c2f(MPI_COMM_WORLD), "world"));
  }();
  return world;
}

void start_python_world() { python_world(); }

namespace {

// An adgraph Communicator for a user's object: one of ours as it is, an
// mpi4py communicator duplicated.
std::shared_ptr<Communicator> communicator_from(py::handle comm) {
  if (comm.is_none()) return python_world();
  if (py::isinstance<Communicator>(comm))
    return comm.cast<std::shared_ptr<Communicator>>();
  auto refuse = [&](const std::string& why) {
    throw OptionsError(
        "Graph(comm=)/communicator(): expected an mpi4py intracommunicator "
        "(mpi4py.MPI.Intracomm, e.g. "
        "MPI.COMM_WORLD or a Split/Dup of it), an adgraph.Communicator or "
        "None, got " +
            py::repr(comm).cast<std::string>() + why,
        {},
        {},
        "comm");
  };
  // Checked before any MPI call: a Request, Group, Datatype or an
  // intercommunicator reaching MPI_Comm_dup ends the job in MPI's abort.
  py::module_ mpi;
  try {
    mpi = py::module_::import("mpi4py.MPI");
  } catch (py::error_already_set&) {
    refuse(" (and mpi4py cannot be imported)");
  }
  if (comm.equal(mpi.attr("COMM_NULL")))
    refuse(
        " (MPI_COMM_NULL: a freed communicator, or a split this rank is "
        "not in)");
  if (!py::isinstance(comm, mpi.attr("Comm"))) refuse("");
  if (py::isinstance(comm, mpi.attr("Intercomm")))
    refuse(" (an intercommunicator: adgraph's ops need one group of ranks)");
  if (!py::isinstance(comm, mpi.attr("Intracomm")))
    refuse(" (not an intracommunicator)");
  return with_program_deadline(Communicator::duplicate(
      comm.attr("py2f")().cast<int64_t>(), "mpi4py communicator"));
}

}  // namespace

// Node names may not hold ':' ("pe:1" is output 1 of node "pe" in
// Graph.get, fetches and feeds).
void check_node_name(const std::string& name, const std::string& function) {
  if (name.find(':') != std::string::npos) {
    throw GraphError(function + ": node name \"" + name +
                         "\" holds ':', which names a node's outputs "
                         "(\"name:k\"); choose a name without ':'",
                     {},
                     {},
                     "name");
  }
}

namespace {

std::vector<PyValue> add_node(const std::shared_ptr<Graph>& graph,
                              const std::string& op,
                              const py::list& inputs,
                              const py::dict& attrs,
                              const std::string& name,
                              const py::list& after) {
  check_alive(graph, op);
  check_node_name(name, op);
  const OpDef& def = graph->registry().get(op);
  std::vector<Value> values;
  for (py::handle input : inputs)
    values.push_back(as_value(input, graph).value);
  nlohmann::json json_attrs = nlohmann::json::object();
  NodeOptions options;
  options.name = name;
  for (auto item : attrs) {
    const std::string key = py::str(item.first).cast<std::string>();
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& a : def.attrs)
      if (a.name == key) spec = &a;
    if (spec != nullptr && spec->type == AttrType::kTensor)
      options.tensors[key] =
          to_tensor(item.second, "attribute \"" + key + "\"");
    else
      json_attrs[key] = to_json(item.second, "attribute \"" + key + "\"");
  }
  for (py::handle a : after) options.after.push_back(as_value(a, graph).value);
  return with_python_errors([&] {
    return wrap(graph,
                graph->add_node_outputs(
                    op, std::move(values), json_attrs, std::move(options)));
  });
}

py::dict describe_op(const OpDef& def) {
  py::list attrs;
  for (const AttrSpec& a : def.attrs) {
    py::dict d;
    d["name"] = a.name;
    d["type"] = attr_type_name(a.type);
    d["default"] =
        a.default_value.is_null()
            ? py::object(py::none())
            : py::module_::import("json").attr("loads")(a.default_value.dump());
    d["doc"] = a.doc;
    d["min"] = a.min;
    d["max"] = a.max;
    attrs.append(d);
  }
  py::dict d;
  d["name"] = def.name;
  d["doc"] = def.doc;
  d["inputs"] = def.inputs;
  d["input_docs"] = def.input_docs;
  d["output_docs"] = def.output_docs;
  d["ranks_doc"] = def.ranks_doc;
  d["variadic"] = def.variadic;
  d["attrs"] = attrs;
  d["num_outputs"] = def.num_outputs;
  d["communication"] = def.communication;
  d["has_gradient"] = static_cast<bool>(def.gradient);
  d["has_tangent"] = static_cast<bool>(def.tangent);
  return d;
}

PyValue binary(const PyValue& a,
               py::handle b,
               Value (*f)(Value, Value),
               bool reflected) {
  live(a, "Value arithmetic");
  PyValue other = as_value(b, a.owner);
  return {a.owner,
          reflected ? f(other.value, a.value) : f(a.value, other.value)};
}

Value add_f(Value a, Value b) { return add(a, b); }
Value sub_f(Value a, Value b) { return sub(a, b); }
Value mul_f(Value a, Value b) { return mul(a, b); }
Value div_f(Value a, Value b) { return div(a, b); }
Value pow_f(Value a, Value b) { return pow(a, b); }

// Value's arithmetic operator of `f` (__add__, or __radd__ when reflected).
template <Value (*f)(Value, Value), bool reflected>
PyValue arithmetic(const PyValue& a, py::handle b) {
  return binary(a, b, f, reflected);
}

Value less_f(Value a, Value b) { return less(a, b); }
Value less_equal_f(Value a, Value b) { return less_equal(a, b); }
Value greater_f(Value a, Value b) { return greater(a, b); }
Value greater_equal_f(Value a, Value b) { return greater_equal(a, b); }

// Whether `v` may still be used (a loop body's values die with the body).
bool usable(const PyValue& v) {
  const auto* ref = std::get_deleter<BodyGraphRef>(v.owner);
  return ref == nullptr || ref->scope->open;
}

// a == b (or a != b when `negate`): an `equal` (`not_equal`) node, as in
// NumPy. Its truth value, which Python's `in`, list.index and dict lookups
// ask, is whether a and b are the same output, so containers of Values keep
// finding them by identity. NotImplemented (Python then compares identity)
// for what no node can compare: a Value of another graph or of a closed
// loop body, or an operand that is no number or array (None, a string).
py::object equality(const PyValue& a, py::handle b, bool negate) {
  const py::object not_implemented =
      py::reinterpret_borrow<py::object>(Py_NotImplemented);
  if (!usable(a)) return not_implemented;
  PyValue other;
  if (py::isinstance<PyValue>(b)) {
    other = b.cast<PyValue>();
    if (!usable(other) || &other.value.graph() != &a.value.graph())
      return not_implemented;
  } else {
    try {
      other = as_value(b, a.owner);
    } catch (const ShapeError&) {
      return not_implemented;
    }
  }
  const bool same = a.value == other.value;
  py::object out = py::cast(PyValue{
      a.owner,
      negate ? not_equal(a.value, other.value) : equal(a.value, other.value)});
  out.attr("_truth") = py::bool_(negate ? !same : same);
  return out;
}

// Value's hashing, comparisons and truth value. Hashing is by identity (the
// graph, node and output), as `==`'s truth value is: Values are dict keys
// (feeds) and set members.
void bind_value_comparisons(py::class_<PyValue>& value) {
  value
      .def("__hash__",
           [](const PyValue& v) {
             return std::hash<const void*>()(&v.value.graph()) ^
                    (static_cast<std::size_t>(v.value.node_id()) << 8) ^
                    static_cast<std::size_t>(v.value.output());
           })
      .def("__eq__",
           [](const PyValue& a, py::handle b) { return equality(a, b, false); })
      .def("__ne__",
           [](const PyValue& a, py::handle b) { return equality(a, b, true); })
      .def("__lt__", &arithmetic<less_f, false>)
      .def("__le__", &arithmetic<less_equal_f, false>)
      .def("__gt__", &arithmetic<greater_f, false>)
      .def("__ge__", &arithmetic<greater_equal_f, false>)
      .def("__bool__",
           [](const py::object& self) {
             const py::object truth = py::getattr(self, "_truth", py::none());
             if (!truth.is_none()) return truth.cast<bool>();
             throw py::type_error(
                 "the truth value of an adgraph.Value is not known while the "
                 "graph is built (a Value is symbolic; comparisons build "
                 "nodes): fetch it with Session.run, or compare identity "
                 "with `is`");
           })
      .def("__iter__", [](const PyValue& v) -> py::object {
        throw py::type_error(
            "an adgraph.Value is not iterable (shape " +
            shape_string(live(v, "Value.__iter__").value.shape()) +
            "): index it, x[i], for its rows");
      });
}

void bind_value(py::module_& m) {
  py::class_<PyValue> value(
      m,
      "Value",
      py::dynamic_attr(),
      "One output of one node of a graph: a symbolic handle. "
      "Arithmetic (+ - * / ** and unary -) and comparisons (< <= > >= == "
      "!=) with Values, numbers and numpy arrays add nodes, with NumPy's "
      "broadcasting; a comparison gives 1.0 where it holds, else 0.0 (zero "
      "derivative). `a == b` builds an `equal` node too: its truth value "
      "(bool, `in`, dict lookups) is whether a and b are the same output, "
      "and hashing is by that identity. Indexing x[...] takes ints, slices "
      "(any step), ... and None, as NumPy's basic indexing, from slice, "
      "pad, reshape and concat nodes. It keeps its graph alive.");
  value
      .def_property_readonly(
          "shape",
          [](const PyValue& v) {
            const Shape& s = live(v, "Value.shape").value.shape();
            return py::tuple(
                py::cast(std::vector<int64_t>(s.begin(), s.end())));
          },
          "The value's shape, a tuple (() for a scalar).")
      .def_property_readonly(
          "name",
          [](const PyValue& v) { return live(v, "Value.name").value.name(); },
          "The node's name (outputs after the first: \"name:k\").")
      .def_property_readonly(
          "op",
          [](const PyValue& v) {
            return live(v, "Value.op").value.node().op_name();
          },
          "The node's op name.")
      .def_property_readonly(
          "output",
          [](const PyValue& v) {
            return live(v, "Value.output").value.output();
          },
          "Which output of its node this value is.")
      .def_property_readonly(
          "graph",
          [](const PyValue& v) { return live(v, "Value.graph").owner; },
          "The value's graph.")
      .def("__repr__",
           [](const PyValue& v) {
             const auto* ref = std::get_deleter<BodyGraphRef>(v.owner);
             if (ref != nullptr && !ref->scope->open)
               return std::string("<adgraph.Value of loop \"") +
                      ref->scope->loop + "\"'s body (no longer valid)>";
             return "<adgraph.Value \"" + v.value.name() + "\" (" +
                    v.value.node().op_name() + ") shape " +
                    shape_string(v.value.shape()) + ">";
           })
      .def("__add__", &arithmetic<add_f, false>)
      .def("__radd__", &arithmetic<add_f, true>)
      .def("__sub__", &arithmetic<sub_f, false>)
      .def("__rsub__", &arithmetic<sub_f, true>)
      .def("__mul__", &arithmetic<mul_f, false>)
      .def("__rmul__", &arithmetic<mul_f, true>)
      .def("__truediv__", &arithmetic<div_f, false>)
      .def("__rtruediv__", &arithmetic<div_f, true>)
      .def("__pow__",
           [](const PyValue& a, py::handle b) {
             live(a, "Value.__pow__");
             if (!PyBool_Check(b.ptr()) &&
                 (PyFloat_Check(b.ptr()) || PyLong_Check(b.ptr()))) {
               const Tensor e = to_tensor(b, "exponent");
               return PyValue{a.owner, pow(a.value, e.item())};
             }
             return binary(a, b, pow_f, false);
           })
      .def("__rpow__", &arithmetic<pow_f, true>)
      .def("__neg__", [](const PyValue& a) {
        return PyValue{a.owner, neg(live(a, "Value.__neg__").value)};
      });
  bind_value_comparisons(value);
}

void bind_graph_class(py::module_& m) {
  py::class_<Graph, std::shared_ptr<Graph>>(
      m,
      "Graph",
      "A static computational graph. Every rank builds the same graph.\n\n"
      "Parameters\n----------\ncomm : mpi4py.MPI.Intracomm or "
      "adgraph.Communicator, "
      "optional\n    The communicator of its communication nodes. An mpi4py "
      "communicator is duplicated (collectively), so adgraph's messages never "
      "match the program's own; None: a duplicate of MPI.COMM_WORLD.")
      .def(py::init([](py::object comm) {
             auto g = std::make_shared<Graph>();
             g->set_comm(communicator_from(comm));
             return g;
           }),
           py::arg("comm") = py::none())
      .def(
          "placeholder",
          [](const std::shared_ptr<Graph>& g,
             const std::string& name,
             std::vector<int64_t> shape) {
            check_alive(g, "Graph.placeholder");
            check_node_name(name, "Graph.placeholder");
            return PyValue{
                g, g->placeholder(name, Shape(shape.begin(), shape.end()))};
          },
          py::arg("name"),
          py::arg("shape"),
          "A value that Session.run must feed: float64 of `shape` (a tuple; () "
          "for a scalar).")
      .def(
          "constant",
          [](const std::shared_ptr<Graph>& g,
             py::handle value,
             const std::string& name) {
            check_alive(g, "Graph.constant");
            check_node_name(name, "Graph.constant");
            return PyValue{
                g,
                g->constant(to_tensor(value, "Graph.constant: value"), name)};
          },
          py::arg("value"),
          py::arg("name") = "",
          "A constant node holding a copy of `value` (a number or array-like).")
      .def(
          "get",
          [](const std::shared_ptr<Graph>& g, const std::string& name) {
            check_alive(g, "Graph.get");
            return PyValue{g, g->get(name)};
          },
          py::arg("name"),
          "The first output of the node named `name` (GraphError if none).")
      .def_property_readonly(
          "num_nodes",
          [](const std::shared_ptr<Graph>& g) {
            check_alive(g, "Graph.num_nodes");
            return g->num_nodes();
          },
          "Number of nodes.")
      .def_property_readonly(
          "comm",
          [](const std::shared_ptr<Graph>& g) {
            check_alive(g, "Graph.comm");
            return std::dynamic_pointer_cast<Communicator>(g->shared_comm());
          },
          "The graph's communicator (an adgraph.Communicator).")
      .def_property(
          "same_on_every_rank",
          &Graph::same_on_every_rank,
          &Graph::set_same_on_every_rank,
          "Declares that every rank builds this graph identically, so "
          "each new plan's messages are checked to pair up.")
      .def(
          "set_default_checkpoints",
          [](Graph& g, py::handle spec) {
            g.set_default_checkpoints(schedule_from(spec));
          },
          py::arg("checkpoints"),
          "The checkpoint schedule of loops built without one.");
}

void bind_derivatives(py::module_& m) {
  m.def("petsc_available",
        &sparse::petsc_available,
        "Whether this build has the sparse layer's PETSc (sparse_* ops).");
  m.def(
      "gradients",
      [](const PyValue& y, const std::vector<PyValue>& xs, py::object grad_y) {
        Value gy = grad_y.is_none() ? Value() : as_value(grad_y, y.owner).value;
        return with_python_errors(
            [&] { return wrap(y.owner, gradients(y.value, unwrap(xs), gy)); });
      },
      py::arg("y"),
      py::arg("xs"),
      py::arg("grad_y") = py::none(),
      "Adds the adjoint graph of y and returns dy/dx for each x in xs (with "
      "x's shape): the gradient of sum(grad_y * y) (grad_y: ones by default). "
      "With communication ops the loss is the sum of the per-rank losses.");
  m.def(
      "jvp",
      [](const std::vector<PyValue>& ys,
         const std::vector<PyValue>& xs,
         const py::list& tangents) {
        if (ys.empty()) throw GraphError("jvp needs at least one y");
        std::vector<Value> ts;
        for (py::handle t : tangents)
          ts.push_back(as_value(t, ys[0].owner).value);
        return with_python_errors(
            [&] { return wrap(ys[0].owner, jvp(unwrap(ys), unwrap(xs), ts)); });
      },
      py::arg("ys"),
      py::arg("xs"),
      py::arg("tangents"),
      "Forward mode: for each y, the directional derivative sum_k dy/dx_k . "
      "tangents[k], with y's shape.");
}

// rows x cols must be positive and cover the communicator's ranks.
void check_patch_grid(const Communicator& c,
                      int rows,
                      int cols,
                      const std::string& function) {
  const std::string grid = std::to_string(rows) + " x " + std::to_string(cols);
  if (rows < 1 || cols < 1) {
    throw OptionsError(function + ": rows and cols must be >= 1, got " + grid,
                       {},
                       {},
                       rows < 1 ? "rows" : "cols");
  }
  if (static_cast<int64_t>(rows) * cols != c.size()) {
    throw OptionsError(function + ": a " + grid + " patch grid needs " +
                           std::to_string(static_cast<int64_t>(rows) * cols) +
                           " ranks, the communicator has " +
                           std::to_string(c.size()),
                       {},
                       {},
                       "rows");
  }
}

}  // namespace

void bind_communicator(py::module_& m) {
  py::class_<Communicator, std::shared_ptr<Communicator>>(
      m,
      "Communicator",
      "adgraph's MPI communicator (its own duplicate of the one it was made "
      "from). Splits are collective over it.")
      .def_property_readonly("rank", &Communicator::rank)
      .def_property_readonly("size", &Communicator::size)
      .def_property_readonly("name", &Communicator::name)
      .def("split",
           &Communicator::split,
           py::arg("color"),
           py::arg("key") = 0,
           "Ranks passing the same color (>= 0), ordered by key. Collective.")
      .def(
          "row_communicator",
          [](Communicator& c, int rows, int cols) {
            check_patch_grid(c, rows, cols, "Communicator.row_communicator");
            return c.row_communicator(rows, cols);
          },
          py::arg("rows"),
          py::arg("cols"),
          "This rank's row of a rows x cols patch grid. Collective.")
      .def(
          "column_communicator",
          [](Communicator& c, int rows, int cols) {
            check_patch_grid(c, rows, cols, "Communicator.column_communicator");
            return c.column_communicator(rows, cols);
          },
          py::arg("rows"),
          py::arg("cols"),
          "This rank's column of a rows x cols patch grid. Collective.")
      .def_property("deadline",
                    &Communicator::deadline,
                    &Communicator::set_deadline,
                    "Communication deadline in seconds (0: none).")
      .def("fortran_handle",
           &Communicator::fortran_handle,
           "The MPI handle (for mpi4py's Comm.f2py; Communicator.to_mpi4py "
           "uses it).");
  m.def("communicator",
        &communicator_from,
        py::arg("comm") = py::none(),
        "An adgraph Communicator for an mpi4py communicator (duplicated, "
        "collectively), or the process's world duplicate for None.");
}

void bind_graph(py::module_& m) {
  bind_graph_class(m);
  bind_value(m);
  m.def("add_node",
        &add_node,
        py::arg("graph"),
        py::arg("op"),
        py::arg("inputs"),
        py::arg("attrs"),
        py::arg("name") = "",
        py::arg("after") = py::list(),
        "Adds a node of registered op `op`; returns every output.");
  m.def(
      "registered_ops",
      [] {
        py::list out;
        for (const OpDef* def : OpRegistry::global().all())
          out.append(describe_op(*def));
        return out;
      },
      "Every registered op, described.");
  m.def(
      "describe_op",
      [](const std::string& name) {
        return describe_op(OpRegistry::global().get(name));
      },
      py::arg("name"));
  bind_derivatives(m);
  bind_loop(m);
  struct Scope {
    std::unique_ptr<CommScope> scope;
  };
  py::class_<Scope>(m, "_CommScope").def("close", [](Scope& s) {
    s.scope.reset();
  });
  m.def("_open_scope", [](Graph& g, std::shared_ptr<Communicator> comm) {
    return Scope{std::make_unique<CommScope>(g, std::move(comm))};
  });
}

}  // namespace adgraph::python
