// Points in a grid: the corner weights by hand, sample and inject on a
// 1-D and a 2-D grid against values worked out by hand, at every process
// grid of 1-4 ranks, and the refusals.
#include "grid/points.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/grid/grid_test_util.h"

namespace adgraph::grid {
namespace {

using namespace adgraph::testing;

TEST(GridPoints, CornerWeightsAreTheBilinearOnesByHand) {
  GridLayout g{{5, 4}, {1, 1}, {false, false}};
  // (1.25, 2.5): f = (0.25, 0.5); corner c's bit a is the upper on axis a.
  const Tensor w = corner_weights(g, {{1.25, 2.5}, {4.0, 3.0}});
  EXPECT_EQ(w.shape(), (Shape{2, 4}));
  EXPECT_EQ(w.to_vector(),
            (std::vector<double>{0.75 * 0.5,
                                 0.25 * 0.5,
                                 0.75 * 0.5,
                                 0.25 * 0.5,  // point 0
                                 1.0,
                                 0.0,
                                 0.0,
                                 0.0}));  // the last grid point: itself alone
}

TEST(GridPoints, SampleAndInjectGiveTheHandValuesOnEveryProcessGrid) {
  auto world = Communicator::world();
  // u[i] = i² on 9 points; at 2.5: (4 + 9)/2; at 8 (the last): 64; at
  // 3.75: 9/4 + 16·3/4.
  const Shape shape{9};
  const Points points = {{2.5}, {8.0}, {3.75}};
  for (const auto& procs : process_grids(world->size(), shape)) {
    Grid grid(shape, procs, {false}, world);
    Graph g;
    g.set_comm(world);
    Tensor full(shape);
    for (int64_t i = 0; i < 9; ++i) full[i] = static_cast<double>(i * i);
    const Tensor mine = patch_of(full, shape, procs, world->rank());
    Value u = g.placeholder("u", mine.shape());
    Value a = g.constant(Tensor(Shape{3}, std::vector<double>{1.0, 2.0, 4.0}));
    Session s(g);
    const std::vector<Tensor> out = s.run(
        {sample(grid, u, points), inject(grid, u, points, a)}, {{u, mine}});
    EXPECT_EQ(out[0].to_vector(),
              (std::vector<double>{6.5, 64.0, 9.0 / 4 + 16.0 * 3 / 4}));
    // inject: 1 at 2.5 → +0.5 at 2 and 3; 2 at 8 → +2 at 8; 4 at 3.75 →
    // +1 at 3, +3 at 4.
    Tensor want = full;
    want[2] += 0.5;
    want[3] += 0.5 + 1.0;
    want[8] += 2.0;
    want[4] += 3.0;
    EXPECT_EQ(out[1].to_vector(),
              patch_of(want, shape, procs, world->rank()).to_vector());
  }
}

TEST(GridPoints, APointOnA2dPatchCornerReadsFromFourRanks) {
  auto world = Communicator::world();
  const Shape shape{4, 4};
  for (const auto& procs : process_grids(world->size(), shape)) {
    Grid grid(shape, procs, {false, false}, world);
    Graph g;
    g.set_comm(world);
    Tensor full(shape);
    for (int64_t i = 0; i < 16; ++i) full[i] = static_cast<double>(i);
    Value u = g.placeholder("u", grid.local_shape());
    // (1.5, 1.5): the mean of u at (1,1), (1,2), (2,1), (2,2) = 5, 6, 9, 10.
    Session s(g);
    const Tensor got =
        s.run(sample(grid, u, {{1.5, 1.5}}),
              {{u, patch_of(full, shape, procs, world->rank())}});
    EXPECT_EQ(got.to_vector(), (std::vector<double>{7.5}));
  }
}

TEST(GridPoints, PointsOutsideTheGridAreRefusedNamingThePoint) {
  auto world = Communicator::world();
  Grid grid({6}, {world->size()}, {false}, world);
  Graph g;
  Value u = g.placeholder("u", grid.local_shape());
  try {
    sample(grid, u, {{1.0}, {-0.5}});
    ADD_FAILURE() << "no error";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "point 1 lies outside the grid: coordinate 0 is -0.5"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace adgraph::grid
