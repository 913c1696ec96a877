// Conversions between Python objects and the library's types.
#include <cstring>
#include <mutex>
#include <optional>

#include "python/src/bindings.h"

namespace adgraph::python {

std::vector<PyValue> wrap(const std::shared_ptr<Graph>& owner,
                          const std::vector<Value>& values) {
  std::vector<PyValue> out;
  out.reserve(values.size());
  for (const Value& v : values) out.push_back({owner, v});
  return out;
}

std::vector<Value> unwrap(const std::vector<PyValue>& values) {
  std::vector<Value> out;
  out.reserve(values.size());
  for (const PyValue& v : values) out.push_back(v.value);
  return out;
}

namespace {
std::vector<py::ssize_t> extents(const Shape& shape) {
  return {shape.begin(), shape.end()};
}
}  // namespace

py::array to_array(Tensor&& tensor) {
  auto* held = new Tensor(std::move(tensor));
  py::capsule owner(held, [](void* p) { delete static_cast<Tensor*>(p); });
  return py::array_t<double>(extents(held->shape()), held->data(), owner);
}

py::array view_of(const Tensor& tensor, py::handle base) {
  py::array_t<double> view(
      extents(tensor.shape()), const_cast<double*>(tensor.data()), base);
  py::detail::array_proxy(view.ptr())->flags &=
      ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}

Tensor to_tensor(py::handle object, const std::string& what) {
  py::array_t<double, py::array::c_style | py::array::forcecast> array;
  try {
    array =
        py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(
            object);
  } catch (py::error_already_set&) {
    array = {};
  }
  if (!array) {
    PyErr_Clear();
    throw ShapeError(std::string("cannot be read as an array of float64 (") +
                         py::str(py::type::of(object)).cast<std::string>() +
                         ")",
                     {},
                     {},
                     what);
  }
  Shape shape(array.shape(), array.shape() + array.ndim());
  if (checked_num_elements(shape) < 0) {
    throw ShapeError(
        "shape " + shape_string(shape) + " has more than 2^30 elements",
        {},
        {},
        what);
  }
  Tensor out(shape);
  if (out.size() > 0)
    std::memcpy(out.data(), array.data(), sizeof(double) * out.size());
  return out;
}

nlohmann::json to_json(py::handle object, const std::string& what) {
  if (object.is_none()) return nullptr;
  if (PyBool_Check(object.ptr())) return object.cast<bool>();
  if (PyLong_Check(object.ptr())) {
    // Out-of-range integers are refused rather than wrapped.
    int overflow = 0;
    const long long v = PyLong_AsLongLongAndOverflow(object.ptr(), &overflow);
    if (overflow != 0) {
      throw GraphError("integer " + py::str(object).cast<std::string>() +
                           " does not fit in 64 bits",
                       {},
                       {},
                       what);
    }
    return static_cast<int64_t>(v);
  }
  if (PyFloat_Check(object.ptr())) return object.cast<double>();
  if (PyUnicode_Check(object.ptr())) return object.cast<std::string>();
  if (py::isinstance<py::dict>(object)) {
    nlohmann::json out = nlohmann::json::object();
    for (auto item : py::reinterpret_borrow<py::dict>(object))
      out[py::str(item.first).cast<std::string>()] = to_json(item.second, what);
    return out;
  }
  if (py::isinstance<py::list>(object) || py::isinstance<py::tuple>(object)) {
    nlohmann::json out = nlohmann::json::array();
    for (auto item : py::reinterpret_borrow<py::sequence>(object))
      out.push_back(to_json(item, what));
    return out;
  }
  // numpy scalars and arrays: through their Python equivalents.
  if (py::hasattr(object, "tolist"))
    return to_json(object.attr("tolist")(), what);
  throw GraphError("cannot be given as an attribute (" +
                       py::str(py::type::of(object)).cast<std::string>() + ")",
                   {},
                   {},
                   what);
}

std::shared_ptr<Graph> graph_of(py::handle object) {
  if (py::isinstance<Graph>(object))
    return object.cast<std::shared_ptr<Graph>>();
  if (py::isinstance<PyValue>(object)) return object.cast<PyValue&>().owner;
  return nullptr;
}

PyValue as_value(py::handle object, const std::shared_ptr<Graph>& graph) {
  if (py::isinstance<PyValue>(object)) {
    PyValue& v = object.cast<PyValue&>();
    if (graph && &v.value.graph() != graph.get())
      throw GraphError("a value of another graph was given", v.value.name());
    return v;
  }
  if (!graph) {
    throw GraphError(
        "cannot tell which graph a constant belongs to: give a Value or the "
        "graph");
  }
  if (PyFloat_Check(object.ptr()) || PyLong_Check(object.ptr()))
    return {graph, graph->scalar(object.cast<double>())};
  return {graph, graph->constant(to_tensor(object, "constant"))};
}

namespace {
std::mutex kept_mutex;
std::optional<py::error_already_set> kept_error;
}  // namespace

void keep_python_error(py::error_already_set& error) {
  std::lock_guard<std::mutex> lock(kept_mutex);
  if (!kept_error) kept_error.emplace(std::move(error));
}

void rethrow_kept_python_error() {
  std::optional<py::error_already_set> error;
  {
    std::lock_guard<std::mutex> lock(kept_mutex);
    error.swap(kept_error);
  }
  if (error) throw py::error_already_set(std::move(*error));
}

}  // namespace adgraph::python
