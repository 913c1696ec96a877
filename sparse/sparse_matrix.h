// Distributed sparse matrices as graph nodes, on PETSc.
//
// A SparseMatrix is a square matrix of N × N distributed by rows: each rank
// owns the contiguous rows [first_row, first_row + n) and gives their
// pattern in CSR form with global, strictly increasing column indices. The
// pattern is static; the values are a graph input (one per stored entry, in
// CSR order), so gradients flow to whatever assembled them. Vectors are
// distributed like the rows: a rank's x, b and y hold its n entries (any
// shape with n elements; a patch's n × m values, say).
//
//   sparse::SparseMatrix a(pattern);          // this rank's rows
//   Value y = sparse::matvec(a, values, x);   // A·x
//   Value u = sparse::solve(a, values, f, {.ksp = "cg", .pc = "gamg",
//                                          .symmetric = true});
//
// Every node of a matrix is a communication node on the matrix's
// communicator (chained by ghost dependencies, so PETSc, which is not
// thread-safe, never runs in two nodes at once); every rank builds each one.
// The pattern is checked collectively when the first node is built: a bad
// one is a ShapeError, the same on every rank, naming the node and the
// first bad row.
//
// Derivatives (ȳ, x̄: cotangents; ⊗ on the pattern: (u ⊗ v)_k = u_i·v_j for
// entry k at row i, column j):
//   matvec   y = A·x:     x̄ = Aᵀȳ,            Ā = ȳ ⊗ x
//   solve    x = A⁻¹b:    λ = A⁻ᵀx̄, b̄ = λ,    Ā = −λ ⊗ x
//            ẋ = A⁻¹(ḃ − Ȧ·x)
// and the nodes the derivatives build (transpose products and solves, the
// outer product on the pattern) have derivatives of their own, so
// Hessian-vector products pass through a solve.
//
// A solve starts from a zero guess, so a recomputed solve (a checkpointed
// loop's) is bitwise the same. The preconditioner is set up when the values
// differ from the last ones the matrix saw (on any rank), and only then: a
// loop whose matrix does not change sets it up once per run, and the
// adjoint's transpose solves reuse the forward's set-up. A solve that does
// not converge (a negative converged reason, or one stopped by its
// iteration count, as preonly is, whose true relative residual
// |b − A·x| / |b| exceeds max(rtol, 1e-6)), or NaN/Inf in the values or
// the right-hand side on any rank, throws the same RunError on every rank,
// naming the node, the reason and the iteration count.
//
// Inside solves, a matrix whose every rank's own block is a 5-point
// stencil with one off-diagonal value on a grid numbered row by row (the
// heat problem's scaled patch matrices) is multiplied matrix-free, from its
// diagonal, that value and its few off-rank entries
// (sparse/stencil_block.h): a third of a CSR product's memory traffic. The
// assembled matrix still builds the preconditioner; sparse_matvec nodes
// keep the CSR product. It is recognised from the pattern and each new set
// of values, on every rank together, and changes only a solve's rounding.
//
// Without PETSc (configured with -DADGRAPH_PETSC=OFF, or without
// libpetsc-real-dev) the library still builds; building a sparse node
// throws GraphError saying how to enable it.
#pragma once

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/comm_context.h"
#include "core/fields.h"
#include "core/graph.h"

namespace adgraph::sparse {

// One rank's rows of the matrix.
struct CsrPattern {
  // Global index of this rank's first row; rank r's first_row must be the
  // number of rows of ranks 0..r−1.
  int64_t first_row = 0;
  // n + 1 offsets into `columns`, starting at 0, non-decreasing.
  std::vector<int64_t> row_offsets = {0};
  // Global column indices, strictly increasing within a row, in [0, N).
  std::vector<int64_t> columns;

  int64_t local_rows() const {
    return static_cast<int64_t>(row_offsets.size()) - 1;
  }
  int64_t local_entries() const { return static_cast<int64_t>(columns.size()); }
};

// One level of a geometric multigrid (pc "mg"): this rank's rows of the
// prolongation P from a coarser grid, distributed like the finer level's
// unknowns (the matrix's rows, or the previous level's coarse ones), with
// global column indices into the coarse unknowns, which are distributed by
// `coarse_rows` per rank in rank order. The coarse operators are PᵀAP.
struct Prolongation {
  int64_t coarse_rows = 0;     // coarse unknowns this rank owns
  CsrPattern pattern;          // fine rows × coarse columns
  std::vector<double> values;  // one per entry of `pattern`
};

// How a solve node solves. Each distinct set of options of one matrix gets
// its own PETSc KSP.
struct SolverOptions {
  // Krylov method: "cg", "gmres", "bcgs" or "preonly" (with pc "lu").
  std::string ksp = "gmres";
  // Preconditioner: "none", "jacobi", "bjacobi" (ILU(0) on each rank's
  // block), "ilu" (the same), "gamg", "hypre" (BoomerAMG), "lu" (MUMPS)
  // or "mg": geometric multigrid on the matrix's own levels (a
  // SparseMatrix made with prolongations), one V-cycle with a Jacobi-
  // preconditioned Chebyshev smoother and Galerkin coarse operators.
  std::string pc = "jacobi";
  // Relative and absolute residual tolerances, and the iteration limit.
  // The default rtol is tight enough for gradients (finite differences and
  // the Taylor test see the solver's error, not its truncation).
  double rtol = 1e-10;
  double atol = 1e-50;
  int max_it = 10000;
  // The matrix is symmetric for every value of its inputs: the adjoint
  // solves with A itself (KSPSolve) instead of Aᵀ. Such a solve standing
  // for one with Aᵀ (the adjoint's, or solve_transpose's) first checks,
  // once per assembled set of values, that |a_ij − a_ji| ≤ 1e-10·|A|_∞:
  // a nonsymmetric matrix is a RunError, not a wrong gradient.
  bool symmetric = false;
  // A PETSc options prefix: when set, the KSP also reads PETSc's options
  // database under it (e.g. PETSC_OPTIONS="-heat_ksp_monitor").
  std::string prefix;

  // The fields' table (core/fields.h); to_attrs and from_attrs follow it.
  static const FieldTable<SolverOptions>& fields();
  // Checks the fields; returns false with "<field>: <why>" for the first
  // bad one.
  bool is_valid(std::string* error) const;
  // As node attributes (and back).
  nlohmann::json to_attrs() const;
  static SolverOptions from_attrs(const nlohmann::json& attrs);
};

// What a matrix's nodes have done so far on this rank (for tests and
// benchmarks).
struct SparseStats {
  // Times the values were assembled into the matrix (they differed from
  // the last ones on some rank).
  int64_t assemblies = 0;
  // Preconditioner set-ups (one per KSP per assembly that a solve used).
  int64_t setups = 0;
  int64_t solves = 0;
  int64_t transpose_solves = 0;
  // Krylov iterations of the last solve (forward or transpose).
  int64_t last_iterations = 0;
  // Products inside solves that took the matrix-free 5-point stencil path
  // (sparse/stencil_block.h).
  int64_t stencil_products = 0;
};

class SparseOperator;

// A handle to one distributed matrix: its pattern, its communicator and
// the PETSc objects its nodes share. Copies share them.
class SparseMatrix final {
 public:
  // `comm`: the communicator of its nodes; null: the graph's (the world's
  // for a graph without one). Local: the pattern is checked when the first
  // node is built.
  explicit SparseMatrix(CsrPattern pattern,
                        std::shared_ptr<CommContext> comm = nullptr);
  // With the levels of a geometric multigrid, finest first: levels[0]
  // prolongs level 1's unknowns to the matrix's rows, levels[1] level 2's
  // to level 1's, … (solvers::patch_prolongations makes them for the heat
  // problem's patch grid). Checked with the pattern.
  SparseMatrix(CsrPattern pattern,
               std::shared_ptr<CommContext> comm,
               std::vector<Prolongation> multigrid);

  const CsrPattern& pattern() const;
  SparseStats stats() const;
  const std::shared_ptr<SparseOperator>& shared_operator() const { return op_; }
  // The same object as its nodes' NodeResource (NodeOptions::resource),
  // for building a sparse node by name.
  std::shared_ptr<NodeResource> resource() const;

 private:
  std::shared_ptr<SparseOperator> op_;
};

// A·x. `values`: the matrix's local entries (local_entries() elements);
// `x`: local_rows() elements. The result has x's shape.
Value matvec(const SparseMatrix& a, Value values, Value x);
// Aᵀ·y.
Value matvec_transpose(const SparseMatrix& a, Value values, Value y);
// (u ⊗ v)_k = u_i·v_j for entry k at (i, j): u and v have local_rows()
// elements; the result has local_entries().
Value outer(const SparseMatrix& a, Value u, Value v);
// A⁻¹·b and A⁻ᵀ·b with `options`. The result has b's shape.
Value solve(const SparseMatrix& a,
            Value values,
            Value b,
            const SolverOptions& options = {});
Value solve_transpose(const SparseMatrix& a,
                      Value values,
                      Value b,
                      const SolverOptions& options = {});

// Whether this build has PETSc.
bool petsc_available();

// Registers sparse_matvec, sparse_matvec_transpose, sparse_outer,
// sparse_solve and sparse_solve_transpose (once only: call
// register_sparse_layer()).
void register_sparse_ops();

// The sparse layer's package initialiser: registers its ops and the layers
// below, once per process, thread-safe, returning at once after the first
// call. Every node builder of the layer calls it.
void register_sparse_layer();

}  // namespace adgraph::sparse
