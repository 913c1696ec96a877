#include "core/ad/jvp.h"

#include <algorithm>
#include <map>
#include <optional>
#include <utility>

#include "core/ad/gradients.h"
#include "core/core_ops.h"
#include "core/error.h"
#include "core/op.h"

namespace adgraph {
namespace {

// The tangent of a local node whose op has a gradient but no tangent rule:
// the transpose of its adjoint. With dummy cotangents w of the outputs, the
// adjoint gives x̄_i(w), linear in w, so ẏ = ∂(Σ_i ⟨x̄_i(w), ẋ_i⟩)/∂w: the
// reverse sweep of the adjoint seeded with the tangents ẋ_i. Needs the op's
// adjoint to be differentiable.
Values transposed_adjoint(const Node& node,
                          const Values& outputs,
                          const Values& input_tangents) {
  Graph& g = outputs[0].graph();
  Values w;
  for (const Shape& shape : node.output_shapes) {
    w.push_back(zeros(g, shape));
  }
  std::vector<bool> needed;
  for (const Value& t : input_tangents) needed.push_back(t.valid());
  Values adjoints =
      node.op->gradient(GradientContext(node, outputs, w, std::move(needed)));
  Values ys, seeds;
  for (std::size_t i = 0; i < input_tangents.size(); ++i) {
    if (!input_tangents[i].valid() || i >= adjoints.size() ||
        !adjoints[i].valid()) {
      continue;
    }
    ys.push_back(adjoints[i]);
    seeds.push_back(input_tangents[i]);
  }
  if (ys.empty()) return Values(w.size());
  return detail::local_gradients(ys, seeds, w);
}

}  // namespace

namespace {

// Throws unless ys, xs and their tangents are values of g of matching
// shapes.
void check_arguments(const Graph& g,
                     const std::vector<Value>& ys,
                     const std::vector<Value>& xs,
                     const std::vector<Value>& tangents) {
  for (const Value& y : ys) {
    if (!y.valid() || &y.graph() != &g) {
      throw GraphError("jvp() of a value of another graph", ys[0].name());
    }
  }
  if (xs.size() != tangents.size()) {
    throw GraphError("jvp() got " + std::to_string(xs.size()) + " inputs but " +
                     std::to_string(tangents.size()) + " tangents");
  }
  for (std::size_t k = 0; k < xs.size(); ++k) {
    const Value &x = xs[k], &t = tangents[k];
    if (!x.valid() || &x.graph() != &g || !t.valid() || &t.graph() != &g) {
      throw GraphError("jvp() with respect to a value of another graph");
    }
    if (t.shape() != x.shape()) {
      throw ShapeError("tangent of shape " + shape_string(t.shape()) +
                           " for a value of shape " + shape_string(x.shape()),
                       x.name(),
                       x.node().op_name(),
                       "tangent");
    }
  }
}

// The nodes (up to `top`) the ys depend on through data edges.
std::vector<char> needed_for(const Graph& g,
                             const std::vector<Value>& ys,
                             int top) {
  std::vector<char> to_y(top + 1, 0);
  for (const Value& y : ys) to_y[y.node_id()] = 1;
  // A point-to-point message may reach a y on another rank even where the
  // node reaches none here (a rank-dependent graph): what such a node sends
  // (its inputs) counts as needed. Every-rank nodes reach the ys on every
  // rank alike, and loops pair their messages inside their bodies.
  for (int id = 0; id <= top; ++id) {
    const Node& n = g.node(id);
    if (!n.communication || n.every_rank || n.loop) continue;
    for (const Value& in : n.inputs) to_y[in.node_id()] = 1;
  }
  for (int id = top; id >= 0; --id) {
    if (!to_y[id]) continue;
    for (const Value& in : g.node(id).inputs) to_y[in.node_id()] = 1;
  }
  return to_y;
}

// Throws unless a tangent rule returned one value per output, each of its
// output's shape.
void check_tangents(const Node& node, const Values& out) {
  const int n_out = node.num_outputs();
  if (static_cast<int>(out.size()) != n_out) {
    throw GraphError("tangent rule returned " + std::to_string(out.size()) +
                         " values for " + std::to_string(n_out) + " outputs",
                     node.name,
                     node.op_name(),
                     "tangent");
  }
  for (int k = 0; k < n_out; ++k) {
    if (!out[k].valid()) continue;
    if (out[k].shape() != node.output_shapes[k]) {
      throw ShapeError(
          "tangent rule returned shape " + shape_string(out[k].shape()) +
              " for an output of shape " + shape_string(node.output_shapes[k]),
          node.name,
          node.op_name(),
          "tangent of output " + std::to_string(k));
    }
  }
}

// The given tangents of the xs by (node, output), summed where an x
// repeats; marks the xs' nodes in is_x.
std::map<std::pair<int, int>, Value> seed_tangents(
    const std::vector<Value>& xs,
    const std::vector<Value>& tangents,
    std::vector<char>& is_x) {
  std::map<std::pair<int, int>, Value> tangent;
  for (std::size_t k = 0; k < xs.size(); ++k) {
    is_x[xs[k].node_id()] = 1;
    auto key = std::make_pair(xs[k].node_id(), xs[k].output());
    auto it = tangent.find(key);
    if (it == tangent.end()) {
      tangent.emplace(key, tangents[k]);
    } else {
      it->second = accumulate(it->second, tangents[k]);
    }
  }
  return tangent;
}

std::vector<Value> forward_sweep(const std::vector<Value>& ys,
                                 const std::vector<Value>& xs,
                                 const std::vector<Value>& tangents,
                                 bool wait) {
  if (ys.empty() || !ys[0].valid()) {
    throw GraphError("jvp() needs at least one valid output");
  }
  Graph& g = ys[0].graph();
  check_arguments(g, ys, xs, tangents);

  const int top = g.num_nodes() - 1;
  // Nodes the ys depend on through data edges.
  const std::vector<char> to_y = needed_for(g, ys, top);

  std::vector<char> is_x(top + 1, 0);
  std::map<std::pair<int, int>, Value> tangent =
      seed_tangents(xs, tangents, is_x);

  // Creation order is topological, and it creates the tangents of
  // communication nodes in their forward order, which pairs the tangent
  // messages as the forward ones pair.
  const int last_forward_communication = g.last_communication();
  for (int id = 0; id <= top; ++id) {
    const Node& node = g.node(id);
    // A loop off the path to the ys is skipped: its messages pair up inside
    // its own body (see core/loops/loop.h).
    const bool communicates =
        node.communication && !node.inputs.empty() && !(node.loop && !to_y[id]);
    // An x keeps its given tangent; a communicating x still builds its
    // tangent node so that the partners' messages pair up.
    if (is_x[id] && !communicates) continue;
    Values input_tangents;
    bool any_tangent = false;
    for (const Value& in : node.inputs) {
      auto it = tangent.find({in.node_id(), in.output()});
      any_tangent = any_tangent || it != tangent.end();
      input_tangents.push_back(it != tangent.end() ? it->second : Value());
    }
    if (!communicates && !(any_tangent && to_y[id])) continue;
    const int n_out = node.num_outputs();
    Values outputs;
    for (int k = 0; k < n_out; ++k) outputs.emplace_back(&g, id, k);
    Values out;
    if (node.op->tangent) {
      std::optional<CommScope> scope;  // tangent messages: same communicator
      if (node.comm) scope.emplace(g, node.comm);
      out = node.op->tangent(
          TangentContext(node, std::move(outputs), std::move(input_tangents)));
    } else if (!any_tangent || !to_y[id]) {
      // A communication node without a rule is fine while no tangent that
      // matters flows through it (e.g. the helpers of an adjoint).
      continue;
    } else if (node.op->gradient && !node.communication) {
      out = transposed_adjoint(node, outputs, input_tangents);
    } else {
      throw GraphError(
          "op has no tangent rule" +
              std::string(node.communication ? "" : " and no gradient") +
              ", but jvp() of \"" + ys[0].name() + "\" goes through it",
          node.name,
          node.op_name(),
          "tangent");
    }
    check_tangents(node, out);
    for (int k = 0; k < n_out; ++k) {
      if (!out[k].valid()) continue;
      tangent.emplace(std::make_pair(id, k), out[k]);  // keeps an x's seed
    }
  }

  std::vector<Value> result;
  for (const Value& y : ys) {
    auto it = tangent.find({y.node_id(), y.output()});
    result.push_back(it != tangent.end() ? it->second : zeros(g, y.shape()));
  }
  if (wait) detail::wait_for_messages(g, last_forward_communication, result);
  return result;
}

}  // namespace

std::vector<Value> jvp(const std::vector<Value>& ys,
                       const std::vector<Value>& xs,
                       const std::vector<Value>& tangents) {
  return forward_sweep(ys, xs, tangents, true);
}

std::vector<Value> detail::body_jvp(const std::vector<Value>& ys,
                                    const std::vector<Value>& xs,
                                    const std::vector<Value>& tangents) {
  return forward_sweep(ys, xs, tangents, false);
}

Value jvp(Value y, Value x, Value tangent) {
  return jvp(std::vector<Value>{y}, {x}, {tangent})[0];
}

}  // namespace adgraph
