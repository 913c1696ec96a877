// Reductions and their broadcasting partners.
#pragma once

#include <vector>

#include "core/graph.h"

namespace adgraph {

// Sum of all elements (scalar result), or over `axes` (those axes removed).
// Axes may be negative (counted from the end); each at most once. The sum
// of all elements is exact and rounded once (core/exact_sum.h, about 1 ns
// an element), so it does not depend on the order of the elements, the
// vector width or the build; sums along axes add each output's terms in
// index order (a fixed order, the same in every build; exact sums of a
// few terms each would cost a data-parallel model 60 % of its time), or,
// with `exact` (attribute "exact": "yes"; "no" is the default), each
// exactly and rounded once.
Value sum(Value x);
Value sum(Value x, std::vector<int64_t> axes, bool exact = false);
// Mean of all elements, or over `axes`: the sum's, divided by the count.
Value mean(Value x);
Value mean(Value x, std::vector<int64_t> axes, bool exact = false);
// Σ a·b over all elements of two tensors of one shape (scalar result):
// each product rounded, their sum exact and rounded once.
Value dot(Value a, Value b);
// NumPy broadcasting of x to `shape` (dimensions aligned at the end; each
// of x's extents is 1 or equal to the target's).
Value broadcast_to(Value x, Shape shape);
// The adjoint of broadcast_to: sums x down to `shape`, which must broadcast
// to x's shape.
Value sum_to(Value x, Shape shape);

void register_reduction_ops();

}  // namespace adgraph
