// Helpers for the grid suites: global fields made the same on every rank,
// patches cut from them by hand, and reads of a global field with the
// grid's edge rules, written independently of grid/.
#pragma once

#include <cmath>
#include <cstdint>
#include <functional>
#include <vector>

#include "adgraph.h"
#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph::testing {

// Every process grid of `size` ranks over `ndim` axes whose counts fit
// `shape` (each count at most the extent).
inline std::vector<std::vector<int>> process_grids(int size,
                                                   const Shape& shape) {
  std::vector<std::vector<int>> out;
  const int nd = static_cast<int>(shape.size());
  std::vector<int> p(nd, 1);
  std::function<void(int, int)> place = [&](int axis, int left) {
    if (axis == nd - 1) {
      if (left <= shape[axis]) {
        p[axis] = left;
        out.push_back(p);
      }
      return;
    }
    for (int k = 1; k <= left; ++k) {
      if (left % k != 0 || k > shape[axis]) continue;
      p[axis] = k;
      place(axis + 1, left / k);
    }
  };
  place(0, size);
  return out;
}

// A global field whose value depends on the global index and `salt` only
// (the same on every rank): lo + (hi − lo)·frac(sin(…)).
inline Tensor global_field(const Shape& shape,
                           unsigned salt,
                           double lo = -1.0,
                           double hi = 1.0) {
  Tensor t{Shape(shape)};
  for (int64_t i = 0; i < t.size(); ++i) {
    const double s = std::sin(12.9898 * (i + 1) + 78.233 * salt) * 43758.5453;
    t[i] = lo + (hi - lo) * (s - std::floor(s));
  }
  return t;
}

// Row-major index of `idx` in `shape`.
inline int64_t flat(const Shape& shape, const Shape& idx) {
  int64_t f = 0;
  for (std::size_t a = 0; a < shape.size(); ++a) f = f * shape[a] + idx[a];
  return f;
}

// Rank `rank`'s patch of a [batch…, shape…] global field, cut by hand: the
// first N mod p processes of an axis have one point more.
inline Tensor patch_of(const Tensor& global,
                       const Shape& grid_shape,
                       const std::vector<int>& procs,
                       int rank) {
  const int nd = static_cast<int>(grid_shape.size());
  const int nb = global.rank() - nd;
  std::vector<int> c(nd);
  for (int a = nd - 1, r = rank; a >= 0; --a) {
    c[a] = r % procs[a];
    r /= procs[a];
  }
  Shape shape(global.shape().begin(), global.shape().begin() + nb), start(nd);
  for (int a = 0; a < nd; ++a) {
    const int64_t q = grid_shape[a] / procs[a], rem = grid_shape[a] % procs[a];
    start[a] = c[a] * q + std::min<int64_t>(c[a], rem);
    shape.push_back(q + (c[a] < rem ? 1 : 0));
  }
  Tensor out{Shape(shape)};
  Shape idx(shape.size(), 0);
  for (int64_t i = 0; i < out.size(); ++i) {
    Shape g = idx;
    for (int a = 0; a < nd; ++a) g[nb + a] += start[a];
    out[i] = global[flat(global.shape(), g)];
    for (int a = static_cast<int>(idx.size()) - 1;
         a >= 0 && ++idx[a] == shape[a];
         --a)
      idx[a] = 0;
  }
  return out;
}

// global[idx] with periodic axes wrapped and 0 past a non-periodic edge
// (spatial axes only; idx covers every axis of the field).
inline double read_global(const Tensor& global,
                          Shape idx,
                          const std::vector<bool>& periodic) {
  const int nd = static_cast<int>(periodic.size());
  const int nb = global.rank() - nd;
  for (int a = 0; a < nd; ++a) {
    const int64_t n = global.shape()[nb + a];
    int64_t& i = idx[nb + a];
    if (periodic[a]) i = ((i % n) + n) % n;
    if (i < 0 || i >= n) return 0.0;
  }
  return global[flat(global.shape(), idx)];
}

}  // namespace adgraph::testing
