// Element-wise ops. Binary ops take two tensors of one shape, or one
// one-element operand (a scalar `{}` or shape [1]) and a tensor of any shape
// whose rank is at least the scalar's ("scalar ⊕ tensor" broadcasting). The
// result has the larger shape. Shape mismatches throw ShapeError when the
// node is built.
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

void register_elementwise_ops();

}  // namespace adgraph
