// The loader's "grid" field (driver/grids.cc): a placeholder holding this
// rank's patch of a grid field, fed with the global array, on uneven
// patches. A 7-point periodic grid over P ranks; u = 1 … 7, y = u[i−1] +
// u[i+1] − 2u[i] = [7, 0, 0, 0, 0, 0, −7] (by hand), L = Σ y² over the
// ranks = 98 (on rank 0) and dL/du = 2(y[i−1] + y[i+1] − 2y[i]) = [−42, 14, 0,
// 0, 0, −14, 42].
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "grid/grid.h"
#include "tests/driver/load.h"

namespace adgraph {
namespace {

using testing::expect_refused;
using testing::load;

std::string document(const std::string& grid) {
  const std::string procs = std::to_string(Communicator::world()->size());
  return R"J({"adgraph": 1, "nodes": [
      {"name": "u", "op": "placeholder", "grid": )J" +
         grid + R"J(},
      {"name": "y", "op": "stencil", "inputs": ["u"],
       "attrs": {"grid_shape": [7], "procs": [)J" +
         procs + R"J(], "periodic": [1],
                 "expr": "sub(add(in0[-1],in0[1]),mul(2,in0))"}},
      {"name": "y2", "op": "mul", "inputs": ["y", "y"]},
      {"name": "s", "op": "sum", "inputs": ["y2"]},
      {"name": "L", "op": "mpi_total", "inputs": ["s"]}],
    "gradients": {"g": {"of": "L", "wrt": "u"}},
    "feeds": {"u": [1, 2, 3, 4, 5, 6, 7]},
    "fetch": ["L", "y", "g"]})J";
}

TEST(Grids, AGridPlaceholderHoldsThisRanksPatchOfTheGlobalFeed) {
  const int size = Communicator::world()->size();
  const int rank = Communicator::world()->rank();
  auto loaded =
      load(document(R"({"grid_shape": [7], "procs": [)" + std::to_string(size) +
                    R"(], "periodic": [true]})"));
  const std::vector<Tensor> out = loaded->fetched();
  const std::vector<double> y = {7, 0, 0, 0, 0, 0, -7};
  const std::vector<double> g = {-42, 14, 0, 0, 0, -14, 42};
  grid::GridLayout layout{{7}, {size}, {true}};
  const int64_t start = layout.offset(rank)[0], n = layout.local_shape(rank)[0];
  // mpi_total leaves the total on rank 0 (zeros elsewhere); its adjoint
  // gives every rank its patch of the gradient.
  EXPECT_EQ(out[0].to_vector(), std::vector<double>{rank == 0 ? 98.0 : 0.0});
  EXPECT_EQ(out[1].to_vector(),
            std::vector<double>(y.begin() + start, y.begin() + start + n));
  EXPECT_EQ(out[2].to_vector(),
            std::vector<double>(g.begin() + start, g.begin() + start + n));
}

TEST(Grids, BatchAxesRideAlong) {
  const int size = Communicator::world()->size();
  const int rank = Communicator::world()->rank();
  auto loaded = load(R"({"adgraph": 1, "nodes": [
      {"name": "u", "op": "placeholder",
       "grid": {"grid_shape": [5], "procs": [)" +
                     std::to_string(size) + R"(], "batch": [2]}}],
    "feeds": {"u": [0, 1, 2, 3, 4, 10, 11, 12, 13, 14]},
    "fetch": ["u"]})");
  grid::GridLayout layout{{5}, {size}, {false}};
  const int64_t start = layout.offset(rank)[0], n = layout.local_shape(rank)[0];
  std::vector<double> want;
  for (int b = 0; b < 2; ++b)
    for (int64_t i = start; i < start + n; ++i) want.push_back(10 * b + i);
  const Tensor u = loaded->fetched()[0];
  EXPECT_EQ(u.shape(), (Shape{2, n}));
  EXPECT_EQ(u.to_vector(), want);
}

TEST(Grids, RefusalsNameTheField) {
  const std::string procs = std::to_string(Communicator::world()->size());
  expect_refused(document(R"({"grid_shape": [7], "procs": [)" + procs +
                          R"(], "periodic": [2]})"),
                 "node \"u\" (placeholder): grid.periodic: entry 2 outside "
                 "[0, 1]");
  expect_refused(document(R"({"grid_shape": [7], "procs": [9]})"),
                 "node \"u\" (placeholder): grid.procs: procs: axis 0 has 9 "
                 "processes for 7 points");
  expect_refused(document(R"({"grid_shape": [7]})"),
                 "node \"u\": grid.procs: required field is missing");
  expect_refused(document(R"({"grid_shape": [7], "procs": [)" + procs +
                          R"(], "halo": 1})"),
                 "halo");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "u", "op": "placeholder", "shape": [3],
       "grid": {"grid_shape": [7], "procs": [1]}}]})",
                 "node \"u\" (placeholder): grid: give a shape or a grid, not "
                 "both");
  expect_refused(R"({"adgraph": 1, "nodes": [
      {"name": "u", "op": "zeros", "attrs": {"shape": [3]},
       "grid": {"grid_shape": [7], "procs": [1]}}]})",
                 "node \"u\" (zeros): grid: only placeholders take a grid");
}

}  // namespace
}  // namespace adgraph
