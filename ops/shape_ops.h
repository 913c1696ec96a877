// Shape ops: reshape, slicing, padding and concatenation along an axis.
#pragma once

#include <vector>

#include "core/graph.h"

namespace adgraph {

// Same elements under `shape`; one extent may be -1 (inferred).
Value reshape(Value x, Shape shape);
// Elements [begin, end) of x along `axis` (negative axes count from the
// end); 0 <= begin <= end <= extent.
Value slice(Value x, int64_t axis, int64_t begin, int64_t end);
// x with `before` and `after` entries of `value` added along `axis`.
Value pad(
    Value x, int64_t axis, int64_t before, int64_t after, double value = 0.0);
// Tensors joined along `axis`; all other extents must agree.
Value concat(const std::vector<Value>& xs, int64_t axis);

void register_shape_ops();

}  // namespace adgraph
