#include "ops/sources.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "core/gradients.h"
#include "core/session.h"
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

}  // namespace
}  // namespace adgraph
