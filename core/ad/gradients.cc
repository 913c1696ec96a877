#include "core/ad/gradients.h"

#include <map>
#include <optional>
#include <utility>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/op.h"

namespace adgraph {
namespace {

// The cotangents of ys, checked; ones where none is given.
Values seed_cotangents(Graph& g,
                       const Values& ys,
                       Values grad_ys,
                       const std::vector<Value>& xs) {
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
  return grad_ys;
}

// One reverse sweep over a graph: cotangents flow from ys to xs, node by
// node in reverse creation order, each node's gradient builder adding the
// adjoint nodes.
class ReverseSweep {
 public:
  ReverseSweep(Graph& g,
               const Value& y,
               const std::vector<Value>& xs,
               bool pair_communication)
      : g_(g),
        y_(y),
        pair_communication_(pair_communication),
        top_(g.num_nodes() - 1),
        from_x_(top_ + 1, 0),
        from_y_(top_ + 1, 0) {
    mark_from_x(xs);
  }

  // Adds a cotangent contribution to `target`; `real` when it descends
  // from y's rather than only from an off-path node's zero cotangent.
  void accumulate(const Value& target, const Value& contribution, bool real) {
    auto key = std::make_pair(target.node_id(), target.output());
    auto it = adjoint_.find(key);
    if (it == adjoint_.end()) {
      adjoint_.emplace(key, contribution);
    } else {
      it->second = adgraph::accumulate(it->second, contribution);
    }
    if (real) from_y_[target.node_id()] = 1;
  }

  // Reverse creation order is a reverse topological order, and it creates
  // the adjoints of communication nodes in the reverse of their forward
  // order, which is what keeps the adjoint message order deadlock-free.
  //
  // Every communication node of the graph gets its adjoint, even off the
  // path from xs to y (with a zero cotangent): its partner rank may be on
  // such a path, and the adjoint messages must pair up on every rank. A
  // run executes the collectives it needs and every older point-to-point
  // node (core/exec/session.h), so those messages pair up too. A loop off
  // the path is the exception: its messages pair up inside its own bodies.
  void sweep() {
    for (int id = top_; id >= 0; --id) visit(id);
  }

  // The cotangent of each x (zeros where none arrived).
  std::vector<Value> result(const std::vector<Value>& xs) const {
    std::vector<Value> out;
    for (const Value& x : xs) {
      auto it = adjoint_.find({x.node_id(), x.output()});
      out.push_back(it != adjoint_.end() ? it->second : zeros(g_, x.shape()));
    }
    return out;
  }

 private:
  void mark_from_x(const std::vector<Value>& xs);
  void propagate_from_x(int from);
  void visit(int id);
  // Partial sums a builder may fold into its own result (not for a value
  // that feeds two of the node's inputs: both could fold it in).
  Values partial_sums(const Node& node, const std::vector<bool>& needed) const;
  void take(const Node& node,
            int id,
            const GradientContext& context,
            const Values& input_grads);

  Graph& g_;
  const Value& y_;
  const bool pair_communication_;
  // Nodes newer than y cannot affect it, but communication nodes among
  // them still get adjoints, so the walk covers the whole graph.
  const int top_;
  // Nodes that depend on some x through data edges.
  std::vector<char> from_x_;
  // Nodes reached by a cotangent that descends from y's.
  std::vector<char> from_y_;
  // Cotangent contributions per (node, output), summed as they arrive.
  std::map<std::pair<int, int>, Value> adjoint_;
};

void ReverseSweep::propagate_from_x(int from) {
  for (int id = from; id <= top_; ++id) {
    for (const Value& in : g_.node(id).inputs) {
      if (from_x_[in.node_id()]) from_x_[id] = 1;
    }
  }
}

void ReverseSweep::mark_from_x(const std::vector<Value>& xs) {
  int lowest = top_ + 1;
  for (const Value& x : xs) {
    if (x.node_id() <= top_) {
      from_x_[x.node_id()] = 1;
      lowest = std::min(lowest, x.node_id());
    }
  }
  propagate_from_x(lowest);
  // What a point-to-point node delivers may come from another rank's x
  // (a receive whose shape template is a constant), so its outputs count
  // as depending on x: the cotangents of received values must reach the
  // adjoint messages. (Every-rank nodes depend on x alike on every rank;
  // loops pair their messages inside their bodies.)
  if (!pair_communication_) return;
  for (int id = 0; id <= top_; ++id) {
    const Node& n = g_.node(id);
    if (n.communication && !n.every_rank && !n.loop) from_x_[id] = 1;
  }
  propagate_from_x(0);
}

Values ReverseSweep::partial_sums(const Node& node,
                                  const std::vector<bool>& needed) const {
  Values partial(node.inputs.size());
  for (std::size_t i = 0; i < node.inputs.size(); ++i) {
    const Value& in = node.inputs[i];
    bool repeated = false;
    for (std::size_t k = 0; k < node.inputs.size(); ++k) {
      repeated = repeated || (k != i && node.inputs[k] == in);
    }
    auto it = adjoint_.find({in.node_id(), in.output()});
    if (!repeated && it != adjoint_.end() && needed[i]) partial[i] = it->second;
  }
  return partial;
}

void ReverseSweep::visit(int id) {
  const Node& node = g_.node(id);
  bool any_input_from_x = false;
  for (const Value& in : node.inputs) {
    any_input_from_x = any_input_from_x || from_x_[in.node_id()];
  }
  const bool communicates = pair_communication_ && node.communication &&
                            !node.inputs.empty() &&
                            !(node.loop && !any_input_from_x);
  if (!any_input_from_x && !communicates) return;
  const int n_out = node.num_outputs();
  Values outputs, output_grads;
  bool any_grad = false;
  for (int k = 0; k < n_out; ++k) {
    outputs.emplace_back(&g_, id, k);
    auto it = adjoint_.find({id, k});
    any_grad = any_grad || it != adjoint_.end();
    output_grads.push_back(it != adjoint_.end() ? it->second : Value());
  }
  // A cotangent reached the node (so it matters to y) and x reaches it.
  const bool on_path = any_grad && any_input_from_x;
  if (!on_path && !communicates) return;
  if (!node.op->gradient) {
    if (!on_path || !from_y_[id]) return;
    throw GraphError("op has no gradient, but \"" + y_.name() +
                         "\" is differentiated through it",
                     node.name,
                     node.op_name(),
                     "gradient");
  }
  for (int k = 0; k < n_out; ++k) {
    if (!output_grads[k].valid()) {
      output_grads[k] = zeros(g_, node.output_shapes[k]);
    }
  }
  std::vector<bool> needed;
  for (const Value& in : node.inputs)
    needed.push_back(from_x_[in.node_id()] != 0);
  Values partial = partial_sums(node, needed);
  GradientContext context(node, outputs, output_grads, std::move(needed));
  context.set_accumulated(std::move(partial));
  // Adjoint messages travel on the node's communicator.
  std::optional<CommScope> scope;
  if (node.comm) scope.emplace(g_, node.comm);
  Values input_grads = node.op->gradient(context);
  scope.reset();
  take(node, id, context, input_grads);
}

// Checks what a gradient builder returned and adds it to its inputs'
// cotangents.
void ReverseSweep::take(const Node& node,
                        int id,
                        const GradientContext& context,
                        const Values& input_grads) {
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
    if (!from_x_[in.node_id()] && !in.node().op->request) continue;
    if (input_grads[i].shape() != in.shape()) {
      throw ShapeError("gradient builder returned shape " +
                           shape_string(input_grads[i].shape()) +
                           " for an input of shape " + shape_string(in.shape()),
                       node.name,
                       node.op_name(),
                       "gradient of input " + std::to_string(i));
    }
    if (context.absorbed(i)) {
      adjoint_[{in.node_id(), in.output()}] = input_grads[i];
      if (from_y_[id]) from_y_[in.node_id()] = 1;
    } else {
      accumulate(in, input_grads[i], from_y_[id]);
    }
  }
}

std::vector<Value> reverse_sweep(const Values& ys,
                                 Values grad_ys,
                                 const std::vector<Value>& xs,
                                 const Values& initial,
                                 bool pair_communication,
                                 bool wait) {
  if (ys.empty() || !ys[0].valid())
    throw GraphError("gradients() of an invalid value");
  Graph& g = ys[0].graph();
  grad_ys = seed_cotangents(g, ys, std::move(grad_ys), xs);
  ReverseSweep sweep(g, ys[0], xs, pair_communication);
  for (std::size_t k = 0; k < ys.size(); ++k)
    sweep.accumulate(ys[k], grad_ys[k], true);
  for (std::size_t i = 0; i < initial.size() && i < xs.size(); ++i) {
    if (initial[i].valid()) sweep.accumulate(xs[i], initial[i], true);
  }
  const int last_forward_communication = g.last_communication();
  sweep.sweep();
  std::vector<Value> result = sweep.result(xs);
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
