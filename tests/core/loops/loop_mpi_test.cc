// Loops whose bodies communicate (core/loops/loop.h): the gradient checker
// (finite differences, Taylor, jvp) through a halo exchange, an allreduce and a
// send/recv ring in a body, at every rank count; schedules agree bitwise;
// a body on a sub-communicator against the same steps unrolled;
// nested loops; ghost ordering and the sequence check around a loop.
#include <gtest/gtest.h>

#include <algorithm>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

// The patch grid for the halo exchange: 2 × 2 at 4 ranks, size × 1 else.
int grid_rows() { return world_size() == 4 ? 2 : world_size(); }
int grid_cols() { return world_size() == 4 ? 2 : 1; }

// One step with every kind of message: a halo exchange of the edges of a
// 3 × 4 patch, an allreduce of its sum, and a ring send/recv.
LoopStep communicating_step(const LoopArgs& l) {
  const int rank = world_rank(), size = world_size();
  Value u = l.carries[0];  // [3, 4]
  Value a = l.invariants[0];
  auto halos = data_exchange(slice(u, 1, 0, 1),
                             slice(u, 1, 3, 4),
                             slice(u, 0, 0, 1),
                             slice(u, 0, 2, 3),
                             grid_rows(),
                             grid_cols());
  Value around = sum(halos[0]) + sum(halos[1]) + sum(halos[2]) + sum(halos[3]);
  Value total = mpi_allreduce(sum(u));
  Value sent = mpi_send(u, (rank + 1) % size, 3);
  Value from_left = mpi_recv(u, (rank + size - 1) % size, 3);
  Value next =
      0.6 * sin(sent) * a + 0.2 * from_left + 0.01 * around + 0.001 * total;
  return {{next}, {sum(square(next))}};
}

struct RingProblem {
  Graph g;
  Value u0, a, loss, loop_node;
};

void build(RingProblem& p, int64_t n, CheckpointSchedule schedule) {
  p.u0 = p.g.placeholder("u0", {3, 4});
  p.a = p.g.placeholder("a", {3, 4});
  LoopOptions o;
  o.checkpoints = schedule;
  o.output_steps = {0, n / 2, n - 1};
  LoopResult r = loop(n, {p.u0}, {p.a}, communicating_step, o);
  p.loop_node = r.node;
  p.loss = rank_weighted_loss(r.carries[0]) + sum(r.outputs[0]);
}

FeedMap feeds_of(const RingProblem& p) {
  return {{p.u0, random_tensor({3, 4}, 11)}, {p.a, random_tensor({3, 4}, 12)}};
}

TEST(LoopMpi, GradientCheckerThroughHaloAllreduceAndRingInTheBody) {
  RingProblem p;
  build(p, 6, CheckpointSchedule::binomial(2));
  expect_gradients_ok(p.loss, {p.u0, p.a}, feeds_of(p));
}

TEST(LoopMpi, EveryScheduleGivesBitwiseTheSameLossAndGradient) {
  auto run = [](CheckpointSchedule schedule) {
    RingProblem p;
    build(p, 13, schedule);
    Values g = gradients(p.loss, {p.u0, p.a});
    Session s(p.g);
    return s.run({p.loss, g[0], g[1]}, feeds_of(p));
  };
  const auto expected = run(CheckpointSchedule::store_all());
  for (auto schedule : {CheckpointSchedule::every(4),
                        CheckpointSchedule::binomial(1),
                        CheckpointSchedule::binomial(3),
                        CheckpointSchedule::memory_budget(2 * 12 * 8)}) {
    const auto got = run(schedule);
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].to_vector(), expected[k].to_vector())
          << schedule.describe() << " output " << k;
    }
  }
}

TEST(LoopMpi, NestedLoopsWithAnAllreduceInTheInnerBody) {
  Graph g;
  Value x0 = g.placeholder("x0", {2});
  Value a = g.placeholder("a", {2});
  LoopResult r = loop(3, {x0}, {a}, [](const LoopArgs& l) {
    LoopOptions inner;
    inner.checkpoints = CheckpointSchedule::binomial(1);
    LoopResult in = loop(
        2,
        {l.carries[0]},
        {l.invariants[0]},
        [](const LoopArgs& m) {
          Value y = m.carries[0];
          return LoopStep{{y + 0.1 * sin(mpi_allreduce(y)) * m.invariants[0]},
                          {}};
        },
        inner);
    return LoopStep{{0.8 * in.carries[0]}, {}};
  });
  Value loss = rank_weighted_loss(r.carries[0]);
  expect_gradients_ok(
      loss,
      {x0, a},
      {{x0, random_tensor({2}, 21)}, {a, random_tensor({2}, 22)}});
}

TEST(LoopMpi, AdjointOfARingMatchesItsTransposeAtEveryRank) {
  // A linear loop (pure ring shifts): the dot-product test for the adjoint
  // loop and jvp(A x) = A t for its tangent.
  expect_adjoint_identity(
      [](Value x) {
        return loop(4,
                    {x},
                    {},
                    [](const LoopArgs& l) {
                      const int rank = world_rank(), size = world_size();
                      Value s = mpi_send(l.carries[0], (rank + 1) % size, 5);
                      Value r = mpi_recv(s, (rank + size - 1) % size, 5);
                      return LoopStep{{0.5 * s + r}, {}};
                    })
            .carries[0];
      },
      {5});
}

// A body on a sub-communicator: the ranks of one parity, in descending
// world order, sum u and pass it around their own ring. The loop gives bit
// for bit what the same steps unrolled in the outer graph give, forward and
// gradient, under two schedules, and its gradient passes the checker.
TEST(LoopMpi, ABodyOnASubCommunicatorMatchesTheUnrolledSteps) {
  const int rank = world_rank();
  auto parity = Communicator::world()->split(rank % 2, -rank);
  const int prank = parity->rank(), psize = parity->size();
  auto step = [&](Value u, Value a) {
    CommScope on(u.graph(), parity);
    Value total = mpi_allreduce(sum(u));
    Value sent = mpi_send(u, (prank + 1) % psize, 7);
    Value from = mpi_recv(u, (prank + psize - 1) % psize, 7);
    return 0.5 * sin(sent) * a + 0.3 * from + 0.01 * total;
  };
  constexpr int64_t kSteps = 5;
  auto run = [&](bool unrolled, CheckpointSchedule schedule) {
    Graph g;
    Value u0 = g.placeholder("u0", {3});
    Value a = g.placeholder("a", {3});
    Value u = u0;
    if (unrolled) {
      for (int64_t t = 0; t < kSteps; ++t) u = step(u, a);
    } else {
      LoopOptions o;
      o.checkpoints = schedule;
      u = loop(
              kSteps,
              {u0},
              {a},
              [&](const LoopArgs& l) {
                return LoopStep{{step(l.carries[0], l.invariants[0])}, {}};
              },
              o)
              .carries[0];
    }
    Value loss = rank_weighted_loss(u);
    Values grads = gradients(loss, {u0, a});
    Session s(g);
    return s.run({loss, grads[0], grads[1]},
                 {{u0, random_tensor({3}, 31)}, {a, random_tensor({3}, 32)}});
  };
  const auto expected = run(true, CheckpointSchedule::store_all());
  for (auto schedule :
       {CheckpointSchedule::store_all(), CheckpointSchedule::binomial(2)}) {
    const auto got = run(false, schedule);
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].to_vector(), expected[k].to_vector())
          << schedule.describe() << " output " << k;
    }
  }
  EXPECT_GT(expected[1].array().abs().maxCoeff(), 0.0);
  Graph g;
  Value u0 = g.placeholder("u0", {3});
  Value a = g.placeholder("a", {3});
  Value u = loop(3, {u0}, {a}, [&](const LoopArgs& l) {
              return LoopStep{{step(l.carries[0], l.invariants[0])}, {}};
            }).carries[0];
  expect_gradients_ok(
      rank_weighted_loss(u),
      {u0, a},
      {{u0, random_tensor({3}, 33)}, {a, random_tensor({3}, 34)}});
}

TEST(LoopMpi, ALoopIsOneLinkOfTheGhostChain) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value before = mpi_allreduce(x);
  LoopResult r = loop(3, {before}, {}, [](const LoopArgs& l) {
    return LoopStep{{mpi_allreduce(l.carries[0]) * 0.5}, {}};
  });
  Value after = mpi_bcast(r.carries[0]);
  EXPECT_TRUE(r.node.node().communication);
  EXPECT_EQ(r.node.node().ghost_input, before.node_id());
  EXPECT_EQ(after.node().ghost_input, r.node.node_id());
  // Value by hand: allreduce gives size·x; each step multiplies by
  // size/2.
  Session s(g);
  const double size = world_size();
  const double expected = 1.0 * size * std::pow(size / 2, 3);
  EXPECT_EQ(s.run(after, {{x, Tensor({1.0, 1.0})}})[0], expected);
}

TEST(LoopMpi, DivergentBodiesRaiseOneErrorOnEveryRank) {
  const int rank = world_rank(), size = world_size();
  if (size == 1) return;  // nothing to differ on one rank
  Graph g;
  Value x = g.placeholder("x", {2});
  LoopOptions o;
  o.name = "steps";
  LoopResult r = loop(
      2,
      {x},
      {},
      [&](const LoopArgs& l) {
        Value y = rank == size - 1 ? mpi_bcast(l.carries[0])
                                   : mpi_allreduce(l.carries[0]);
        return LoopStep{{y}, {}};
      },
      o);
  Session s(g);
  std::string message;
  try {
    s.run(r.carries[0], {{x, Tensor({1.0, 2.0})}});
  } catch (const RunError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("ranks would run different collectives"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\"steps\" (loop"), std::string::npos) << message;
}

}  // namespace
}  // namespace adgraph
