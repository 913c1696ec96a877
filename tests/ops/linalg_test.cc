#include "ops/linalg.h"

#include <gtest/gtest.h>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using testing::expect_gradients_ok;

TEST(Matmul, HandComputedProduct) {
  // [[1,2],[3,4],[5,6]] × [[1,0,-1],[2,1,0]] = [[5,2,-1],[11,4,-3],[17,6,-5]]
  Graph g;
  Value a = g.placeholder("a", {3, 2});
  Value b = g.placeholder("b", {2, 3});
  FeedMap f{{a, Tensor({3, 2}, {1, 2, 3, 4, 5, 6})},
            {b, Tensor({2, 3}, {1, 0, -1, 2, 1, 0})}};
  Session s(g);
  EXPECT_EQ(s.run(matmul(a, b), f).to_vector(),
            (std::vector<double>{5, 2, -1, 11, 4, -3, 17, 6, -5}));
  EXPECT_THROW(matmul(a, a), ShapeError);
  expect_gradients_ok(sum(square(matmul(a, b))), {a, b}, f);
}

TEST(Matvec, HandComputedProduct) {
  Graph g;
  Value a = g.placeholder("a", {2, 3});
  Value x = g.placeholder("x", {3});
  FeedMap f{{a, Tensor({2, 3}, {1, 2, 3, 4, 5, 6})}, {x, Tensor({1, -1, 2})}};
  Session s(g);
  EXPECT_EQ(s.run(matvec(a, x), f).to_vector(), (std::vector<double>{5, 11}));
  EXPECT_THROW(matvec(a, g.placeholder("y", {2})), ShapeError);
  expect_gradients_ok(sum(sin(matvec(a, x))), {a, x}, f);
}

TEST(Transpose, SwapsAxes) {
  Graph g;
  Value a = g.placeholder("a", {2, 3});
  FeedMap f{{a, Tensor({2, 3}, {1, 2, 3, 4, 5, 6})}};
  Session s(g);
  EXPECT_EQ(s.run(transpose(a), f).to_vector(),
            (std::vector<double>{1, 4, 2, 5, 3, 6}));
  Value w = g.constant(Tensor({3, 2}, {1, 2, 3, 4, 5, 6}));
  expect_gradients_ok(dot(square(transpose(a)), w), {a}, f);
}

}  // namespace
}  // namespace adgraph
