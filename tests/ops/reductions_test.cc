#include "ops/reductions.h"

#include <gtest/gtest.h>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "ops/elementwise.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using testing::expect_gradients_ok;

// x = [[1, 2, 3], [4, 5, 6]]
Tensor sample() { return Tensor({2, 3}, {1, 2, 3, 4, 5, 6}); }
Tensor sample24() { return Tensor({2, 4}, {1, -2, 3, 0.5, 4, 5, -6, 2}); }

TEST(Sum, AllAndAlongAxes) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Session s(g);
  FeedMap f{{x, sample()}};
  EXPECT_EQ(s.run(sum(x), f).item(), 21.0);
  EXPECT_EQ(s.run(sum(x, {0}), f).to_vector(), (std::vector<double>{5, 7, 9}));
  EXPECT_EQ(s.run(sum(x, {-1}), f).to_vector(), (std::vector<double>{6, 15}));
  EXPECT_EQ(s.run(sum(x, {0, 1}), f).item(), 21.0);
  EXPECT_THROW(sum(x, {2}), ShapeError);
  EXPECT_THROW(sum(x, {0, 0}), ShapeError);
}

TEST(Sum, TheSumOfAllElementsIsExactAndRoundedOnce) {
  // Rows and columns that cancel: 1e16 + 1 + 1 − 1e16 is 2, which adding
  // in order loses (1e16 + 1 ties to 1e16). The expected values are exact
  // by hand; a 1000-term column against __float128 (exact at this range).
  Graph g;
  Value x = g.placeholder("x", {2, 4});
  Value v = g.placeholder("v", {1000});
  Value ones = g.constant(Tensor(Shape{2, 4}, 1.0));
  Session s(g);
  const Tensor rows({2, 4}, {1e16, 1, 1, -1e16, 1, 1e16, -1e16, 0.5});
  FeedMap f{{x, rows}};
  EXPECT_EQ(s.run(sum(x), f).item(), 2.5 + 1.0);
  // Along an axis: in index order (1e16 + 1 + 1 ties to 1e16 twice).
  EXPECT_EQ(s.run(sum(x, {1}), f).to_vector(), (std::vector<double>{0, 0.5}));
  EXPECT_EQ(s.run(mean(x), f).item(), 3.5 / 8);
  EXPECT_EQ(s.run(dot(x, ones), f).item(), 3.5);
  Tensor many(Shape{1000});
  __float128 exact = 0;
  for (int i = 0; i < 1000; ++i) {
    many[i] = (i % 2 ? -1.0 : 1.0) * (1.0 + i * 0x1p-30) * (i % 7 ? 1 : 0x1p40);
    exact += many[i];
  }
  EXPECT_EQ(s.run(sum(v), {{v, many}}).item(), static_cast<double>(exact));
}

TEST(Sum, ExactAlongAxesRoundsEachOutputOnce) {
  // The rows of Sum.TheSumOfAllElementsIsExactAndRoundedOnce: in index
  // order 0 and 0.5, exactly 2 and 1.5 (by hand); along axis 0, with the
  // columns' 1e16 + 1 exact; mean divides the exact sum; the gradient and
  // tangent are the index-order sum's; a mode other than yes/no refused.
  Graph g;
  Value x = g.placeholder("x", {2, 4});
  Session s(g);
  const Tensor rows({2, 4}, {1e16, 1, 1, -1e16, 1, 1e16, -1e16, 0.5});
  FeedMap f{{x, rows}};
  EXPECT_EQ(s.run(sum(x, {1}, true), f).to_vector(),
            (std::vector<double>{2, 1.5}));
  EXPECT_EQ(s.run(sum(x, {-1}, false), f).to_vector(),
            (std::vector<double>{0, 0.5}));
  EXPECT_EQ(s.run(sum(x, {0}, true), f).to_vector(),
            (std::vector<double>{1e16 + 1, 1e16 + 1, 1 - 1e16, 0.5 - 1e16}));
  EXPECT_EQ(s.run(mean(x, {1}, true), f).to_vector(),
            (std::vector<double>{0.5, 0.375}));
  Value w = g.constant(Tensor({3.0, -1.0}));
  expect_gradients_ok(
      dot(square(sum(x, {1}, true)), w), {x}, {{x, sample24()}});
  EXPECT_THROW(g.add_node("sum", {x}, {{"axes", {0}}, {"exact", "auto"}}),
               ShapeError);
}

TEST(Sum, TensorsOfMoreThanEightDimensionsAndRepeatedRuns) {
  // A 10-D tensor of 2^10 elements, x[i] = i (row-major). Summing over the
  // last axis pairs elements 2k and 2k + 1: y[k] = 4k + 1. Summing over the
  // first axis adds i and i + 512: y[k] = 2k + 512. Both take the kernels'
  // path for more than eight dimensions; each runs twice (a kernel bound
  // once, run again).
  const Shape shape(10, 2);
  Tensor xv(shape);
  for (int64_t i = 0; i < xv.size(); ++i) xv[i] = static_cast<double>(i);
  Graph g;
  Value x = g.placeholder("x", shape);
  Value last = sum(x, {-1}), first = mean(x, {0});
  Value spread = broadcast_to(sum(x, {0}), Shape(10, 2));
  Session s(g);
  for (int run = 0; run < 2; ++run) {
    auto out = s.run({last, first, spread}, {{x, xv}});
    ASSERT_EQ(out[0].size(), 512);
    ASSERT_EQ(out[1].size(), 512);
    for (int64_t k = 0; k < 512; ++k) {
      EXPECT_EQ(out[0][k], 4.0 * k + 1.0);
      EXPECT_EQ(out[1][k], (2.0 * k + 512.0) / 2.0);
      EXPECT_EQ(out[2][k], 2.0 * k + 512.0);
      EXPECT_EQ(out[2][k + 512], 2.0 * k + 512.0);
    }
  }
}

TEST(Sum, GradientChecks) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Value w0 = g.constant(Tensor({3.0, -1.0, 0.5}));
  Value w1 = g.constant(Tensor({2.0, 0.25}));
  Value loss =
      sum(square(x)) + dot(sum(x, {0}), w0) + dot(square(sum(x, {1})), w1);
  expect_gradients_ok(loss, {x}, {{x, sample()}});
}

TEST(Mean, AllAndAlongAxesWithGradient) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Session s(g);
  FeedMap f{{x, sample()}};
  EXPECT_DOUBLE_EQ(s.run(mean(x), f).item(), 3.5);
  EXPECT_EQ(s.run(mean(x, {0}), f).to_vector(),
            (std::vector<double>{2.5, 3.5, 4.5}));
  EXPECT_EQ(s.run(mean(x, {1}), f).to_vector(), (std::vector<double>{2, 5}));
  // d mean / dx = 1/6 everywhere.
  Tensor gm = s.run(gradient(mean(x), x), f);
  for (int i = 0; i < 6; ++i) EXPECT_DOUBLE_EQ(gm[i], 1.0 / 6.0);
  Value w = g.constant(Tensor({1.0, -2.0, 3.0}));
  expect_gradients_ok(square(mean(x)) + dot(square(mean(x, {0})), w), {x}, f);
}

TEST(Dot, ValueAndGradient) {
  Graph g;
  Value a = g.placeholder("a", {3});
  Value b = g.placeholder("b", {3});
  Session s(g);
  FeedMap f{{a, Tensor({1, 2, 3})}, {b, Tensor({4, -5, 6})}};
  EXPECT_EQ(s.run(dot(a, b), f).item(), 12.0);
  expect_gradients_ok(square(dot(a, b)), {a, b}, f);
  EXPECT_THROW(dot(a, g.placeholder("c", {4})), ShapeError);
}

TEST(BroadcastTo, NumpyRulesAndAdjointSumTo) {
  Graph g;
  Value r = g.placeholder("r", {3});
  Value c = g.placeholder("c", {2, 1});
  Session s(g);
  FeedMap f{{r, Tensor({1, 2, 3})}, {c, Tensor({2, 1}, {10, 20})}};
  EXPECT_EQ(s.run(broadcast_to(r, {2, 3}), f).to_vector(),
            (std::vector<double>{1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(s.run(broadcast_to(c, {2, 3}), f).to_vector(),
            (std::vector<double>{10, 10, 10, 20, 20, 20}));
  EXPECT_EQ(s.run(sum_to(broadcast_to(c, {2, 3}), {2, 1}), f).to_vector(),
            (std::vector<double>{30, 60}));
  EXPECT_THROW(broadcast_to(r, {3, 2}), ShapeError);
  Value w = g.constant(Tensor({2, 3}, {1, 2, 3, 4, 5, 6}));
  expect_gradients_ok(
      dot(square(broadcast_to(r, {2, 3}) * broadcast_to(c, {2, 3})), w),
      {r, c},
      f);
  Value big = g.placeholder("big", {2, 3});
  FeedMap fb{{big, Tensor({2, 3}, {1, -2, 3, 0.5, 5, -6})}};
  expect_gradients_ok(sum(square(sum_to(big, {1, 3}))), {big}, fb);
}

}  // namespace
}  // namespace adgraph
