// Session (run, run_into) and the gradient checker.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <thread>

#include "python/src/bindings.h"

namespace adgraph::python {

Value fetch_of(const std::shared_ptr<Graph>& g, py::handle fetch) {
  if (PyUnicode_Check(fetch.ptr())) return g->get(fetch.cast<std::string>());
  if (!py::isinstance<PyValue>(fetch)) {
    throw RunError("expected a Value or a node name, got " +
                       py::str(py::type::of(fetch)).cast<std::string>(),
                   {},
                   {},
                   "fetches");
  }
  const PyValue& v = live(fetch.cast<PyValue&>(), "Session.run");
  if (&v.value.graph() != g.get())
    throw RunError("a value of another graph", v.value.name(), {}, "fetches");
  return v.value;
}

namespace {

// Feeds copied (keep null) or read in place (the viewed arrays into keep).
FeedMap feed_map_of(const std::shared_ptr<Graph>& g,
                    py::handle feeds,
                    std::vector<py::object>* keep) {
  FeedMap out;
  if (feeds.is_none()) return out;
  if (!py::isinstance<py::dict>(feeds)) {
    throw RunError("expected a dict {Value or node name: array} or None, got " +
                       py::repr(feeds).cast<std::string>().substr(0, 60),
                   {},
                   {},
                   "feeds");
  }
  for (auto item : feeds.cast<py::dict>()) {
    Value target = fetch_of(g, item.first);
    const std::string what = "feed of \"" + target.name() + "\"";
    out[target] = keep ? to_tensor_view(item.second, what, *keep)
                       : to_tensor(item.second, what);
  }
  return out;
}

}  // namespace

FeedMap feeds_of(const std::shared_ptr<Graph>& g, py::handle feeds) {
  return feed_map_of(g, feeds, nullptr);
}

FeedMap feeds_in_place(const std::shared_ptr<Graph>& g,
                       py::handle feeds,
                       std::vector<py::object>& keep) {
  return feed_map_of(g, feeds, &keep);
}

namespace {

// Who runs a session: one thread at a time.
struct SessionState {
  std::mutex mutex;
  std::atomic<std::thread::id> owner{};
};

// A Session with a reference to its graph.
struct PySession {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<Session> session;
  std::shared_ptr<SessionState> state = std::make_shared<SessionState>();
  // Where dropped results of run() wait for the next run.
  std::shared_ptr<ReturnBin> bin = std::make_shared<ReturnBin>();
  // run_into outputs the last run wrote after the fact (a copy), because
  // the kernel that made them could not write into the caller's array.
  int64_t outputs_copied = 0;
};

// Holds a session for one call: a second thread waits (with the GIL
// released) until the first one's run ends, so runs of one session are
// serialised; a call from inside the session's own run (a custom op
// calling run() or release_buffers() on it) is a RunError naming
// `function`, since that run is using the session's buffers.
class SessionLock {
 public:
  SessionLock(PySession& s, const std::string& function) : state_(*s.state) {
    const bool mine = state_.owner.load() == std::this_thread::get_id();
    if (mine || (InKernel::depth() > 0 && !state_.mutex.try_lock())) {
      throw RunError(function +
                     ": called from inside a run of the same session (a "
                     "custom op's callback?); the running nodes use the "
                     "session's buffers. Use another Session, or call it "
                     "after run() returns");
    }
    if (InKernel::depth() == 0 && !state_.mutex.try_lock()) {
      py::gil_scoped_release release;
      state_.mutex.lock();
    }
    state_.owner = std::this_thread::get_id();
  }
  ~SessionLock() {
    state_.owner = std::thread::id();
    state_.mutex.unlock();
  }
  SessionLock(const SessionLock&) = delete;
  SessionLock& operator=(const SessionLock&) = delete;

 private:
  SessionState& state_;
};

std::vector<Value> fetches_of(const std::shared_ptr<Graph>& g,
                              py::handle fetches) {
  if (!py::isinstance<py::list>(fetches) &&
      !py::isinstance<py::tuple>(fetches)) {
    throw RunError("expected a Value, a node name or a list of them, got " +
                       py::repr(fetches).cast<std::string>().substr(0, 60),
                   {},
                   {},
                   "fetches");
  }
  std::vector<Value> out;
  for (py::handle f : fetches) out.push_back(fetch_of(g, f));
  return out;
}

bool is_single(py::handle fetches) {
  return py::isinstance<PyValue>(fetches) || PyUnicode_Check(fetches.ptr());
}

// Checks that `array` can take `fetch`'s value in place; ValueError naming
// the fetch otherwise.
py::array checked_output(py::handle array, Value fetch) {
  auto fail = [&](const std::string& why) {
    throw py::value_error("run_into: output for fetch \"" + fetch.name() +
                          "\" " + why);
  };
  if (!py::isinstance<py::array>(array)) fail("is not a numpy array");
  auto a = array.cast<py::array>();
  if (!a.dtype().is(py::dtype::of<double>()))
    fail("has dtype " + py::str(a.dtype()).cast<std::string>() +
         ", expected float64");
  if (!(a.flags() & py::array::c_style)) fail("is not C-contiguous");
  if (!a.writeable()) fail("is read-only");
  Shape shape(a.shape(), a.shape() + a.ndim());
  if (shape != fetch.shape())
    fail("has shape " + shape_string(shape) + ", expected " +
         shape_string(fetch.shape()));
  return a;
}

// The bytes of `array`.
std::pair<const char*, const char*> extent_of(const py::array& array) {
  const char* begin = static_cast<const char*>(array.data());
  return {begin, begin + array.nbytes()};
}

bool overlap(std::pair<const char*, const char*> a,
             std::pair<const char*, const char*> b) {
  return a.first < b.second && b.first < a.second;
}

// The runtime writes outputs while it reads feeds and other outputs: an
// output that shares memory with either is a ValueError naming the fetch.
void check_no_overlap(const std::vector<Value>& values,
                      const std::vector<py::array>& arrays,
                      const FeedMap& feeds) {
  for (std::size_t k = 0; k < arrays.size(); ++k) {
    const auto mine = extent_of(arrays[k]);
    if (mine.first == mine.second) continue;
    auto fail = [&](const std::string& other) {
      throw py::value_error("run_into: output for fetch \"" + values[k].name() +
                            "\" shares memory with " + other +
                            "; give it an array of its own");
    };
    for (std::size_t j = 0; j < k; ++j) {
      if (overlap(mine, extent_of(arrays[j])))
        fail("the output for fetch \"" + values[j].name() + "\"");
    }
    for (const auto& [value, tensor] : feeds) {
      const char* begin = reinterpret_cast<const char*>(tensor.data());
      if (overlap(mine, {begin, begin + tensor.bytes()}))
        fail("the feed of \"" + value.name() + "\"");
    }
  }
}

void run_into(PySession& s,
              py::handle fetches,
              py::handle feeds,
              py::handle outs) {
  MpiRunGuard mpi("Session.run_into");
  SessionLock lock(s, "Session.run_into");
  const bool single = is_single(fetches);
  std::vector<Value> values =
      single ? std::vector<Value>{fetch_of(s.graph, fetches)}
             : fetches_of(s.graph, fetches);
  std::vector<py::array> arrays;
  if (single) {
    arrays.push_back(checked_output(outs, values[0]));
  } else {
    if (!py::isinstance<py::list>(outs) && !py::isinstance<py::tuple>(outs))
      throw py::value_error(
          "run_into: outs must be a list of arrays, one per "
          "fetch, got " +
          py::repr(outs).cast<std::string>().substr(0, 60));
    auto seq = outs.cast<py::sequence>();
    if (py::len(seq) != values.size()) {
      throw py::value_error("run_into: " + std::to_string(values.size()) +
                            " fetches but " + std::to_string(py::len(seq)) +
                            " outputs");
    }
    for (std::size_t k = 0; k < values.size(); ++k)
      arrays.push_back(checked_output(seq[k], values[k]));
  }
  std::vector<py::object> keep;
  FeedMap feed_map = feeds_in_place(s.graph, feeds, keep);
  check_no_overlap(values, arrays, feed_map);
  // The kernels write straight into the caller's arrays.
  std::vector<Tensor> views;
  std::vector<Tensor*> targets;
  views.reserve(arrays.size());
  for (py::array& a : arrays) {
    views.push_back(to_tensor_view(a));
    targets.push_back(&views.back());
  }
  s.bin->empty_into(*s.session);
  s.outputs_copied = 0;
  without_gil([&] {
    s.session->run_into(values, feed_map, targets);
    for (std::size_t k = 0; k < values.size(); ++k) {
      double* into = static_cast<double*>(arrays[k].mutable_data());
      if (views[k].size() > 0 && views[k].data() != into) {
        std::memcpy(into, views[k].data(), views[k].bytes());
        ++s.outputs_copied;
      }
    }
  });
}

py::object run(PySession& s, py::handle fetches, py::handle feeds) {
  MpiRunGuard mpi("Session.run");
  SessionLock lock(s, "Session.run");
  const bool single = is_single(fetches);
  std::vector<Value> values =
      single ? std::vector<Value>{fetch_of(s.graph, fetches)}
             : fetches_of(s.graph, fetches);
  std::vector<py::object> keep;
  FeedMap feed_map = feeds_in_place(s.graph, feeds, keep);
  s.bin->empty_into(*s.session);
  std::vector<Tensor> out =
      without_gil([&] { return s.session->run(values, feed_map); });
  s.bin->expect(out);
  if (single) return to_array(std::move(out[0]), s.bin);
  py::list arrays;
  for (Tensor& t : out) arrays.append(to_array(std::move(t), s.bin));
  return arrays;
}

}  // namespace

GradientCheckOptions check_options(const py::dict& options) {
  GradientCheckOptions o;
  OptionTable<GradientCheckOptions>("GradientCheckOptions has",
                                    "check_gradients")
      .fields(GradientCheckOptions::fields())
      .apply(options, o);
  return o;
}

namespace {

// Session.stats: the counters of the last run.
py::dict stats_dict(const PySession& s) {
  const RunStats& r = s.session->stats();
  py::dict d;
  d["nodes_executed"] = r.nodes_executed;
  d["peak_live_bytes"] = r.peak_live_bytes;
  d["plan_cached"] = r.plan_cached;
  d["buffers_allocated"] = r.buffers_allocated;
  d["outputs_copied"] = s.outputs_copied;
  return d;
}

// For bench/python_overhead.py: the same run made `reps` times from C++,
// seconds per run: fresh outputs, as run() returns, or with `into` run_into
// one C++ tensor kept across the runs.
double time_cpp_runs(
    PySession& s, py::handle fetch, py::handle feeds, int reps, bool into) {
  MpiRunGuard mpi("Session._time_cpp_runs");
  SessionLock lock(s, "Session._time_cpp_runs");
  std::vector<Value> values{fetch_of(s.graph, fetch)};
  std::vector<py::object> keep;
  FeedMap feed_map = feeds_in_place(s.graph, feeds, keep);
  Tensor out(values[0].shape());
  return without_gil([&] {
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < reps; ++r) {
      if (into) {
        s.session->run_into(values[0], feed_map, out);
      } else {
        s.session->run(values, feed_map);
      }
    }
    const std::chrono::duration<double> spent =
        std::chrono::steady_clock::now() - start;
    return spent.count() / reps;
  });
}

// Session: its constructor, run, run_into and its counters.
void bind_session_class(py::module_& m) {
  py::class_<PySession>(
      m,
      "Session",
      "Plans and runs the part of a graph that a set of fetches needs.\n\n"
      "Parameters\n----------\ngraph : Graph\nconcurrent : bool\n"
      "    Run independent nodes on OpenMP threads (default False).\n"
      "num_threads : int\n    Threads when concurrent (0: OpenMP's default).\n"
      "recycle_buffers : bool\n    Reuse released buffers across runs "
      "(default True).")
      .def(py::init([](std::shared_ptr<Graph> g,
                       bool concurrent,
                       int num_threads,
                       bool recycle) {
             SessionOptions o;
             o.concurrent = concurrent;
             o.num_threads = num_threads;
             o.recycle_buffers = recycle;
             auto session = std::make_unique<Session>(*g, o);
             return PySession{std::move(g), std::move(session)};
           }),
           py::arg("graph"),
           py::arg("concurrent") = false,
           py::arg("num_threads") = 0,
           py::arg("recycle_buffers") = true)
      .def(
          "run",
          &run,
          py::arg("fetches"),
          py::arg("feeds") = py::none(),
          "Runs what `fetches` (a Value or name, or a list of them) need, with "
          "`feeds` ({Value or name: array}) for the placeholders, and returns "
          "numpy float64 arrays of the values' shapes (one, or a list). A "
          "C-contiguous float64 feed is read in place (never written); other "
          "array-likes are converted once. The arrays returned own the "
          "results (no copy) and outlive the session; when one is dropped, "
          "its memory is reused for the session's next results. The GIL is "
          "released while the runtime runs.")
      .def("run_into",
           &run_into,
           py::arg("fetches"),
           py::arg("feeds"),
           py::arg("outs"),
           "Like run(), but each fetched value is written straight into the "
           "caller's array (C-contiguous, writeable float64 of the fetch's "
           "shape, sharing no memory with a feed or another output); "
           "ValueError naming the fetch otherwise.")
      .def_property_readonly(
          "num_plans",
          [](const PySession& s) { return s.session->num_plans(); })
      .def_property_readonly(
          "stats",
          &stats_dict,
          "Counters of the last run: nodes_executed, peak_live_bytes, "
          "plan_cached, buffers_allocated (outputs that needed new memory) "
          "and outputs_copied (run_into outputs written after the run "
          "instead of in place; 0 for every built-in op).")
      .def(
          "release_buffers",
          [](PySession& s) {
            SessionLock lock(s, "Session.release_buffers");
            s.session->release_buffers();
          },
          "Frees the buffers the session keeps between runs.")
      // For bench/python_overhead.py (see time_cpp_runs).
      .def("_time_cpp_runs",
           &time_cpp_runs,
           py::arg("fetch"),
           py::arg("feeds"),
           py::arg("reps"),
           py::arg("into") = false);
}

// `v` in %g form, as the JSON output prints errors (2.9e-11, not
// std::to_string's 0.000000).
std::string format_g(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", v);
  return text;
}

// check_gradients and its result.
void bind_gradient_checker(py::module_& m) {
  py::class_<GradientCheckResult>(
      m,
      "GradientCheckResult",
      "What check_gradients found (the same on every rank).")
      .def_readonly("ok", &GradientCheckResult::ok)
      .def_readonly("max_fd_error", &GradientCheckResult::max_fd_error)
      .def_readonly("max_jvp_error", &GradientCheckResult::max_jvp_error)
      .def_readonly("taylor_rates", &GradientCheckResult::taylor_rates)
      .def_readonly("jvp_taylor_rates", &GradientCheckResult::jvp_taylor_rates)
      .def_readonly("message", &GradientCheckResult::message)
      .def("__bool__", [](const GradientCheckResult& r) { return r.ok; })
      .def("__repr__", [](const GradientCheckResult& r) {
        return std::string("<GradientCheckResult ok=") +
               (r.ok ? "True" : "False") +
               " max_fd_error=" + format_g(r.max_fd_error) +
               " max_jvp_error=" + format_g(r.max_jvp_error) +
               (r.message.empty() ? "" : " message=\"" + r.message + "\"") +
               ">";
      });
  m.def(
      "check_gradients",
      [](const PyValue& y,
         const std::vector<PyValue>& xs,
         py::handle feeds,
         const py::dict& options) {
        MpiRunGuard mpi("check_gradients");
        std::vector<py::object> keep;
        FeedMap feed_map =
            feeds_in_place(live(y, "check_gradients").owner, feeds, keep);
        GradientCheckOptions o = check_options(options);
        std::vector<Value> x = unwrap(xs);
        return without_gil(
            [&] { return check_gradients(y.value, x, feed_map, o); });
      },
      py::arg("y"),
      py::arg("xs"),
      py::arg("feeds"),
      py::arg("options") = py::dict());
}

}  // namespace

void bind_session(py::module_& m) {
  bind_session_class(m);
  bind_gradient_checker(m);
}

}  // namespace adgraph::python
