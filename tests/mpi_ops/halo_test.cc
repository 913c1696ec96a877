#include "mpi_ops/halo.h"

#include <gtest/gtest.h>

#include "core/exact_sum.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

// Strip k of rank r: 1000·k + 10·r + i (k = left, right, up, down).
Tensor strip(int k, int r, int64_t n) {
  Tensor t{Shape{n}};
  for (int64_t i = 0; i < n; ++i) t[i] = 1000.0 * k + 10.0 * r + i;
  return t;
}

// Every grid shape N × M with N·M = P, including 1 × P and P × 1.
std::vector<std::pair<int, int>> grids(int size) {
  std::vector<std::pair<int, int>> out;
  for (int n = 1; n <= size; ++n) {
    if (size % n == 0) out.emplace_back(n, size / n);
  }
  return out;
}

TEST(DataExchange, EveryGridShapeReceivesTheNeighboursStrips) {
  const int rank = world_rank(), size = world_size();
  constexpr int64_t kRows = 3, kCols = 2;  // rectangular patches
  for (const auto& grid : grids(size)) {
    const int rows = grid.first, cols = grid.second;
    Graph g;
    Value l = g.placeholder("l", {kRows}), r = g.placeholder("r", {kRows});
    Value u = g.placeholder("u", {kCols}), d = g.placeholder("d", {kCols});
    auto out = data_exchange(l, r, u, d, rows, cols);
    Session s(g);
    auto got = s.run({out[0], out[1], out[2], out[3]},
                     {{l, strip(0, rank, kRows)},
                      {r, strip(1, rank, kRows)},
                      {u, strip(2, rank, kCols)},
                      {d, strip(3, rank, kCols)}});
    const int i = rank / cols, j = rank % cols;
    auto expect =
        [&](const Tensor& t, bool exists, int k, int from, int64_t n) {
          Tensor want = exists ? strip(k, from, n) : Tensor(Shape{n}, 0.0);
          EXPECT_EQ(t.to_vector(), want.to_vector())
              << rows << "x" << cols << " grid, rank " << rank;
        };
    expect(got[0], j > 0, 1, rank - 1, kRows);
    expect(got[1], j + 1 < cols, 0, rank + 1, kRows);
    expect(got[2], i > 0, 3, rank - cols, kCols);
    expect(got[3], i + 1 < rows, 2, rank + cols, kCols);
  }
}

TEST(DataExchange, AdjointSendsEachHaloCotangentBackToItsOwner) {
  const int size = world_size();
  for (const auto& grid : grids(size)) {
    const int rows = grid.first, cols = grid.second;
    // All four strips packed in one vector: left, right (3 each), up, down (2).
    auto exchange = [rows = rows, cols = cols](Value v) {
      auto out = data_exchange(slice(v, 0, 0, 3),
                               slice(v, 0, 3, 6),
                               slice(v, 0, 6, 8),
                               slice(v, 0, 8, 10),
                               rows,
                               cols);
      return concat({out[0], out[1], out[2], out[3]}, 0);
    };
    expect_adjoint_identity(exchange, {10});
    Graph g;
    Value x = g.placeholder("x", {10});
    expect_gradients_ok(
        rank_weighted_loss(exchange(x)), {x}, {{x, random_tensor({10}, 30)}});
  }
}

// data_exchange_start … data_exchange_finish, with independent work
// between them, gives what data_exchange gives, forward and adjoint.
TEST(DataExchangeStartFinish, EqualsDataExchangeOnEveryGrid) {
  const int rank = world_rank(), size = world_size();
  for (const auto& grid : grids(size)) {
    const int rows = grid.first, cols = grid.second;
    Graph g;
    Value l = g.placeholder("l", {3}), r = g.placeholder("r", {3});
    Value u = g.placeholder("u", {2}), d = g.placeholder("d", {2});
    Value request = data_exchange_start(l, r, u, d, rows, cols);
    Value between = sum(sin(l)) + sum(cos(u));  // needs no halo
    auto split = data_exchange_finish(request);
    auto plain = data_exchange(l, r, u, d, rows, cols);
    const FeedMap feeds = {{l, strip(0, rank, 3)},
                           {r, strip(1, rank, 3)},
                           {u, strip(2, rank, 2)},
                           {d, strip(3, rank, 2)}};
    Session s(g);
    // The split exchange alone, then both (their order on every rank is
    // the graph's).
    auto alone =
        s.run({split[0], split[1], split[2], split[3], between}, feeds);
    auto both = s.run({plain[0],
                       plain[1],
                       plain[2],
                       plain[3],
                       split[0],
                       split[1],
                       split[2],
                       split[3]},
                      feeds);
    for (int k = 0; k < 4; ++k) {
      EXPECT_EQ(alone[k].to_vector(), both[k].to_vector()) << k;
      EXPECT_EQ(both[4 + k].to_vector(), both[k].to_vector()) << k;
    }
    // Each sum exact and rounded once (Shewchuk's partials here, the
    // fixed-point accumulator in the op), then one addition.
    const Tensor ls = strip(0, rank, 3), us = strip(2, rank, 2);
    const double sines[3] = {std::sin(ls[0]), std::sin(ls[1]), std::sin(ls[2])};
    const double cosines[2] = {std::cos(us[0]), std::cos(us[1])};
    EXPECT_EQ(alone[4].item(),
              exact_sum_of_few(sines, 3) + exact_sum_of_few(cosines, 2));
  }
}

TEST(DataExchangeStartFinish, AdjointAndTangentPassTheCheckers) {
  const int size = world_size();
  for (const auto& grid : grids(size)) {
    const int rows = grid.first, cols = grid.second;
    auto exchange = [rows = rows, cols = cols](Value v) {
      Value request = data_exchange_start(slice(v, 0, 0, 3),
                                          slice(v, 0, 3, 6),
                                          slice(v, 0, 6, 8),
                                          slice(v, 0, 8, 10),
                                          rows,
                                          cols);
      Value local = square(v);  // overlaps the messages
      auto out = data_exchange_finish(request);
      return concat({out[0], out[1], out[2], out[3]}, 0) + local;
    };
    Graph g;
    Value x = g.placeholder("x", {10});
    expect_gradients_ok(
        rank_weighted_loss(exchange(x)), {x}, {{x, random_tensor({10}, 31)}});
  }
}

// The loss uses x only, so no cotangent reaches the received strips: the
// adjoint adds no reverse swap (the graph still holds one exchange after
// gradients()), and the gradient is the local one, 2x, on every grid.
TEST(DataExchangeStartFinish, StripsWithoutCotangentsGetNoReverseSwap) {
  const int size = world_size();
  auto count = [](const Graph& g, const std::string& op) {
    int n = 0;
    for (int id = 0; id < g.num_nodes(); ++id) n += g.node(id).op_name() == op;
    return n;
  };
  for (const bool overlap : {false, true}) {
    Graph g;
    Value x = g.placeholder("x", {10});
    const Value l = slice(x, 0, 0, 3), r = slice(x, 0, 3, 6),
                u = slice(x, 0, 6, 8), d = slice(x, 0, 8, 10);
    auto out =
        overlap ? data_exchange_finish(data_exchange_start(l, r, u, d, 1, size))
                : data_exchange(l, r, u, d, 1, size);
    Value received = concat({out[0], out[1], out[2], out[3]}, 0);
    Value grad = gradient(sum(square(x)), x);
    EXPECT_EQ(count(g, overlap ? "data_exchange_start" : "data_exchange"), 1);
    Session s(g);
    const Tensor xv = random_tensor({10}, 5);
    const auto got = s.run({grad, received}, {{x, xv}});
    for (int64_t i = 0; i < 10; ++i) EXPECT_EQ(got[0][i], 2 * xv[i]);
  }
}

TEST(DataExchangeStartFinish, UnfinishedAndMisusedRequestsAreErrors) {
  const int size = world_size();
  Graph g;
  Value l = g.placeholder("l", {3}), u = g.placeholder("u", {2});
  NodeOptions named;
  named.name = "halo_start";
  Value request = g.add_node("data_exchange_start",
                             {l, l, u, u},
                             {{"rows", 1}, {"cols", size}},
                             named);
  Value after = sum(l) + 1.0;
  g.add_control_input(after, request);
  Session s(g);
  try {
    s.run(after, {{l, Tensor({1.0, 2.0, 3.0})}, {u, Tensor({1.0, 2.0})}});
    ADD_FAILURE() << "a start without its finish ran";
  } catch (const RunError& e) {
    EXPECT_NE(std::string(e.what()).find("node \"halo_start\""),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("never completed"), std::string::npos)
        << e.what();
  }
  try {
    data_exchange_finish(l);
    ADD_FAILURE() << "finished a non-request";
  } catch (const ShapeError& e) {
    EXPECT_NE(
        std::string(e.what()).find("is not a data_exchange_start request"),
        std::string::npos)
        << e.what();
  }
}

TEST(DataExchange, GridMustMatchTheRankCountAndStripsMustPair) {
  const int size = world_size();
  Graph g;
  Value a = g.placeholder("a", {3}), b = g.placeholder("b", {2});
  EXPECT_THROW(data_exchange(a, a, b, b, size + 1, 1), ShapeError);
  EXPECT_THROW(data_exchange(a, b, b, b, size, 1), ShapeError);
}

}  // namespace
}  // namespace adgraph
