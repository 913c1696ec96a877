// Element-wise ops. The ops of two or three tensors (add … pow, where,
// maximum, minimum, the comparisons) broadcast as NumPy does: shapes are
// aligned at their last axes, a missing axis counts as extent 1, and an
// extent of 1 stretches to the other operands' extent; the result has, on
// each axis, the largest extent. So [3, 120, 120] * [120, 120] is
// [3, 120, 120], [3, 1, 5] + [1, 4, 1] is [3, 4, 5], and a scalar `{}`
// goes with any shape. Other shapes throw ShapeError when the node is
// built, naming the input: `input "b": shape [2, 4] does not broadcast
// with [3, 4]`.
//
// Gradients sum the cotangent back to each operand's shape: a one-element
// operand's exactly (as sum does), any other's along its stretched axes in
// index order (sum_to), so the bits are the same on every run. Tangents
// are broadcast to the result's shape.
#pragma once

#include "core/graph.h"

namespace adgraph {

Value add(Value a, Value b);
Value sub(Value a, Value b);
Value mul(Value a, Value b);
Value div(Value a, Value b);
// a^b with a tensor exponent; ∂/∂b uses log(a), so a must be > 0 there.
Value pow(Value a, Value b);
// a^p with a constant exponent.
Value pow(Value a, double p);
Value neg(Value x);
Value exp(Value x);
Value log(Value x);
Value sqrt(Value x);
Value square(Value x);
Value sin(Value x);
Value cos(Value x);
Value tanh(Value x);
// |x|; its derivative at 0 is taken as 0.
Value abs(Value x);
// -1, 0 or 1; its derivative is zero.
Value sign(Value x);

// a where c != 0, else b (NaN counts as non-zero), element by element.
// Derivatives: ā = where(c, ȳ, 0), b̄ = where(c, 0, ȳ); none in c (a mask:
// the gradient builder returns none for it); ẏ = where(c, ȧ, ḃ).
Value where(Value c, Value a, Value b);
// The larger / smaller of a and b, element by element; NaN where either is
// NaN (as NumPy's maximum and minimum). At ties the derivative goes wholly
// to a: maximum's ā = ȳ where a >= b (else 0) and b̄ = ȳ where a < b;
// minimum's the same with <= and >. (NumPy states no convention; this is
// adgraph's, in reverse and forward mode alike.)
Value maximum(Value a, Value b);
Value minimum(Value a, Value b);
// Comparisons: 1.0 where the relation holds, else 0.0, with IEEE rules
// (NaN compares unequal to everything, so not_equal is 1 there and the
// others 0). Piecewise constant: their gradient and tangent are zero
// (none is built).
Value less(Value a, Value b);
Value less_equal(Value a, Value b);
Value greater(Value a, Value b);
Value greater_equal(Value a, Value b);
Value equal(Value a, Value b);
Value not_equal(Value a, Value b);

Value operator+(Value a, Value b);
Value operator-(Value a, Value b);
Value operator*(Value a, Value b);
Value operator/(Value a, Value b);
Value operator-(Value x);
Value operator+(Value a, double b);
Value operator+(double a, Value b);
Value operator-(Value a, double b);
Value operator-(double a, Value b);
Value operator*(Value a, double b);
Value operator*(double a, Value b);
Value operator/(Value a, double b);
Value operator/(double a, Value b);

// Registers this family's ops; once only: call register_ops_layer().
void register_elementwise_ops();

// The ops layer's package initialiser: registers its four families
// (element-wise, reductions, shape ops, linear algebra) and the layers
// below, once per process, thread-safe, returning at once after the first
// call. Every node builder of the layer calls it, so a graph built through
// them has the layer's ops; a program that builds ops by name only calls it
// (or register_all_ops()) first.
void register_ops_layer();

}  // namespace adgraph
