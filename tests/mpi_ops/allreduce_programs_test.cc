#include "mpi_ops/allreduce_programs.h"

#include <gtest/gtest.h>

#include <functional>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

using Program = std::function<Value(Value)>;

// Values and gradients equal mpi_allreduce's, for lengths that divide and
// do not divide the rank count; the maps pass the dot-product test and the
// gradient checker.
void expect_like_mpi_allreduce(const Program& program, unsigned salt) {
  for (int64_t n : {1, 5, 7, 16}) {
    Graph g;
    Value x = g.placeholder("x", {n});
    Value ours = program(x), reference = mpi_allreduce(x);
    Value g_ours = gradient(rank_weighted_loss(ours), x);
    Value g_ref = gradient(rank_weighted_loss(reference), x);
    Session s(g);
    auto out = s.run({ours, reference, g_ours, g_ref},
                     {{x, random_tensor({n}, salt + n)}});
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(out[0][i], out[1][i], 1e-14) << "n = " << n;
      EXPECT_NEAR(out[2][i], out[3][i], 1e-13) << "n = " << n;
    }
    expect_adjoint_identity(program, {n});
  }
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  EXPECT_EQ(program(x).shape(), (Shape{2, 3}));
  expect_gradients_ok(
      rank_weighted_loss(program(x)), {x}, {{x, random_tensor({2, 3}, salt)}});
}

TEST(AllreduceNaive, EqualsMpiAllreduceInValuesAndGradients) {
  expect_like_mpi_allreduce([](Value v) { return allreduce_naive(v); }, 70);
}

TEST(AllreduceRing, EqualsMpiAllreduceInValuesAndGradients) {
  expect_like_mpi_allreduce([](Value v) { return allreduce_ring(v); }, 80);
}

// Chunks cut into messages of at most 2 elements: pieces of unequal length,
// and chunks of different piece counts when P does not divide n.
TEST(AllreduceRing, SegmentedChunksEqualMpiAllreduceInValuesAndGradients) {
  expect_like_mpi_allreduce(
      [](Value v) { return allreduce_ring(v, kRingAllreduceTag, 2); }, 90);
}

// Large enough for pooled buffers and taken send buffers, cut into pieces
// (2500 elements / 300 per message): the sum is the reference's within
// rounding, bitwise the same on every repetition, and by the third run no
// buffer is new.
TEST(AllreduceRing, RepeatedRunsAreBitwiseEqualAndAllocateNothing) {
  constexpr int64_t kSize = 5000;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  Value ring = allreduce_ring(x, kRingAllreduceTag, 300);
  Value reference = mpi_allreduce(x);
  Session s(g);
  const FeedMap feeds{{x, random_tensor({kSize}, 95)}};
  const Tensor want = s.run(reference, feeds);
  Tensor first(Shape{kSize}), again(Shape{kSize});
  s.run_into({ring}, feeds, {&first});
  for (int64_t i = 0; i < kSize; ++i)
    ASSERT_NEAR(first[i], want[i], 1e-14) << i;
  for (int run = 0; run < 3; ++run) {
    s.run_into({ring}, feeds, {&again});
    EXPECT_TRUE((again.array() == first.array()).all()) << "run " << run;
  }
  EXPECT_EQ(s.stats().buffers_allocated, 0);
}

TEST(AllreduceRing, ASegmentBelowOneElementIsRefused) {
  Graph g;
  Value x = g.placeholder("x", {4});
  try {
    allreduce_ring(x, kRingAllreduceTag, 0);
    ADD_FAILURE() << "segment 0 accepted";
  } catch (const OptionsError& e) {
    EXPECT_STREQ(e.what(),
                 "allreduce_ring: segment must be at least 1 element, not 0");
  }
}

}  // namespace
}  // namespace adgraph
