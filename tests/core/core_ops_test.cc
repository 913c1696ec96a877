#include "core/core_ops.h"

#include <gtest/gtest.h>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/exec/session.h"
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
