// Source ops: nodes without data inputs (and zeros_like).
#pragma once

#include "core/graph.h"

namespace adgraph {

// A tensor of `shape` filled with `value`.
Value fill(Graph& graph, Shape shape, double value);
Value zeros(Graph& graph, Shape shape);
Value ones(Graph& graph, Shape shape);
// Zeros of x's shape; x is an input only for its shape (zero derivative).
Value zeros_like(Value x);

// Graph::placeholder and Graph::constant build the other two source ops.

class OpRegistry;
void register_source_ops(OpRegistry& registry);

}  // namespace adgraph
