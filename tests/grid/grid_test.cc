// Grid: the decomposition by hand, owners, neighbours, scatter and gather.
#include "grid/grid.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/grid/grid_test_util.h"

namespace adgraph::grid {
namespace {

using namespace adgraph::testing;

TEST(GridLayout, UnevenAxesGiveTheFirstProcessesOnePointMore) {
  // 10 points over 3 processes: 4, 3, 3 starting at 0, 4, 7.
  GridLayout g{{10, 7}, {3, 2}, {false, true}};
  EXPECT_EQ(g.invalid_reason(), "");
  EXPECT_EQ(g.extent(0, 0), 4);
  EXPECT_EQ(g.extent(0, 1), 3);
  EXPECT_EQ(g.extent(0, 2), 3);
  EXPECT_EQ(g.start(0, 1), 4);
  EXPECT_EQ(g.start(0, 2), 7);
  // 7 over 2: 4, 3.
  EXPECT_EQ(g.local_shape(0), (Shape{4, 4}));
  EXPECT_EQ(g.local_shape(5), (Shape{3, 3}));
  EXPECT_EQ(g.offset(5), (Shape{7, 4}));
  EXPECT_EQ(g.min_extent(), (Shape{3, 3}));
  // Rank = i·2 + j.
  EXPECT_EQ(g.coords_of(3), (std::vector<int>{1, 1}));
  EXPECT_EQ(g.owner({0, 0}), 0);
  EXPECT_EQ(g.owner({3, 4}), 1);
  EXPECT_EQ(g.owner({4, 3}), 2);
  EXPECT_EQ(g.owner({9, 6}), 5);
}

TEST(GridLayout, NeighboursWrapOnPeriodicAxesOnly) {
  GridLayout g{{10, 7}, {3, 2}, {false, true}};
  EXPECT_EQ(g.neighbour(0, {-1, 0}), -1);  // top edge, not periodic
  EXPECT_EQ(g.neighbour(0, {1, 0}), 2);
  EXPECT_EQ(g.neighbour(0, {0, -1}), 1);  // wraps to column 1
  EXPECT_EQ(g.neighbour(5, {1, 1}), -1);
  EXPECT_EQ(g.neighbour(4, {-1, 1}), 3);
}

TEST(GridLayout, InvalidLayoutsSayWhichField) {
  EXPECT_EQ((GridLayout{{}, {}, {}}).invalid_reason(),
            "shape: a grid has 1 to 3 axes, got 0");
  EXPECT_EQ((GridLayout{{4, 4}, {1}, {false, false}}).invalid_reason(),
            "procs: 1 entries for a 2-D grid");
  EXPECT_EQ((GridLayout{{4, 0}, {1, 1}, {false, false}}).invalid_reason(),
            "shape: axis 1 has extent 0 (at least 1)");
  EXPECT_EQ((GridLayout{{4, 2}, {1, 3}, {false, false}}).invalid_reason(),
            "procs: axis 1 has 3 processes for 2 points (1 to the extent)");
}

TEST(Grid, RefusesAProcessGridOfAnotherSize) {
  auto world = Communicator::world();
  try {
    Grid g({8, 8}, {world->size() + 1, 1}, {}, world);
    ADD_FAILURE() << "accepted";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find("procs: a process grid of " +
                                         std::to_string(world->size() + 1) +
                                         " ranks on a communicator of " +
                                         std::to_string(world->size())),
              std::string::npos)
        << e.what();
  }
  Grid ok({8, 8}, {world->size(), 1}, {}, world);
  EXPECT_THROW(ok.owner({8, 0}), OptionsError);
}

TEST(Grid, ScatterAndGatherAreInverseOnEveryProcessGrid) {
  auto world = Communicator::world();
  for (const Shape& shape : {Shape{11}, Shape{7, 5}, Shape{5, 4, 3}}) {
    for (const std::vector<int>& procs : process_grids(world->size(), shape)) {
      Grid g(shape, procs, {}, world);
      Shape batched = shape;
      batched.insert(batched.begin(), 2);
      const Tensor global = global_field(batched, 31);
      const Tensor mine =
          g.scatter(world->rank() == 0 ? global : Tensor(Shape{0}), 0);
      EXPECT_EQ(mine.to_vector(),
                patch_of(global, shape, procs, world->rank()).to_vector());
      const Tensor back = g.gather(mine, 0);
      if (world->rank() == 0) {
        EXPECT_EQ(back.shape(), batched);
        EXPECT_EQ(back.to_vector(), global.to_vector());
      } else {
        EXPECT_EQ(back.size(), 0);
      }
    }
  }
}

TEST(Grid, LivesOnSubCommunicators) {
  auto world = Communicator::world();
  // Two groups (even and odd ranks), each with a grid of its own.
  auto half = world->split(world->rank() % 2, 0);
  Grid g({6, 4}, {half->size(), 1}, {false, false}, half);
  const Tensor global = global_field({6, 4}, 32);
  const Tensor mine = g.scatter(global, 0);
  EXPECT_EQ(
      mine.to_vector(),
      patch_of(global, {6, 4}, {half->size(), 1}, half->rank()).to_vector());
}

TEST(Grid, ScatterOfAnArrayOfAnotherShapeThrowsOnEveryRank) {
  auto world = Communicator::world();
  Grid g({6, 4}, {world->size(), 1}, {false, false}, world);
  const Tensor wrong =
      world->rank() == 0 ? Tensor(Shape{4, 6}, 1.0) : Tensor(Shape{0});
  try {
    g.scatter(wrong, 0);
    ADD_FAILURE() << "scattered a [4, 6] array over a [6, 4] grid";
  } catch (const OptionsError& e) {
    const std::string what = world->rank() == 0
                                 ? "global: shape [4, 6] does not end in the "
                                   "grid's [6, 4]"
                                 : "global: the root's (rank 0) array does not "
                                   "end in the grid's [6, 4]";
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
  // The grid still works afterwards (no message was left in flight).
  const Tensor global = global_field({6, 4}, 33);
  EXPECT_EQ(
      g.scatter(global, 0).to_vector(),
      patch_of(global, {6, 4}, {world->size(), 1}, world->rank()).to_vector());
}

// A root that is not a rank, or patches whose batch axes differ between
// ranks (the last rank's one entry longer at more than one rank), are
// refused on every rank before any message (MPI failed in the collective,
// or a rank waited), and the grid still works afterwards.
TEST(Grid, BadRootsAndMismatchedPatchesThrowOnEveryRank) {
  auto world = Communicator::world();
  Grid g({6, 4}, {world->size(), 1}, {false, false}, world);
  const Tensor global = global_field({6, 4}, 35);
  const Tensor mine = g.scatter(global, 0);
  auto refused = [](auto&& call, const std::string& what) {
    try {
      call();
      ADD_FAILURE() << "no error; expected one with " << what;
    } catch (const OptionsError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos)
          << e.what();
    }
  };
  const int size = world->size();
  const std::string not_a_rank =
      " is not a rank of the grid's communicator (0 "
      "to " +
      std::to_string(size - 1) + ")";
  refused([&] { g.scatter(global, size); },
          "Grid::scatter: root: " + std::to_string(size) + not_a_rank);
  refused([&] { g.scatter(global, -1); },
          "Grid::scatter: root: -1" + not_a_rank);
  refused([&] { g.gather(mine, size); },
          "Grid::gather: root: " + std::to_string(size) + not_a_rank);
  if (size > 1) {
    Shape batched = g.local_shape();
    batched.insert(batched.begin(), world->rank() == size - 1 ? 3 : 2);
    refused([&] { g.gather(Tensor(batched, 1.0), 0); },
            "Grid::gather: local: the patches' batch axes differ");
  }
  refused(
      [&] {
        g.gather(Tensor(Shape{1, 1, 1}), 0);
      },
      "Grid::gather: local: the patches' batch axes differ between ranks, "
      "or a patch does not end in its rank's local_shape() (rank " +
          std::to_string(world->rank()) + ": a patch of shape [1, 1, 1]");
  const Tensor back = g.gather(mine, 0);
  if (world->rank() == 0) {
    EXPECT_EQ(back.to_vector(), global.to_vector());
  }
}

TEST(GridLayout, PatchIsTheRanksPartOfTheGlobalArray) {
  const GridLayout layout{{7, 5}, {3, 2}, {false, false}};
  const Tensor global = global_field({2, 7, 5}, 34);
  for (int r = 0; r < 6; ++r) {
    EXPECT_EQ(layout.patch(global, r).to_vector(),
              patch_of(global, {7, 5}, {3, 2}, r).to_vector());
  }
  EXPECT_THROW(layout.patch(Tensor(Shape{5, 7}, 0.0), 0), ShapeError);
}

}  // namespace
}  // namespace adgraph::grid
