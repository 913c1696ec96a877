#include "core/gradients.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/op.h"
#include "core/session.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/sources.h"

namespace adgraph {
namespace {

TEST(Gradients, ContributionsThroughSeveralPathsAreSummed) {
  // y = x·x + 3x  →  dy/dx = 2x + 3 = 7 at x = 2.
  Graph g;
  Value x = g.placeholder("x", {});
  Value y = x * x + 3.0 * x;
  Session s(g);
  EXPECT_DOUBLE_EQ(s.run(gradient(y, x), {{x, Tensor::scalar(2.0)}}).item(),
                   7.0);
}

TEST(Gradients, UnreachableInputGetsZerosOfItsShape) {
  Graph g;
  Value x = g.placeholder("x", {});
  Value z = g.placeholder("z", {2, 3});
  Value dz = gradient(square(x), z);
  EXPECT_EQ(dz.shape(), (Shape{2, 3}));
  Session s(g);
  Tensor out = s.run(dz);
  EXPECT_EQ(out.array().abs().maxCoeff(), 0.0);
}

TEST(Gradients, OpWithoutGradientFailsAtBuildTimeNamingTheNode) {
  OpDef def;
  def.name = "test_no_gradient";
  def.inputs = {"x"};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    c.output(0).array() = c.input(0).array();
  };
  register_op(def);
  Graph g;
  Value x = g.placeholder("x", {});
  Value h = g.add_node("test_no_gradient", {x}, {}, {.name = "h"});
  Value y = square(h);
  try {
    gradient(y, x);
    ADD_FAILURE() << "expected GraphError";
  } catch (const GraphError& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "node \"h\" (test_no_gradient): gradient: op has no gradient, but \"" +
            y.name() + "\" is differentiated through it");
  }
  // Not on a path from x: no error.
  Value other = g.placeholder("other", {});
  EXPECT_NO_THROW(gradient(y + other, other));
}

TEST(Gradients, HessianVectorProductOfASmallFunction) {
  // f(x) = Σ sin(x_i)·x_i²;  H is diagonal with
  // h_i = −sin(x_i)·x_i² + 4x_i·cos(x_i) + 2 sin(x_i).
  Graph g;
  Value x = g.placeholder("x", {3});
  Value v = g.placeholder("v", {3});
  Value f = sum(sin(x) * square(x));
  Value grad = gradient(f, x);
  Value hv = gradient(dot(grad, v), x);
  Session s(g);
  Tensor xv({0.3, -1.2, 2.0});
  Tensor vv({1.0, 0.5, -2.0});
  Tensor out = s.run(hv, {{x, xv}, {v, vv}});
  for (int i = 0; i < 3; ++i) {
    const double xi = xv[i];
    const double h =
        -std::sin(xi) * xi * xi + 4 * xi * std::cos(xi) + 2 * std::sin(xi);
    EXPECT_NEAR(out[i], h * vv[i], 1e-12);
  }
}

TEST(Gradients, NonScalarOutputUsesTheGivenCotangent) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value w = g.constant(Tensor({3.0, -1.0}));
  Value y = x * x;  // dy_i/dx_i = 2x_i
  Value gx = gradient(y, x, w);
  Session s(g);
  Tensor out = s.run(gx, {{x, Tensor({1.0, 2.0})}});
  EXPECT_DOUBLE_EQ(out[0], 6.0);
  EXPECT_DOUBLE_EQ(out[1], -4.0);
  EXPECT_THROW(gradient(y, x, g.constant(Tensor({1.0}))), ShapeError);
}

}  // namespace
}  // namespace adgraph
