// docs/SPARSE.md's example: a distributed sparse solve and its gradient.
//
// A = tridiag(−1, 2, −1), 6 × 6, rows split over the ranks; b = 1;
// u = A⁻¹b, L = Σ u over every rank.
//
// By hand: u_i = (i+1)(6−i)/2 = 3, 5, 6, 6, 5, 3, so L = 28. A is
// symmetric, so λ = A⁻ᵀ·1 = u and ∂L/∂b = u: Σ (∂L/∂b)² = 9 + 25 + 36 +
// 36 + 25 + 9 = 140. ∂L/∂A = −λ ⊗ u, entry (i, j) = −u_i·u_j: the 6
// diagonal entries sum to −140, the 10 off-diagonal ones to
// −2·(15 + 30 + 36 + 30 + 15) = −252, all of them to −392.
// The test examples/guides/sparse runs it on 1 to 4 ranks and compares the
// output with tests/guides/sparse.expected.
#include <cstdio>
#include <vector>

#include "adgraph.h"

using namespace adgraph;

// This rank's rows of tridiag(−1, 2, −1) (N rows in all): the pattern and
// the values in CSR order.
sparse::CsrPattern laplacian_rows(int64_t n,
                                  int rank,
                                  int size,
                                  std::vector<double>* values) {
  sparse::CsrPattern p;
  for (int r = 0; r < rank; ++r) p.first_row += n / size + (r < n % size);
  const int64_t rows = n / size + (rank < n % size);
  for (int64_t i = p.first_row; i < p.first_row + rows; ++i) {
    for (int64_t j = i - 1; j <= i + 1; ++j) {
      if (j < 0 || j >= n) continue;
      p.columns.push_back(j);
      values->push_back(i == j ? 2.0 : -1.0);
    }
    p.row_offsets.push_back(p.local_entries());
  }
  return p;
}

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto world = program_world();
  std::vector<double> entries;
  // doc:begin solve
  sparse::SparseMatrix a(
      laplacian_rows(6, world->rank(), world->size(), &entries));
  const int64_t rows = a.pattern().local_rows();

  Graph g;
  Value values = g.placeholder("values", {a.pattern().local_entries()});
  Value b = g.placeholder("b", {rows});
  Value u = sparse::solve(
      a, values, b, {.ksp = "cg", .pc = "jacobi", .symmetric = true});
  Value loss = mpi_total(u);  // Σ u over every rank
  std::vector<Value> grads = gradients(loss, {values, b});  // one A⁻ᵀ solve

  Session session(g);
  std::vector<Tensor> out =
      session.run({loss, mpi_total(square(grads[1])), mpi_total(grads[0])},
                  {{values, Tensor({a.pattern().local_entries()}, entries)},
                   {b, Tensor({rows}, std::vector<double>(rows, 1.0))}});
  // doc:end solve

  // The same gradient through BoomerAMG, whose transpose solve the adjoint
  // replaces by a solve with an explicit Aᵀ (the matrix is not declared
  // symmetric here).
  // doc:begin hypre
  Value u_amg = sparse::solve(a, values, b, {.ksp = "gmres", .pc = "hypre"});
  Value db_amg = gradient(mpi_total(u_amg), b);
  // doc:end hypre
  Session again(g);  // a session for the nodes added since
  const double gap =
      again
          .run(mpi_total(square(db_amg - grads[1])),
               {{values, Tensor({a.pattern().local_entries()}, entries)},
                {b, Tensor({rows}, std::vector<double>(rows, 1.0))}})
          .item();
  if (world->rank() == 0) {
    std::printf("L = %.10g\n", out[0].item());
    std::printf("sum (dL/db)^2 = %.10g\n", out[1].item());
    std::printf("sum dL/dA = %.10g\n", out[2].item());
    std::printf("BoomerAMG's dL/db within 1e-8: %s\n",
                gap < 1e-16 ? "yes" : "no");
  }
  return 0;
}
