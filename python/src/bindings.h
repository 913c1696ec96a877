// Shared by the files of the Python extension module adgraph._adgraph: how
// Python objects map onto the C++ API. The module is a consumer of the
// library, like driver/: nothing here is included by the library.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "adgraph.h"
#include "core/fields.h"

namespace adgraph::python {

namespace py = pybind11;

// Keyword arguments onto an options struct, by the C++ field names: each
// name sets one field (cast from its Python value) or runs a setter of its
// own; any other name throws OptionsError naming the key, with the names
// in the order given, e.g. "unknown option (LbfgsOptions has history,
// ...)".
namespace option_checks {

// "str 'yes'", "int 9223372036854775808": a refused option value.
inline std::string shown(py::handle v) {
  std::string repr = py::repr(v).cast<std::string>();
  if (repr.size() > 60) repr = repr.substr(0, 57) + "...";
  return py::str(py::type::of(v).attr("__name__")).cast<std::string>() + " " +
         repr;
}

[[noreturn]] inline void bad_option(const std::string& function,
                                    const std::string& name,
                                    const std::string& accepts,
                                    py::handle v) {
  throw OptionsError(
      function + ": expected " + accepts + ", got " + shown(v), {}, {}, name);
}

inline bool is_numpy(py::handle v, const char* kind) {
  py::module_ np = py::module_::import("numpy");
  return py::isinstance(v, np.attr(kind));
}

// `v` as an option of type T, strictly: a bool is only True or False, an
// integer only an int in T's range (never a bool or a float), a number an
// int or a float, a string only a str; anything else (lists of those, for
// vectors) through pybind11. Throws OptionsError naming `name`, what it
// got and what it accepts.
template <class T>
T option_value(py::handle v,
               const std::string& function,
               const std::string& name) {
  if constexpr (std::is_same_v<T, bool>) {
    if (PyBool_Check(v.ptr()) || is_numpy(v, "bool_")) return v.cast<bool>();
    bad_option(function, name, "True or False", v);
  } else if constexpr (std::is_integral_v<T>) {
    const std::string range =
        "an integer in [" + std::to_string(std::numeric_limits<T>::min()) +
        ", " + std::to_string(std::numeric_limits<T>::max()) + "]";
    if (PyBool_Check(v.ptr()) ||
        !(PyLong_Check(v.ptr()) || is_numpy(v, "integer")))
      bad_option(function, name, range, v);
    if constexpr (std::is_unsigned_v<T>) {
      const unsigned long long x = PyLong_AsUnsignedLongLong(
          py::int_(py::reinterpret_borrow<py::object>(v)).ptr());
      if (PyErr_Occurred()) {
        PyErr_Clear();
        bad_option(function, name, range, v);
      }
      if (x > std::numeric_limits<T>::max())
        bad_option(function, name, range, v);
      return static_cast<T>(x);
    } else {
      int overflow = 0;
      const long long x = PyLong_AsLongLongAndOverflow(
          py::int_(py::reinterpret_borrow<py::object>(v)).ptr(), &overflow);
      if (overflow != 0 ||
          x < static_cast<long long>(std::numeric_limits<T>::min()) ||
          x > static_cast<long long>(std::numeric_limits<T>::max()))
        bad_option(function, name, range, v);
      return static_cast<T>(x);
    }
  } else if constexpr (std::is_floating_point_v<T>) {
    if (PyBool_Check(v.ptr()) ||
        !(PyFloat_Check(v.ptr()) || PyLong_Check(v.ptr()) ||
          is_numpy(v, "floating") || is_numpy(v, "integer")))
      bad_option(function, name, "a real number (int or float)", v);
    const double x = PyFloat_AsDouble(v.ptr());
    if (x == -1.0 && PyErr_Occurred()) {
      PyErr_Clear();
      bad_option(function, name, "a real number that fits a float64", v);
    }
    return static_cast<T>(x);
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (PyUnicode_Check(v.ptr())) return v.cast<std::string>();
    bad_option(function, name, "a string", v);
  } else {
    try {
      return v.cast<T>();
    } catch (py::cast_error&) {
      bad_option(function, name, "a list of the field's values", v);
    }
  }
}

// `v` as a value of the field `f` (its type only; the range is
// check_value's): OptionsError naming the field otherwise.
FieldValue field_value(const FieldInfo& f,
                       py::handle v,
                       const std::string& function);

}  // namespace option_checks

// The keyword arguments of a function that fills an options struct. Fed
// from the struct's field table (fields()), every field is a keyword with
// the table's type and range, refused with the table's message; setter()
// adds a keyword the table does not have.
template <class Options>
class OptionTable {
 public:
  using Setter = std::function<void(Options&, py::handle)>;

  // `what` opens the list of names: "LbfgsOptions has", "a solve takes";
  // `function` opens the messages of values refused: "sparse.solve".
  OptionTable(std::string what, std::string function)
      : what_(std::move(what)), function_(std::move(function)) {}
  template <class T>
  OptionTable& field(const char* name, T Options::*member) {
    return setter(name,
                  [member, name, f = function_](Options& o, py::handle v) {
                    o.*member = option_checks::option_value<T>(v, f, name);
                  });
  }
  // A field of a struct inside Options (HeatInverseOptions::config).
  template <class Inner, class T>
  OptionTable& field(const char* name,
                     Inner Options::*inner,
                     T Inner::*member) {
    return setter(
        name, [inner, member, name, f = function_](Options& o, py::handle v) {
          (o.*inner).*member = option_checks::option_value<T>(v, f, name);
        });
  }
  // Every field of `table` (which outlives this object: a fields() table).
  OptionTable& fields(const FieldTable<Options>& table) {
    for (const Field<Options>& f : table) {
      setter(f.name.c_str(), [&f, fn = function_](Options& o, py::handle v) {
        const FieldValue value = option_checks::field_value(f, v, fn);
        if (std::optional<std::string> why = check_value(f, value))
          throw OptionsError(*why, {}, {}, f.name);
        f.set(o, value);
      });
    }
    return *this;
  }
  OptionTable& setter(const char* name, Setter set) {
    names_.push_back(name);
    setters_.push_back(std::move(set));
    return *this;
  }
  void apply(const py::dict& options, Options& o) const {
    for (auto item : options) {
      const std::string key = py::str(item.first).cast<std::string>();
      const auto it = std::find(names_.begin(), names_.end(), key);
      if (it == names_.end()) {
        std::string list;
        for (const std::string& name : names_)
          list += (list.empty() ? "" : ", ") + name;
        throw OptionsError(
            "unknown option (" + what_ + " " + list + ")", {}, {}, key);
      }
      setters_[it - names_.begin()](o, item.second);
    }
  }

 private:
  std::string what_, function_;
  std::vector<std::string> names_;
  std::vector<Setter> setters_;
};

// A Value with a reference to its graph, so that a Python Value keeps its
// graph alive (C++ Values do not own their graph). The owner of a loop
// body's value does not own the body graph: such values are valid inside
// the body function only.
struct PyValue {
  std::shared_ptr<Graph> owner;
  Value value;
};

// A loop body's graph as Python sees it: a shared_ptr that does not own
// the graph (the loop node does) and whose deleter holds the body's scope,
// closed when the body function returns. Every Value and Graph object of
// the body shares it, so using one afterwards is a GraphError, not a
// dangling pointer.
struct BodyScope {
  bool open = true;
  std::string loop;
};
struct BodyGraphRef {
  std::shared_ptr<BodyScope> scope;
  void operator()(Graph*) const {}
};
// Throws GraphError naming `function` when `owner` is a closed body's.
void check_alive(const std::shared_ptr<Graph>& owner,
                 const std::string& function);
// `v` after check_alive.
const PyValue& live(const PyValue& v, const std::string& function);

// Values of `owner` for `values`.
std::vector<PyValue> wrap(const std::shared_ptr<Graph>& owner,
                          const std::vector<Value>& values);
std::vector<Value> unwrap(const std::vector<PyValue>& values);

// Where arrays returned by Session.run give their storage back when Python
// drops them, for the session's next outputs (Session::recycle): a fresh
// result then lands in memory that is already mapped, not in new pages
// that fault in. It keeps at most as many buffers of each size as the last
// run returned (so arrays a program kept and drops together do not pile
// up), of Session's pooled sizes only. Used with the GIL held only.
struct ReturnBin {
  static constexpr int64_t kMinSize = 512;  // Session's smallest pooled
  // The sizes the last run returned.
  void expect(const std::vector<Tensor>& outputs);
  // Keeps `tensor`'s storage if the limit allows.
  void offer(Tensor&& tensor);
  // Hands what it keeps to `session`'s pool.
  void empty_into(Session& session);

  std::map<int64_t, int> limit, held;
  std::vector<Tensor> tensors;
};

// A numpy array that owns `tensor` (moved into it): no copy. float64, the
// tensor's shape (0-d for a scalar), C-contiguous, writeable. When the
// array is dropped its storage goes to `bin` if that still exists.
py::array to_array(Tensor&& tensor,
                   const std::shared_ptr<ReturnBin>& bin = nullptr);
// A read-only numpy view of `tensor`'s data, valid while `tensor` lives;
// `base` is kept alive by the view.
py::array view_of(const Tensor& tensor, py::handle base);
// A tensor holding `object` (anything numpy.asarray takes) as float64.
// Throws ShapeError naming `what` for a ragged or non-numeric object.
Tensor to_tensor(py::handle object, const std::string& what);
// As to_tensor, but a C-contiguous, aligned float64 array is not copied:
// the tensor borrows its memory (Tensor::borrow), and the array is added to
// `keep`, which the caller holds while the tensor is used. Other objects
// are converted (once) and the converted array kept the same way. For
// feeds, which the runtime only reads.
Tensor to_tensor_view(py::handle object,
                      const std::string& what,
                      std::vector<py::object>& keep);
// A borrowed tensor over `array`'s memory (C-contiguous float64, checked by
// the caller), written in place by Session::run_into.
Tensor to_tensor_view(py::array& array);

// Python values as JSON attributes: bool, int, float, str, lists, dicts and
// numpy scalars. Throws GraphError naming `what` for anything else.
nlohmann::json to_json(py::handle object, const std::string& what);

// The graph a user's argument names: a Graph, or the graph of a Value.
std::shared_ptr<Graph> graph_of(py::handle object);
// `object` as a value of `graph`: a Value of that graph, or a number or
// array-like made into a constant node.
PyValue as_value(py::handle object, const std::shared_ptr<Graph>& graph);

// A fetch or feed key: a Value of `graph` or a node name. Throws RunError
// (field "fetches") otherwise.
Value fetch_of(const std::shared_ptr<Graph>& graph, py::handle fetch);
// Feeds ({Value or name: array-like}, or None) as the session takes them,
// copied: for feeds kept beyond the call (the SciPy evaluator).
FeedMap feeds_of(const std::shared_ptr<Graph>& graph, py::handle feeds);
// Feeds read in place (to_tensor_view); `keep` holds the arrays they view
// and must outlive every use of the map.
FeedMap feeds_in_place(const std::shared_ptr<Graph>& graph,
                       py::handle feeds,
                       std::vector<py::object>& keep);

// Python exceptions raised inside callbacks the runtime makes cannot cross
// the runtime's C++ frames with the interpreter released.
//
// A kernel (a custom op's forward, vjp or jvp, run on the calling thread or
// on an OpenMP worker) throws a PythonKernelError: a RunError naming the
// node that carries the Python exception itself, so each run gets back its
// own exception whichever thread raised it. without_gil() raises it in
// place of the RunError, with its type and traceback.
//
// A graph-building callback (a shape rule, a loop body: called on the
// building thread with the GIL held) keeps its exception in a slot of that
// thread and throws a GraphError; entry points call
// rethrow_kept_python_error() so Python sees the original.
class PythonKernelError : public RunError {
 public:
  PythonKernelError(py::error_already_set& error,
                    std::string detail,
                    std::string node,
                    std::string op)
      : RunError(std::move(detail), std::move(node), std::move(op)),
        python(std::make_shared<py::error_already_set>(std::move(error))) {}
  std::shared_ptr<py::error_already_set> python;
};
void keep_python_error(py::error_already_set& error);
void rethrow_kept_python_error();

// While the runtime runs with the GIL released, Python cannot act on
// Ctrl-C (SIGINT). On a job of several ranks this watch ends the whole job
// at once (abort_job(130), naming the rank) when SIGINT arrives during a
// run, instead of leaving the other ranks to their deadline. With one rank
// it asks the executor to stop (adgraph::request_interrupt, core/
// interrupt.h): the run stops after the running node or loop step and
// Python gets KeyboardInterrupt.
// Nested watches (a custom op's own run) share the outermost one.
class InterruptWatch {
 public:
  InterruptWatch();
  ~InterruptWatch();
  InterruptWatch(const InterruptWatch&) = delete;
  InterruptWatch& operator=(const InterruptWatch&) = delete;
};

// Runs `f` with the GIL released, then raises any Python exception a
// callback raised (in place of the C++ exception it caused).
template <class F>
auto without_gil(F&& f) -> decltype(f()) {
  try {
    InterruptWatch watch;
    py::gil_scoped_release release;
    return f();
  } catch (const PythonKernelError& e) {
    throw py::error_already_set(*e.python);
  } catch (...) {
    rethrow_kept_python_error();
    throw;
  }
}
// Runs `f` holding the GIL (graph building that may call Python back),
// raising a kept Python exception as without_gil does.
template <class F>
auto with_python_errors(F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const PythonKernelError& e) {
    throw py::error_already_set(*e.python);
  } catch (...) {
    rethrow_kept_python_error();
    throw;
  }
}

// Held while a thread runs graphs on a job of several ranks (Session.run,
// check_gradients, minimize, ...). adgraph's MPI calls are ordered within
// one thread (MPI_THREAD_SERIALIZED, ghost dependencies): runs from two
// threads at once would cross their messages between the ranks, so a
// second thread is refused with a RunError naming `function` (nested runs
// on the same thread, from a custom op, are allowed). A no-op with one
// rank.
class MpiRunGuard {
 public:
  explicit MpiRunGuard(const std::string& function);
  ~MpiRunGuard();
  MpiRunGuard(const MpiRunGuard&) = delete;
  MpiRunGuard& operator=(const MpiRunGuard&) = delete;

 private:
  bool held_ = false;
};

// Set on a thread while it runs a Python kernel (a custom op's forward,
// vjp or jvp), so that a call back into the session running it is refused
// instead of deadlocking or emptying the running node's buffers.
struct InKernel {
  InKernel() { ++depth(); }
  ~InKernel() { --depth(); }
  static int& depth();
};

// Makes the communicator of graphs built without one (collective: at
// import, on every rank).
void start_python_world();
// The communicator of graphs made without one: a duplicate of
// MPI_COMM_WORLD, made at import (on every rank), so adgraph's messages
// never match the program's own calls on MPI.COMM_WORLD.
std::shared_ptr<Communicator> python_world();

// A checkpoint schedule from its Python forms: None (the graph's default),
// or CheckpointSchedule::from_json's forms ("all", "auto", an int or "N",
// "every:k", "budget:bytes"; the older dicts {"every": k}, {"binomial": s},
// {"budget": bytes}); OptionsError naming "checkpoints" with the parser's
// message otherwise (loop_bindings.cc). "auto" is left to the caller to
// resolve with its step count.
CheckpointSchedule schedule_from(py::handle spec);
// Refuses a node name holding ':' (GraphError naming `function`).
void check_node_name(const std::string& name, const std::string& function);

void bind_graph(py::module_& m);
void bind_loop(py::module_& m);  // loop_bindings.cc
void bind_communicator(py::module_& m);
void bind_session(py::module_& m);
void bind_custom_op(py::module_& m);
// A loop's LoopStats as a dict of the C++ fields.
py::dict stats_dict(const LoopStats& s);
// LbfgsOptions from keyword arguments with the C++ field names; throws
// OptionsError naming an unknown or invalid one.
optim::LbfgsOptions lbfgs_options(const py::dict& options);
// The other options structs from keyword arguments, through their field
// tables: check_gradients', HeatInverse's (HeatConfig's fields at the top
// level, "auto" resolved with nt) and a sparse solve's.
GradientCheckOptions check_options(const py::dict& options);
solvers::HeatInverseOptions heat_options(const py::dict& options);
sparse::SolverOptions solver_options(const py::dict& options);
// An optimisation's summary as a dict of the C++ fields, with "x": the
// minimiser, one array per variable (`values` moved into them).
py::dict summary_dict(const optim::LbfgsSummary& s,
                      std::vector<Tensor>& values);

void bind_optim(py::module_& m);
void bind_solvers(py::module_& m);
void bind_sparse(py::module_& m);

}  // namespace adgraph::python
