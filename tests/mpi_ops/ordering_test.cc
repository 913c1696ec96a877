// Ghost dependencies, the concurrent executor, the cross-rank sequence
// check and derivatives of derivatives through communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

bool has_ghost_input(const Value& v, const Value& dep) {
  return v.node().ghost_input == dep.node_id();
}

TEST(GhostDependencies, ChainCommunicationNodesInCreationOrder) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value a = mpi_allreduce(x);
  Value local = sin(x);
  Value b = mpi_bcast(x);  // independent of a through data edges
  EXPECT_TRUE(has_ghost_input(b, a));
  EXPECT_EQ(local.node().ghost_input, -1);
  EXPECT_TRUE(local.node().control_inputs.empty());
  EXPECT_EQ(a.node().communication_index, 0);
  EXPECT_EQ(b.node().communication_index, 1);
}

TEST(GhostDependencies, OrderRunsWithoutPullingInUnneededCollectives) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value la = sum(square(mpi_allreduce(x)));  // 4 nodes with x
  Value lb = sum(mpi_allreduce(sin(x)));     // 4 nodes with x
  Value ga = gradient(la, x);
  Session s(g);
  const FeedMap feeds{{x, Tensor({1.0, 2.0})}};
  const double size = world_size();
  // Σ_i (size·x_i)² = 5·size².
  EXPECT_EQ(s.run(la, feeds).item(), 5 * size * size);
  EXPECT_EQ(s.stats().nodes_executed, 4);
  // lb's allreduce is newer than la's; its ghost edge orders, not includes.
  EXPECT_NEAR(s.run(lb, feeds).item(),
              size * (std::sin(1.0) + std::sin(2.0)),
              1e-14 * size);
  EXPECT_EQ(s.stats().nodes_executed, 4);
  // The gradient does not run lb's allreduce (nor its zero-cotangent
  // adjoint): ∂(Σ_q la_q)/∂x_r = Σ_q 2·size·x = 2·size²·x.
  const Tensor g_out = s.run(ga, feeds);
  EXPECT_EQ(g_out[0], 2 * size * size * 1.0);
  EXPECT_EQ(g_out[1], 2 * size * size * 2.0);
  // Both in one run: the two collectives run in creation order.
  auto both = s.run({la, lb}, feeds);
  EXPECT_EQ(both[0].item(), 5 * size * size);
}

TEST(GhostDependencies, OlderPointToPointNodesStillRun) {
  // Rank 0's send feeds nothing it fetches; rank 1 waits for it. The send
  // is older than the allreduce both fetch, so it runs.
  const int rank = world_rank(), size = world_size();
  if (size < 2) return;
  Graph g;
  Value x = g.placeholder("x", {2});
  Value received;
  if (rank == 0) mpi_send(x, 1, 4);
  if (rank == 1) received = mpi_recv(x, 0, 4);
  NodeOptions named;  // auto names differ: rank 2 has no send or receive
  named.name = "total";
  Value total = g.add_node("mpi_allreduce", {x}, {{"op", "sum"}}, named);
  Session s(g);
  const FeedMap feeds{{x, Tensor({1.0 + rank, 2.0})}};
  std::vector<Value> fetches{total};
  if (rank == 1) fetches.push_back(received);
  auto out = s.run(fetches, feeds);
  if (rank == 1) {
    EXPECT_EQ(out[1][0], 1.0);
    EXPECT_EQ(out[1][1], 2.0);
  }
  EXPECT_EQ(out[0][1], 2.0 * size);
}

TEST(GhostDependencies, AdjointsRunInReverseOrder) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value a = mpi_allreduce(x);
  Value b = mpi_bcast(x, 0);
  const int forward_end = g.num_nodes();
  gradient(sum(a) + sum(b), x);
  std::vector<std::string> adjoint_ops;
  for (int id = forward_end; id < g.num_nodes(); ++id) {
    if (g.node(id).op->communication)
      adjoint_ops.push_back(g.node(id).op_name());
  }
  // bcast's adjoint (mpi_sum) first, then allreduce's (mpi_allreduce).
  EXPECT_EQ(adjoint_ops,
            (std::vector<std::string>{"mpi_sum", "mpi_allreduce"}));
}

TEST(GhostDependencies, ConcurrentExecutorNeverMismatchesCollectives) {
  // Independent branches, each ending in a collective of its own size; a
  // mismatch across ranks would pair messages of different sizes (an MPI
  // error) or give wrong sums. Thread counts differ by rank.
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {8});
  std::vector<Value> results;
  for (int b = 0; b < 8; ++b) {
    Value branch = slice(x, 0, 0, b + 1);
    for (int k = 0; k < 3; ++k) branch = branch * 1.0 + sin(branch) * 0.0;
    results.push_back(b % 2 ? mpi_allreduce(branch)
                            : mpi_bcast(branch, b % size));
  }
  Tensor xv(Shape{8});
  for (int i = 0; i < 8; ++i) xv[i] = rank + 0.5 * i;
  Session s(g, {.concurrent = true, .num_threads = 1 + rank % 3});
  for (int rep = 0; rep < 50; ++rep) {
    auto out = s.run(results, {{x, xv}});
    for (int b = 0; b < 8; ++b) {
      for (int i = 0; i <= b; ++i) {
        const double want = b % 2 ? size * (size - 1) / 2.0 + size * 0.5 * i
                                  : (b % size) + 0.5 * i;
        ASSERT_EQ(out[b][i], want) << "branch " << b << " rep " << rep;
      }
    }
  }
}

// Every rank must see the same message; compares hashes across ranks.
void expect_same_on_every_rank(const std::string& message) {
  const double h =
      static_cast<double>(std::hash<std::string>{}(message) % 1000003);
  auto comm = Communicator::world();
  EXPECT_EQ(comm->allreduce_max(h), -comm->allreduce_max(-h)) << message;
}

TEST(SequenceCheck, DivergentCollectivesRaiseOneErrorOnEveryRank) {
  // On one rank there is nothing to differ: the run succeeds.
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {2});
  NodeOptions named;
  named.name = "reduce";
  if (size == 1) {
    Session single(g);
    EXPECT_EQ(single.run(mpi_sum(x), {{x, Tensor({1.0, 2.0})}})[1], 2.0);
    return;
  }
  Value y = rank == 0 ? g.add_node("mpi_sum", {x}, {{"root", 0}}, named)
                      : g.add_node("mpi_bcast", {x}, {{"root", 0}}, named);
  Session s(g);
  std::string message;
  try {
    s.run(y, {{x, Tensor({1.0, 2.0})}});
  } catch (const RunError& e) {
    message = e.what();
  }
  EXPECT_NE(
      message.find("ranks would run different collectives: collective #0"),
      std::string::npos)
      << message;
  EXPECT_NE(message.find("on rank 0 \"reduce\" (mpi_sum"), std::string::npos)
      << message;
  EXPECT_NE(message.find("on rank 1 \"reduce\" (mpi_bcast"), std::string::npos)
      << message;
  expect_same_on_every_rank(message);
}

TEST(SequenceCheck, AnExtraCollectiveOnOneRankIsNamed) {
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = mpi_allreduce(x);
  if (size == 1) {
    Session single(g);
    EXPECT_EQ(single.run(y, {{x, Tensor({1.0, 2.0})}})[1], 2.0);
    return;
  }
  if (rank == size - 1) {
    NodeOptions named;
    named.name = "extra";
    y = g.add_node("mpi_allreduce", {y}, {}, named);
  }
  Session s(g);
  std::string message;
  try {
    s.run(y, {{x, Tensor({1.0, 2.0})}});
  } catch (const RunError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("collective #1"), std::string::npos) << message;
  EXPECT_NE(message.find("\"extra\" (mpi_allreduce"), std::string::npos)
      << message;
  EXPECT_NE(message.find("on rank 0 no further collective"), std::string::npos)
      << message;
  expect_same_on_every_rank(message);
}

TEST(HigherOrder, HessianVectorProductThroughAllreduce) {
  // f = Σ_r Σ_i w_{r,i} (Σ_q sin x_q)_i²; compare H v with a central
  // difference of the gradient along v.
  Graph g;
  Value x = g.placeholder("x", {3});
  Value v = g.placeholder("v", {3});
  Value loss = rank_weighted_loss(mpi_allreduce(sin(x)));
  Value grad = gradient(loss, x);
  Value hv = gradient(dot(grad, v), x);
  Session s(g);
  Tensor xv = random_tensor({3}, 40), vv = random_tensor({3}, 41);
  Tensor exact = s.run(hv, {{x, xv}, {v, vv}});
  constexpr double kStep = 1e-5;
  Tensor up = xv, down = xv;
  up.array() += kStep * vv.array();
  down.array() -= kStep * vv.array();
  Tensor gu = s.run(grad, {{x, up}, {v, vv}});
  Tensor gd = s.run(grad, {{x, down}, {v, vv}});
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(exact[i],
                (gu[i] - gd[i]) / (2 * kStep),
                1e-7 * (1 + std::fabs(exact[i])));
  }
}

// The check compares what the collectives do, not their generated names:
// rank 0 builds an extra local node first, so its allreduce is numbered
// differently, and the plan still runs.
TEST(Ordering, GeneratedNamesDoNotMakeRanksDiffer) {
  Graph g;
  Value x = g.placeholder("x", {2});
  if (world_rank() == 0) square(x);
  Value y = mpi_allreduce(x);
  Session s(g);
  Tensor out = s.run(y, {{x, Tensor({1.0, 2.0})}});
  EXPECT_EQ(out.to_vector(),
            (std::vector<double>{1.0 * world_size(), 2.0 * world_size()}));
}

}  // namespace
}  // namespace adgraph
