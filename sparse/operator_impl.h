// The shared object behind a SparseMatrix's nodes (a NodeResource): the
// pattern, its communicator and the engine that does the arithmetic. Not
// installed; sparse/sparse_matrix.h is the interface.
//
// The seam between the sparse ops and PETSc, so a header of its own:
// sparse/sparse_ops.cc builds the nodes on a SparseOperator,
// sparse/pattern.cc checks its pattern and owns its life, and the
// SparseEngine is made by sparse/petsc_engine.cc, or by sparse/no_petsc.cc
// in a build without PETSc.
#pragma once

#include <memory>
#include <string>

#include "core/op.h"
#include "sparse/sparse_matrix.h"

namespace adgraph::sparse {

// The arithmetic of one matrix. Each call is collective over the matrix's
// communicator and throws RunError (without a node; the kernel adds it).
class SparseEngine {
 public:
  virtual ~SparseEngine() = default;
  // y = A·x, or Aᵀ·x when `transpose`.
  virtual void multiply(const Tensor& values,
                        const double* x,
                        double* y,
                        bool transpose) = 0;
  // w_k = u_i·v_j for entry k at (i, j); v's entries on other ranks are
  // gathered.
  virtual void outer(const double* u, const double* v, double* w) = 0;
  // x = A⁻¹·b, or A⁻ᵀ·b when `transpose`, from a zero guess. With
  // `for_transpose` the solve (with A, options.symmetric) stands for one
  // with Aᵀ (an adjoint's), so A's symmetry is checked first, once per
  // set of values: a RunError on every rank when it is not symmetric.
  virtual void solve(const SolverOptions& options,
                     const Tensor& values,
                     const double* b,
                     double* x,
                     bool transpose,
                     bool for_transpose) = 0;
};

// The PETSc engine (sparse/petsc_engine.cc), or a stub that throws
// (sparse/no_petsc.cc) in a build without PETSc. Collective.
std::unique_ptr<SparseEngine> make_engine(
    const CsrPattern& pattern,
    int64_t global_rows,
    const std::vector<Prolongation>& multigrid,
    CommContext& comm,
    SparseStats& stats);

class SparseOperator final : public NodeResource {
 public:
  SparseOperator(CsrPattern pattern,
                 std::shared_ptr<CommContext> comm,
                 std::vector<Prolongation> multigrid)
      : pattern_(std::move(pattern)),
        comm_(std::move(comm)),
        comm_given_(comm_ != nullptr),
        multigrid_(std::move(multigrid)) {}
  ~SparseOperator() override;

  const CsrPattern& pattern() const { return pattern_; }
  const std::vector<Prolongation>& multigrid() const { return multigrid_; }
  // The communicator its nodes use: the one given, else the first node's.
  const std::shared_ptr<CommContext>& comm() const { return comm_; }
  // The communicator its nodes are built with: the one it was made with,
  // else none, so that each node takes its graph's (or CommScope's) and
  // check_node refuses one that differs from the first node's.
  std::shared_ptr<CommContext> node_comm() const {
    return comm_given_ ? comm_ : nullptr;
  }
  int64_t global_rows() const { return global_rows_; }

  // For a node's shape rule, collective: binds the node's communicator and
  // checks the pattern (once) and that each input `i` has sizes[i]
  // elements. Throws ShapeError, the same on every rank, naming the node
  // and the first bad row (or input).
  void check_node(const ShapeContext& c, const std::vector<int64_t>& sizes);

  // The engine, made at first use (collective).
  SparseEngine& engine();

  SparseStats stats;

 private:
  // What is wrong with this rank's multigrid levels (collective; every
  // rank takes part whatever it finds); empty when nothing.
  std::string multigrid_problem(CommContext& comm) const;

  CsrPattern pattern_;
  std::shared_ptr<CommContext> comm_;
  bool comm_given_ = false;
  std::vector<Prolongation> multigrid_;
  bool checked_ = false;
  int64_t global_rows_ = 0;
  std::unique_ptr<SparseEngine> engine_;
};

// What is wrong with this rank's pattern, given every rank's row count:
// empty when nothing; else sets *bad_row to the first bad global row.
std::string pattern_problem(const CsrPattern& pattern,
                            int64_t expected_first_row,
                            int64_t global_rows,
                            int64_t* bad_row);

}  // namespace adgraph::sparse
