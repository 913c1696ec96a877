#include "core/ad/gradients.h"

#include <map>
#include <optional>
#include <utility>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/op.h"

namespace adgraph {
namespace {

std::vector<Value> reverse_sweep(const Values& ys,
                                 Values grad_ys,
                                 const std::vector<Value>& xs,
                                 const Values& initial,
                                 bool pair_communication,
                                 bool wait) {
  if (ys.empty() || !ys[0].valid())
    throw GraphError("gradients() of an invalid value");
  Graph& g = ys[0].graph();
  const Value& y = ys[0];
  for (const Value& x : xs) {
    if (!x.valid() || &x.graph() != &g) {
      throw GraphError("gradients() with respect to a value of another graph",
                       y.name());
    }
  }
  grad_ys.resize(ys.size());
  for (std::size_t k = 0; k < ys.size(); ++k) {
    const Value& yk = ys[k];
    Value& gk = grad_ys[k];
    if (!yk.valid() || &yk.graph() != &g)
      throw GraphError("gradients() of a value of another graph", y.name());
    if (gk.valid()) {
      if (&gk.graph() != &g || gk.shape() != yk.shape()) {
        throw ShapeError("cotangent of shape " + shape_string(gk.shape()) +
                             " for a value of shape " +
                             shape_string(yk.shape()),
                         yk.name(),
                         yk.node().op_name(),
                         "grad_y");
      }
    } else {
      gk = ones(g, yk.shape());
    }
  }

  // Nodes newer than y cannot affect it, but communication nodes among them
  // still get adjoints (see below), so the walk covers the whole graph.
  const int top = g.num_nodes() - 1;
  // Nodes that depend on some x through data edges.
  std::vector<char> from_x(top + 1, 0);
  int lowest = top + 1;
  for (const Value& x : xs) {
    if (x.node_id() <= top) {
      from_x[x.node_id()] = 1;
      lowest = std::min(lowest, x.node_id());
    }
  }
  for (int id = lowest; id <= top; ++id) {
    for (const Value& in : g.node(id).inputs) {
      if (from_x[in.node_id()]) from_x[id] = 1;
    }
  }
  // What a point-to-point node delivers may come from another rank's x
  // (a receive whose shape template is a constant), so its outputs count as
  // depending on x: the cotangents of received values must reach the
  // adjoint messages. (Every-rank nodes depend on x alike on every rank;
  // loops pair their messages inside their bodies.)
  if (pair_communication) {
    for (int id = 0; id <= top; ++id) {
      const Node& n = g.node(id);
      if (n.communication && !n.every_rank && !n.loop) from_x[id] = 1;
    }
    for (int id = 0; id <= top; ++id) {
      for (const Value& in : g.node(id).inputs) {
        if (from_x[in.node_id()]) from_x[id] = 1;
      }
    }
  }

  // Cotangent contributions per (node, output), summed as they arrive.
  std::map<std::pair<int, int>, Value> adjoint;
  // Nodes reached by a cotangent that descends from y's (rather than only
  // from the zero cotangent of an off-path communication node).
  std::vector<char> from_y(top + 1, 0);
  auto accumulate =
      [&](const Value& target, const Value& contribution, bool real) {
        auto key = std::make_pair(target.node_id(), target.output());
        auto it = adjoint.find(key);
        if (it == adjoint.end()) {
          adjoint.emplace(key, contribution);
        } else {
          it->second = adgraph::accumulate(it->second, contribution);
        }
        if (real) from_y[target.node_id()] = 1;
      };
  for (std::size_t k = 0; k < ys.size(); ++k)
    accumulate(ys[k], grad_ys[k], true);
  for (std::size_t i = 0; i < initial.size() && i < xs.size(); ++i) {
    if (initial[i].valid()) accumulate(xs[i], initial[i], true);
  }

  // Reverse creation order is a reverse topological order, and it creates
  // the adjoints of communication nodes in the reverse of their forward
  // order, which is what keeps the adjoint message order deadlock-free.
  //
  // Every communication node of the graph gets its adjoint, even off the
  // path from xs to y (with a zero cotangent): its partner rank may be on
  // such a path, and the adjoint messages must pair up on every rank. A run
  // executes the collectives it needs and every older point-to-point node
  // (core/exec/session.h), so those messages pair up too. A loop off the path
  // is the exception: its messages pair up inside its own bodies.
  const int last_forward_communication = g.last_communication();
  for (int id = top; id >= 0; --id) {
    const Node& node = g.node(id);
    bool any_input_from_x = false;
    for (const Value& in : node.inputs) {
      any_input_from_x = any_input_from_x || from_x[in.node_id()];
    }
    const bool communicates = pair_communication && node.communication &&
                              !node.inputs.empty() &&
                              !(node.loop && !any_input_from_x);
    if (!any_input_from_x && !communicates) continue;
    const int n_out = node.num_outputs();
    Values outputs, output_grads;
    bool any_grad = false;
    for (int k = 0; k < n_out; ++k) {
      outputs.emplace_back(&g, id, k);
      auto it = adjoint.find({id, k});
      any_grad = any_grad || it != adjoint.end();
      output_grads.push_back(it != adjoint.end() ? it->second : Value());
    }
    // A cotangent reached the node (so it matters to y) and x reaches it.
    const bool on_path = any_grad && any_input_from_x;
    if (!on_path && !communicates) continue;
    if (!node.op->gradient) {
      if (!on_path || !from_y[id]) continue;
      throw GraphError("op has no gradient, but \"" + y.name() +
                           "\" is differentiated through it",
                       node.name,
                       node.op_name(),
                       "gradient");
    }
    for (int k = 0; k < n_out; ++k) {
      if (!output_grads[k].valid()) {
        output_grads[k] = zeros(g, node.output_shapes[k]);
      }
    }
    std::vector<bool> needed;
    for (const Value& in : node.inputs)
      needed.push_back(from_x[in.node_id()] != 0);
    // Partial sums a builder may fold into its own result (not for a value
    // that feeds two of the node's inputs: both could fold it in).
    Values partial(node.inputs.size());
    for (std::size_t i = 0; i < node.inputs.size(); ++i) {
      const Value& in = node.inputs[i];
      bool repeated = false;
      for (std::size_t k = 0; k < node.inputs.size(); ++k) {
        repeated = repeated || (k != i && node.inputs[k] == in);
      }
      auto it = adjoint.find({in.node_id(), in.output()});
      if (!repeated && it != adjoint.end() && needed[i])
        partial[i] = it->second;
    }
    GradientContext context(node, outputs, output_grads, std::move(needed));
    context.set_accumulated(std::move(partial));
    // Adjoint messages travel on the node's communicator.
    std::optional<CommScope> scope;
    if (node.comm) scope.emplace(g, node.comm);
    Values input_grads = node.op->gradient(context);
    scope.reset();
    if (input_grads.size() != node.inputs.size()) {
      throw GraphError("gradient builder returned " +
                           std::to_string(input_grads.size()) + " values for " +
                           std::to_string(node.inputs.size()) + " inputs",
                       node.name,
                       node.op_name(),
                       "gradient");
    }
    for (std::size_t i = 0; i < input_grads.size(); ++i) {
      const Value& in = node.inputs[i];
      if (context.absorbed(i) && !input_grads[i].valid()) {
        throw GraphError(
            "gradient builder absorbed the accumulated cotangent "
            "of input " +
                std::to_string(i) + " but returned none for it",
            node.name,
            node.op_name(),
            "gradient");
      }
      if (!input_grads[i].valid()) continue;
      if (!from_x[in.node_id()] && !in.node().op->request) continue;
      if (input_grads[i].shape() != in.shape()) {
        throw ShapeError("gradient builder returned shape " +
                             shape_string(input_grads[i].shape()) +
                             " for an input of shape " +
                             shape_string(in.shape()),
                         node.name,
                         node.op_name(),
                         "gradient of input " + std::to_string(i));
      }
      if (context.absorbed(i)) {
        adjoint[{in.node_id(), in.output()}] = input_grads[i];
        if (from_y[id]) from_y[in.node_id()] = 1;
      } else {
        accumulate(in, input_grads[i], from_y[id]);
      }
    }
  }

  std::vector<Value> result;
  for (const Value& x : xs) {
    auto it = adjoint.find({x.node_id(), x.output()});
    result.push_back(it != adjoint.end() ? it->second : zeros(g, x.shape()));
  }
  if (wait) detail::wait_for_messages(g, last_forward_communication, result);
  return result;
}

}  // namespace

std::vector<Value> gradients(Value y,
                             const std::vector<Value>& xs,
                             Value grad_y) {
  return reverse_sweep({y}, {grad_y}, xs, {}, true, true);
}

std::vector<Value> detail::local_gradients(const Values& ys,
                                           const Values& grad_ys,
                                           const std::vector<Value>& xs) {
  return reverse_sweep(ys, grad_ys, xs, {}, false, true);
}

std::vector<Value> detail::body_gradients(const Values& ys,
                                          const Values& grad_ys,
                                          const std::vector<Value>& xs,
                                          const Values& initial) {
  return reverse_sweep(ys, grad_ys, xs, initial, true, false);
}

void detail::wait_for_messages(Graph& g,
                               int last_before,
                               std::vector<Value>& results) {
  if (g.last_communication() == last_before) return;
  const Value last(&g, g.last_communication(), 0);
  for (Value& r : results) {
    NodeOptions options;
    options.after = {last};
    r = g.add_node(
        "identity", {r}, nlohmann::json::object(), std::move(options));
  }
}

Value gradient(Value y, Value x, Value grad_y) {
  return gradients(y, {x}, grad_y)[0];
}

}  // namespace adgraph
