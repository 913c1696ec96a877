// The geometric multigrid on the patch grid: the prolongations against
// bilinear interpolation worked out independently from the grid's
// coordinates, and pc "mg" against Jacobi-preconditioned CG on the implicit
// heat matrix (the same solution, far fewer iterations, gradients through
// it), on every patch grid of the run's ranks.
#include <gtest/gtest.h>

#include <cmath>

#include "solvers/patch_operators.h"
#include "tests/mpi_ops/mpi_test_util.h"
#include "tests/solvers/patch_grids.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;
using solvers::HeatConfig;
using solvers::Patch;

// n × n on P × 1, 1 × P and 2 × 2: with n = 48 or 24, every patch has an
// even number of rows and columns.
std::vector<HeatConfig> multigrid_grids(int n = 48) {
  return patch_grids(world_size(), [n](HeatConfig& c) { c.nx = c.ny = n; });
}

// The global index of grid point (i, j) of an nx × ny grid cut into px × py
// equal patches, numbered patch by patch and row-major inside a patch.
int64_t global_index(
    int64_t nx, int64_t ny, int px, int py, int64_t i, int64_t j) {
  const int64_t n = nx / px, m = ny / py;
  const int64_t patch = (i / n) * py + j / m;
  return patch * n * m + (i % n) * m + j % m;
}

// g(x, y) = 3xy vanishes on the boundaries x = 0 and y = 0, where the
// interpolation takes 0, and is bilinear, so interpolation reproduces it.
double g(double x, double y) { return 3 * x * y; }

TEST(PatchMultigrid, ProlongationsInterpolateBilinearFunctionsExactly) {
  const int rank = world_rank();
  for (const HeatConfig& c : multigrid_grids()) {
    const auto levels = solvers::patch_prolongations(c, rank);
    // 48 → 24 → 12 (6 would be below 8 points), while patches stay even.
    const int64_t rows = c.nx / c.px, cols = c.ny / c.py;
    const size_t expected = rows % 4 == 0 && cols % 4 == 0 ? 2 : 1;
    ASSERT_EQ(levels.size(), expected) << c.px << "x" << c.py;
    int64_t nx = c.nx, ny = c.ny;
    for (const sparse::Prolongation& p : levels) {
      const double h = 1.0 / (nx + 1);
      const int64_t cnx = nx / 2, cny = ny / 2;
      // Coordinates of every coarse unknown by its global index: coarse
      // point (I, J) sits at fine point (2I + 1, 2J + 1).
      std::vector<double> coarse(cnx * cny);
      for (int64_t I = 0; I < cnx; ++I)
        for (int64_t J = 0; J < cny; ++J)
          coarse[global_index(cnx, cny, c.px, c.py, I, J)] =
              g((2 * I + 2) * h, (2 * J + 2) * h);
      const int64_t n = nx / c.px, m = ny / c.py;
      const int64_t i0 = (rank / c.py) * n, j0 = (rank % c.py) * m;
      ASSERT_EQ(p.pattern.local_rows(), n * m);
      EXPECT_EQ(p.coarse_rows, n * m / 4);
      EXPECT_EQ(p.pattern.first_row, global_index(nx, ny, c.px, c.py, i0, j0));
      for (int64_t a = 0; a < n; ++a) {
        for (int64_t b = 0; b < m; ++b) {
          const int64_t row = a * m + b;
          double sum = 0;
          for (int64_t k = p.pattern.row_offsets[row];
               k < p.pattern.row_offsets[row + 1];
               ++k)
            sum += p.values[k] * coarse[p.pattern.columns[k]];
          EXPECT_NEAR(sum, g((i0 + a + 1) * h, (j0 + b + 1) * h), 1e-14)
              << c.px << "x" << c.py << " nx " << nx << " at " << a << "," << b;
        }
      }
      nx = cnx;
      ny = cny;
    }
  }
}

double multigrid_kappa_at(int64_t i, int64_t j) {
  return 1.0 + 0.5 * std::sin(0.2 * i) * std::cos(0.3 * j);
}

Tensor multigrid_field(const HeatConfig& c, double (*f)(int64_t, int64_t)) {
  const Patch p = solvers::patch_of(c, world_rank());
  Tensor t{Shape{p.n, p.m}};
  for (int64_t a = 0; a < p.n; ++a)
    for (int64_t b = 0; b < p.m; ++b)
      t[a * p.m + b] = f(p.row0 + a, p.col0 + b);
  return t;
}

double rhs_at(int64_t i, int64_t j) { return std::cos(0.1 * i * j) + 0.5; }

// diag(1/κ) − s·Δ_h with s = 0.02 (s/h² ≈ 48: an implicit heat step far
// beyond the explicit limit) solved by CG with Jacobi and with multigrid.
TEST(PatchMultigrid, SolvesTheImplicitHeatMatrixInFewIterations) {
  const int rank = world_rank();
  for (const HeatConfig& c : multigrid_grids()) {
    const Patch p = solvers::patch_of(c, rank);
    auto solve = [&](const char* pc, int64_t* iterations) {
      sparse::SparseMatrix a(solvers::five_point_pattern(c, rank),
                             nullptr,
                             solvers::patch_prolongations(c, rank));
      sparse::SolverOptions o{
          .ksp = "cg", .pc = pc, .rtol = 1e-12, .symmetric = true};
      Graph g;
      Value inv_kappa =
          1.0 / g.constant(multigrid_field(c, multigrid_kappa_at));
      Value x = sparse::solve(
          a,
          solvers::scaled_heat_matrix_values(c, rank, inv_kappa, -0.02),
          g.constant(multigrid_field(c, rhs_at)),
          o);
      Session s(g);
      Tensor out = s.run(x);
      *iterations = a.stats().last_iterations;
      return out;
    };
    int64_t jacobi_its = 0, mg_its = 0;
    const Tensor reference = solve("jacobi", &jacobi_its);
    const Tensor got = solve("mg", &mg_its);
    for (int64_t k = 0; k < got.size(); ++k)
      EXPECT_NEAR(got[k], reference[k], 1e-9) << c.px << "x" << c.py;
    EXPECT_GT(jacobi_its, 40);
    EXPECT_LE(mg_its, 12) << c.px << "x" << c.py;
    EXPECT_EQ(got.size(), p.n * p.m);
  }
}

// The scaled matrix's couplings are all one value, so its solves multiply
// matrix-free (sparse/stencil_block.h); I − s·diag(κ)·Δ_h, the same system
// before each row P is divided by κ_P, has couplings s·κ_P/h² and takes
// PETSc's CSR product. Both give one solution.
TEST(PatchMultigrid, TheScaledHeatMatrixMultipliesMatrixFree) {
  const int rank = world_rank();
  for (const HeatConfig& c : multigrid_grids()) {
    Graph g;
    Value kappa = g.constant(multigrid_field(c, multigrid_kappa_at));
    Value b = g.constant(multigrid_field(c, rhs_at));
    sparse::SparseMatrix scaled(solvers::five_point_pattern(c, rank),
                                nullptr,
                                solvers::patch_prolongations(c, rank));
    sparse::SparseMatrix plain(solvers::five_point_pattern(c, rank));
    Value x = sparse::solve(
        scaled,
        solvers::scaled_heat_matrix_values(c, rank, 1.0 / kappa, -0.02),
        b,
        {.ksp = "cg", .pc = "mg", .rtol = 1e-12, .symmetric = true});
    Value y = sparse::solve(plain,
                            solvers::heat_matrix_values(c, rank, kappa, -0.02),
                            kappa * b,
                            {.ksp = "gmres", .pc = "jacobi", .rtol = 1e-12});
    Session s(g);
    const std::vector<Tensor> out = s.run({x, y});
    for (int64_t k = 0; k < out[0].size(); ++k)
      EXPECT_NEAR(out[0][k], out[1][k], 1e-9) << c.px << "x" << c.py;
    EXPECT_GT(scaled.stats().stencil_products, 0);
    EXPECT_EQ(plain.stats().stencil_products, 0);
  }
}

// Each solve sets up the levels again on a new matrix; where three or
// four patches meet, their contributions to one coarse point must be
// summed in the same order every time (they were summed as they arrived:
// at 120², 2 × 2, every one of three runs here differed before).
TEST(PatchMultigrid, RepeatedSetUpsAndSolvesAreBitwiseEqual) {
  const int rank = world_rank();
  for (const HeatConfig& c : multigrid_grids(120)) {
    std::vector<Tensor> runs;
    for (int run = 0; run < 4; ++run) {
      sparse::SparseMatrix a(solvers::five_point_pattern(c, rank),
                             nullptr,
                             solvers::patch_prolongations(c, rank));
      Graph g;
      Value inv_kappa =
          1.0 / g.constant(multigrid_field(c, multigrid_kappa_at));
      Value x = sparse::solve(
          a,
          solvers::scaled_heat_matrix_values(c, rank, inv_kappa, -0.02),
          g.constant(multigrid_field(c, rhs_at)),
          {.ksp = "cg", .pc = "mg", .rtol = 1e-6, .symmetric = true});
      Session s(g);
      runs.push_back(s.run(x));
    }
    for (int run = 1; run < 4; ++run)
      EXPECT_EQ(runs[run].to_vector(), runs[0].to_vector())
          << c.px << "x" << c.py << " run " << run;
  }
}

// One level (24 → 12) keeps the finite differences' solves few.
TEST(PatchMultigrid, GradientsPassThroughAMultigridSolve) {
  const int rank = world_rank();
  for (const HeatConfig& c : multigrid_grids(24)) {
    sparse::SparseMatrix a(solvers::five_point_pattern(c, rank),
                           nullptr,
                           solvers::patch_prolongations(c, rank));
    sparse::SolverOptions o{
        .ksp = "cg", .pc = "mg", .rtol = 1e-13, .symmetric = true};
    Graph g;
    const Patch p = solvers::patch_of(c, rank);
    Value kappa = g.placeholder("kappa", {p.n, p.m});
    Value x = sparse::solve(
        a,
        solvers::scaled_heat_matrix_values(c, rank, 1.0 / kappa, -0.02),
        g.constant(multigrid_field(c, rhs_at)),
        o);
    Value loss = sum(square(x - 0.3));
    GradientCheckOptions check;
    check.tolerance = 1e-6;
    auto result =
        check_gradients(loss,
                        {kappa},
                        {{kappa, multigrid_field(c, multigrid_kappa_at)}},
                        check);
    EXPECT_TRUE(result.ok) << c.px << "x" << c.py << ": " << result.message;
  }
}

// pc "mg" on a matrix made without levels is refused when the node is
// built, naming the attribute; a heat problem whose patches cannot be
// halved is refused by its configuration.
TEST(PatchMultigrid, RefusesWhatItCannotCoarsen) {
  const int rank = world_rank();
  const HeatConfig c = multigrid_grids().front();
  sparse::SparseMatrix a(solvers::five_point_pattern(c, rank));
  Graph g;
  Value values = solvers::scaled_heat_matrix_values(
      c, rank, g.constant(multigrid_field(c, multigrid_kappa_at)), -0.02);
  Value b = g.constant(multigrid_field(c, rhs_at));
  try {
    sparse::solve(a, values, b, {.ksp = "cg", .pc = "mg", .symmetric = true});
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("\"pc\""), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("multigrid levels"), std::string::npos)
        << e.what();
  }
  // A level with a row missing on rank 0 only: the same message on every
  // rank, naming the level.
  auto levels = solvers::patch_prolongations(c, rank);
  if (rank == 0) levels[0].pattern.row_offsets.pop_back();
  sparse::SparseMatrix short_level(
      solvers::five_point_pattern(c, rank), nullptr, levels);
  try {
    sparse::solve(
        short_level, values, b, {.ksp = "cg", .pc = "mg", .symmetric = true});
    ADD_FAILURE() << "no error";
  } catch (const ShapeError& e) {
    const Patch p = solvers::patch_of(c, 0);
    const std::string expected = "multigrid level 1: the prolongation has " +
                                 std::to_string(p.n * p.m - 1) +
                                 " rows on rank 0, the finer level " +
                                 std::to_string(p.n * p.m);
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos)
        << e.what();
  }
  HeatConfig odd = c;
  odd.nx = 50 * odd.px + odd.px;  // odd rows per patch
  odd.scheme = solvers::HeatScheme::kBackwardEuler;
  odd.implicit_solver.pc = "mg";
  std::string error;
  EXPECT_FALSE(odd.is_valid(world_size(), &error));
  EXPECT_NE(error.find("\"mg\" halves every patch"), std::string::npos)
      << error;
}

}  // namespace
}  // namespace adgraph
