#include "mpi_ops/point_to_point.h"

#include <gtest/gtest.h>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

TEST(MpiSendRecv, RingShiftAndItsGradient) {
  // Rank r sends x_r to r + 1 and receives y_r = x_{r−1} (cyclically).
  // J = Σ_r [Σ_i w_{r,i} y_{r,i}² + ½ Σ_i s_{r,i}²] with s_r = x_r, so
  // ∂J/∂x_{r,i} = 2 w_{r+1,i} x_{r,i} + x_{r,i}.
  const int rank = world_rank(), size = world_size();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  Graph g;
  Value x = g.placeholder("x", {3});
  Value s = mpi_send(x, next, 3);
  Value y = mpi_recv(x, prev, 3);
  Value loss = rank_weighted_loss(y) + 0.5 * sum(square(s));
  Value grad = gradient(loss, x);
  Session session(g);
  Tensor xv({1.0 + rank, 2.0 * rank, -1.0});
  auto out = session.run({y, grad}, {{x, xv}});
  EXPECT_EQ(out[0].to_vector(),
            (std::vector<double>{1.0 + prev, 2.0 * prev, -1.0}));
  for (int i = 0; i < 3; ++i) {
    const double w_next = 1.0 + 0.5 * next + 0.1 * i;
    EXPECT_NEAR(out[1][i], 2 * w_next * xv[i] + xv[i], 1e-14);
  }
  expect_gradients_ok(loss, {x}, {{x, random_tensor({3}, 20)}});
}

// The receive's shape template need not depend on x: the received values
// still carry x's cotangent back (by hand: ∂J/∂x_{r,i} = 2 w_{r+1,i} x_{r,i}).
TEST(MpiSendRecv, ReceiveIntoAConstantTemplateStillDifferentiates) {
  const int rank = world_rank(), size = world_size();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  Graph g;
  Value x = g.placeholder("x", {3});
  mpi_send(x, next, 6);
  Value y = mpi_recv(zeros(g, {3}), prev, 6);
  Value loss = rank_weighted_loss(y);
  Value grad = gradient(loss, x);
  Session session(g);
  Tensor xv({1.0 + rank, 2.0 * rank, -1.0});
  Tensor out = session.run(grad, {{x, xv}});
  for (int i = 0; i < 3; ++i) {
    const double w_next = 1.0 + 0.5 * next + 0.1 * i;
    EXPECT_NEAR(out[i], 2 * w_next * xv[i], 1e-14);
  }
}

TEST(MpiSendRecv, RingShiftPassesTheDotProductTest) {
  const int rank = world_rank(), size = world_size();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  // x ↦ x of the previous rank; the send's value is only the receive's
  // shape template, so the adjoint is pure message passing.
  expect_adjoint_identity(
      [&](Value v) { return mpi_recv(mpi_send(v, next, 4), prev, 4); }, {5});
}

TEST(MpiSendRecv, RankDependentGraphsPairTheirAdjointMessages) {
  // Only rank 0 sends and only the last rank receives (on one rank, rank 0
  // does both); rank 0 does not use the value it sent. J = Σ y² on the last
  // rank, so ∂J/∂x_0 = 2 x_0 and every other rank's gradient is 0.
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {2});
  Value loss = sum(x) * 0.0;
  if (rank == 0) mpi_send(x, size - 1, 5);
  if (rank == size - 1) loss = sum(square(mpi_recv(x, 0, 5)));
  Value grad = gradient(loss, x);
  Session s(g);
  Tensor out = s.run(grad, {{x, Tensor({3.0, -4.0})}});
  if (rank == 0) {
    EXPECT_EQ(out.to_vector(), (std::vector<double>{6.0, -8.0}));
  } else {
    EXPECT_EQ(out.to_vector(), (std::vector<double>{0.0, 0.0}));
  }
}

TEST(MpiSendRecv, RankDependentGraphsPairTheirTangentMessages) {
  // The same graphs in forward mode: every rank calls jvp(); the send's
  // tangent goes from rank 0 to the last rank whatever is on each rank's
  // path. J on the last rank is Σ x_0², so J̇ = 2⟨x_0, t_0⟩ = 2(3·1 − 4·2)
  // there and 0 elsewhere.
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {2});
  Value t = g.placeholder("t", {2});
  Value loss = sum(x) * 0.0;
  if (rank == 0) mpi_send(x, size - 1, 6);
  if (rank == size - 1) loss = sum(square(mpi_recv(x, 0, 6)));
  Value loss_dot = jvp(loss, x, t);
  Session s(g);
  const double out =
      s.run(loss_dot, {{x, Tensor({3.0, -4.0})}, {t, Tensor({1.0 + rank, 2})}})
          .item();
  EXPECT_EQ(out, rank == size - 1 ? -10.0 : 0.0);
}

TEST(MpiSendRecv, AdcmeSendrecvFromRankZero) {
  // ADCME's mpi_sendrecv(a, 0, 2), with dest = min(2, P − 1): dest returns
  // a_0. J = Σ_r Σ y_r², so ∂J/∂a_0 = 2a_0 + 2a_0, ∂J/∂a_dest = 0 and
  // ∂J/∂a_r = 2a_r elsewhere.
  const int rank = world_rank(), size = world_size();
  const int dest = std::min(2, size - 1);
  Graph g;
  Value a = g.placeholder("a", {4});
  Value y = mpi_sendrecv(a, 0, dest);
  Value grad = gradient(sum(square(y)), a);
  Tensor av({1.0 + rank, 2.0 + rank, 3.0 + rank, 4.0 + rank});
  Session s(g);
  auto out = s.run({y, grad}, {{a, av}});
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(out[0][i], rank == dest ? 1.0 + i : av[i]);
    double want = 2 * av[i];
    if (dest != 0 && rank == 0) want = 4 * av[i];
    if (dest != 0 && rank == dest) want = 0;
    EXPECT_EQ(out[1][i], want);
  }
  expect_gradients_ok(
      rank_weighted_loss(y), {a}, {{a, random_tensor({4}, 21)}});
  expect_adjoint_identity([&](Value v) { return mpi_sendrecv(v, 0, dest); },
                          {4});
  expect_adjoint_identity(
      [&](Value v) { return mpi_sendrecv_adjoint(v, 0, dest); }, {4});
}

// A send whose input dies at it and whose output nobody reads hands the
// input's buffer to the message (no copy); the nodes after it reuse pooled
// buffers of the same size, and must not overwrite the message in flight.
// The run is repeated into the caller's tensors: from the third run on no
// buffer is new.
TEST(MpiSendRecv, ATakenSendBufferIsNotOverwrittenByLaterNodes) {
  constexpr int64_t kSize = 4096;  // pooled (>= Plan::kMinRecycled)
  const int rank = world_rank(), size = world_size();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  mpi_send(x * 2.0, next, 7);               // x * 2.0 dies at the send: taken
  Value kept = mpi_send(x * 3.0, next, 8);  // read below: copied
  Value later = x * 4.0;
  for (int k = 0; k < 4; ++k) later = (later + 1.0) * 0.5;
  Value doubled = mpi_recv(later, prev, 7);
  Value tripled = mpi_recv(later, prev, 8);
  Tensor xv(Shape{kSize});
  for (int64_t i = 0; i < kSize; ++i) xv[i] = rank + 0.25 * i;
  Session s(g);
  std::vector<Tensor> out(4, Tensor(Shape{kSize}));
  for (int run = 0; run < 3; ++run) {
    s.run_into({doubled, tripled, kept, later},
               {{x, xv}},
               {&out[0], &out[1], &out[2], &out[3]});
    if (run == 2) {
      EXPECT_EQ(s.stats().buffers_allocated, 0);
    }
    for (int64_t i = 0; i < kSize; ++i) {
      const double x_prev = prev + 0.25 * i;
      ASSERT_EQ(out[0][i], 2 * x_prev) << "run " << run << ", i = " << i;
      ASSERT_EQ(out[1][i], 3 * x_prev) << "run " << run << ", i = " << i;
      ASSERT_EQ(out[2][i], 3 * xv[i]) << "run " << run << ", i = " << i;
    }
  }
}

// The receive reads only its template's shape (OpDef::shape_only), so a
// template used by nothing else is freed before the received tensor is
// allocated: one array is live at a time, not two.
TEST(MpiSendRecv, TheReceiveTemplateIsNotKeptAlive) {
  constexpr int64_t kSize = 100000;
  const int rank = world_rank(), size = world_size();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  mpi_send(x, next, 9);
  Value y = mpi_recv(x * 5.0, prev, 9);
  Session s(g);
  Tensor xv(Shape{kSize}, 1.0 + rank);
  Tensor out = s.run(y, {{x, xv}});
  EXPECT_EQ(out[kSize - 1], 1.0 + prev);
  EXPECT_LE(s.stats().peak_live_bytes, (kSize + 16) * sizeof(double));
}

// A completed send's buffer stays with the communicator for the next send
// of its size; Session::release_buffers gives it back, and the next run
// sends from a new one.
TEST(MpiSendRecv, ReleaseBuffersFreesTheCommunicatorsSpareSendBuffers) {
  constexpr int64_t kSize = 100000;
  const int rank = world_rank(), size = world_size();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  mpi_send(x, next, 11);  // x is fed: the message sends a copy
  Value y = mpi_recv(x, prev, 11);
  Session s(g);
  Tensor xv(Shape{kSize}, 1.0 + rank);
  g.comm()->release_buffers();  // the world's, with earlier tests' spares
  ASSERT_EQ(g.comm()->kept_bytes(), 0u);
  for (int run = 0; run < 2; ++run) {
    Tensor out = s.run(y, {{x, xv}});
    ASSERT_EQ(out[0], 1.0 + prev) << "run " << run;
    ASSERT_EQ(out[kSize - 1], 1.0 + prev) << "run " << run;
    EXPECT_EQ(g.comm()->kept_bytes(), kSize * sizeof(double)) << "run " << run;
    s.release_buffers();
    EXPECT_EQ(g.comm()->kept_bytes(), 0u) << "run " << run;
  }
}

TEST(MpiSendRecv, PeersAndTagsAreValidatedWhenBuilt) {
  Graph g;
  Value x = g.placeholder("x", {1});
  EXPECT_THROW(mpi_send(x, world_size()), ShapeError);
  EXPECT_THROW(mpi_recv(x, 0, 1000), GraphError);
  EXPECT_THROW(mpi_sendrecv(x, -1, 0), GraphError);
}

}  // namespace
}  // namespace adgraph
