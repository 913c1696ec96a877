#include "optim/minimize.h"

#include <cmath>
#include <string>

#include "core/ad/gradients.h"
#include "core/comm_context.h"
#include "core/error.h"

namespace adgraph::optim {
namespace {

// The tensors' values one after another, n in all.
Eigen::VectorXd pack(const std::vector<Tensor>& tensors, int64_t n) {
  Eigen::VectorXd x(n);
  int64_t offset = 0;
  for (const Tensor& t : tensors) {
    x.segment(offset, t.size()) = t.array().matrix();
    offset += t.size();
  }
  return x;
}

// Replicated variables hold the same values on every rank: their start
// values (and bounds) are checked for agreement once, before the first
// evaluation, as a plan's messages are (collective; the same OptionsError
// on every rank). Entries are compared bitwise, NaN included.
void check_replicated(const Graph& g,
                      Layout layout,
                      const Eigen::VectorXd& x,
                      const char* what) {
  CommContext* comm = g.comm();
  if (layout != Layout::kReplicated || comm == nullptr || comm->size() < 2)
    return;
  const auto n = x.size();
  // Per entry, max of x and of −x (so the min), NaN as +inf with a flag.
  Eigen::VectorXd both(2 * n + 1);
  double nan = 0;
  for (Eigen::Index k = 0; k < n; ++k) {
    const double v = std::isnan(x[k]) ? 0.0 : x[k];
    nan = std::max(nan, std::isnan(x[k]) ? 1.0 : 0.0);
    both[k] = v, both[n + k] = -v;
  }
  both[2 * n] = nan;
  Eigen::VectorXd top(2 * n + 1);
  comm->allreduce(both.data(), top.data(), 2 * n + 1, ReduceOp::kMax);
  if (top[2 * n] != 0) {
    // Some rank holds NaN: agreement only if all do at the same entries.
    Eigen::VectorXd flags(n), any(n);
    for (Eigen::Index k = 0; k < n; ++k) flags[k] = std::isnan(x[k]) ? 1 : 0;
    comm->allreduce(flags.data(), any.data(), n, ReduceOp::kSum);
    for (Eigen::Index k = 0; k < n; ++k) {
      if (any[k] != 0 && any[k] != comm->size()) {
        throw OptionsError(std::string("layout \"replicated\": the ") + what +
                               " differ between ranks (entry " +
                               std::to_string(k) +
                               " is NaN on some ranks "
                               "only)",
                           {},
                           {},
                           "layout");
      }
    }
  }
  for (Eigen::Index k = 0; k < n; ++k) {
    if (top[k] != -top[n + k]) {
      throw OptionsError(
          std::string("layout \"replicated\": the ") + what +
              " differ between ranks (entry " + std::to_string(k) +
              " ranges from " + std::to_string(-top[n + k]) + " to " +
              std::to_string(top[k]) +
              "); a replicated variable starts from the same value on every "
              "rank (broadcast it, or use layout \"sharded\")",
          {},
          {},
          "layout");
    }
  }
}

}  // namespace

void check_problem(Value objective,
                   const std::vector<Value>& variables,
                   const std::vector<Tensor>& values) {
  if (!objective.valid()) {
    throw GraphError("the objective is not a value", {}, {}, "objective");
  }
  if (num_elements(objective.shape()) != 1) {
    throw GraphError("the objective must have one element, it has shape " +
                         shape_string(objective.shape()),
                     objective.name(),
                     objective.node().op_name(),
                     "objective");
  }
  if (variables.empty()) {
    throw GraphError(
        "no variables to optimise: give the placeholders the objective is "
        "minimised over",
        objective.name(),
        {},
        "variables");
  }
  if (values.size() != variables.size()) {
    throw GraphError("one start value per variable is needed",
                     objective.name(),
                     {},
                     "variables");
  }
  for (std::size_t k = 0; k < variables.size(); ++k) {
    const Value& v = variables[k];
    if (v.node().op_name() != "placeholder") {
      throw GraphError("a variable must be a placeholder",
                       v.name(),
                       v.node().op_name(),
                       "variables");
    }
    if (values[k].shape() != v.shape()) {
      throw ShapeError("start value has shape " +
                           shape_string(values[k].shape()) + ", the variable " +
                           shape_string(v.shape()),
                       v.name(),
                       "placeholder",
                       "variables");
    }
  }
}

namespace {

// Runs `solve` (lbfgs or lbfgsb on the packed variables, with the graph's
// communicator) on the objective and gradient of `objective`, then unpacks
// the result into `values`.
template <class Solve>
LbfgsSummary run(Value objective,
                 const std::vector<Value>& variables,
                 std::vector<Tensor>& values,
                 const FeedMap& feeds,
                 Solve solve) {
  int64_t n = 0;
  for (const Tensor& t : values) n += t.size();
  Graph& g = objective.graph();
  std::vector<Value> fetches = gradients(objective, variables);
  fetches.insert(fetches.begin(), objective);
  Session session(g);
  FeedMap at = feeds;
  for (std::size_t k = 0; k < variables.size(); ++k)
    at[variables[k]] = values[k];

  auto unpack = [&](const Eigen::VectorXd& x) {
    int64_t offset = 0;
    for (std::size_t k = 0; k < variables.size(); ++k) {
      Tensor& t = at[variables[k]];
      t.array() = x.segment(offset, t.size());
      offset += t.size();
    }
  };
  Objective f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    unpack(x);
    std::vector<Tensor> out = session.run(fetches, at);
    int64_t offset = 0;
    for (std::size_t k = 1; k < out.size(); ++k) {
      grad.segment(offset, out[k].size()) = out[k].array().matrix();
      offset += out[k].size();
    }
    return out[0].item();
  };

  Eigen::VectorXd x = pack(values, n);
  LbfgsSummary summary = solve(f, x, g.comm());
  unpack(x);
  for (std::size_t k = 0; k < variables.size(); ++k)
    values[k] = at[variables[k]];
  return summary;
}

// One side of the bounds, packed as the variables are; empty when open.
Eigen::VectorXd side(const std::vector<Tensor>& tensors,
                     const std::vector<Value>& variables,
                     const char* name) {
  if (tensors.empty()) return {};
  if (tensors.size() != variables.size()) {
    throw GraphError(std::string("one ") + name +
                         " bound tensor per variable is needed, got " +
                         std::to_string(tensors.size()) + " for " +
                         std::to_string(variables.size()),
                     {},
                     {},
                     "bounds");
  }
  int64_t n = 0;
  for (std::size_t k = 0; k < variables.size(); ++k) {
    if (tensors[k].shape() != variables[k].shape()) {
      throw ShapeError(std::string(name) + " bound has shape " +
                           shape_string(tensors[k].shape()) +
                           ", the variable " +
                           shape_string(variables[k].shape()),
                       variables[k].name(),
                       "placeholder",
                       "bounds");
    }
    n += tensors[k].size();
  }
  return pack(tensors, n);
}

}  // namespace

LbfgsSummary minimize(Value objective,
                      const std::vector<Value>& variables,
                      std::vector<Tensor>& values,
                      const FeedMap& feeds,
                      const LbfgsOptions& options,
                      Layout layout) {
  check_problem(objective, variables, values);
  int64_t n = 0;
  for (const Tensor& t : values) n += t.size();
  check_replicated(objective.graph(), layout, pack(values, n), "start values");
  return run(objective,
             variables,
             values,
             feeds,
             [&](const Objective& f, Eigen::VectorXd& x, CommContext* comm) {
               return lbfgs(f, x, options, comm, layout);
             });
}

LbfgsSummary minimize(Value objective,
                      const std::vector<Value>& variables,
                      std::vector<Tensor>& values,
                      const VariableBounds& bounds,
                      const FeedMap& feeds,
                      const LbfgsOptions& options,
                      Layout layout) {
  check_problem(objective, variables, values);
  const Bounds box{side(bounds.lower, variables, "lower"),
                   side(bounds.upper, variables, "upper")};
  int64_t n = 0;
  for (const Tensor& t : values) n += t.size();
  check_replicated(objective.graph(), layout, pack(values, n), "start values");
  check_replicated(objective.graph(), layout, box.lower, "lower bounds");
  check_replicated(objective.graph(), layout, box.upper, "upper bounds");
  return run(objective,
             variables,
             values,
             feeds,
             [&](const Objective& f, Eigen::VectorXd& x, CommContext* comm) {
               return lbfgsb(f, x, box, options, comm, layout);
             });
}

}  // namespace adgraph::optim
