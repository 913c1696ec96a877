#include "core/ad/gradients.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/op.h"
#include "core/exec/session.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"

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

// How often test_scale_folding's builder found a partial sum to fold in.
int folds = 0;

// y = k·x + w, whose gradient builder folds the cotangent accumulated so far
// for x into its own result (mode "fold"), claims it without returning one
// (mode "empty", an error) or leaves it to gradients() (mode "none").
void register_scale_folding() {
  if (OpRegistry::global().find("test_scale_folding")) return;
  OpDef def;
  def.name = "test_scale_folding";
  def.inputs = {"x", "w"};
  def.attrs = {{"k", AttrType::kFloat, nlohmann::json(), "factor"},
               {"mode", AttrType::kString, "fold", "fold, empty, none"}};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    c.output(0).array() =
        c.attr_float("k") * c.input(0).array() + c.input(1).array();
  };
  def.gradient = [](const GradientContext& c) {
    const double k = c.node().attr_float("k");
    const std::string mode = c.node().attrs["mode"];
    Value dx = k * c.grad();
    if (mode == "empty") {  // claims the sum but returns nothing for it
      c.absorb(0);
      return Values{Value(), c.grad()};
    }
    if (mode == "fold" && c.accumulated(0).valid()) {
      ++folds;
      dx = dx + c.accumulated(0);
      c.absorb(0);
    }
    return Values{dx, c.grad()};
  };
  register_op(def);
}

TEST(Gradients, BuilderCanFoldTheAccumulatedCotangentIntoItsResult) {
  register_scale_folding();
  // L = Σ (2x + 0) + Σ 5x + Σ x³:  dL/dx = 2 + 5 + 3x² = 19 at x = 2,
  // 10 at x = −1. The folding node is created first, so when its builder
  // runs the contributions of 5x and x³ are already summed.
  Graph g;
  Value x = g.placeholder("x", {2});
  Value zero = g.constant(Tensor({0.0, 0.0}));
  Value a = g.add_node("test_scale_folding", {x, zero}, {{"k", 2.0}});
  Value loss = sum(a) + sum(5.0 * x) + sum(x * x * x);
  folds = 0;
  Value dx = gradient(loss, x);
  Session s(g);
  Tensor out = s.run(dx, {{x, Tensor({2.0, -1.0})}});
  EXPECT_DOUBLE_EQ(out[0], 19.0);
  EXPECT_DOUBLE_EQ(out[1], 10.0);
  EXPECT_EQ(folds, 1);
}

TEST(Gradients, NothingToFoldWhenTheSameValueFeedsTwoInputs) {
  register_scale_folding();
  // y = 3x + x: both inputs are x, so neither sees the partial sum of 4x
  // (folding it into both would count it twice). dL/dx = 3 + 1 + 4 = 8.
  Graph g;
  Value x = g.placeholder("x", {});
  Value y = g.add_node("test_scale_folding", {x, x}, {{"k", 3.0}});
  Value loss = y + 4.0 * x;
  folds = 0;
  Value dx = gradient(loss, x);
  EXPECT_EQ(folds, 0);
  Session s(g);
  EXPECT_DOUBLE_EQ(s.run(dx, {{x, Tensor::scalar(1.5)}}).item(), 8.0);
}

TEST(Gradients, AbsorbingNothingOrReturningNothingIsAnErrorNamingTheNode) {
  register_scale_folding();
  {
    Graph g;
    Value x = g.placeholder("x", {});
    Value zero = g.constant(Tensor::scalar(0.0));
    g.add_node("test_scale_folding",
               {x, zero},
               {{"k", 1.0}, {"mode", "empty"}},
               {.name = "lonely"});
    Value loss = Value(&g, g.num_nodes() - 1, 0);
    // No other use of x: there is nothing accumulated to absorb.
    try {
      gradient(loss, x);
      ADD_FAILURE() << "expected GraphError";
    } catch (const GraphError& e) {
      EXPECT_NE(std::string(e.what()).find("node \"lonely\""),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("no accumulated cotangent"),
                std::string::npos)
          << e.what();
    }
  }
  {
    Graph g;
    Value x = g.placeholder("x", {});
    Value zero = g.constant(Tensor::scalar(0.0));
    Value y = g.add_node("test_scale_folding",
                         {x, zero},
                         {{"k", 1.0}, {"mode", "empty"}},
                         {.name = "greedy"});
    Value loss = y + 2.0 * x;
    try {
      gradient(loss, x);
      ADD_FAILURE() << "expected GraphError";
    } catch (const GraphError& e) {
      EXPECT_NE(std::string(e.what()).find("node \"greedy\""),
                std::string::npos)
          << e.what();
      EXPECT_NE(std::string(e.what()).find("returned none"), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace adgraph
