// The 5-point operators against their definitions evaluated point by point
// on the global grid, and the Poisson problem's solution and κ-gradient on
// every patch grid of the run's ranks (P × 1, 1 × P, 2 × 2).
#include "solvers/patch_operators.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/mpi_ops/mpi_test_util.h"
#include "tests/solvers/patch_grids.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;
using solvers::HeatConfig;
using solvers::Patch;

std::vector<HeatConfig> grids() {
  return patch_grids(world_size(), [](HeatConfig& c) {
    c.nx = 4 * c.px;
    c.ny = 3 * c.py;
  });
}

double u_at(int64_t i, int64_t j) { return std::sin(0.3 * i + 0.7 * j) + 0.2; }
double kappa_at(int64_t i, int64_t j) { return 1.0 + 0.1 * i + 0.05 * j * j; }

Tensor field(const HeatConfig& c, double (*f)(int64_t, int64_t)) {
  const Patch p = solvers::patch_of(c, world_rank());
  Tensor t{Shape{p.n, p.m}};
  for (int64_t a = 0; a < p.n; ++a) {
    for (int64_t b = 0; b < p.m; ++b)
      t[a * p.m + b] = f(p.row0 + a, p.col0 + b);
  }
  return t;
}

// f at a grid point, 0 outside the domain.
double at(const HeatConfig& c,
          double (*f)(int64_t, int64_t),
          int64_t i,
          int64_t j) {
  return i < 0 || j < 0 || i >= c.nx || j >= c.ny ? 0.0 : f(i, j);
}

constexpr int64_t kDi[4] = {0, 0, -1, 1}, kDj[4] = {-1, 1, 0, 0};

TEST(PatchOperators, TheHeatMatrixIsIdentityPlusSKappaLaplacian) {
  for (const HeatConfig& c : grids()) {
    const int rank = world_rank();
    sparse::SparseMatrix a(solvers::five_point_pattern(c, rank));
    Graph g;
    Value kappa = g.constant(field(c, kappa_at));
    Value u = g.constant(field(c, u_at));
    const double s = 0.37e-3;
    Value y =
        sparse::matvec(a, solvers::heat_matrix_values(c, rank, kappa, s), u);
    Session session(g);
    Tensor got = session.run(y);
    const Patch p = solvers::patch_of(c, rank);
    const double h2 = c.h() * c.h();
    for (int64_t a0 = 0; a0 < p.n; ++a0) {
      for (int64_t b0 = 0; b0 < p.m; ++b0) {
        const int64_t i = p.row0 + a0, j = p.col0 + b0;
        double lap = -4.0 * u_at(i, j);
        for (int d = 0; d < 4; ++d) lap += at(c, u_at, i + kDi[d], j + kDj[d]);
        const double want = u_at(i, j) + s * kappa_at(i, j) * lap / h2;
        EXPECT_NEAR(got[a0 * p.m + b0], want, 1e-12 * std::fabs(want))
            << c.px << "x" << c.py << " at " << i << "," << j;
      }
    }
  }
}

TEST(PatchOperators, TheConservativeOperatorMatchesItsDefinition) {
  for (const HeatConfig& c : grids()) {
    const int rank = world_rank();
    sparse::SparseMatrix a(solvers::five_point_pattern(c, rank));
    Graph g;
    Value kappa = g.constant(field(c, kappa_at));
    Value u = g.constant(field(c, u_at));
    Value y =
        sparse::matvec(a, solvers::conservative_values(c, rank, kappa), u);
    Session session(g);
    Tensor got = session.run(y);
    const Patch p = solvers::patch_of(c, rank);
    const double h2 = c.h() * c.h();
    for (int64_t a0 = 0; a0 < p.n; ++a0) {
      for (int64_t b0 = 0; b0 < p.m; ++b0) {
        const int64_t i = p.row0 + a0, j = p.col0 + b0;
        double want = 0;
        for (int d = 0; d < 4; ++d) {
          const int64_t qi = i + kDi[d], qj = j + kDj[d];
          const bool inside = qi >= 0 && qj >= 0 && qi < c.nx && qj < c.ny;
          const double cpq = inside ? 0.5 * (kappa_at(i, j) + kappa_at(qi, qj))
                                    : kappa_at(i, j);
          want += cpq * (u_at(i, j) - at(c, u_at, qi, qj)) / h2;
        }
        EXPECT_NEAR(
            got[a0 * p.m + b0], want, 1e-10 * std::max(1.0, std::fabs(want)))
            << c.px << "x" << c.py << " at " << i << "," << j;
      }
    }
  }
}

// A(κ) u = f with f = A(κ_true)·u_exact recovers u_exact; the loss
// Σ (u − 1.1·u_exact)² has a κ-gradient that passes the checker (CG with
// Jacobi and with GAMG).
TEST(PatchOperators, PoissonSolvesAndDifferentiatesOnEveryPatchGrid) {
  for (const HeatConfig& c : grids()) {
    for (const char* pc : {"jacobi", "gamg"}) {
      const int rank = world_rank();
      sparse::SparseMatrix a(solvers::five_point_pattern(c, rank));
      sparse::SolverOptions o;
      o.ksp = "cg";
      o.pc = pc;
      o.symmetric = true;
      o.rtol = 1e-13;
      Graph g;
      Value kappa = g.placeholder(
          "kappa",
          {solvers::patch_of(c, rank).n, solvers::patch_of(c, rank).m});
      Tensor u_exact = field(c, u_at);
      Value ue = g.constant(u_exact);
      Value f = sparse::matvec(
          a,
          solvers::conservative_values(c, rank, g.constant(field(c, kappa_at))),
          ue);
      Value u =
          sparse::solve(a, solvers::conservative_values(c, rank, kappa), f, o);
      Session s(g);
      Tensor got = s.run(u, {{kappa, field(c, kappa_at)}});
      for (int64_t k = 0; k < got.size(); ++k) {
        EXPECT_NEAR(got[k], u_exact[k], 1e-9)
            << c.px << "x" << c.py << " " << pc;
      }
      Value loss = sum(square(u - 1.1 * ue));
      GradientCheckOptions check;
      check.tolerance = 1e-6;
      auto result =
          check_gradients(loss, {kappa}, {{kappa, field(c, kappa_at)}}, check);
      EXPECT_TRUE(result.ok)
          << c.px << "x" << c.py << " " << pc << ": " << result.message;
    }
  }
}

TEST(PatchOperators, FivePointValuesIsLinearWithItsAdjoint) {
  for (const HeatConfig& c : grids()) {
    const int rank = world_rank();
    const Patch p = solvers::patch_of(c, rank);
    expect_adjoint_identity(
        [&](Value x) {
          Value k2 = 2.0 * x;
          return solvers::five_point_values(c, rank, x, {k2, -x, x * 3.0, x});
        },
        {p.n, p.m});
    expect_adjoint_identity(
        [&](Value x) { return solvers::conservative_values(c, rank, x); },
        {p.n, p.m});
  }
}

}  // namespace
}  // namespace adgraph
