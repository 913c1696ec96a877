// Conversions between Python objects and the library's types.
#include <cstdint>
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

namespace {

// What an array made by to_array owns: the tensor, and where its storage
// goes when the array is dropped.
struct HeldTensor {
  Tensor tensor;
  std::weak_ptr<ReturnBin> bin;
};

}  // namespace

void ReturnBin::expect(const std::vector<Tensor>& outputs) {
  limit.clear();
  for (const Tensor& t : outputs) {
    if (t.size() >= kMinSize) ++limit[t.size()];
  }
}

void ReturnBin::offer(Tensor&& tensor) {
  const int64_t n = tensor.size();
  if (tensor.borrowed() || n < kMinSize) return;
  auto allowed = limit.find(n);
  if (allowed == limit.end() || held[n] >= allowed->second) return;
  ++held[n];
  tensors.push_back(std::move(tensor));
}

void ReturnBin::empty_into(Session& session) {
  for (Tensor& t : tensors) session.recycle(std::move(t));
  tensors.clear();
  held.clear();
}

py::array to_array(Tensor&& tensor, const std::shared_ptr<ReturnBin>& bin) {
  auto* held = new HeldTensor{std::move(tensor), bin};
  // Called with the GIL held, as every use of the bin is.
  py::capsule owner(held, [](void* p) {
    auto* h = static_cast<HeldTensor*>(p);
    if (auto bin = h->bin.lock()) bin->offer(std::move(h->tensor));
    delete h;
  });
  return py::array_t<double>(
      extents(held->tensor.shape()), held->tensor.data(), owner);
}

py::array view_of(const Tensor& tensor, py::handle base) {
  py::array_t<double> view(
      extents(tensor.shape()), const_cast<double*>(tensor.data()), base);
  py::detail::array_proxy(view.ptr())->flags &=
      ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return view;
}

namespace {

using Float64Array =
    py::array_t<double, py::array::c_style | py::array::forcecast>;

// `object` as a C-contiguous float64 array: itself when it is one, else a
// converted copy. Throws ShapeError naming `what` when it cannot be.
Float64Array as_float64(py::handle object, const std::string& what) {
  Float64Array array;
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
  return array;
}

Shape shape_of(const py::array& array) {
  return Shape(array.shape(), array.shape() + array.ndim());
}

}  // namespace

Tensor to_tensor(py::handle object, const std::string& what) {
  Float64Array array = as_float64(object, what);
  Tensor out(shape_of(array));
  if (out.size() > 0)
    std::memcpy(out.data(), array.data(), sizeof(double) * out.size());
  return out;
}

Tensor to_tensor_view(py::handle object,
                      const std::string& what,
                      std::vector<py::object>& keep) {
  Float64Array array = as_float64(object, what);
  const auto address = reinterpret_cast<std::uintptr_t>(array.data());
  if (address % alignof(double) != 0) return to_tensor(array, what);
  keep.push_back(array);
  // Never written: feeds are read-only to the runtime (Session::run).
  return Tensor::borrow(shape_of(array), const_cast<double*>(array.data()));
}

Tensor to_tensor_view(py::array& array) {
  return Tensor::borrow(shape_of(array),
                        static_cast<double*>(array.mutable_data()));
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
