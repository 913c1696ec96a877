#include "ops/elementwise.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/loops/loop.h"
#include "core/op.h"
#include "core/tensor.h"
#include "ops/linalg.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

// ---------------------------------------------------------------------------
// Broadcasting: NumPy's broadcast of shapes, and a strided loop over the
// output that hands a kernel runs of contiguous or repeated input elements.

// NumPy's broadcast of two shapes: trailing axes aligned, an extent of 1
// or a missing axis stretched to the other's; nullopt when two extents
// differ otherwise.
inline std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (std::size_t i = 1; i <= out.size(); ++i) {  // i-th axis from the end
    const int64_t x = i <= a.size() ? a[a.size() - i] : 1;
    const int64_t y = i <= b.size() ? b[b.size() - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - i] = x == 1 ? y : x;
  }
  return out;
}

// The loop of a broadcasting element-wise kernel over N inputs: the
// output's axes, outermost first (extents of 1 dropped; neighbours merged
// where every input steps through them as through one axis), and each
// input's stride along each (0 where it is stretched). The last axis is
// the run a kernel does at once, its strides 0 or 1.
template <std::size_t N>
struct BroadcastLoop {
  std::vector<int64_t> extent;
  std::vector<std::array<int64_t, N>> stride;
};

template <std::size_t N>
BroadcastLoop<N> broadcast_loop(const std::array<Shape, N>& in,
                                const Shape& out) {
  std::vector<std::array<int64_t, N>> full(out.size());
  for (std::size_t k = 0; k < N; ++k) {
    const std::size_t lead = out.size() - in[k].size();
    int64_t step = 1;
    for (std::size_t d = out.size(); d-- > 0;) {
      const int64_t e = d < lead ? 1 : in[k][d - lead];
      full[d][k] = e == 1 ? 0 : step;
      step *= e;
    }
  }
  BroadcastLoop<N> loop;
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool joins = !loop.extent.empty();
    for (std::size_t k = 0; joins && k < N; ++k) {
      joins = loop.stride.back()[k] == full[d][k] * out[d];
    }
    if (joins) {
      loop.extent.back() *= out[d];
      loop.stride.back() = full[d];
    } else {
      loop.extent.push_back(out[d]);
      loop.stride.push_back(full[d]);
    }
  }
  if (loop.extent.empty()) {
    loop.extent.push_back(1);
    loop.stride.push_back({});
  }
  for (int64_t s : loop.stride.back()) ADGRAPH_CHECK(s == 0 || s == 1);
  return loop;
}

// Assigns f(runs...) to the n elements at y, where input k's run is its n
// elements at p[k] (stride 1), or its one element there repeated (stride
// 0, an input stretched along the run).
template <std::size_t I, std::size_t N, class F, class... Runs>
void apply_runs(const std::array<const double*, N>& p,
                const std::array<int64_t, N>& stride,
                int64_t n,
                double* y,
                const F& f,
                const Runs&... runs) {
  if constexpr (I == N) {
    ArrayMap(y, n) = f(runs...);
  } else if (stride[I] == 0) {
    apply_runs<I + 1>(
        p, stride, n, y, f, runs..., Eigen::ArrayXd::Constant(n, *p[I]));
  } else {
    apply_runs<I + 1>(p, stride, n, y, f, runs..., ConstArrayMap(p[I], n));
  }
}

// The kernel of `loop`: y = f(inputs...) run by run, the runs in index
// order. The index lives on the stack for up to 8 axes: the kernel
// allocates nothing per run.
template <std::size_t N, class F>
ComputeFn broadcast_kernel(BroadcastLoop<N> loop, F f) {
  return [loop = std::move(loop), f](KernelContext& c) {
    const int outer = static_cast<int>(loop.extent.size()) - 1;
    const int64_t n = loop.extent.back();
    int64_t runs = 1;
    for (int d = 0; d < outer; ++d) runs *= loop.extent[d];
    if (n == 0 || runs == 0) return;
    int64_t inline_index[8] = {};
    std::vector<int64_t> heap_index(outer > 8 ? outer : 0, 0);
    int64_t* index = outer > 8 ? heap_index.data() : inline_index;
    std::array<const double*, N> base, p;
    for (std::size_t k = 0; k < N; ++k) base[k] = c.input(k).data();
    std::array<int64_t, N> offset{};
    double* y = c.output(0).data();
    for (int64_t r = 0; r < runs; ++r, y += n) {
      for (std::size_t k = 0; k < N; ++k) p[k] = base[k] + offset[k];
      apply_runs<0>(p, loop.stride.back(), n, y, f);
      for (int d = outer - 1; d >= 0; --d) {
        for (std::size_t k = 0; k < N; ++k) offset[k] += loop.stride[d][k];
        if (++index[d] < loop.extent[d]) break;
        for (std::size_t k = 0; k < N; ++k)
          offset[k] -= loop.stride[d][k] * loop.extent[d];
        index[d] = 0;
      }
    }
  };
}

// ---------------------------------------------------------------------------
// The element-wise ops.

// The transcendental functions element by element through the C library.
// Eigen's packet versions round differently from it and serve only whole
// packets, the rest of an array going through the library: an element's
// result would then depend on where it falls in its array, that is on
// the shard sizes of a decomposition (issue #36), and on the vector width.
constexpr auto libm_exp = [](double v) { return std::exp(v); };
constexpr auto libm_log = [](double v) { return std::log(v); };
constexpr auto libm_sin = [](double v) { return std::sin(v); };
constexpr auto libm_cos = [](double v) { return std::cos(v); };
constexpr auto libm_tanh = [](double v) { return std::tanh(v); };
constexpr auto libm_pow = [](double a, double b) { return std::pow(a, b); };

// The shape rule of the element-wise ops: all inputs broadcast together,
// or a ShapeError naming the first input that does not broadcast with the
// ones before it.
Shapes broadcast_shape(const ShapeContext& c) {
  Shape out = c.input_shape(0);
  for (int i = 1; i < c.num_inputs(); ++i) {
    const Shape& s = c.input_shape(i);
    std::optional<Shape> joined = broadcast_shapes(out, s);
    if (!joined) {
      c.fail("input \"" + c.node().op->inputs[i] + "\"",
             "shape " + shape_string(s) + " does not broadcast with " +
                 shape_string(out));
    }
    out = std::move(*joined);
  }
  return {out};
}

// Sums a cotangent of the broadcast shape back to an operand's shape: a
// one-element operand's exactly (sum), any other's along its stretched
// axes in index order (sum_to). Either way the same bits on every run.
Value unbroadcast(Value grad, const Shape& shape) {
  if (grad.shape() == shape) return grad;
  const int64_t n = num_elements(shape);
  if (n == num_elements(grad.shape())) return reshape(grad, shape);
  if (n == 1) return reshape(sum(grad), shape);
  return sum_to(grad, shape);
}

// Applies `f` to (array, array), (scalar, array) or (array, scalar): the
// equal-shape and one-element cases, one pass over whole arrays.
template <class F>
void binary_kernel(KernelContext& c, F f) {
  const Tensor& a = c.input(0);
  const Tensor& b = c.input(1);
  ArrayMap y = c.output(0).array();
  if (a.size() == b.size()) {
    y = f(a.array(), b.array());
  } else if (a.size() == 1) {
    y = f(Eigen::ArrayXd::Constant(b.size(), a[0]), b.array());
  } else {
    y = f(a.array(), Eigen::ArrayXd::Constant(a.size(), b[0]));
  }
}

// A binary node's kernel: binary_kernel when each input has y's elements
// or one, else the strided broadcast_kernel.
template <class F>
ComputeFn bind_binary(const Node& n, F f) {
  const Shape& a = n.inputs[0].shape();
  const Shape& b = n.inputs[1].shape();
  const int64_t size = num_elements(n.output_shapes[0]);
  const auto whole = [size](const Shape& s) {
    return num_elements(s) == size || num_elements(s) == 1;
  };
  if (whole(a) && whole(b)) {
    return [f](KernelContext& c) { binary_kernel(c, f); };
  }
  return broadcast_kernel(broadcast_loop<2>({a, b}, n.output_shapes[0]), f);
}

template <class F>
OpDef binary(std::string name,
             std::string doc,
             F f,
             GradientFn gradient,
             TangentFn tangent) {
  OpDef def(std::move(name), std::move(doc), {"a", "b"});
  def.shape = broadcast_shape;
  def.bind = [f](const Node& n) { return bind_binary(n, f); };
  def.in_place = {{0, 0}, {0, 1}};  // element-wise: may overwrite a or b
  def.gradient = std::move(gradient);
  def.tangent = std::move(tangent);
  return def;
}

template <class F>
OpDef unary(std::string name,
            std::string doc,
            F f,
            GradientFn gradient,
            TangentFn tangent) {
  OpDef def(std::move(name), std::move(doc), {"x"});
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [f](KernelContext& c) {
    c.output(0).array() = f(c.input(0).array());
  };
  def.in_place = {{0, 0}};
  def.gradient = std::move(gradient);
  def.tangent = std::move(tangent);
  return def;
}

// A unary op's derivative, written once for both modes: `seed` (a
// cotangent ȳ in reverse mode, a tangent ẋ in forward mode) times ∂y/∂x
// at x with y = f(x).
struct ChainAt {
  Value seed, x, y;
};
using Chain = Value (*)(const ChainAt&);

template <class F>
OpDef unary(std::string name, std::string doc, F f, Chain chain) {
  return unary(
      std::move(name),
      std::move(doc),
      f,
      [chain](const GradientContext& c) {
        return Values{chain({c.grad(), c.input(0), c.output(0)})};
      },
      [chain](const TangentContext& c) {
        return Values{chain({c.tangent(), c.input(0), c.output(0)})};
      });
}

// The tangent of a binary op, ȧ·∂y/∂a + ḃ·∂y/∂b, broadcast to y's shape.
// `da` and `db` build the products from a valid tangent; a zero tangent
// skips its term.
template <class Da, class Db>
Values binary_tangent(const TangentContext& c, Da da, Db db) {
  Value t;
  if (c.tangent(0).valid()) t = da(c.tangent(0));
  if (c.tangent(1).valid()) {
    Value term = db(c.tangent(1));
    t = t.valid() ? t + term : term;
  }
  const Shape& shape = c.output(0).shape();
  if (t.shape() != shape) t = broadcast_to(t, shape);
  return {t};
}

Value binary_node(const char* op, Value a, Value b) {
  register_ops_layer();
  return a.graph().add_node(op, {a, b});
}

Value unary_node(const char* op, Value x) {
  register_ops_layer();
  return x.graph().add_node(op, {x});
}

}  // namespace

Value add(Value a, Value b) { return binary_node("add", a, b); }
Value sub(Value a, Value b) { return binary_node("sub", a, b); }
Value mul(Value a, Value b) { return binary_node("mul", a, b); }
Value div(Value a, Value b) { return binary_node("div", a, b); }
Value pow(Value a, Value b) { return binary_node("pow", a, b); }
Value pow(Value a, double p) {
  register_ops_layer();
  return a.graph().add_node("pow_scalar", {a}, {{"exponent", p}});
}
Value neg(Value x) { return unary_node("neg", x); }
Value exp(Value x) { return unary_node("exp", x); }
Value log(Value x) { return unary_node("log", x); }
Value sqrt(Value x) { return unary_node("sqrt", x); }
Value square(Value x) { return unary_node("square", x); }
Value sin(Value x) { return unary_node("sin", x); }
Value cos(Value x) { return unary_node("cos", x); }
Value tanh(Value x) { return unary_node("tanh", x); }
Value abs(Value x) { return unary_node("abs", x); }
Value sign(Value x) { return unary_node("sign", x); }

Value where(Value c, Value a, Value b) {
  register_ops_layer();
  return c.graph().add_node("where", {c, a, b});
}
Value maximum(Value a, Value b) { return binary_node("maximum", a, b); }
Value minimum(Value a, Value b) { return binary_node("minimum", a, b); }
Value less(Value a, Value b) { return binary_node("less", a, b); }
Value less_equal(Value a, Value b) { return binary_node("less_equal", a, b); }
Value greater(Value a, Value b) { return binary_node("greater", a, b); }
Value greater_equal(Value a, Value b) {
  return binary_node("greater_equal", a, b);
}
Value equal(Value a, Value b) { return binary_node("equal", a, b); }
Value not_equal(Value a, Value b) { return binary_node("not_equal", a, b); }

Value operator+(Value a, Value b) { return add(a, b); }
Value operator-(Value a, Value b) { return sub(a, b); }
Value operator*(Value a, Value b) { return mul(a, b); }
Value operator/(Value a, Value b) { return div(a, b); }
Value operator-(Value x) { return neg(x); }
Value operator+(Value a, double b) { return add(a, a.graph().scalar(b)); }
Value operator+(double a, Value b) { return add(b.graph().scalar(a), b); }
Value operator-(Value a, double b) { return sub(a, a.graph().scalar(b)); }
Value operator-(double a, Value b) { return sub(b.graph().scalar(a), b); }
Value operator*(Value a, double b) { return mul(a, a.graph().scalar(b)); }
Value operator*(double a, Value b) { return mul(b.graph().scalar(a), b); }
Value operator/(Value a, double b) { return div(a, a.graph().scalar(b)); }
Value operator/(double a, Value b) { return div(b.graph().scalar(a), b); }

namespace {

void register_add_op() {
  // y = a + b;  ā += ȳ,  b̄ += ȳ (summed over broadcast)
  register_op(binary(
      "add",
      "y = a + b",
      [](const auto& a, const auto& b) { return a + b; },
      [](const GradientContext& c) {
        return Values{unbroadcast(c.grad(), c.input(0).shape()),
                      unbroadcast(c.grad(), c.input(1).shape())};
      },
      [](const TangentContext& c) {
        return binary_tangent(
            c, [](Value ta) { return ta; }, [](Value tb) { return tb; });
      }));
}

void register_sub_op() {
  // y = a − b;  ā += ȳ,  b̄ −= ȳ
  register_op(binary(
      "sub",
      "y = a - b",
      [](const auto& a, const auto& b) { return a - b; },
      [](const GradientContext& c) {
        return Values{unbroadcast(c.grad(), c.input(0).shape()),
                      unbroadcast(-c.grad(), c.input(1).shape())};
      },
      [](const TangentContext& c) {
        return binary_tangent(
            c, [](Value ta) { return ta; }, [](Value tb) { return -tb; });
      }));
}

void register_mul_op() {
  // y = a·b;  ā += ȳ·b,  b̄ += ȳ·a
  register_op(binary(
      "mul",
      "y = a * b",
      [](const auto& a, const auto& b) { return a * b; },
      [](const GradientContext& c) {
        return Values{unbroadcast(c.grad() * c.input(1), c.input(0).shape()),
                      unbroadcast(c.grad() * c.input(0), c.input(1).shape())};
      },
      [](const TangentContext& c) {
        return binary_tangent(
            c,
            [&](Value ta) { return ta * c.input(1); },
            [&](Value tb) { return c.input(0) * tb; });
      }));
}

void register_div_op() {
  // y = a/b;  ā += ȳ/b,  b̄ −= ȳ·y/b
  register_op(binary(
      "div",
      "y = a / b",
      [](const auto& a, const auto& b) { return a / b; },
      [](const GradientContext& c) {
        Value gb = -(c.grad() * c.output(0) / c.input(1));
        return Values{unbroadcast(c.grad() / c.input(1), c.input(0).shape()),
                      unbroadcast(gb, c.input(1).shape())};
      },
      [](const TangentContext& c) {
        return binary_tangent(
            c,
            [&](Value ta) { return ta / c.input(1); },
            [&](Value tb) { return -(c.output(0) * tb / c.input(1)); });
      }));
}

void register_pow_op() {
  // y = a^b;  ā += ȳ·pow_base_derivative(a, b),  b̄ += ȳ·y·log(a)
  register_op(binary(
      "pow",
      "y = a ^ b (b a tensor; d/db needs a > 0)",
      [](const auto& a, const auto& b) { return a.binaryExpr(b, libm_pow); },
      [](const GradientContext& c) {
        Value a = c.input(0), b = c.input(1);
        Value ga = c.grad() * a.graph().add_node("pow_base_derivative", {a, b});
        Value gb = c.grad() * c.output(0) * log(a);
        return Values{unbroadcast(ga, a.shape()), unbroadcast(gb, b.shape())};
      },
      [](const TangentContext& c) {
        Value a = c.input(0), b = c.input(1);
        return binary_tangent(
            c,
            [&](Value ta) {
              return ta * a.graph().add_node("pow_base_derivative", {a, b});
            },
            [&](Value tb) { return tb * c.output(0) * log(a); });
      }));
}

void register_pow_base_derivative_op() {
  // y = b·a^(b−1), exactly 0 where b = 0 (so a = 0 gives 0, not 0·∞);
  // ā += ȳ·b·pow_base_derivative(a, b − 1),  b̄ += ȳ·(a^(b−1) + y·log(a))
  register_op(binary(
      "pow_base_derivative",
      "y = b * a ^ (b - 1), 0 where b = 0 (the derivative of a ^ b)",
      [](const auto& a, const auto& b) {
        return (b == 0.0).select(Eigen::ArrayXd::Zero(b.size()),
                                 b * a.binaryExpr(b - 1.0, libm_pow));
      },
      [](const GradientContext& c) {
        Value a = c.input(0), b = c.input(1);
        Graph& g = a.graph();
        Value ga =
            c.grad() * b * g.add_node("pow_base_derivative", {a, b - 1.0});
        Value gb = c.grad() * (pow(a, b - 1.0) + c.output(0) * log(a));
        return Values{unbroadcast(ga, a.shape()), unbroadcast(gb, b.shape())};
      },
      [](const TangentContext& c) {
        Value a = c.input(0), b = c.input(1);
        Graph& g = a.graph();
        return binary_tangent(
            c,
            [&](Value ta) {
              return ta * b * g.add_node("pow_base_derivative", {a, b - 1.0});
            },
            [&](Value tb) {
              return tb * (pow(a, b - 1.0) + c.output(0) * log(a));
            });
      }));
}

void register_pow_scalar_op() {
  // y = x^p;  x̄ += ȳ·p·x^(p−1)
  OpDef pow_scalar("pow_scalar", "y = x ^ exponent", {"x"});
  pow_scalar.attrs = {{"exponent", AttrType::kFloat, nlohmann::json(), "p"}};
  pow_scalar.shape = [](const ShapeContext& c) {
    return Shapes{c.input_shape(0)};
  };
  pow_scalar.bind = [](const Node& n) {
    return ComputeFn([p = n.attr_float("exponent")](KernelContext& c) {
      if (p == 2.0) {
        c.output(0).array() = c.input(0).array().square();
      } else {
        c.output(0).array() = c.input(0).array().unaryExpr(
            [p](double v) { return std::pow(v, p); });
      }
    });
  };
  pow_scalar.in_place = {{0, 0}};
  pow_scalar.gradient = [](const GradientContext& c) {
    const double p = c.node().attr_float("exponent");
    if (p == 0.0) return Values{Value()};
    if (p == 1.0) return Values{c.grad()};
    return Values{c.grad() * (p * pow(c.input(0), p - 1.0))};
  };
  pow_scalar.tangent = [](const TangentContext& c) {
    const double p = c.node().attr_float("exponent");
    if (p == 0.0) return Values{Value()};
    if (p == 1.0) return Values{c.tangent(0)};
    return Values{c.tangent(0) * (p * pow(c.input(0), p - 1.0))};
  };
  register_op(std::move(pow_scalar));
}

// The cotangents of y = a where mask ≠ 0, else b (mask broadcasting to
// y's shape): ȳ where mask, else 0, for a; the rest for b; each summed to
// its operand's shape.
Values select_cotangents(Value mask,
                         Value grad,
                         const Shape& a,
                         const Shape& b) {
  Value zero = grad.graph().scalar(0.0);
  return {unbroadcast(where(mask, grad, zero), a),
          unbroadcast(where(mask, zero, grad), b)};
}

// Its tangent where(mask, ȧ, ḃ) of shape y, zero tangents as 0; invalid
// (zero) when both are.
Value select_tangent(Value mask, Value ta, Value tb, const Shape& y) {
  if (!ta.valid() && !tb.valid()) return Value();
  Value zero = mask.graph().scalar(0.0);
  return broadcast_to(
      where(mask, ta.valid() ? ta : zero, tb.valid() ? tb : zero), y);
}

void register_where_op() {
  // y = a where c ≠ 0, else b;  ā += where(c, ȳ, 0),  b̄ += where(c, 0, ȳ),
  // c̄ none;  ẏ = where(c, ȧ, ḃ)
  OpDef def("where",
            "y = a where c != 0, else b (no derivative in c)",
            {"c", "a", "b"});
  def.shape = broadcast_shape;
  def.bind = [](const Node& n) {
    const std::array<Shape, 3> in = {
        n.inputs[0].shape(), n.inputs[1].shape(), n.inputs[2].shape()};
    return broadcast_kernel(broadcast_loop<3>(in, n.output_shapes[0]),
                            [](const auto& c, const auto& a, const auto& b) {
                              return (c != 0.0).select(a, b);
                            });
  };
  def.in_place = {{0, 0}, {0, 1}, {0, 2}};
  def.gradient = [](const GradientContext& c) {
    Values ab = select_cotangents(
        c.input(0), c.grad(), c.input(1).shape(), c.input(2).shape());
    return Values{Value(), ab[0], ab[1]};
  };
  def.tangent = [](const TangentContext& c) {
    return Values{select_tangent(
        c.input(0), c.tangent(1), c.tangent(2), c.output(0).shape())};
  };
  register_op(std::move(def));
}

// maximum or minimum: y = a where takes_a(a, b), else b; `mask` builds
// the same choice as a graph node (1 where y is a).
template <class P>
OpDef extremum(const char* name,
               const char* doc,
               P takes_a,
               Value (*mask)(Value, Value)) {
  return binary(
      name,
      doc,
      [takes_a](const auto& a, const auto& b) {
        return a.binaryExpr(
            b, [takes_a](double x, double y) { return takes_a(x, y) ? x : y; });
      },
      [mask](const GradientContext& c) {
        Value a = c.input(0), b = c.input(1);
        return select_cotangents(mask(a, b), c.grad(), a.shape(), b.shape());
      },
      [mask](const TangentContext& c) {
        return Values{select_tangent(mask(c.input(0), c.input(1)),
                                     c.tangent(0),
                                     c.tangent(1),
                                     c.output(0).shape())};
      });
}

void register_extremum_ops() {
  // y = max(a, b), a at ties and where a is NaN;
  // ā += where(a ≥ b, ȳ, 0),  b̄ += where(a ≥ b, 0, ȳ)
  register_op(extremum(
      "maximum",
      "y = max(a, b), NaN if either is; ties: the derivative goes to a",
      [](double a, double b) { return a >= b || std::isnan(a); },
      greater_equal));
  // y = min(a, b), a at ties and where a is NaN;
  // ā += where(a ≤ b, ȳ, 0),  b̄ += where(a ≤ b, 0, ȳ)
  register_op(extremum(
      "minimum",
      "y = min(a, b), NaN if either is; ties: the derivative goes to a",
      [](double a, double b) { return a <= b || std::isnan(a); },
      less_equal));
}

// A comparison: y = 1 where compare(a, b), else 0. Its derivatives are
// zero (ā, b̄ none; ẏ none).
template <class P>
OpDef comparison(const char* name, const char* doc, P compare) {
  return binary(
      name,
      doc,
      [compare](const auto& a, const auto& b) {
        return a.binaryExpr(b, [compare](double x, double y) {
          return compare(x, y) ? 1.0 : 0.0;
        });
      },
      [](const GradientContext&) {
        return Values{Value(), Value()};
      },
      [](const TangentContext&) { return Values{Value()}; });
}

void register_comparison_ops() {
  // y = [a ⋈ b] ∈ {0, 1} (IEEE: NaN compares unequal to everything);
  // ā, b̄ += 0;  ẏ = 0
  register_op(comparison(
      "less", "y = 1 where a < b, else 0 (zero derivative)", std::less<>()));
  register_op(comparison("less_equal",
                         "y = 1 where a <= b, else 0 (zero derivative)",
                         std::less_equal<>()));
  register_op(comparison("greater",
                         "y = 1 where a > b, else 0 (zero derivative)",
                         std::greater<>()));
  register_op(comparison("greater_equal",
                         "y = 1 where a >= b, else 0 (zero derivative)",
                         std::greater_equal<>()));
  register_op(comparison("equal",
                         "y = 1 where a == b, else 0 (zero derivative)",
                         std::equal_to<>()));
  register_op(comparison("not_equal",
                         "y = 1 where a != b, else 0 (zero derivative)",
                         std::not_equal_to<>()));
}

// exp, log, sqrt, …: y = f(x) element-wise, with the chain rule's factor.
void register_unary_ops() {
  // y = −x;  x̄ −= ȳ
  register_op(unary(
      "neg",
      "y = -x",
      [](const auto& x) { return -x; },
      [](const ChainAt& a) { return -a.seed; }));
  // y = exp(x);  x̄ += ȳ·y
  register_op(unary(
      "exp",
      "y = exp(x)",
      [](const auto& x) { return x.unaryExpr(libm_exp); },
      [](const ChainAt& a) { return a.seed * a.y; }));
  // y = log(x);  x̄ += ȳ/x
  register_op(unary(
      "log",
      "y = log(x)",
      [](const auto& x) { return x.unaryExpr(libm_log); },
      [](const ChainAt& a) { return a.seed / a.x; }));
  // y = √x;  x̄ += ȳ/(2y)
  register_op(unary(
      "sqrt",
      "y = sqrt(x)",
      [](const auto& x) { return x.sqrt(); },
      [](const ChainAt& a) { return a.seed / (2.0 * a.y); }));
  // y = x²;  x̄ += 2xȳ
  register_op(unary(
      "square",
      "y = x^2",
      [](const auto& x) { return x.square(); },
      [](const ChainAt& a) { return a.seed * (2.0 * a.x); }));
  // y = sin(x);  x̄ += ȳ·cos(x)
  register_op(unary(
      "sin",
      "y = sin(x)",
      [](const auto& x) { return x.unaryExpr(libm_sin); },
      [](const ChainAt& a) { return a.seed * cos(a.x); }));
  // y = cos(x);  x̄ −= ȳ·sin(x)
  register_op(unary(
      "cos",
      "y = cos(x)",
      [](const auto& x) { return x.unaryExpr(libm_cos); },
      [](const ChainAt& a) { return -(a.seed * sin(a.x)); }));
  // y = tanh(x);  x̄ += ȳ·(1 − y²)
  register_op(unary(
      "tanh",
      "y = tanh(x)",
      [](const auto& x) { return x.unaryExpr(libm_tanh); },
      [](const ChainAt& a) { return a.seed * (1.0 - square(a.y)); }));
  // y = |x|;  x̄ += ȳ·sign(x)
  register_op(unary(
      "abs",
      "y = |x| (derivative 0 at 0)",
      [](const auto& x) { return x.abs(); },
      [](const ChainAt& a) { return a.seed * sign(a.x); }));
  // y = sign(x);  x̄ += 0
  register_op(unary(
      "sign",
      "y = sign(x) in {-1, 0, 1} (zero derivative)",
      [](const auto& x) { return x.sign(); },
      [](const GradientContext&) { return Values{Value()}; },
      [](const TangentContext&) { return Values{Value()}; }));
}

}  // namespace

void register_elementwise_ops() {
  register_add_op();
  register_sub_op();
  register_mul_op();
  register_div_op();
  register_pow_op();
  register_pow_base_derivative_op();
  register_pow_scalar_op();
  register_unary_ops();
  register_where_op();
  register_extremum_ops();
  register_comparison_ops();
}

void register_ops_layer() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_loops_layer();
    register_elementwise_ops();
    register_reduction_ops();
    register_shape_ops();
    register_linalg_ops();
  });
}

}  // namespace adgraph
