// L-BFGS / L-BFGS-B on a graph (optim::minimize), and the evaluator behind
// the SciPy bridge.
#include "python/src/bindings.h"

namespace adgraph::python {

namespace {

// A line search's options from a dict of its fields, through its table
// (LineSearchOptions' or MoreThuenteOptions'): "line_search", or
// "line_search_bounded", a keyword of LbfgsOptions.
template <class O>
void line_search_options(py::handle v, const char* keyword, O& o) {
  if (!py::isinstance<py::dict>(v)) {
    throw OptionsError(
        "expected a dict of its fields, got " + py::repr(v).cast<std::string>(),
        {},
        {},
        keyword);
  }
  const std::string what = std::string(keyword) + " has";
  try {
    OptionTable<O>(what, keyword)
        .fields(O::fields())
        .apply(v.cast<py::dict>(), o);
  } catch (const OptionsError& e) {
    // "line_search.c1: must be in (0, 1), got 2"
    throw OptionsError(
        e.detail(), e.node(), e.op(), std::string(keyword) + "." + e.field());
  }
}

}  // namespace

optim::LbfgsOptions lbfgs_options(const py::dict& options) {
  using optim::LbfgsOptions;
  optim::LbfgsOptions o;
  OptionTable<LbfgsOptions>("LbfgsOptions has", "LbfgsOptions")
      .fields(LbfgsOptions::fields())
      .setter("line_search",
              [](LbfgsOptions& o, py::handle v) {
                line_search_options(v, "line_search", o.line_search);
              })
      .setter("line_search_bounded",
              [](LbfgsOptions& o, py::handle v) {
                line_search_options(
                    v, "line_search_bounded", o.line_search_bounded);
              })
      .apply(options, o);
  std::string error;
  if (!o.is_valid(&error)) throw OptionsError(error, {}, {}, "LbfgsOptions");
  return o;
}

py::dict summary_dict(const optim::LbfgsSummary& s,
                      std::vector<Tensor>& values) {
  py::dict d;
  d["termination"] = optim::termination_name(s.termination);
  d["message"] = s.message;
  d["iterations"] = s.iterations;
  d["evaluations"] = s.evaluations;
  d["initial_f"] = s.initial_f;
  d["final_f"] = s.final_f;
  d["gradient_norm"] = s.gradient_norm;
  d["active_bounds"] = s.active_bounds;
  d["seconds"] = s.seconds;
  d["f_history"] = s.f_history;
  d["gradient_norm_history"] = s.gradient_norm_history;
  d["resumed_at"] = s.resumed_at;
  py::list x;
  for (Tensor& t : values) x.append(to_array(std::move(t)));
  d["x"] = x;
  return d;
}

namespace {

optim::Layout layout_of(const std::string& layout) {
  if (layout == "replicated") return optim::Layout::kReplicated;
  if (layout == "sharded") return optim::Layout::kSharded;
  throw OptionsError(
      "expected \"replicated\" or \"sharded\", got \"" + layout + "\"",
      {},
      {},
      "layout");
}

std::vector<Tensor> tensors_of(py::handle list, const std::string& what) {
  std::vector<Tensor> out;
  if (list.is_none()) return out;
  if (!py::isinstance<py::list>(list) && !py::isinstance<py::tuple>(list)) {
    throw OptionsError(
        "minimize: expected a list of arrays, one per "
        "variable, got " +
            py::repr(list).cast<std::string>(),
        {},
        {},
        what);
  }
  int k = 0;
  for (py::handle item : list.cast<py::sequence>())
    out.push_back(to_tensor(item, what + " " + std::to_string(k++)));
  return out;
}

// f(x) and ∇f(x) of a graph's objective at a flat x, the same on every
// rank (the SciPy bridge): rank 0's values broadcast (replicated
// variables, as optim::Layout::kReplicated).
class Evaluator final {
 public:
  Evaluator(const PyValue& objective,
            const std::vector<PyValue>& variables,
            py::handle feeds)
      : graph_(objective.owner), objective_(objective.value) {
    for (const PyValue& v : variables) variables_.push_back(v.value);
    std::vector<Tensor> starts;
    for (const Value& v : variables_) starts.emplace_back(v.shape(), 0.0);
    optim::check_problem(objective_, variables_, starts);
    fetches_ = gradients(objective_, variables_);
    fetches_.insert(fetches_.begin(), objective_);
    feeds_ = feeds_of(graph_, feeds);
    for (const Value& v : variables_) size_ += num_elements(v.shape());
    session_ = std::make_unique<Session>(*graph_);
  }

  int64_t size() const { return size_; }

  py::tuple operator()(py::handle x_object) {
    MpiRunGuard mpi("scipy_objective");
    Tensor x = to_tensor(x_object, "scipy_objective: x");
    if (x.size() != size_) {
      throw ShapeError("expected " + std::to_string(size_) + " values, got " +
                           std::to_string(x.size()),
                       {},
                       {},
                       "x");
    }
    int64_t offset = 0;
    for (const Value& v : variables_) {
      Tensor t(v.shape());
      t.array() = x.array().segment(offset, t.size());
      offset += t.size();
      feeds_[v] = std::move(t);
    }
    Tensor grad(Shape{size_});
    double f = 0;
    without_gil([&] {
      std::vector<Tensor> out = session_->run(fetches_, feeds_);
      f = out[0].item();
      int64_t at = 0;
      for (std::size_t k = 1; k < out.size(); ++k) {
        grad.array().segment(at, out[k].size()) = out[k].array();
        at += out[k].size();
      }
      if (CommContext* comm = graph_->comm();
          comm != nullptr && comm->size() > 1) {
        comm->bcast(&f, 1, 0);
        comm->bcast(grad.data(), size_, 0);
      }
    });
    return py::make_tuple(f, to_array(std::move(grad)));
  }

 private:
  std::shared_ptr<Graph> graph_;
  Value objective_;
  std::vector<Value> variables_, fetches_;
  FeedMap feeds_;
  int64_t size_ = 0;
  std::unique_ptr<Session> session_;
};

}  // namespace

void bind_optim(py::module_& m) {
  m.def(
      "_minimize",
      [](const PyValue& loss,
         const std::vector<PyValue>& variables,
         py::handle initial,
         py::handle lower,
         py::handle upper,
         bool bounded,
         const std::string& layout,
         py::handle feeds,
         const py::dict& options) {
        MpiRunGuard mpi("minimize");
        std::vector<Tensor> values = tensors_of(initial, "initial value");
        FeedMap feed_map = feeds_of(loss.owner, feeds);
        optim::LbfgsOptions o = lbfgs_options(options);
        const optim::Layout l = layout_of(layout);
        std::vector<Value> vars = unwrap(variables);
        optim::LbfgsSummary s;
        if (bounded) {
          optim::VariableBounds b{tensors_of(lower, "lower bound"),
                                  tensors_of(upper, "upper bound")};
          s = without_gil([&] {
            return optim::minimize(loss.value, vars, values, b, feed_map, o, l);
          });
        } else {
          s = without_gil([&] {
            return optim::minimize(loss.value, vars, values, feed_map, o, l);
          });
        }
        return summary_dict(s, values);
      },
      py::arg("loss"),
      py::arg("variables"),
      py::arg("initial"),
      py::arg("lower"),
      py::arg("upper"),
      py::arg("bounded"),
      py::arg("layout"),
      py::arg("feeds"),
      py::arg("options"));
  py::class_<Evaluator>(m, "_Evaluator")
      .def(py::init<const PyValue&, const std::vector<PyValue>&, py::handle>(),
           py::arg("loss"),
           py::arg("variables"),
           py::arg("feeds"))
      .def_property_readonly("size", &Evaluator::size)
      .def("__call__", &Evaluator::operator(), py::arg("x"));
}

}  // namespace adgraph::python
