// Regularization terms: values derived by hand over the whole grid, the same
// for every patch decomposition, and the gradient checker (finite
// differences, Taylor test, jvp) at every rank count.
#include "solvers/regularization.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph::solvers {
namespace {

using namespace adgraph::testing;

constexpr double kValueTolerance = 1e-12;  // relative, summation order only
constexpr int kGrid = 12;                  // divisible by 1, 2, 3 and 4

// Every patch grid px × py = P that divides the 12 × 12 grid.
std::vector<HeatConfig> decompositions(int size) {
  std::vector<HeatConfig> out;
  for (int px = 1; px <= size; ++px) {
    if (size % px != 0) continue;
    HeatConfig c;
    c.nx = c.ny = kGrid;
    c.px = px, c.py = size / px;
    out.push_back(c);
  }
  return out;
}

// κ(i, j) = 1 + 0.3·sin(0.9 i)·cos(1.7 j) + 0.01 j on global indices.
double kappa_at(int64_t i, int64_t j) {
  return 1 + 0.3 * std::sin(0.9 * i) * std::cos(1.7 * j) + 0.01 * j;
}

Tensor kappa_patch(const Patch& p) {
  Tensor t(Shape{p.n, p.m});
  for (int64_t i = 0; i < p.n; ++i)
    for (int64_t j = 0; j < p.m; ++j)
      t[i * p.m + j] = kappa_at(p.row0 + i, p.col0 + j);
  return t;
}

TEST(RegularizationSmoothness, SumOverRanksIsTheWholeGridsDifferenceSum) {
  // By hand: Σ over the grid of the squared differences to the right and
  // lower neighbours, with α = 0.7.
  double expected = 0;
  for (int i = 0; i < kGrid; ++i) {
    for (int j = 0; j < kGrid; ++j) {
      if (j + 1 < kGrid)
        expected += std::pow(kappa_at(i, j + 1) - kappa_at(i, j), 2);
      if (i + 1 < kGrid)
        expected += std::pow(kappa_at(i + 1, j) - kappa_at(i, j), 2);
    }
  }
  expected *= 0.7;
  double first = std::nan("");
  for (const HeatConfig& c : decompositions(world_size())) {
    const Patch p = patch_of(c, world_rank());
    Graph g;
    g.set_comm(Communicator::world());
    Value kappa = g.placeholder("kappa", {p.n, p.m});
    Value term = regularization_smoothness(kappa, c, p, 0.7);
    Session s(g);
    const double mine = s.run(term, {{kappa, kappa_patch(p)}}).item();
    const double total = Communicator::world()->allreduce_sum(mine);
    EXPECT_NEAR(total, expected, kValueTolerance * expected)
        << c.px << " x " << c.py << " patches";
    // Exact sums: the same bits for every decomposition.
    if (std::isnan(first)) first = total;
    EXPECT_EQ(total, first) << c.px << " x " << c.py << " patches";
  }
}

TEST(RegularizationSmoothness, PassesTheGradientChecker) {
  for (const HeatConfig& c : decompositions(world_size())) {
    const Patch p = patch_of(c, world_rank());
    Graph g;
    g.set_comm(Communicator::world());
    Value kappa = g.placeholder("kappa", {p.n, p.m});
    // Squared, so the check also sees a non-quadratic function of κ.
    Value term = regularization_smoothness(kappa, c, p, 0.7);
    Value y = term + 0.5 * square(term);
    expect_gradients_ok(y, {kappa}, {{kappa, kappa_patch(p)}});
  }
}

TEST(RegularizationSmoothness, OnePointPatchesUseOnlyTheHalos) {
  // One grid point per rank (1 × 1, 2 × 1, 1 × 3, 2 × 2): no inner
  // differences, only those across the right and lower edges. κ = 2^k at
  // the k-th point in row-major order, so every difference is distinct.
  const int size = world_size();
  HeatConfig c;
  c.px = size == 3 ? 1 : (size >= 2 ? 2 : 1);
  c.py = size / c.px;
  c.nx = c.px, c.ny = c.py;
  double expected = 0;
  for (int i = 0; i < c.nx; ++i) {
    for (int j = 0; j < c.ny; ++j) {
      const double here = std::ldexp(1.0, i * c.ny + j);
      if (j + 1 < c.ny) expected += std::pow(2 * here - here, 2);
      if (i + 1 < c.nx) expected += std::pow(std::ldexp(here, c.ny) - here, 2);
    }
  }
  const Patch p = patch_of(c, world_rank());
  ASSERT_EQ(p.n * p.m, 1);
  Graph g;
  g.set_comm(Communicator::world());
  Value kappa = g.placeholder("kappa", {1, 1});
  Value term = regularization_smoothness(kappa, c, p, 1.0);
  Session s(g);
  Tensor mine(Shape{1, 1}, std::ldexp(1.0, p.row0 * c.ny + p.col0));
  const double total =
      Communicator::world()->allreduce_sum(s.run(term, {{kappa, mine}}).item());
  EXPECT_EQ(total, expected);
  expect_gradients_ok(term, {kappa}, {{kappa, mine}});
}

TEST(RegularizationTikhonov, ValueByHandAndGradientChecker) {
  Graph g;
  g.set_comm(Communicator::world());
  Value kappa = g.placeholder("kappa", {3, 4});
  Value kappa0 = g.placeholder("kappa0", {3, 4});
  Value term = regularization_tikhonov(kappa, kappa0, 0.25);
  const Tensor k = random_tensor({3, 4}, 7), k0 = random_tensor({3, 4}, 8);
  // The whole term (every rank's entries) on rank 0, 0 elsewhere.
  double mine = 0;
  for (int64_t i = 0; i < k.size(); ++i)
    mine += 0.25 * (k[i] - k0[i]) * (k[i] - k0[i]);
  const double total = Communicator::world()->allreduce_sum(mine);
  const double expected = world_rank() == 0 ? total : 0.0;
  Session s(g);
  EXPECT_NEAR(s.run(term, {{kappa, k}, {kappa0, k0}}).item(),
              expected,
              kValueTolerance * expected);
  Value y = term + square(term);
  expect_gradients_ok(y, {kappa, kappa0}, {{kappa, k}, {kappa0, k0}});
}

TEST(RegularizationTikhonov, ShapeMismatchNamesTheNodes) {
  Graph g;
  Value kappa = g.placeholder("kappa", {3, 4});
  Value kappa0 = g.placeholder("kappa0", {4, 3});
  try {
    regularization_tikhonov(kappa, kappa0, 1.0);
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[3, 4]"), std::string::npos)
        << e.what();
  }
}

TEST(RegularizationSmoothness, BadHaloShapesNameTheInput) {
  Graph g;
  Value kappa = g.placeholder("kappa", {3, 4});
  Value rows = g.placeholder("rows", {3}), cols = g.placeholder("cols", {4});
  const nlohmann::json beyond = {
      {"left", false}, {"right", false}, {"up", false}, {"down", false}};
  try {
    g.add_node("smoothness_terms", {kappa, rows, rows, cols, rows}, beyond);
    ADD_FAILURE() << "no ShapeError";
  } catch (const ShapeError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("input 4"), std::string::npos) << what;
    EXPECT_NE(what.find("shape [3], expected [4]"), std::string::npos) << what;
  }
}

}  // namespace
}  // namespace adgraph::solvers
