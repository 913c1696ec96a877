#include "sparse/stencil_block.h"

#include <algorithm>

namespace adgraph::sparse {

StencilBlock::StencilBlock(const CsrPattern& pattern) {
  const int64_t rows = pattern.local_rows();
  const int64_t lo = pattern.first_row, hi = lo + rows;
  const auto& offsets = pattern.row_offsets;
  const auto& columns = pattern.columns;
  if (rows < 4) return;
  // m is row 0's third own column: its neighbour below.
  std::vector<int64_t> first;
  for (int64_t k = offsets[0]; k < offsets[1]; ++k) {
    if (columns[k] >= lo && columns[k] < hi) first.push_back(columns[k] - lo);
  }
  if (first.size() != 3 || first[0] != 0 || first[1] != 1) return;
  const int64_t m = first[2];
  if (m < 2 || rows % m != 0 || rows / m < 2) return;
  const int64_t n = rows / m;
  std::vector<int64_t> expected;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = r / m, j = r % m;
    expected.clear();
    if (i > 0) expected.push_back(r - m);
    if (j > 0) expected.push_back(r - 1);
    expected.push_back(r);
    if (j < m - 1) expected.push_back(r + 1);
    if (i < n - 1) expected.push_back(r + m);
    size_t seen = 0;
    for (int64_t k = offsets[r]; k < offsets[r + 1]; ++k) {
      const int64_t col = columns[k];
      if (col < lo || col >= hi) {
        off_rank_.push_back({r, k, col});  // slot: the column, for now
        continue;
      }
      if (seen == expected.size() || expected[seen] != col - lo) return;
      (col - lo == r ? diagonal_entries_ : coupling_entries_).push_back(k);
      ++seen;
    }
    if (seen != expected.size()) return;
  }
  for (const OffRank& o : off_rank_) ghost_columns_.push_back(o.slot);
  std::sort(ghost_columns_.begin(), ghost_columns_.end());
  ghost_columns_.erase(
      std::unique(ghost_columns_.begin(), ghost_columns_.end()),
      ghost_columns_.end());
  for (OffRank& o : off_rank_) {
    o.slot =
        std::lower_bound(ghost_columns_.begin(), ghost_columns_.end(), o.slot) -
        ghost_columns_.begin();
  }
  diagonal_.resize(rows);
  off_rank_values_.resize(off_rank_.size());
  n_ = n;
  m_ = m;
}

bool StencilBlock::take_values(const double* values) {
  if (!has_shape()) return false;
  const double c = values[coupling_entries_.front()];
  for (int64_t k : coupling_entries_) {
    if (values[k] != c) return false;
  }
  coupling_ = c;
  for (size_t r = 0; r < diagonal_.size(); ++r) {
    diagonal_[r] = values[diagonal_entries_[r]];
  }
  for (size_t g = 0; g < off_rank_.size(); ++g) {
    off_rank_values_[g] = values[off_rank_[g].entry];
  }
  return true;
}

// Row by row, in three passes over one grid row (which stays in the L1
// cache): the vertical neighbours, the horizontal ones, then d·x + c·sum.
// The sum is (up + down) + (left + right) at every point, the missing
// neighbours of edge points left out.
void StencilBlock::multiply_own(const double* x, double* y) const {
  const int64_t n = n_, m = m_;
  const double c = coupling_;
  for (int64_t i = 0; i < n; ++i) {
    const double* xr = x + i * m;
    const double* d = diagonal_.data() + i * m;
    double* yr = y + i * m;
    if (i == 0) {
      for (int64_t j = 0; j < m; ++j) yr[j] = xr[j + m];
    } else if (i == n - 1) {
      for (int64_t j = 0; j < m; ++j) yr[j] = xr[j - m];
    } else {
      for (int64_t j = 0; j < m; ++j) yr[j] = xr[j - m] + xr[j + m];
    }
    yr[0] += xr[1];
    for (int64_t j = 1; j < m - 1; ++j) yr[j] += xr[j - 1] + xr[j + 1];
    yr[m - 1] += xr[m - 2];
    for (int64_t j = 0; j < m; ++j) yr[j] = d[j] * xr[j] + c * yr[j];
  }
}

void StencilBlock::add_off_rank(const double* ghosts, double* y) const {
  for (size_t g = 0; g < off_rank_.size(); ++g) {
    y[off_rank_[g].row] += off_rank_values_[g] * ghosts[off_rank_[g].slot];
  }
}

}  // namespace adgraph::sparse
