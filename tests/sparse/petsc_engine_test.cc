// The PETSc engine (sparse/petsc_engine.cc) when a solve cannot do its
// work, as every rank sees it: a solve that does not converge, NaN on one
// rank, a singular matrix (forward, adjoint and inside a checkpointed
// loop), and that the next run works. Also the preconditioner's set-up
// count while the values do not change.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "sparse/sparse_matrix.h"
#include "tests/mpi_ops/mpi_test_util.h"
#include "tests/sparse/tridiagonal.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;
using sparse::CsrPattern;
using sparse::SolverOptions;
using sparse::SparseMatrix;

// Runs `run`, which must throw RunError on every rank with a message that
// contains each of `parts`; the messages must be the same on every rank.
template <class Run>
void expect_same_error(Run run, const std::vector<std::string>& parts) {
  std::string message;
  try {
    run();
  } catch (const RunError& e) {
    message = e.what();
  }
  ASSERT_FALSE(message.empty()) << "no RunError";
  for (const auto& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << message;
  auto comm = Communicator::world();
  EXPECT_EQ(comm->bcast(message, 0), message);
}

TEST(PetscEngine, ANonConvergedSolveFailsOnEveryRankAndTheNextRunWorks) {
  sparse::register_sparse_layer();  // sparse_solve is named below
  CsrPattern p = tridiagonal();
  SparseMatrix a(p);
  Graph g;
  Value values = g.placeholder("values", {p.local_entries()});
  Value b = g.placeholder("b", {kRows});
  SolverOptions bad;
  bad.max_it = 1;
  bad.ksp = "cg";
  bad.symmetric = true;
  Value x_bad = g.add_node("sparse_solve",
                           {values, b},
                           bad.to_attrs(),
                           {.name = "too_few", .resource = a.resource()});
  SolverOptions good = bad;
  good.max_it = 1000;
  Value x = sparse::solve(a, values, b, good);
  Session s(g);
  const FeedMap feeds = {{values, tridiagonal_values(p, 0.0)},
                         {b, Tensor(Shape{kRows}, 1.0)}};
  // One CG step solves only when b is an eigenvector; 1 is not one.
  expect_same_error(
      [&] { s.run(x_bad, feeds); },
      {"too_few", "sparse_solve", "DIVERGED_ITS", "after 1 iteration"});
  // The solution of tridiag(-1, 2, -1) x = 1 is x_i = (i+1)(N-i)/2.
  Tensor got = s.run(x, feeds);
  const int64_t n = kRows * world_size();
  for (int64_t i = 0; i < kRows; ++i) {
    const int64_t gi = kRows * world_rank() + i;
    EXPECT_NEAR(got[i], 0.5 * (gi + 1) * (n - gi), 1e-8 * n * n);
  }
}

TEST(PetscEngine, NanOnOneRankFailsOnEveryRankForwardAndAdjoint) {
  CsrPattern p = tridiagonal();
  SparseMatrix a(p);
  Graph g;
  Value values = g.placeholder("values", {p.local_entries()});
  Value b = g.placeholder("b", {kRows});
  Value w = g.placeholder("w", {kRows});
  Value x = sparse::solve(a, values, b);
  Value loss = sum(w * x);
  Value db = gradient(loss, b);
  Session s(g);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const int last = world_size() - 1;
  Tensor good_values = tridiagonal_values(p, 0.5);
  Tensor nan_values = good_values;
  if (world_rank() == last) nan_values[1] = nan;
  Tensor ones(Shape{kRows}, 1.0), nan_w(Shape{kRows}, 1.0);
  if (world_rank() == last) nan_w[2] = nan;
  expect_same_error(
      [&] {
        s.run(x, {{values, nan_values}, {b, ones}, {w, ones}});
      },
      {"sparse_solve", "matrix values hold NaN or Inf"});
  Tensor nan_b = ones;
  if (world_rank() == 0) nan_b[0] = std::numeric_limits<double>::infinity();
  expect_same_error(
      [&] {
        s.run(x, {{values, good_values}, {b, nan_b}, {w, ones}});
      },
      {"right-hand side holds NaN or Inf"});
  // The forward converges; the adjoint's right-hand side is w.
  expect_same_error(
      [&] {
        s.run(db, {{values, good_values}, {b, ones}, {w, nan_w}});
      },
      {"sparse_solve", "right-hand side holds NaN or Inf"});
  // The session still works.
  Tensor got = s.run(db, {{values, good_values}, {b, ones}, {w, ones}});
  for (int64_t i = 0; i < kRows; ++i) EXPECT_TRUE(std::isfinite(got[i]));
}

TEST(PetscEngine, ASingularMatrixFailsOnEveryRankInsideACheckpointedLoop) {
  CsrPattern p = tridiagonal();
  SparseMatrix a(p);
  Graph g;
  Value values = g.placeholder("values", {p.local_entries()});
  Value u0 = g.placeholder("u0", {kRows});
  SolverOptions o;
  o.max_it = 50;
  LoopOptions lo;
  lo.checkpoints = CheckpointSchedule::binomial(2);
  LoopResult r = loop(
      6,
      {u0},
      {values},
      [&](const LoopArgs& l) {
        return LoopStep{{sparse::solve(a, l.invariants[0], l.carries[0], o)},
                        {}};
      },
      lo);
  Value loss = sum(square(r.carries[0]));
  Value dv = gradient(loss, values);
  Session s(g);
  Tensor zero(Shape{p.local_entries()}, 0.0);
  Tensor ones(Shape{kRows}, 1.0);
  expect_same_error(
      [&] {
        s.run(dv, {{values, zero}, {u0, ones}});
      },
      {"sparse_solve", "did not converge"});
  // The next run, with a regular matrix, works: each step divides by about
  // 3 on the interior rows.
  Tensor got = s.run(dv, {{values, tridiagonal_values(p, 1.0)}, {u0, ones}});
  for (int64_t k = 0; k < p.local_entries(); ++k)
    EXPECT_TRUE(std::isfinite(got[k]));
}

TEST(PetscEngine, ThePreconditionerIsSetUpOnceWhileTheValuesStay) {
  CsrPattern p = tridiagonal();
  SparseMatrix a(p);
  Graph g;
  Value values = g.placeholder("values", {p.local_entries()});
  Value u0 = g.placeholder("u0", {kRows});
  SolverOptions o;
  o.pc = "bjacobi";
  LoopResult r = loop(5, {u0}, {values}, [&](const LoopArgs& l) {
    return LoopStep{{sparse::solve(a, l.invariants[0], l.carries[0], o)}, {}};
  });
  Value loss = sum(square(r.carries[0]));
  Value dv = gradient(loss, values);
  Session s(g);
  Tensor ones(Shape{kRows}, 1.0);
  s.run(dv, {{values, tridiagonal_values(p, 1.0)}, {u0, ones}});
  sparse::SparseStats st = a.stats();
  EXPECT_EQ(st.assemblies, 1);
  EXPECT_EQ(st.setups, 1);
  // 5 forward steps; the adjoint reads each step's solution where the
  // forward run left it (LoopSpec::next_carries) and only solves with the
  // transpose.
  EXPECT_EQ(st.solves, 5);
  EXPECT_EQ(st.transpose_solves, 5);
  // The same values again: nothing is set up; new ones: once more.
  s.run(dv, {{values, tridiagonal_values(p, 1.0)}, {u0, ones}});
  EXPECT_EQ(a.stats().setups, 1);
  s.run(dv, {{values, tridiagonal_values(p, 2.0)}, {u0, ones}});
  EXPECT_EQ(a.stats().setups, 2);
  EXPECT_EQ(a.stats().assemblies, 2);
}

}  // namespace
}  // namespace adgraph
