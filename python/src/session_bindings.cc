// Session (run, run_into) and the gradient checker.
#include <chrono>
#include <cstring>

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
  const PyValue& v = fetch.cast<PyValue&>();
  if (&v.value.graph() != g.get())
    throw RunError("a value of another graph", v.value.name(), {}, "fetches");
  return v.value;
}

FeedMap feeds_of(const std::shared_ptr<Graph>& g, py::handle feeds) {
  FeedMap out;
  if (feeds.is_none()) return out;
  for (auto item : feeds.cast<py::dict>()) {
    Value target = fetch_of(g, item.first);
    out[target] = to_tensor(item.second, "feed of \"" + target.name() + "\"");
  }
  return out;
}

namespace {

// A Session with a reference to its graph.
struct PySession {
  std::shared_ptr<Graph> graph;
  std::unique_ptr<Session> session;
  // run_into's results before they are copied into the caller's arrays,
  // kept so a repeated run allocates nothing.
  std::vector<Tensor> scratch;
};

std::vector<Value> fetches_of(const std::shared_ptr<Graph>& g,
                              py::handle fetches) {
  std::vector<Value> out;
  for (py::handle f : fetches.cast<py::sequence>())
    out.push_back(fetch_of(g, f));
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

void run_into(PySession& s,
              py::handle fetches,
              py::handle feeds,
              py::handle outs) {
  const bool single = is_single(fetches);
  std::vector<Value> values =
      single ? std::vector<Value>{fetch_of(s.graph, fetches)}
             : fetches_of(s.graph, fetches);
  std::vector<py::array> arrays;
  if (single) {
    arrays.push_back(checked_output(outs, values[0]));
  } else {
    auto seq = outs.cast<py::sequence>();
    if (py::len(seq) != values.size()) {
      throw py::value_error("run_into: " + std::to_string(values.size()) +
                            " fetches but " + std::to_string(py::len(seq)) +
                            " outputs");
    }
    for (std::size_t k = 0; k < values.size(); ++k)
      arrays.push_back(checked_output(seq[k], values[k]));
  }
  FeedMap feed_map = feeds_of(s.graph, feeds);
  s.scratch.resize(values.size());
  std::vector<Tensor*> targets;
  for (std::size_t k = 0; k < values.size(); ++k) {
    if (s.scratch[k].shape() != values[k].shape() || s.scratch[k].size() == 0)
      s.scratch[k] = Tensor(values[k].shape());
    targets.push_back(&s.scratch[k]);
  }
  without_gil([&] {
    s.session->run_into(values, feed_map, targets);
    for (std::size_t k = 0; k < values.size(); ++k) {
      if (targets[k]->size() > 0)
        std::memcpy(
            arrays[k].mutable_data(), targets[k]->data(), targets[k]->bytes());
    }
  });
}

py::object run(PySession& s, py::handle fetches, py::handle feeds) {
  const bool single = is_single(fetches);
  std::vector<Value> values =
      single ? std::vector<Value>{fetch_of(s.graph, fetches)}
             : fetches_of(s.graph, fetches);
  FeedMap feed_map = feeds_of(s.graph, feeds);
  std::vector<Tensor> out =
      without_gil([&] { return s.session->run(values, feed_map); });
  if (single) return to_array(std::move(out[0]));
  py::list arrays;
  for (Tensor& t : out) arrays.append(to_array(std::move(t)));
  return arrays;
}

GradientCheckOptions check_options(const py::dict& options) {
  GradientCheckOptions o;
  for (auto item : options) {
    const std::string key = py::str(item.first).cast<std::string>();
    py::handle v = item.second;
    if (key == "step")
      o.step = v.cast<double>();
    else if (key == "tolerance")
      o.tolerance = v.cast<double>();
    else if (key == "directions")
      o.directions = v.cast<int>();
    else if (key == "taylor_epsilon")
      o.taylor_epsilon = v.cast<double>();
    else if (key == "taylor_steps")
      o.taylor_steps = v.cast<int>();
    else if (key == "rate_tolerance")
      o.rate_tolerance = v.cast<double>();
    else if (key == "seed")
      o.seed = v.cast<unsigned>();
    else if (key == "finite_differences")
      o.finite_differences = v.cast<bool>();
    else if (key == "check_jvp")
      o.check_jvp = v.cast<bool>();
    else if (key == "jvp_tolerance")
      o.jvp_tolerance = v.cast<double>();
    else
      throw OptionsError(
          "unknown option (GradientCheckOptions has step, tolerance, "
          "directions, taylor_epsilon, taylor_steps, rate_tolerance, "
          "seed, finite_differences, check_jvp, jvp_tolerance)",
          {},
          {},
          key);
  }
  return o;
}

}  // namespace

void bind_session(py::module_& m) {
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
             return PySession{std::move(g), std::move(session), {}};
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
          "numpy float64 arrays of the values' shapes (one, or a list). The "
          "arrays own the results (no copy) and outlive the session. The GIL "
          "is "
          "released while the runtime runs.")
      .def("run_into",
           &run_into,
           py::arg("fetches"),
           py::arg("feeds"),
           py::arg("outs"),
           "Like run(), but writes each fetched value into the caller's array "
           "(C-contiguous, writeable float64 of the fetch's shape); ValueError "
           "naming the fetch otherwise.")
      .def_property_readonly(
          "num_plans",
          [](const PySession& s) { return s.session->num_plans(); })
      .def_property_readonly(
          "stats",
          [](const PySession& s) {
            const RunStats& r = s.session->stats();
            py::dict d;
            d["nodes_executed"] = r.nodes_executed;
            d["peak_live_bytes"] = r.peak_live_bytes;
            d["plan_cached"] = r.plan_cached;
            d["buffers_allocated"] = r.buffers_allocated;
            return d;
          },
          "Counters of the last run.")
      .def(
          "release_buffers",
          [](PySession& s) { s.session->release_buffers(); },
          "Frees the buffers the session keeps between runs.")
      // For bench/python_overhead.py: the same run made `reps` times from
      // C++ (fresh outputs, as run() returns), seconds per run.
      .def("_time_cpp_runs",
           [](PySession& s, py::handle fetch, py::handle feeds, int reps) {
             std::vector<Value> values{fetch_of(s.graph, fetch)};
             FeedMap feed_map = feeds_of(s.graph, feeds);
             return without_gil([&] {
               const auto start = std::chrono::steady_clock::now();
               for (int r = 0; r < reps; ++r) s.session->run(values, feed_map);
               const std::chrono::duration<double> spent =
                   std::chrono::steady_clock::now() - start;
               return spent.count() / reps;
             });
           });

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
               " max_fd_error=" + std::to_string(r.max_fd_error) +
               (r.message.empty() ? "" : " message=\"" + r.message + "\"") +
               ">";
      });
  m.def(
      "check_gradients",
      [](const PyValue& y,
         const std::vector<PyValue>& xs,
         py::handle feeds,
         const py::dict& options) {
        FeedMap feed_map = feeds_of(y.owner, feeds);
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

}  // namespace adgraph::python
