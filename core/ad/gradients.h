// Symbolic reverse-mode differentiation.
#pragma once

#include <vector>

#include "core/graph.h"

namespace adgraph {

// Adds the adjoint graph of `y` to y's graph and returns, for each x in
// `xs`, a handle to ∂(Σ_k grad_y_k · y_k)/∂x with x's shape.
//
// - `grad_y` is the cotangent of y; an invalid Value means ones of y's shape
//   (so a scalar y gives the ordinary gradient).
// - Contributions through several paths are summed; an x that y does not
//   depend on gets zeros of its shape.
// - Adjoint nodes are ordinary nodes: they prune, order and communicate like
//   forward nodes, and may themselves be differentiated (higher derivatives).
// - With communication ops, the convention is "the loss is the sum of the
//   per-rank losses": the result on rank r is ∂(Σ_q y_q)/∂x_r.
//
// Throws GraphError naming the node when an op on a path from an x to y has
// no gradient, and when a value belongs to another graph.
std::vector<Value> gradients(Value y,
                             const std::vector<Value>& xs,
                             Value grad_y = {});

// Single-variable convenience form.
Value gradient(Value y, Value x, Value grad_y = {});

namespace detail {
// The cotangents of xs for Σ_k ⟨grad_ys_k, ys_k⟩ (a vector-Jacobian
// product), restricted to the paths from xs to the ys: no adjoints for
// communication nodes off those paths and no waiting for them. Used where a
// purely local adjoint is needed (jvp()'s transpose-of-the-adjoint rule).
std::vector<Value> local_gradients(const std::vector<Value>& ys,
                                   const std::vector<Value>& grad_ys,
                                   const std::vector<Value>& xs);

// The reverse sweep of a loop body (core/loops/loop.cc): the cotangents of xs
// for Σ_k ⟨grad_ys_k, ys_k⟩, plus initial[i] (when valid) added to x_i's
// cotangent first, where gradient builders may fold it into their own pass
// (GradientContext::accumulated). Every communication node gets its adjoint;
// the results do not wait for them (a body runs all of its communication
// nodes every step).
std::vector<Value> body_gradients(const std::vector<Value>& ys,
                                  const std::vector<Value>& grad_ys,
                                  const std::vector<Value>& xs,
                                  const std::vector<Value>& initial);

// Derivative messages (adjoint or tangent) are side effects: a send feeds
// nothing on its own rank. When communication nodes were added after node
// `last_before`, wraps each result in an identity that runs after the
// newest of them, so fetching any result runs the whole message chain.
void wait_for_messages(Graph& g, int last_before, std::vector<Value>& results);
}  // namespace detail

}  // namespace adgraph
