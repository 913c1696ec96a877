#include "ops/shape_ops.h"

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

// x = [[1, 2, 3], [4, 5, 6]]
Tensor shape_sample() { return Tensor({2, 3}, {1, 2, 3, 4, 5, 6}); }

// Σ w_i · y_i² with distinct weights, so every entry's position matters.
Value weighted(Value y) {
  Tensor w(y.shape());
  for (int64_t i = 0; i < w.size(); ++i)
    w[i] = 1.0 + 0.5 * static_cast<double>(i);
  return dot(square(y), y.graph().constant(w));
}

TEST(Reshape, KeepsRowMajorOrderAndInfersMinusOne) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Value y = reshape(x, {3, -1});
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  Session s(g);
  EXPECT_EQ(s.run(y, {{x, shape_sample()}}).to_vector(),
            (std::vector<double>{1, 2, 3, 4, 5, 6}));
  EXPECT_THROW(reshape(x, {4, -1}), ShapeError);
  EXPECT_THROW(reshape(x, {-1, -1}), ShapeError);
  expect_gradients_ok(weighted(y), {x}, {{x, shape_sample()}});
}

TEST(Slice, RowsAndColumns) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Session s(g);
  FeedMap f{{x, shape_sample()}};
  EXPECT_EQ(s.run(slice(x, 0, 1, 2), f).to_vector(),
            (std::vector<double>{4, 5, 6}));
  EXPECT_EQ(s.run(slice(x, 1, 1, 3), f).to_vector(),
            (std::vector<double>{2, 3, 5, 6}));
  EXPECT_EQ(s.run(slice(x, -1, 0, 1), f).to_vector(),
            (std::vector<double>{1, 4}));
  EXPECT_THROW(slice(x, 1, 2, 4), ShapeError);
  EXPECT_THROW(slice(x, 2, 0, 1), ShapeError);
  expect_gradients_ok(weighted(slice(x, 1, 1, 3)), {x}, f);
}

// d/dx of Σx² + Σ w ⊙ x[:, 1:3]: the slice's adjoint is added into the
// cotangent summed so far (2x) by one slice_add node, in place; by hand:
// 2x + [0, w] per row. Then slice_add alone through the checker, and its
// shape refused.
TEST(Slice, TheAdjointAddsIntoTheCotangentSummedSoFar) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  FeedMap f{{x, shape_sample()}};
  Value ws = g.constant(Tensor({2, 2}, {0.5, -1.0, 2.0, 4.0}));
  // The square is created after the slice, so the reverse sweep reaches it
  // first: its 2x is the cotangent summed so far at the slice.
  Value sliced = sum(slice(x, 1, 1, 3) * ws);
  Value loss = sliced + sum(square(x));
  Value grad = gradient(loss, x);
  int adds = 0;
  for (int id = 0; id < g.num_nodes(); ++id)
    adds += g.node(id).op_name() == "slice_add";
  EXPECT_GE(adds, 1);
  Session s(g);
  EXPECT_EQ(s.run(grad, f).to_vector(),
            (std::vector<double>{2, 4 + 0.5, 6 - 1.0, 8, 10 + 2.0, 12 + 4.0}));
  expect_gradients_ok(loss, {x}, f);

  Value b = g.placeholder("b", {2, 1});
  Value y =
      g.add_node("slice_add", {x, b}, {{"axis", 1}, {"begin", 2}, {"end", 3}});
  f[b] = Tensor({2, 1}, {10, 20});
  EXPECT_EQ(s.run(y, f).to_vector(), (std::vector<double>{1, 2, 13, 4, 5, 26}));
  expect_gradients_ok(weighted(y), {x, b}, f);
  EXPECT_THROW(
      g.add_node("slice_add", {x, b}, {{"axis", 1}, {"begin", 1}, {"end", 3}}),
      ShapeError);
}

TEST(Pad, ZerosOrValueAroundAnAxis) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Session s(g);
  FeedMap f{{x, shape_sample()}};
  EXPECT_EQ(s.run(pad(x, 1, 1, 0), f).to_vector(),
            (std::vector<double>{0, 1, 2, 3, 0, 4, 5, 6}));
  EXPECT_EQ(s.run(pad(x, 0, 0, 1, -1.0), f).to_vector(),
            (std::vector<double>{1, 2, 3, 4, 5, 6, -1, -1, -1}));
  expect_gradients_ok(weighted(pad(x, 0, 1, 2)), {x}, f);
}

TEST(Concat, AlongEitherAxis) {
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Value c = g.placeholder("c", {2, 1});
  Session s(g);
  FeedMap f{{x, shape_sample()}, {c, Tensor({2, 1}, {7, 8})}};
  EXPECT_EQ(s.run(concat({c, x}, 1), f).to_vector(),
            (std::vector<double>{7, 1, 2, 3, 8, 4, 5, 6}));
  EXPECT_EQ(s.run(concat({x, x}, 0), f).shape(), (Shape{4, 3}));
  EXPECT_THROW(concat({x, c}, 0), ShapeError);
  expect_gradients_ok(weighted(concat({x, c, x}, 1)), {x, c}, f);
}

TEST(Concat, AZeroWidthSliceKeepsItsShapeAndJoinsAsNothing) {
  // A slice of zero columns was handed the session's initial [0] tensor
  // as its output, and the kernels read its missing second extent.
  Graph g;
  Value x = g.placeholder("x", {2, 1});
  Value c = g.placeholder("c", {2, 1});
  Value empty = slice(x, 1, 1, 1);
  Value y = concat({empty, c}, 1);
  Value loss = sum(y * y) + sum(x);
  Session s(g);
  FeedMap f{{x, Tensor({2, 1}, {3, 4})}, {c, Tensor({2, 1}, {7, 8})}};
  for (int run = 0; run < 2; ++run) {  // the second run reuses the slots
    auto out = s.run({empty, y, gradient(loss, c), gradient(loss, x)}, f);
    EXPECT_EQ(out[0].shape(), (Shape{2, 0}));
    EXPECT_EQ(out[1].to_vector(), (std::vector<double>{7, 8}));
    EXPECT_EQ(out[2].to_vector(), (std::vector<double>{14, 16}));  // 2c
    EXPECT_EQ(out[3].to_vector(), (std::vector<double>{1, 1}));    // sum(x)
  }
}

}  // namespace
}  // namespace adgraph
