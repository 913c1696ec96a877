// Shared by the files of the Python extension module adgraph._adgraph: how
// Python objects map onto the C++ API. The module is a consumer of the
// library, like driver/: nothing here is included by the library.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "adgraph.h"

namespace adgraph::python {

namespace py = pybind11;

// Keyword arguments onto an options struct, by the C++ field names: each
// name sets one field (cast from its Python value) or runs a setter of its
// own; any other name throws OptionsError naming the key, with the names
// in the order given, e.g. "unknown option (LbfgsOptions has history,
// ...)".
template <class Options>
class OptionTable {
 public:
  using Setter = std::function<void(Options&, py::handle)>;

  // `what` opens the list of names: "LbfgsOptions has", "a solve takes".
  explicit OptionTable(std::string what) : what_(std::move(what)) {}
  template <class T>
  OptionTable& field(const char* name, T Options::*member) {
    return setter(
        name, [member](Options& o, py::handle v) { o.*member = v.cast<T>(); });
  }
  // A field of a struct inside Options (HeatInverseOptions::config).
  template <class Inner, class T>
  OptionTable& field(const char* name,
                     Inner Options::*inner,
                     T Inner::*member) {
    return setter(name, [inner, member](Options& o, py::handle v) {
      (o.*inner).*member = v.cast<T>();
    });
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
  std::string what_;
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

// Python exceptions raised inside callbacks the runtime makes (a custom
// op's kernel, shape rule, a loop body) cannot cross the runtime's C++
// frames with the interpreter released. The callback keeps the first one
// here and throws a RunError; entry points call rethrow_kept_python_error()
// (with the GIL held) so Python sees the original exception, with its type
// and traceback.
void keep_python_error(py::error_already_set& error);
void rethrow_kept_python_error();

// Runs `f` with the GIL released, then raises any Python exception a
// callback kept (in place of the C++ exception it caused).
template <class F>
auto without_gil(F&& f) -> decltype(f()) {
  try {
    py::gil_scoped_release release;
    return f();
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
  } catch (...) {
    rethrow_kept_python_error();
    throw;
  }
}

// Makes the communicator of graphs built without one (collective: at
// import, on every rank).
void start_python_world();
// The communicator of graphs made without one: a duplicate of
// MPI_COMM_WORLD, made at import (on every rank), so adgraph's messages
// never match the program's own calls on MPI.COMM_WORLD.
std::shared_ptr<Communicator> python_world();

void bind_graph(py::module_& m);
void bind_communicator(py::module_& m);
void bind_session(py::module_& m);
void bind_custom_op(py::module_& m);
// A loop's LoopStats as a dict of the C++ fields.
py::dict stats_dict(const LoopStats& s);
// LbfgsOptions from keyword arguments with the C++ field names; throws
// OptionsError naming an unknown or invalid one.
optim::LbfgsOptions lbfgs_options(const py::dict& options);
// An optimisation's summary as a dict of the C++ fields, with "x": the
// minimiser, one array per variable (`values` moved into them).
py::dict summary_dict(const optim::LbfgsSummary& s,
                      std::vector<Tensor>& values);

void bind_optim(py::module_& m);
void bind_solvers(py::module_& m);
void bind_sparse(py::module_& m);

}  // namespace adgraph::python
