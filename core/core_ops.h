// The core's own ops: the sources (nodes without data inputs), identity,
// stop_gradient and accumulate. The graph, the gradient and tangent builders
// and the session build these by name; every other op family lives in a layer
// above and registers itself with register_op.
#pragma once

#include <string>

#include "core/graph.h"

namespace adgraph {

class ShapeContext;

// A tensor of `shape` filled with `value`.
Value fill(Graph& graph, Shape shape, double value);
Value zeros(Graph& graph, Shape shape);
Value ones(Graph& graph, Shape shape);
// Zeros of x's shape; x is an input only for its shape (zero derivative).
Value zeros_like(Value x);
// y = x (a named copy; useful as a graph output).
Value identity(Value x);
// y = x with no derivative: no cotangent flows back into x and its tangent
// is zero (jax.lax.stop_gradient). The value of a gradient, a constant of
// a fit, used as data: the builders never differentiate what made x, so x
// may come from a node without a gradient rule (a loop's adjoint).
Value stop_gradient(Value x);
// y = a + b for two tensors of one shape: how the derivative builders sum
// contributions (ops/elementwise.h's `add` also broadcasts).
Value accumulate(Value a, Value b);

// Graph::placeholder and Graph::constant build the other two source ops.

// Registers the ops above, placeholder and constant (op.cc calls it before
// any other family registers).
// A shape rule's check of two inputs of one shape: inputs 0 and 1's shape,
// else the ShapeError names `second` (input 1, e.g. "input \"b\"").
Shape equal_input_shapes(const ShapeContext& c, const std::string& second);

void register_core_ops();

}  // namespace adgraph
