#include "core/core_ops.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "core/loops/loop.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

TEST(Sources, FillZerosOnesConstant) {
  Graph g;
  Session s(g);
  EXPECT_EQ(s.run(fill(g, {2}, 3.5)).to_vector(),
            (std::vector<double>{3.5, 3.5}));
  EXPECT_EQ(s.run(zeros(g, {3})).to_vector(), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(s.run(ones(g, {1, 2})).shape(), (Shape{1, 2}));
  EXPECT_EQ(s.run(g.constant(Tensor({4.0, 5.0}))).to_vector(),
            (std::vector<double>{4, 5}));
  EXPECT_EQ(s.run(g.scalar(2.0)).shape(), Shape{});
  EXPECT_THROW(fill(g, {-1}, 0.0), GraphError);
}

TEST(Sources, ConstantFromJsonAttribute) {
  Graph g;
  Value c = g.add_node("constant", {}, {{"value", {{1, 2}, {3, 4}}}});
  EXPECT_EQ(c.shape(), (Shape{2, 2}));
  EXPECT_THROW(g.add_node("constant", {}, {{"value", {{1, 2}, {3}}}}),
               GraphError);
  EXPECT_THROW(g.add_node("constant", {}), GraphError);
}

TEST(Sources, ZerosLikeHasZeroDerivative) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = sum(square(x) + zeros_like(x));
  Session s(g);
  FeedMap f{{x, Tensor({1.5, -2.0})}};
  EXPECT_EQ(s.run(gradient(y, x), f).to_vector(),
            (std::vector<double>{3.0, -4.0}));
  testing::expect_gradients_ok(y, {x}, f);
}

TEST(Identity, PassesValuesAndGradients) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Tensor v({2, 3}, {1, -2, 3, 0.5, 7, -1});
  Session s(g);
  EXPECT_EQ(s.run(identity(x), {{x, v}}).to_vector(), v.to_vector());
  testing::expect_gradients_ok(sum(square(identity(x))), {x}, {{x, v}});
}

// stop_gradient passes the value and no derivative: d/dx Σ x·sg(x)² is
// sg(x)² = x² (by hand; 3x² without it), its tangent is x²·ẋ, and a value
// made by a node without a gradient rule (a gradient's own graph, here the
// loop adjoint) can be used through it.
TEST(StopGradient, PassesTheValueAndNoDerivative) {
  Graph g;
  Value x = g.placeholder("x", {3});
  const Tensor v({3}, {1.5, -2.0, 0.25});
  Value y = sum(x * square(stop_gradient(x)));
  Session s(g);
  EXPECT_EQ(s.run(stop_gradient(x), {{x, v}}).to_vector(), v.to_vector());
  EXPECT_EQ(s.run(gradient(y, x), {{x, v}}).to_vector(),
            (std::vector<double>{2.25, 4.0, 0.0625}));
  const Tensor d({3}, {1.0, 2.0, -1.0});
  Value dx = g.placeholder("dx", {3});
  EXPECT_EQ(s.run(jvp(y, x, dx), {{x, v}, {dx, d}}).to_vector(),
            (std::vector<double>{2.25 * 1.0 + 4.0 * 2.0 - 0.0625}));
  // (No finite-difference check: by design it is not the derivative.)

  // z = Σ c·sg(∂L/∂c) with L = Σ_steps of a loop: ∂z/∂c = ∂L/∂c, though
  // the loop's adjoint has no gradient of its own.
  Value c = g.placeholder("c", {3});
  LoopResult r = loop(3, {x}, {c}, [](const LoopArgs& a) {
    return LoopStep{{a.carries[0] * a.invariants[0]}, {}};
  });
  Value loss = sum(square(r.carries[0]));
  Value dl = gradient(loss, c);
  Value z = sum(c * stop_gradient(dl));
  const Tensor cv({3}, {0.5, 2.0, -1.0});
  const std::vector<Tensor> got =
      s.run({dl, gradient(z, c)}, {{x, v}, {c, cv}});
  EXPECT_EQ(got[1].to_vector(), got[0].to_vector());
  // L = Σ (x c³)², ∂L/∂c = 6 x² c⁵, by hand.
  for (int i = 0; i < 3; ++i)
    EXPECT_DOUBLE_EQ(got[0][i], 6.0 * v[i] * v[i] * std::pow(cv[i], 5)) << i;
}

// accumulate sums one shape only; its derivatives pass cotangents and
// tangents through unchanged (a by-hand check, then the gradient checker).
TEST(Accumulate, SumsOneShapeAndPassesDerivatives) {
  Graph g;
  Value a = g.placeholder("a", {3});
  Value b = g.placeholder("b", {3});
  Tensor av({1.0, 2.0, 3.0}), bv({0.5, -4.0, 10.0});
  Session s(g);
  EXPECT_EQ(s.run(accumulate(a, b), {{a, av}, {b, bv}}).to_vector(),
            (std::vector<double>{1.5, -2.0, 13.0}));
  EXPECT_THROW(accumulate(a, g.placeholder("c", {1})), ShapeError);
  testing::expect_gradients_ok(
      sum(square(accumulate(a, b))), {a, b}, {{a, av}, {b, bv}});
}

}  // namespace
}  // namespace adgraph
