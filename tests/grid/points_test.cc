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

// inject with u's batch axes is one grid_inject node (in place when u is
// not used again); with amplitudes broadcast over u's batch it is u plus
// grid_corners_transpose. Both against the hand values, and their
// gradients and tangents through the checker, on every process grid.
TEST(GridPoints, InjectAddsAtTheCornersInPlaceOrBroadcastAndDifferentiates) {
  auto world = Communicator::world();
  const Shape shape{5, 4};
  const Points points = {{1.5, 2.0}, {4.0, 0.25}, {1.5, 2.0}};
  for (const auto& procs : process_grids(world->size(), shape)) {
    Grid grid(shape, procs, {false, false}, world);
    Graph g;
    g.set_comm(world);
    Tensor full(Shape{2, 5, 4});
    for (int64_t i = 0; i < full.size(); ++i)
      full[i] = static_cast<double>(i % 7) - 2.5;
    Shape local = grid.local_shape();
    local.insert(local.begin(), 2);
    Tensor mine(local);
    for (int b = 0; b < 2; ++b) {
      Tensor one(shape);
      for (int64_t i = 0; i < 20; ++i) one[i] = full[b * 20 + i];
      const Tensor p = patch_of(one, shape, procs, world->rank());
      for (int64_t i = 0; i < p.size(); ++i) mine[b * p.size() + i] = p[i];
    }
    Value u = g.placeholder("u", local);
    Value a = g.placeholder("a", {2, 3});
    Value s = g.placeholder("s", {3});
    const Tensor av(Shape{2, 3}, {1.0, 2.0, 4.0, -8.0, 16.0, 0.5});
    const Tensor sv(Shape{3}, {3.0, 5.0, 7.0});
    Value batched = inject(grid, u * 2.0, points, a);  // u * 2 dies here
    Value broadcast = inject(grid, u, points, s);
    int fused = 0;
    for (int id = 0; id < g.num_nodes(); ++id)
      fused += g.node(id).op_name() == "grid_inject";
    EXPECT_EQ(fused, 1);
    Session session(g);
    const std::vector<Tensor> out =
        session.run({batched, broadcast}, {{u, mine}, {a, av}, {s, sv}});
    // Point 0 (1.5, 2): half at (1, 2) and (2, 2); point 1 (4, 0.25): 3/4 at
    // (4, 0), 1/4 at (4, 1); point 2 = point 0, added after point 1.
    for (int which = 0; which < 2; ++which) {
      Tensor want(Shape{2, 5, 4});
      for (int64_t i = 0; i < want.size(); ++i)
        want[i] = which == 0 ? 2.0 * full[i] : full[i];
      for (int b = 0; b < 2; ++b) {
        auto amp = [&](int p) { return which == 0 ? av[b * 3 + p] : sv[p]; };
        double* w = want.data() + b * 20;
        w[1 * 4 + 2] += 0.5 * amp(0);
        w[2 * 4 + 2] += 0.5 * amp(0);
        w[4 * 4 + 0] += 0.75 * amp(1);
        w[4 * 4 + 1] += 0.25 * amp(1);
        w[1 * 4 + 2] += 0.5 * amp(2);
        w[2 * 4 + 2] += 0.5 * amp(2);
      }
      for (int b = 0; b < 2; ++b) {
        Tensor one(shape);
        for (int64_t i = 0; i < 20; ++i) one[i] = want[b * 20 + i];
        const Tensor p = patch_of(one, shape, procs, world->rank());
        for (int64_t i = 0; i < p.size(); ++i)
          EXPECT_EQ(out[which][b * p.size() + i], p[i]) << which << " " << i;
      }
    }
    Value loss = mpi_total(square(batched) + square(broadcast));
    const GradientCheckResult r =
        check_gradients(loss, {u, a, s}, {{u, mine}, {a, av}, {s, sv}});
    EXPECT_TRUE(r.ok) << r.message;
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

TEST(GridPoints, AmplitudesOfTheWrongShapeAreRefusedNamingThem) {
  auto world = Communicator::world();
  Grid grid({6, 5}, {world->size(), 1}, {false, false}, world);
  Graph g;
  Value u = g.placeholder("u", grid.local_shape());
  int k = 0;
  for (const Shape& bad : {Shape{2}, Shape{}, Shape{1, 3}}) {
    // (Strings appended, not "a" + …: GCC 12 warns falsely at -O3, bug
    // 105329.)
    std::string name = "a", want = "amplitudes: shape ";
    name += std::to_string(k++);
    want += shape_string(bad);
    want += ": one amplitude per point needs a last axis of 1";
    try {
      inject(grid, u, {{1.5, 2.5}}, g.placeholder(name, bad));
      ADD_FAILURE() << "no error for " << shape_string(bad);
    } catch (const ShapeError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
          << e.what();
    }
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
