// grid_halo against padding by hand (numpy.pad's rules, written out), on
// every process grid, and its adjoint by the dot-product test.
#include "grid/halo.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/grid/grid_test_util.h"

namespace adgraph::grid {
namespace {

using namespace adgraph::testing;

// Global index i of an axis of n points, past the edge by the rule; -1 for
// a zero ghost.
int64_t by_rule(int64_t i, int64_t n, bool periodic, const std::string& rule) {
  if (i >= 0 && i < n) return i;
  if (periodic) return ((i % n) + n) % n;
  if (rule == "copy") return i < 0 ? 0 : n - 1;
  if (rule == "mirror") return i < 0 ? -i : 2 * (n - 1) - i;
  return -1;
}

// This rank's padded patch, by hand from the global field.
Tensor padded_by_hand(const Tensor& global,
                      const Grid& g,
                      const std::vector<int64_t>& w,
                      bool corners,
                      const std::string& rule) {
  const int nd = g.ndim();
  const int nb = global.rank() - nd;
  const Shape local = g.local_shape(), off = g.offset();
  Shape out_shape(global.shape().begin(), global.shape().begin() + nb);
  for (int a = 0; a < nd; ++a) out_shape.push_back(local[a] + 2 * w[a]);
  Tensor out{Shape(out_shape)};
  Shape idx(out_shape.size(), 0);
  for (int64_t k = 0; k < out.size(); ++k) {
    Shape gi = idx;
    int ghosts = 0;
    bool zero = false;
    for (int a = 0; a < nd; ++a) {
      const int64_t l = idx[nb + a] - w[a];
      ghosts += l < 0 || l >= local[a];
      gi[nb + a] =
          by_rule(off[a] + l, g.shape()[a], g.layout().periodic[a], rule);
      zero = zero || gi[nb + a] < 0;
    }
    out[k] = zero || (!corners && ghosts > 1)
                 ? 0.0
                 : global[flat(global.shape(), gi)];
    for (int a = static_cast<int>(idx.size()) - 1;
         a >= 0 && ++idx[a] == out_shape[a];
         --a)
      idx[a] = 0;
  }
  return out;
}

struct Config {
  Shape shape;
  std::vector<bool> periodic;
  std::vector<int64_t> width;
};

std::vector<Config> configs() {
  return {{{23}, {false}, {4}},
          {{23}, {true}, {2}},
          {{17, 18}, {false, false}, {1, 1}},
          {{17, 18}, {true, false}, {2, 4}},
          {{17, 18}, {false, true}, {4, 0}},
          {{9, 10, 9}, {false, false, false}, {1, 2, 1}},
          {{9, 10, 9}, {true, false, true}, {2, 1, 2}}};
}

TEST(GridHalo, MatchesPaddingByHandOnEveryProcessGridRuleAndWidth) {
  auto world = Communicator::world();
  for (const Config& c : configs()) {
    Shape batched = c.shape;
    batched.insert(batched.begin(), 2);
    const Tensor global = global_field(batched, 41);
    for (const std::vector<int>& procs :
         process_grids(world->size(), c.shape)) {
      Grid g(c.shape, procs, c.periodic, world);
      for (const std::string rule : {"zero", "mirror", "copy"}) {
        for (bool corners : {true, false}) {
          SCOPED_TRACE(shape_string(c.shape) + " procs " +
                       shape_string(Shape(procs.begin(), procs.end())) +
                       " width " + shape_string(c.width) + " " + rule +
                       (corners ? " corners" : " faces"));
          Graph graph;
          Shape local = g.local_shape();
          local.insert(local.begin(), 2);
          Value x = graph.placeholder("x", local);
          Value y;
          const bool narrow = [&] {
            for (int a = 0; a < g.ndim(); ++a) {
              const int64_t smallest = c.shape[a] / procs[a];
              const bool exchanged = procs[a] > 1 || c.periodic[a];
              if (c.width[a] > 0 && exchanged && smallest < c.width[a])
                return true;
              if (c.width[a] > 0 && rule == std::string("mirror") &&
                  !c.periodic[a] && smallest <= c.width[a])
                return true;
            }
            return false;
          }();
          try {
            y = halo(g, x, c.width, {corners, rule});
          } catch (const ShapeError& e) {
            EXPECT_TRUE(narrow) << e.what();
            EXPECT_NE(std::string(e.what()).find("attribute \"width\""),
                      std::string::npos)
                << e.what();
            continue;
          }
          EXPECT_FALSE(narrow);
          Session s(graph);
          const Tensor got =
              s.run(y, {{x, patch_of(global, c.shape, procs, world->rank())}});
          const Tensor want = padded_by_hand(global, g, c.width, corners, rule);
          EXPECT_EQ(got.shape(), want.shape());
          EXPECT_EQ(got.to_vector(), want.to_vector());
        }
      }
    }
  }
}

TEST(GridHalo, AdjointIsTheTransposeForEveryRule) {
  auto world = Communicator::world();
  for (const Config& c : configs()) {
    const std::vector<int> procs = process_grids(world->size(), c.shape).back();
    Grid g(c.shape, procs, c.periodic, world);
    for (const std::string rule : {"zero", "mirror", "copy"}) {
      for (bool corners : {true, false}) {
        SCOPED_TRACE(shape_string(c.shape) + " " + rule +
                     (corners ? " corners" : " faces"));
        try {
          Graph probe;
          halo(g,
               probe.placeholder("x", g.local_shape()),
               c.width,
               {corners, rule});
        } catch (const ShapeError&) {
          continue;  // too narrow for this rule: the test above covers it
        }
        expect_adjoint_identity(
            [&](Value x) {
              return halo(g, x, c.width, {corners, rule});
            },
            g.local_shape());
      }
    }
  }
}

TEST(GridHalo, GradientCheckerThroughANonlinearLoss) {
  auto world = Communicator::world();
  const Shape shape = {12, 11};
  const std::vector<int> procs = process_grids(world->size(), shape).back();
  Grid g(shape, procs, {false, true}, world);
  Graph graph;
  Value x = graph.placeholder("x", g.local_shape());
  Value y = halo(g, x, {2, 1}, {true, "mirror"});
  Value loss = sum(square(y) * graph.constant(random_tensor(y.shape(), 42)));
  expect_gradients_ok(
      loss,
      {x},
      {{x, patch_of(global_field(shape, 43), shape, procs, world->rank())}});
}

TEST(GridHalo, RefusesAnUnknownRuleAndAFieldOfAnotherPatch) {
  auto world = Communicator::world();
  Grid g({8, 8}, {world->size(), 1}, {}, world);
  Graph graph;
  Value x = graph.placeholder("x", g.local_shape());
  try {
    halo(g, x, {1}, {true, "reflect"});
    ADD_FAILURE() << "accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("attribute \"boundary\": unknown rule "
                                         "\"reflect\" (zero, mirror or copy)"),
              std::string::npos)
        << e.what();
  }
  try {
    halo(g, graph.placeholder("w", {3, 8, 9}), {1});
    ADD_FAILURE() << "accepted";
  } catch (const ShapeError& e) {
    EXPECT_NE(
        std::string(e.what()).find(
            "input \"x\": shape [3, 8, 9] does not end in this rank's patch"),
        std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace adgraph::grid
