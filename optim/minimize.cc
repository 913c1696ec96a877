#include "optim/minimize.h"

#include "core/error.h"
#include "core/gradients.h"

namespace adgraph::optim {

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

LbfgsSummary minimize(Value objective,
                      const std::vector<Value>& variables,
                      std::vector<Tensor>& values,
                      const FeedMap& feeds,
                      const LbfgsOptions& options,
                      Layout layout) {
  check_problem(objective, variables, values);
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

  Eigen::VectorXd x(n);
  int64_t offset = 0;
  for (const Tensor& t : values) {
    x.segment(offset, t.size()) = t.array().matrix();
    offset += t.size();
  }
  LbfgsSummary summary = lbfgs(f, x, options, g.comm(), layout);
  unpack(x);
  for (std::size_t k = 0; k < variables.size(); ++k)
    values[k] = at[variables[k]];
  return summary;
}

}  // namespace adgraph::optim
