// Communication nodes on sub-communicators (Communicator::split and the
// row/column communicators of a patch grid), opened with CommScope.
#include <gtest/gtest.h>

#include <string>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

// Ranks of one parity form a communicator. y = Σ_{q ≡ r mod 2} x_q and
// J = Σ_q Σ_i w_{q,i} y_{q,i}², so (by hand)
// ∂J/∂x_{r,i} = Σ_{q ≡ r} 2 w_{q,i} y_i.
TEST(SubCommunicator, ParityAllreduceAndItsGradient) {
  const int rank = world_rank(), size = world_size();
  auto parity = Communicator::world()->split(rank % 2, rank);
  ASSERT_EQ(parity->size(), (size - rank % 2 + 1) / 2);
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y;
  {
    CommScope on(g, parity);
    y = mpi_allreduce(x);
  }
  Value loss = rank_weighted_loss(y);
  Value grad = gradient(loss, x);
  auto xs = [](int q) { return Tensor({1.0 + q, -2.0 * q}); };
  Session s(g);
  auto out = s.run({y, grad}, {{x, xs(rank)}});
  for (int i = 0; i < 2; ++i) {
    double want_y = 0, want_g = 0;
    for (int q = rank % 2; q < size; q += 2) want_y += xs(q)[i];
    for (int q = rank % 2; q < size; q += 2)
      want_g += 2 * (1.0 + 0.5 * q + 0.1 * i) * want_y;
    EXPECT_EQ(out[0][i], want_y);
    EXPECT_NEAR(out[1][i], want_g, 1e-12);
  }
  expect_gradients_ok(loss, {x}, {{x, random_tensor({2}, 40)}});
  // The adjoint of the sub-communicator's allreduce runs on it too.
  expect_adjoint_identity(
      [&](Value v) {
        CommScope on(v.graph(), parity);
        return mpi_allreduce(v);
      },
      {3});
}

// Row sums through the row communicator, then row 0's sums broadcast down
// each column: y on patch (i, j) = Σ_k x_(0,k).
TEST(SubCommunicator, RowSumsThenColumnBroadcastOnAPatchGrid) {
  const int rank = world_rank(), size = world_size();
  const int rows = size == 4 ? 2 : 1, cols = size / rows;
  auto world = Communicator::world();
  auto row = world->row_communicator(rows, cols);
  auto column = world->column_communicator(rows, cols);
  ASSERT_EQ(row->size(), cols);
  ASSERT_EQ(column->size(), rows);
  auto program = [&](Value v) {
    Value sums;
    {
      CommScope on(v.graph(), row);
      sums = mpi_allreduce(v);
    }
    CommScope on(v.graph(), column);
    return mpi_bcast(sums, 0);
  };
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = program(x);
  Session s(g);
  auto xs = [](int q) { return Tensor({q + 1.0, 0.5 * q}); };
  Tensor out = s.run(y, {{x, xs(rank)}});
  for (int i = 0; i < 2; ++i) {
    double want = 0;
    for (int k = 0; k < cols; ++k) want += xs(k)[i];  // row 0: ranks 0..cols-1
    EXPECT_EQ(out[i], want);
  }
  expect_adjoint_identity(program, {4});
  Graph h;
  Value u = h.placeholder("u", {2});
  expect_gradients_ok(
      rank_weighted_loss(program(u)), {u}, {{u, random_tensor({2}, 41)}});
}

// The plan-time check compares the members of each communicator: the even
// ranks disagree, the odd ones do not.
TEST(SubCommunicator, DivergenceIsFoundAmongTheMembers) {
  const int rank = world_rank(), size = world_size();
  auto parity = Communicator::world()->split(rank % 2, rank);
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y;
  {
    CommScope on(g, parity);
    y = mpi_allreduce(x, rank == 0 ? "max" : "sum");
  }
  Session s(g);
  const bool diverges = rank % 2 == 0 && size >= 3;
  try {
    s.run(y, {{x, Tensor({1.0, 2.0})}});
    EXPECT_FALSE(diverges) << "rank " << rank << " ran a diverging plan";
  } catch (const RunError& e) {
    EXPECT_TRUE(diverges) << e.what();
    EXPECT_NE(
        std::string(e.what()).find("on communicator split(color 0) of world"),
        std::string::npos)
        << e.what();
  }
}

TEST(SubCommunicator, RootsAndPeersAreCheckedAgainstTheirCommunicator) {
  const int rank = world_rank();
  auto parity = Communicator::world()->split(rank % 2, rank);
  Graph g;
  Value x = g.placeholder("x", {2});
  CommScope on(g, parity);
  EXPECT_THROW(mpi_bcast(x, parity->size()), ShapeError);
  EXPECT_THROW(mpi_send(x, parity->size(), 0), ShapeError);
  EXPECT_THROW(Communicator::world()->split(-1, 0), OptionsError);
  // Only communication ops take a communicator.
  NodeOptions options;
  options.comm = parity;
  EXPECT_THROW(g.add_node("square", {x}, {}, options), GraphError);
}

}  // namespace
}  // namespace adgraph
