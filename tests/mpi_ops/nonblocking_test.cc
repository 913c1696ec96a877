#include "mpi_ops/nonblocking.h"

#include <gtest/gtest.h>

#include <string>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

int next_rank() { return (world_rank() + 1) % world_size(); }
int prev_rank() { return (world_rank() + world_size() - 1) % world_size(); }

// The mpi4py course's nonblocking ring: every rank isends x to its right
// neighbour and irecvs from its left, computes meanwhile, then waits.
// J = Σ_r [Σ_i w_{r,i} y_{r,i}² + Σ_i sin(x_{r,i})] with y_r = x_{r−1}, so
// ∂J/∂x_{r,i} = 2 w_{r+1,i} x_{r,i} + cos(x_{r,i}) (by hand). The send's
// wait yields nothing, so the loss is made to run after it.
struct Ring {
  Value x, y, loss, grad;
};
Ring nonblocking_ring(Graph& g, bool waitall) {
  Ring r;
  r.x = g.placeholder("x", {3});
  Value send = mpi_isend(r.x, next_rank(), 11);
  Value recv = mpi_irecv(g, {3}, prev_rank(), 11);
  Value meanwhile = sum(sin(r.x));  // depends on no request
  Value sent;
  if (waitall) {
    r.y = mpi_waitall({send, recv})[1];
  } else {
    r.y = mpi_wait(recv);
    sent = mpi_wait(send);
  }
  r.loss = rank_weighted_loss(r.y) + meanwhile;
  if (sent.valid()) g.add_control_input(r.loss, sent);
  r.grad = gradient(r.loss, r.x);
  return r;
}

Tensor ring_input() {
  const int rank = world_rank();
  return Tensor({1.0 + rank, 2.0 * rank - 0.5, -1.0 + 0.25 * rank});
}

TEST(MpiNonblocking, RingDeliversTheLeftNeighboursValuesAndItsGradient) {
  for (bool waitall : {false, true}) {
    Graph g;
    Ring r = nonblocking_ring(g, waitall);
    Session s(g);
    const Tensor xv = ring_input();
    auto out = s.run({r.y, r.grad}, {{r.x, xv}});
    const int prev = prev_rank(), next = next_rank();
    EXPECT_EQ(out[0].to_vector(),
              (std::vector<double>{
                  1.0 + prev, 2.0 * prev - 0.5, -1.0 + 0.25 * prev}));
    for (int i = 0; i < 3; ++i) {
      const double w_next = 1.0 + 0.5 * next + 0.1 * i;
      EXPECT_NEAR(out[1][i], 2 * w_next * xv[i] + std::cos(xv[i]), 1e-14)
          << "waitall " << waitall;
    }
    expect_gradients_ok(r.loss, {r.x}, {{r.x, random_tensor({3}, 30)}});
  }
}

// The same ring written with blocking mpi_sendrecv (one pairwise exchange
// per edge, every rank runs all of them) gives bitwise the same loss and
// gradient.
TEST(MpiNonblocking, RingMatchesTheBlockingRingBitwise) {
  const int rank = world_rank(), size = world_size();
  Graph g;
  Ring r = nonblocking_ring(g, false);
  Graph h;
  Value x = h.placeholder("x", {3});
  // y = Σ_q [rank = dest_q]·moved_q: one graph on every rank (so the ranks'
  // adjoints pair up), and multiplying by 1 or 0 and adding 0 is exact.
  Value y;
  for (int q = 0; q < size; ++q) {
    const int dest = (q + 1) % size;
    Value term = mpi_sendrecv(x, q, dest, 12) * (rank == dest ? 1.0 : 0.0);
    y = y.valid() ? y + term : term;
  }
  Value loss = rank_weighted_loss(y) + sum(sin(x));
  Value grad = gradient(loss, x);
  const Tensor xv = ring_input();
  Session a(g), b(h);
  auto nb = a.run({r.loss, r.grad}, {{r.x, xv}});
  auto bl = b.run({loss, grad}, {{x, xv}});
  EXPECT_EQ(nb[0].item(), bl[0].item());
  EXPECT_TRUE((nb[1].array() == bl[1].array()).all())
      << "nonblocking " << nb[1].to_vector()[0] << " blocking "
      << bl[1].to_vector()[0];
}

// Each op alone is linear: the dot-product test and jvp = the map itself,
// including empty tensors and (on one rank) messages to oneself.
TEST(MpiNonblocking, PassesTheDotProductTest) {
  for (int64_t n : {5, 0}) {
    expect_adjoint_identity(
        [&](Value v) {
          Value send = mpi_isend(v, next_rank(), 13);
          Value recv = mpi_irecv(v, prev_rank(), 13);
          Value y = mpi_wait(recv);
          NodeOptions after;
          after.after = {mpi_wait(send)};
          return y.graph().add_node(
              "identity", {y}, nlohmann::json::object(), after);
        },
        {n});
    expect_adjoint_identity(
        [&](Value v) {
          auto done = mpi_waitall(
              {mpi_irecv(v, prev_rank(), 14), mpi_isend(v, next_rank(), 14)});
          return done[0] * 2.0 + v;
        },
        {n});
  }
}

TEST(MpiNonblocking, HessianVectorProductThroughTheRing) {
  // J = Σ_r Σ_i w_{r,i} y_{r,i}² + sin(x): H v = 2 w_{r+1} v − sin(x) v.
  Graph g;
  Ring r = nonblocking_ring(g, false);
  Value v = g.placeholder("v", {3});
  Value hv = jvp(r.grad, r.x, v);
  Session s(g);
  const Tensor xv = ring_input(), vv({0.5, -1.0, 2.0});
  Tensor out = s.run(hv, {{r.x, xv}, {v, vv}});
  for (int i = 0; i < 3; ++i) {
    const double w_next = 1.0 + 0.5 * next_rank() + 0.1 * i;
    EXPECT_NEAR(out[i], 2 * w_next * vv[i] - std::sin(xv[i]) * vv[i], 1e-13);
  }
}

// The communicator reuses the entries and buffers of completed requests:
// a request recycled from a receive of 3 doubles into a send of 5 (or
// back, as the gradient's reverse messages are) must carry only its own
// run's message. Two pairs of messages of different sizes, waited on
// singly and together, forward and gradient runs interleaved, each run
// with new values; what arrives is prev's x (and 2·prev's z), exactly, and
// the gradient is 2·(the cotangents from next): ∂/∂x Σ y² = 2 x, ∂/∂z Σ
// (2z)² = 8 z.
TEST(MpiNonblocking, RepeatedRunsRecycleRequestsWithoutMixingMessages) {
  Graph g;
  Value x = g.placeholder("x", {3});
  Value z = g.placeholder("z", {5});
  Value send_x = mpi_isend(x, next_rank(), 18);
  Value recv_x = mpi_irecv(g, {3}, prev_rank(), 18);
  Value send_z = mpi_isend(2.0 * z, next_rank(), 19);
  Value recv_z = mpi_irecv(g, {5}, prev_rank(), 19);
  Value y = mpi_wait(recv_x);
  auto done = mpi_waitall({send_z, recv_z, send_x});
  Value w = done[1];
  Value loss = sum(square(y)) + sum(square(w));
  g.add_control_input(loss, done[0]);
  g.add_control_input(loss, done[2]);
  auto grads = gradients(loss, {x, z});
  Session s(g);
  const int rank = world_rank(), prev = prev_rank();
  auto x_at = [](int r, int run) {
    return Tensor({1.0 + r + run, -2.0 * r, 0.5 * run});
  };
  auto z_at = [](int r, int run) {
    return Tensor({0.25 * r, 1.0 * run, -1.0, 3.0 + r, 0.125 * run * r});
  };
  for (int run = 0; run < 12; ++run) {
    FeedMap feeds{{x, x_at(rank, run)}, {z, z_at(rank, run)}};
    if (run % 3 == 2) {
      auto grad = s.run({grads[0], grads[1]}, feeds);
      std::vector<double> two_x = x_at(rank, run).to_vector(),
                          eight_z = z_at(rank, run).to_vector();
      for (double& v : two_x) v *= 2.0;
      for (double& v : eight_z) v *= 8.0;
      EXPECT_EQ(grad[0].to_vector(), two_x) << "run " << run;
      EXPECT_EQ(grad[1].to_vector(), eight_z) << "run " << run;
    }
    auto out = s.run({y, w, loss}, feeds);
    EXPECT_EQ(out[0].to_vector(), x_at(prev, run).to_vector()) << "run " << run;
    std::vector<double> twice_z = z_at(prev, run).to_vector();
    for (double& v : twice_z) v *= 2.0;
    EXPECT_EQ(out[1].to_vector(), twice_z) << "run " << run;
  }
}

// A received message reaches the wait's output without a copy, except in
// a caller's tensor (run_into), which keeps its own buffer: the same values
// whether fetched by run, by run_into (whose buffer stays where it was) or
// read by a later node, over repeated runs (so buffers that traded places
// are reused).
TEST(MpiNonblocking, ReceivedMessagesReachRunRunIntoAndLaterNodes) {
  constexpr int64_t n = 4096;  // past the executor's smallest pooled buffers
  Graph g;
  Value x = g.placeholder("x", {n});
  auto done = mpi_waitall(
      {mpi_irecv(g, {n}, prev_rank(), 20), mpi_isend(x, next_rank(), 20)});
  Value y = done[0];
  Value twice = 2.0 * y;
  Session s(g);
  const int rank = world_rank(), prev = prev_rank();
  auto x_at = [](int r, int run) {
    Tensor t(Shape{n});
    for (int64_t i = 0; i < n; ++i) t[i] = r + 0.5 * i - run;
    return t;
  };
  Tensor into(Shape{n});
  const double* const caller_buffer = into.data();
  for (int run = 0; run < 4; ++run) {
    const FeedMap feeds{{x, x_at(rank, run)}};
    const std::vector<double> expect = x_at(prev, run).to_vector();
    std::vector<double> doubled = expect;
    for (double& v : doubled) v *= 2.0;
    EXPECT_EQ(s.run(y, feeds).to_vector(), expect) << "run " << run;
    EXPECT_EQ(s.run(twice, feeds).to_vector(), doubled) << "run " << run;
    s.run_into(y, feeds, into);
    EXPECT_EQ(into.data(), caller_buffer) << "run " << run;
    EXPECT_EQ(into.to_vector(), expect) << "run " << run;
  }
}

// A send takes the buffer of a value that dies at it instead of copying it
// (OpDef::consumes): of three sends per run, 3x (read by nothing else), x+1
// (read again after the send) and x itself (the caller's feed), only the
// last two are copied, 2 · 8n bytes per run by the communicator's count,
// while all three arrive exactly over repeated runs.
TEST(MpiNonblocking, ASendTakesTheBufferOfAValueThatDiesThere) {
  constexpr int64_t n = 4096;  // past the executor's smallest pooled buffers
  Graph g;
  Value x = g.placeholder("x", {n});
  Value thrice = 3.0 * x, plus_one = x + 1.0;
  auto done = mpi_waitall({mpi_irecv(g, {n}, prev_rank(), 21),
                           mpi_irecv(g, {n}, prev_rank(), 22),
                           mpi_irecv(g, {n}, prev_rank(), 23),
                           mpi_isend(thrice, next_rank(), 21),
                           mpi_isend(plus_one, next_rank(), 22),
                           mpi_isend(x, next_rank(), 23)});
  Value again = sum(plus_one);
  g.add_control_input(again, done[4]);
  Session s(g);
  const Communicator& comm = *Communicator::world();
  const int rank = world_rank(), prev = prev_rank();
  auto x_at = [](int r, int run) {
    Tensor t(Shape{n});
    for (int64_t i = 0; i < n; ++i) t[i] = r - 0.25 * i + run;
    return t;
  };
  for (int run = 0; run < 4; ++run) {
    const std::size_t copied = comm.copied_send_bytes();
    auto out =
        s.run({done[0], done[1], done[2], again}, {{x, x_at(rank, run)}});
    EXPECT_EQ(comm.copied_send_bytes() - copied, 2 * sizeof(double) * n)
        << "run " << run;
    const Tensor from = x_at(prev, run), mine = x_at(rank, run);
    double mine_plus_one = 0;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[0][i], 3.0 * from[i]) << "run " << run << ", i " << i;
      ASSERT_EQ(out[1][i], from[i] + 1.0) << "run " << run << ", i " << i;
      ASSERT_EQ(out[2][i], from[i]) << "run " << run << ", i " << i;
      mine_plus_one += mine[i] + 1.0;
    }
    EXPECT_NEAR(out[3].item(), mine_plus_one, 1e-9 * n) << "run " << run;
  }
}

// The same inside a loop body: each step sends 2c, which dies at the send,
// and adds what arrives: c_r ← c_r + 2 c_{r−1} on every rank r at once (by
// hand below). Nothing is copied for the sends once the loop runs again.
TEST(MpiNonblocking, ALoopBodysSendTakesTheBufferOfAValueThatDiesThere) {
  constexpr int64_t n = 1024;
  constexpr int steps = 3;
  Graph g;
  Value c0 = g.placeholder("c0", {n});
  LoopResult r = loop(
      steps,
      {c0},
      {},
      [](const LoopArgs& a) {
        const Value& c = a.carries[0];
        auto done = mpi_waitall({mpi_irecv(c, prev_rank(), 24),
                                 mpi_isend(2.0 * c, next_rank(), 24)});
        return LoopStep{{c + done[0]}, {}};
      },
      LoopOptions{});
  Session s(g);
  const Communicator& comm = *Communicator::world();
  const int size = world_size(), rank = world_rank();
  auto start = [](int rank_of, int64_t i) { return rank_of + 0.5 * i; };
  Tensor c(Shape{n});
  for (int64_t i = 0; i < n; ++i) c[i] = start(rank, i);
  for (int run = 0; run < 3; ++run) {
    const std::size_t copied = comm.copied_send_bytes();
    const Tensor got = s.run(r.carries[0], {{c0, c}});
    EXPECT_EQ(comm.copied_send_bytes(), copied) << "run " << run;
    for (int64_t i = 0; i < n; i += 97) {
      std::vector<double> all(size);
      for (int q = 0; q < size; ++q) all[q] = start(q, i);
      for (int t = 0; t < steps; ++t) {
        std::vector<double> next = all;
        for (int q = 0; q < size; ++q)
          next[q] = all[q] + 2.0 * all[(q + size - 1) % size];
        all = next;
      }
      EXPECT_EQ(got[i], all[rank]) << "run " << run << ", i " << i;
    }
  }
}

std::string run_error(Session& s,
                      const std::vector<Value>& fetch,
                      const FeedMap& feeds) {
  try {
    s.run(fetch, feeds);
  } catch (const RunError& e) {
    return e.what();
  }
  return "no error";
}

// Every rank builds the same structure, so every rank raises the error at
// plan time and none waits for a message.
TEST(MpiNonblocking, UncompletedOrTwiceCompletedRequestsArePlanErrors) {
  Graph g;
  Value x = g.placeholder("x", {2});
  NodeOptions named;
  named.name = "lonely";
  g.add_node("mpi_isend", {x}, {{"dest", next_rank()}, {"tag", 15}}, named);
  Value recv = mpi_irecv(x, prev_rank(), 15);
  Value y = mpi_wait(recv);
  Session s(g);
  EXPECT_EQ(run_error(s, {y}, {{x, Tensor({1.0, 2.0})}}),
            "node \"lonely\" (mpi_isend): request: its request is never "
            "completed in this run: no wait of it is among the nodes the "
            "fetches need (make what you fetch run after the wait, with "
            "NodeOptions::after or Graph::add_control_input)");

  Graph h;
  Value u = h.placeholder("u", {2});
  named.name = "twice";
  Value send =
      h.add_node("mpi_isend", {u}, {{"dest", next_rank()}, {"tag", 16}}, named);
  Value first = mpi_wait(send), second = mpi_wait(send);
  Session t(h);
  EXPECT_EQ(run_error(t, {first, second}, {{u, Tensor({1.0, 2.0})}}),
            "node \"twice\" (mpi_isend): request: its request is completed 2 "
            "times in this run; wait for a request exactly once");

  // A wait of something that is not a request fails when it is built.
  EXPECT_THROW(mpi_wait(u), ShapeError);
}

TEST(MpiNonblocking, GradientsNeedExactlyOneWaitPerRequest) {
  Graph g;
  Value x = g.placeholder("x", {2});
  mpi_isend(x, next_rank(), 17);  // never waited on
  Value loss = sum(square(x));
  EXPECT_THROW(gradient(loss, x), GraphError);
}

}  // namespace
}  // namespace adgraph
