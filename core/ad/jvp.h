// Symbolic forward-mode differentiation (directional derivatives).
#pragma once

#include <vector>

#include "core/graph.h"

namespace adgraph {

// Adds the tangent graph of `ys` to their graph and returns, for each y, a
// handle to the directional derivative Σ_k (∂y/∂x_k)·tangents_k, with y's
// shape. Each node's tangent comes from its op's tangent rule
// (OpDef::tangent); a local op with a gradient but no tangent rule (a user
// op) gets the transpose of its adjoint instead, which needs that adjoint to
// be differentiable. The tangent graph is made of ordinary nodes, so it
// prunes, communicates and can be differentiated again (e.g. jvp of a
// gradient is a Hessian-vector product).
//
// - tangents[k] has xs[k]'s shape. xs are independent inputs: a tangent
//   reaching an x from other xs is ignored.
// - A y that depends on no x gets zeros.
// - With communication ops, every communication node of the graph gets its
//   tangent node (exchanging zeros off the path), so the tangent messages
//   pair up on every rank; the results wait for the last of them.
//   Those tangent messages are ordered after every forward message, so a
//   jvp through an unrolled chain of communication keeps the forward values
//   it needs alive until the tangent pass (memory like a gradient run); a
//   loop's tangent is a loop carrying (c, ċ), which keeps no states
//   (core/loops/loop.h), and a local jvp runs each tangent step right after its
//   forward step (the session runs nodes when first needed). Summed over ranks,
//   Σ_r ⟨w_r, jvp(y_r)⟩ = Σ_r ⟨∂(Σ_q ⟨w_q, y_q⟩)/∂x_r, tangent_r⟩: the
//   transpose of gradients().
//
// Throws GraphError naming the node when an op between an x and a y has
// neither a tangent rule nor (for a local op) a gradient, and ShapeError for a
// tangent of the wrong shape.
std::vector<Value> jvp(const std::vector<Value>& ys,
                       const std::vector<Value>& xs,
                       const std::vector<Value>& tangents);

// Single-output, single-input convenience form.
Value jvp(Value y, Value x, Value tangent);

namespace detail {
// jvp() of a loop body (core/loops/loop.cc): the results do not wait for the
// tangent messages (a body runs all of its communication nodes each step).
std::vector<Value> body_jvp(const std::vector<Value>& ys,
                            const std::vector<Value>& xs,
                            const std::vector<Value>& tangents);
}  // namespace detail

}  // namespace adgraph
