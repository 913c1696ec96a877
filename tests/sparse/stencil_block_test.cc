// The matrix-free product of a 5-point block against the plain CSR product
// of the same rows, written here entry by entry, and the shapes and values
// it must refuse.
#include "sparse/stencil_block.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace adgraph::sparse {
namespace {

// The rows of an n × m grid numbered from `first` (row by row), with the
// 5-point couplings inside the grid and, for every point of the grid's
// first row, one entry in the column `first − m + j` (the grid above, on
// another rank) when `above`, and for every point of its last column one in
// `first + n·m + i` (another rank's block after it) when `after`.
struct Rows {
  CsrPattern pattern;
  std::vector<double> values;
};

Rows grid_rows(int64_t n, int64_t m, int64_t first, bool above, bool after) {
  Rows r;
  r.pattern.first_row = first;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      const int64_t p = first + i * m + j;
      std::vector<int64_t> cols;
      if (above && i == 0) cols.push_back(first - m + j);
      if (i > 0) cols.push_back(p - m);
      if (j > 0) cols.push_back(p - 1);
      cols.push_back(p);
      if (j < m - 1) cols.push_back(p + 1);
      if (i < n - 1) cols.push_back(p + m);
      if (after && j == m - 1) cols.push_back(first + n * m + i);
      for (int64_t c : cols) {
        r.pattern.columns.push_back(c);
        // Off-block entries vary; the grid's couplings are all −2.5.
        const bool own = c >= first && c < first + n * m;
        r.values.push_back(c == p ? 4.0 + 0.1 * static_cast<double>(p % 7)
                           : own  ? -2.5
                                  : 0.3 + 0.01 * static_cast<double>(c));
      }
      r.pattern.row_offsets.push_back(
          static_cast<int64_t>(r.pattern.columns.size()));
    }
  }
  return r;
}

double x_at(int64_t global) {
  return std::sin(0.37 * static_cast<double>(global)) + 1.5;
}

// y = A·x by the CSR entries, x known at every global column.
std::vector<double> csr_product(const Rows& r) {
  std::vector<double> y;
  const auto& off = r.pattern.row_offsets;
  for (size_t i = 0; i + 1 < off.size(); ++i) {
    double s = 0;
    for (int64_t k = off[i]; k < off[i + 1]; ++k)
      s += r.values[k] * x_at(r.pattern.columns[k]);
    y.push_back(s);
  }
  return y;
}

void expect_matches_csr(int64_t n, int64_t m, bool above, bool after) {
  const int64_t first = above ? 40 : 0;
  Rows r = grid_rows(n, m, first, above, after);
  StencilBlock block(r.pattern);
  ASSERT_TRUE(block.has_shape()) << n << "x" << m;
  ASSERT_TRUE(block.take_values(r.values.data()));
  std::vector<double> x, ghosts;
  for (int64_t p = 0; p < n * m; ++p) x.push_back(x_at(first + p));
  for (int64_t c : block.ghost_columns()) ghosts.push_back(x_at(c));
  EXPECT_EQ(block.ghost_columns().size(),
            static_cast<size_t>((above ? m : 0) + (after ? n : 0)));
  std::vector<double> y(n * m);
  block.multiply_own(x.data(), y.data());
  block.add_off_rank(ghosts.data(), y.data());
  const std::vector<double> expected = csr_product(r);
  for (int64_t p = 0; p < n * m; ++p)
    EXPECT_NEAR(y[p], expected[p], 1e-13 * std::abs(expected[p])) << p;
}

TEST(StencilBlock, MultipliesLikeTheCsrRows) {
  expect_matches_csr(2, 2, false, false);
  expect_matches_csr(5, 3, false, false);
  expect_matches_csr(3, 7, true, false);
  expect_matches_csr(4, 4, true, true);
  expect_matches_csr(6, 2, false, true);
}

TEST(StencilBlock, RefusesWhatIsNotAFivePointGrid) {
  // A tridiagonal block (a 1 × m grid is not recognised).
  Rows line;
  for (int64_t i = 0; i < 6; ++i) {
    if (i > 0) line.pattern.columns.push_back(i - 1);
    line.pattern.columns.push_back(i);
    if (i < 5) line.pattern.columns.push_back(i + 1);
    line.pattern.row_offsets.push_back(
        static_cast<int64_t>(line.pattern.columns.size()));
  }
  EXPECT_FALSE(StencilBlock(line.pattern).has_shape());
  // A grid missing one coupling (row 4's link to row 5 of a 3 × 3 grid).
  Rows holed = grid_rows(3, 3, 0, false, false);
  CsrPattern& p = holed.pattern;
  const int64_t k = p.row_offsets[4] + 3;  // columns 1, 3, 4, 5, 7
  ASSERT_EQ(p.columns[k], 5);
  p.columns.erase(p.columns.begin() + k);
  for (size_t i = 5; i < p.row_offsets.size(); ++i) --p.row_offsets[i];
  EXPECT_FALSE(StencilBlock(p).has_shape());
  // Rows that are not a whole number of grid rows: 3 × 3 plus one.
  Rows ragged = grid_rows(3, 3, 0, false, false);
  ragged.pattern.columns.push_back(9);
  ragged.pattern.row_offsets.push_back(
      static_cast<int64_t>(ragged.pattern.columns.size()));
  EXPECT_FALSE(StencilBlock(ragged.pattern).has_shape());
}

TEST(StencilBlock, RefusesCouplingsThatDiffer) {
  Rows r = grid_rows(3, 4, 0, false, false);
  StencilBlock block(r.pattern);
  ASSERT_TRUE(block.has_shape());
  EXPECT_TRUE(block.take_values(r.values.data()));
  r.values[r.pattern.row_offsets[6] + 1] = -2.5000000001;  // one coupling
  EXPECT_FALSE(block.take_values(r.values.data()));
}

}  // namespace
}  // namespace adgraph::sparse
