#include "ops/linalg.h"

#include <string>
#include <utility>

#include "core/op.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

void require_rank(const ShapeContext& c, int input, std::size_t rank) {
  if (c.input_shape(input).size() != rank) {
    c.fail("input " + std::to_string(input),
           "expected a rank-" + std::to_string(rank) + " tensor, got shape " +
               shape_string(c.input_shape(input)));
  }
}

Eigen::Map<const Eigen::VectorXd> vector_view(const Tensor& t) {
  return {t.data(), t.size()};
}

// A [m, k] times input 1, B [k, n] or (`vector`) x [k]: the product's
// shape, else the error naming input 1.
Shape product_shape(const ShapeContext& c, bool vector) {
  require_rank(c, 0, 2);
  require_rank(c, 1, vector ? 1 : 2);
  const Shape &a = c.input_shape(0), &b = c.input_shape(1);
  if (a[1] != b[0]) {
    c.fail(
        vector ? "input \"x\"" : "input \"b\"",
        "shape " + shape_string(b) + " does not multiply " + shape_string(a));
  }
  return vector ? Shape{a[0]} : Shape{a[0], b[1]};
}

}  // namespace

Value matmul(Value a, Value b) {
  register_ops_layer();
  return a.graph().add_node("matmul", {a, b});
}
Value matvec(Value a, Value x) {
  register_ops_layer();
  return a.graph().add_node("matvec", {a, x});
}
Value transpose(Value a) {
  register_ops_layer();
  return a.graph().add_node("transpose", {a});
}

void register_linalg_ops() {
  // Y = A·B;  Ā += Ȳ·Bᵀ,  B̄ += Aᵀ·Ȳ
  OpDef mm("matmul", "Y = A B for A [m, k], B [k, n]", {"a", "b"});
  mm.shape = [](const ShapeContext& c) {
    return Shapes{product_shape(c, false)};
  };
  mm.compute = [](KernelContext& c) {
    c.output(0).matrix().noalias() = c.input(0).matrix() * c.input(1).matrix();
  };
  mm.gradient = [](const GradientContext& c) {
    return Values{matmul(c.grad(), transpose(c.input(1))),
                  matmul(transpose(c.input(0)), c.grad())};
  };
  mm.tangent = bilinear_tangent;
  register_op(std::move(mm));

  // y = A·x;  Ā += ȳ·xᵀ,  x̄ += Aᵀ·ȳ
  OpDef mv("matvec", "y = A x for A [m, n], x [n]", {"a", "x"});
  mv.shape = [](const ShapeContext& c) {
    return Shapes{product_shape(c, true)};
  };
  mv.compute = [](KernelContext& c) {
    Tensor& y = c.output(0);
    Eigen::Map<Eigen::VectorXd>(y.data(), y.size()).noalias() =
        c.input(0).matrix() * vector_view(c.input(1));
  };
  mv.gradient = [](const GradientContext& c) {
    const Shape& a = c.input(0).shape();
    Value outer =
        matmul(reshape(c.grad(), {a[0], 1}), reshape(c.input(1), {1, a[1]}));
    return Values{outer, matvec(transpose(c.input(0)), c.grad())};
  };
  mv.tangent = bilinear_tangent;
  register_op(std::move(mv));

  // Y = Aᵀ;  Ā += Ȳᵀ
  OpDef tr("transpose", "Y = A^T for A [m, n]", {"a"});
  tr.shape = [](const ShapeContext& c) {
    require_rank(c, 0, 2);
    const Shape& a = c.input_shape(0);
    return Shapes{Shape{a[1], a[0]}};
  };
  tr.compute = [](KernelContext& c) {
    c.output(0).matrix() = c.input(0).matrix().transpose();
  };
  tr.gradient = [](const GradientContext& c) {
    return Values{transpose(c.grad())};
  };
  tr.tangent = linear_tangent;
  register_op(std::move(tr));
}

}  // namespace adgraph
