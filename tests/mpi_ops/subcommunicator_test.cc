// Communication nodes on sub-communicators (Communicator::split and the
// row/column communicators of a patch grid), opened with CommScope.
#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

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

// Every rank knows every rank's group of a split of the world, in the
// split's rank order (by key, then by rank), for the plan-time pairing
// check; of a split of a split it knows none.
TEST(SubCommunicator, EveryRankKnowsTheGroupsOfASplitOfTheWorld) {
  const int rank = world_rank(), size = world_size();
  auto world = Communicator::world();
  auto parity = world->split(rank % 2, -rank);  // descending world rank
  for (int w = 0; w < size; ++w) {
    std::vector<int> want;
    for (int q = size - 1; q >= 0; --q)
      if (q % 2 == w % 2) want.push_back(q);
    ASSERT_NE(parity->group_of(w), nullptr) << w;
    EXPECT_EQ(*parity->group_of(w), want) << "world rank " << w;
    std::vector<int> everyone(size);
    for (int q = 0; q < size; ++q) everyone[q] = q;
    EXPECT_EQ(*world->group_of(w), everyone);
  }
  EXPECT_EQ(parity->group_of(size), nullptr);
  EXPECT_EQ(parity->split(0, 0)->group_of(rank), nullptr);
}

// One communicator of every rank in reverse order (rank k of it is world
// rank P − 1 − k), in a graph every rank builds the same. Every rank sends
// x to each rank k of it and receives from each: y = Σ_k (k + 1)·x_{P−1−k},
// and for J = Σ_ranks sum(y), ∂J/∂x_r = P·(P − r) (rank r's x arrives as
// message k = P − 1 − r on all P ranks). The plan-time check pairs the
// messages within the communicator; a receive no one sends is reported
// with both numberings, before anything runs.
TEST(SubCommunicator, PointToPointMessagesPairWithinTheirCommunicator) {
  const int rank = world_rank(), size = world_size();
  auto reversed = Communicator::world()->split(0, -rank);
  ASSERT_EQ(reversed->rank(), size - 1 - rank);
  auto program = [&](Value x) {
    CommScope on(x.graph(), reversed);
    for (int k = 0; k < size; ++k) mpi_send(x, k, 4);
    Value y;
    for (int k = 0; k < size; ++k) {
      Value term = mpi_recv(x, k, 4) * (k + 1.0);
      y = y.valid() ? y + term : term;
    }
    return y;
  };
  Graph g;
  g.set_same_on_every_rank(true);
  Value x = g.placeholder("x", {2});
  Value y = program(x);
  Value grad = gradient(sum(y), x);
  auto xs = [](int q) { return Tensor({q + 1.0, -0.5 * q}); };
  Session s(g);
  auto out = s.run({y, grad}, {{x, xs(rank)}});
  for (int i = 0; i < 2; ++i) {
    double want = 0;
    for (int k = 0; k < size; ++k) want += (k + 1.0) * xs(size - 1 - k)[i];
    EXPECT_EQ(out[0][i], want);
    EXPECT_EQ(out[1][i], size * (size - rank));
  }
  Graph h;
  Value u = h.placeholder("u", {2});
  expect_gradients_ok(
      rank_weighted_loss(program(u)), {u}, {{u, random_tensor({2}, 42)}});

  // Every rank sends to rank 0 of it (world rank P − 1) and receives from
  // it: only world rank P − 1 gets a message.
  Graph bad;
  bad.set_same_on_every_rank(true);
  Value b = bad.placeholder("b", {2});
  Value r;
  {
    CommScope on(bad, reversed);
    mpi_send(b, 0, 5);
    r = bad.add_node(
        "mpi_recv", {b}, {{"src", 0}, {"tag", 5}}, {.name = "from_first"});
  }
  Session t(bad);
  if (size == 1) {
    EXPECT_EQ(t.run(r, {{b, xs(0)}}).to_vector(), xs(0).to_vector());
    return;
  }
  const std::string last = std::to_string(size - 1);
  try {
    t.run(r, {{b, xs(rank)}});
    ADD_FAILURE() << "an unmatched receive ran";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()),
              "node \"from_first\" (mpi_recv): src: on world rank 0 it would "
              "wait forever for rank 0 of its communicator (world rank " +
                  last + ") (tag 5): world rank " + last +
                  " sends it only 0 message(s) with that tag (every rank runs "
                  "every node of this graph)");
  }
}

// A graph every rank builds the same, on groups {0, …, P − 2} and {P − 1}:
// a send to rank 1 of the group. A rank whose group has no rank 1 cannot
// build it (every rank at P ≤ 2); from three ranks on, the others' plan
// check reports the rank that could not, rather than wait for it.
TEST(SubCommunicator, APeerMissingFromAnotherRanksGroupIsReported) {
  const int rank = world_rank(), size = world_size();
  auto split = Communicator::world()->split(rank == size - 1 ? 1 : 0, rank);
  Graph g;
  g.set_same_on_every_rank(true);
  Value x = g.placeholder("x", {2});
  CommScope on(g, split);
  if (split->size() < 2) {
    EXPECT_THROW(mpi_send(x, 1, 0), ShapeError);
    return;
  }
  Value sent = g.add_node(
      "mpi_send", {x}, {{"dest", 1}, {"tag", 0}}, {.name = "to_second"});
  Session s(g);
  try {
    s.run(sent, {{x, Tensor({1.0, 2.0})}});
    ADD_FAILURE() << "ran";
  } catch (const RunError& e) {
    EXPECT_EQ(std::string(e.what()),
              "node \"to_second\" (mpi_send): dest: on world rank " +
                  std::to_string(size - 1) +
                  " its peer 1 is not a rank of its communicator, which has 1 "
                  "rank(s) there (every rank runs every node of this graph)");
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

// Threads of this process, from /proc/self/status.
int thread_count() {
  std::ifstream status("/proc/self/status");
  std::string key;
  while (status >> key) {
    if (key == "Threads:") {
      int n = 0;
      status >> n;
      return n;
    }
  }
  return -1;
}

// One watchdog thread watches every communicator: a program that splits
// hundreds of them keeps its thread count (a thread each once put
// thousands of threads on a rank). Each still has its deadline watch.
TEST(SubCommunicator, ManyCommunicatorsShareOneWatchdogThread) {
  const int rank = world_rank();
  auto world = Communicator::world();
  const int before = thread_count();
  ASSERT_GT(before, 0);
  std::vector<std::shared_ptr<Communicator>> made;
  for (int k = 0; k < 300; ++k) made.push_back(world->split(k % 3, rank));
  EXPECT_LE(thread_count(), before + 1) << "threads before: " << before;
  // They work: a sum on the last one is the sum over the world.
  EXPECT_DOUBLE_EQ(made.back()->allreduce_sum(1.0), world_size());
  made.clear();
  EXPECT_LE(thread_count(), before + 1);
}

}  // namespace
}  // namespace adgraph
