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

}  // namespace
}  // namespace adgraph
