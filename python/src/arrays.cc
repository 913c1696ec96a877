// Conversions between Python objects and the library's types.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include "core/interrupt.h"
#include "python/src/bindings.h"

namespace adgraph::python {

std::vector<PyValue> wrap(const std::shared_ptr<Graph>& owner,
                          const std::vector<Value>& values) {
  std::vector<PyValue> out;
  out.reserve(values.size());
  for (const Value& v : values) out.push_back({owner, v});
  return out;
}

namespace {
std::mutex mpi_run_mutex;
std::atomic<std::thread::id> mpi_run_owner{};
thread_local int mpi_run_depth = 0;
}  // namespace

MpiRunGuard::MpiRunGuard(const std::string& function) {
  if (python_world()->size() <= 1) return;
  if (mpi_run_depth > 0) {
    ++mpi_run_depth;
    held_ = true;
    return;
  }
  if (!mpi_run_mutex.try_lock()) {
    throw RunError(
        function +
        ": another thread of this process is running a graph while the job "
        "has " +
        std::to_string(python_world()->size()) +
        " ranks; runs on several ranks must come from one thread at a time "
        "(their messages would cross between the ranks), so this run is "
        "refused (the other ranks may wait for it until their deadline)");
  }
  mpi_run_owner = std::this_thread::get_id();
  mpi_run_depth = 1;
  held_ = true;
}

MpiRunGuard::~MpiRunGuard() {
  if (!held_) return;
  if (--mpi_run_depth == 0) {
    mpi_run_owner = std::thread::id();
    mpi_run_mutex.unlock();
  }
}

namespace {

// SIGINT during a run. With one rank the handler asks the runtime to stop
// the run at its next node or loop step (adgraph::request_interrupt, which
// reaches Python as KeyboardInterrupt). On several ranks it writes a byte
// to a pipe, which a watcher thread (made at the first watch) reads to end
// the job at once: the other ranks may be waiting for this one in a
// collective, and a rank blocked in a message checks nothing.
int interrupt_pipe[2] = {-1, -1};
std::atomic<int> watch_depth{0};
std::atomic<bool> several_ranks{false};
struct sigaction python_sigint {};

void on_sigint(int) {
  if (!several_ranks.load()) adgraph::request_interrupt();
  const char byte = 1;
  [[maybe_unused]] const auto n = ::write(interrupt_pipe[1], &byte, 1);
}

void watch_interrupts() {
  char byte = 0;
  while (::read(interrupt_pipe[0], &byte, 1) == 1) {
    if (watch_depth.load() == 0) continue;
    const int size = python_world()->size();
    if (size <= 1) continue;
    const std::string message =
        "adgraph: rank " + std::to_string(python_world()->rank()) + " of " +
        std::to_string(size) +
        ": interrupted (SIGINT) during a run, ending the job\n";
    [[maybe_unused]] const auto n = ::write(2, message.data(), message.size());
    abort_job(130);
  }
}

}  // namespace

InterruptWatch::InterruptWatch() {
  if (watch_depth.fetch_add(1) > 0) return;
  static const bool started = [] {
    if (::pipe(interrupt_pipe) != 0) return false;
    std::thread(watch_interrupts).detach();
    return true;
  }();
  if (!started) return;
  adgraph::take_interrupt_request();  // none is pending outside a run
  several_ranks = python_world()->size() > 1;
  struct sigaction mine {};
  mine.sa_handler = on_sigint;
  sigemptyset(&mine.sa_mask);
  sigaction(SIGINT, &mine, &python_sigint);
  if (python_sigint.sa_handler == SIG_IGN)  // the program ignores Ctrl-C
    sigaction(SIGINT, &python_sigint, nullptr);
}

InterruptWatch::~InterruptWatch() {
  if (watch_depth.fetch_sub(1) > 1 || interrupt_pipe[0] < 0) return;
  sigaction(SIGINT, &python_sigint, nullptr);
  // A request no check took (the run ended first): Python raises
  // KeyboardInterrupt at its next bytecode. One a check took is already
  // on its way as adgraph::Interrupted (KeyboardInterrupt too).
  if (adgraph::take_interrupt_request()) {
    py::gil_scoped_acquire gil;
    PyErr_SetInterrupt();
  }
}

int& InKernel::depth() {
  thread_local int depth = 0;
  return depth;
}

void check_alive(const std::shared_ptr<Graph>& owner,
                 const std::string& function) {
  const auto* ref = std::get_deleter<BodyGraphRef>(owner);
  if (ref == nullptr || ref->scope->open) return;
  throw GraphError(function + ": a Value (or graph) of the body of loop \"" +
                       ref->scope->loop +
                       "\" was used after its body function returned; body "
                       "values are valid inside the body only (return them "
                       "as carries or outputs)",
                   {},
                   {},
                   "value");
}

const PyValue& live(const PyValue& v, const std::string& function) {
  check_alive(v.owner, function);
  return v;
}

std::vector<Value> unwrap(const std::vector<PyValue>& values) {
  std::vector<Value> out;
  out.reserve(values.size());
  for (const PyValue& v : values) out.push_back(live(v, "adgraph").value);
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

// What a value the boundary refuses is, for messages: "None", "a string
// ('3')", "a complex number ((1+2j))", "bool True".
std::string refused(py::handle object) {
  const std::string repr = py::repr(object).cast<std::string>();
  const std::string shown =
      repr.size() > 40 ? repr.substr(0, 37) + "..." : repr;
  return py::str(py::type::of(object).attr("__name__")).cast<std::string>() +
         " " + shown;
}

[[noreturn]] void not_numbers(const std::string& what, const std::string& got) {
  throw ShapeError(
      "expected a real number or an array of real numbers "
      "(float or int), got " +
          got,
      {},
      {},
      what);
}

// Whether `object` is a scalar the boundary takes as a number: a Python or
// numpy int or float, never a bool, a complex number or a string.
bool is_real_scalar(py::handle object) {
  if (PyBool_Check(object.ptr())) return false;
  if (PyFloat_Check(object.ptr()) || PyLong_Check(object.ptr())) return true;
  if (!py::isinstance(object, py::module_::import("numpy").attr("generic")))
    return false;
  const char kind =
      object.attr("dtype").attr("kind").cast<std::string>().front();
  return kind == 'f' || kind == 'i' || kind == 'u';
}

// The first element of an object array that is not a real number, or none.
std::optional<std::string> first_non_number(const py::array& array) {
  py::list flat = array.attr("ravel")().attr("tolist")();
  for (std::size_t i = 0; i < flat.size(); ++i) {
    if (!is_real_scalar(flat[i]))
      return refused(flat[i]) + " at flat index " + std::to_string(i);
  }
  return std::nullopt;
}

// `object` as a C-contiguous float64 array: itself when it is one, else a
// converted copy. Only real numbers are taken: None, bools, complex
// numbers, strings and objects are refused (numpy would make them NaN, 1,
// their real part or a parsed number). Throws ShapeError naming `what`.
Float64Array as_float64(py::handle object, const std::string& what) {
  if (object.is_none()) not_numbers(what, "None");
  if (PyBool_Check(object.ptr()) || PyUnicode_Check(object.ptr()) ||
      PyBytes_Check(object.ptr()) || PyComplex_Check(object.ptr()))
    not_numbers(what, refused(object));
  if (PyFloat_Check(object.ptr()) || PyLong_Check(object.ptr())) {
    double v = 0;
    try {
      v = object.cast<double>();
    } catch (py::cast_error&) {
      PyErr_Clear();
      not_numbers(what, "an integer too large for float64");
    }
    Float64Array scalar(std::vector<py::ssize_t>{});
    *scalar.mutable_data() = v;
    return scalar;
  }
  py::module_ np = py::module_::import("numpy");
  py::array array;
  try {
    array = np.attr("asarray")(object);
  } catch (py::error_already_set& e) {
    not_numbers(what, refused(object) + " (numpy: " + e.what() + ")");
  }
  const char kind = array.dtype().kind();
  if (kind == 'O') {
    if (auto bad = first_non_number(array)) not_numbers(what, *bad);
  } else if (kind != 'f' && kind != 'i' && kind != 'u') {
    const std::string dtype = py::str(array.dtype()).cast<std::string>();
    not_numbers(what,
                (array.ndim() == 0 ? "a " : "an array of ") + dtype +
                    (array.ndim() == 0 ? " (" + refused(object) + ")" : ""));
  }
  Shape shape(array.shape(), array.shape() + array.ndim());
  for (int64_t extent : shape) {
    if (extent < 0) not_numbers(what, "a negative extent");
  }
  if (checked_num_elements(shape) < 0) {
    throw ShapeError("shape " + shape_string(shape) +
                         " has more than 2^30 elements (a tensor's limit)",
                     {},
                     {},
                     what);
  }
  Float64Array out = Float64Array::ensure(array);
  if (!out) {
    throw ShapeError("converting shape " + shape_string(shape) +
                         " to float64 failed (out of memory?)",
                     {},
                     {},
                     what);
  }
  return out;
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
  std::shared_ptr<Graph> g;
  if (py::isinstance<Graph>(object)) g = object.cast<std::shared_ptr<Graph>>();
  if (py::isinstance<PyValue>(object)) g = object.cast<PyValue&>().owner;
  if (g) check_alive(g, "adgraph");
  return g;
}

PyValue as_value(py::handle object, const std::shared_ptr<Graph>& graph) {
  if (graph) check_alive(graph, "adgraph");
  if (py::isinstance<PyValue>(object)) {
    PyValue& v = object.cast<PyValue&>();
    check_alive(v.owner, "adgraph");
    if (graph && &v.value.graph() != graph.get())
      throw GraphError("a value of another graph was given", v.value.name());
    return v;
  }
  if (!graph) {
    throw GraphError(
        "cannot tell which graph a constant belongs to: give a Value or the "
        "graph");
  }
  Tensor t = to_tensor(object, "operand");
  if (t.shape().empty()) return {graph, graph->scalar(t.item())};
  return {graph, graph->constant(std::move(t))};
}

namespace {
// One slot per thread: a building callback runs on the thread that builds.
thread_local std::optional<py::error_already_set> kept_error;
}  // namespace

void keep_python_error(py::error_already_set& error) {
  if (!kept_error) kept_error.emplace(std::move(error));
}

void rethrow_kept_python_error() {
  std::optional<py::error_already_set> error;
  error.swap(kept_error);
  if (error) throw py::error_already_set(std::move(*error));
}

}  // namespace adgraph::python
