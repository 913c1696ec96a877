// A rank's rows of a matrix whose coupling among the rank's own unknowns is
// a 5-point stencil with one off-diagonal value c on an n × m grid numbered
// row by row (the heat problem's patch matrices after each row is divided
// by κ):
//
//   (A x)_P = d_P·x_P + c·Σ_{Q: P's neighbours in the grid} x_Q
//                     + Σ_{entries k of row P in other ranks' columns} a_k·x_k
//
// Such a block is multiplied from d, c and the few off-rank entries, without
// reading a column index or a value per entry: a third of the memory traffic
// of a CSR product, which is what a multigrid V-cycle's fine level spends its
// time on. The engine recognises the shape from the pattern once and the
// single c from each new set of values; anything else takes PETSc's CSR
// product. Not installed; no PETSc here.
#pragma once

#include <cstdint>
#include <vector>

#include "sparse/sparse_matrix.h"

namespace adgraph::sparse {

class StencilBlock final {
 public:
  StencilBlock() = default;
  // Recognises the grid from the pattern: n, m ≥ 2, row 0's own columns
  // exactly {0, 1, m} and every row's own columns those of its grid
  // neighbours. has_shape() is false otherwise.
  explicit StencilBlock(const CsrPattern& pattern);

  bool has_shape() const { return m_ > 0; }
  // The global columns of the off-rank entries, sorted and unique: the
  // values add_off_rank() needs in `ghosts`, in this order.
  const std::vector<int64_t>& ghost_columns() const { return ghost_columns_; }

  // Takes one set of the matrix's local values (in CSR order): true when
  // the grid's off-diagonal entries all hold one value, which the products
  // then use with the diagonal and the off-rank entries.
  bool take_values(const double* values);
  // y = A·x in two parts, so the ghost values can travel meanwhile: the
  // grid's own (from this rank's x), then the off-rank entries' (from the
  // ghost values) added. Only after take_values() returned true.
  void multiply_own(const double* x, double* y) const;
  void add_off_rank(const double* ghosts, double* y) const;

 private:
  struct OffRank {
    int64_t row;
    int64_t entry;  // into the values
    int64_t slot;   // into ghost_columns()
  };

  int64_t n_ = 0, m_ = 0;
  std::vector<int64_t> diagonal_entries_;  // per row
  std::vector<int64_t> coupling_entries_;  // the grid's off-diagonal ones
  std::vector<OffRank> off_rank_;
  std::vector<int64_t> ghost_columns_;
  std::vector<double> diagonal_;
  std::vector<double> off_rank_values_;
  double coupling_ = 0;
};

}  // namespace adgraph::sparse
