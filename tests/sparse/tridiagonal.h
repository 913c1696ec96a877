// The suites' matrix: the 1-D Laplacian with kRows rows on each rank.
#pragma once

#include "sparse/sparse_matrix.h"
#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph::testing {

// The 1-D Laplacian tridiag(−1, 2 + shift, −1) with 4 rows per rank.
constexpr int64_t kRows = 4;

inline sparse::CsrPattern tridiagonal() {
  const int64_t global = kRows * world_size();
  sparse::CsrPattern p;
  p.first_row = kRows * world_rank();
  for (int64_t i = p.first_row; i < p.first_row + kRows; ++i) {
    for (int64_t j = i - 1; j <= i + 1; ++j) {
      if (j >= 0 && j < global) p.columns.push_back(j);
    }
    p.row_offsets.push_back(p.local_entries());
  }
  return p;
}

inline Tensor tridiagonal_values(const sparse::CsrPattern& p, double shift) {
  Tensor v{Shape{p.local_entries()}};
  for (int64_t i = 0; i < p.local_rows(); ++i) {
    for (int64_t k = p.row_offsets[i]; k < p.row_offsets[i + 1]; ++k) {
      v[k] = p.columns[k] == p.first_row + i ? 2.0 + shift : -1.0;
    }
  }
  return v;
}

}  // namespace adgraph::testing
