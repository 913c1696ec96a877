// Boxes of row-major arrays: the copies that scatter, gather and the halo
// exchange are made of (internal to grid/).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/tensor.h"

namespace adgraph::grid::detail {

// Row-major strides (in elements) of an array of `shape`.
inline std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int a = static_cast<int>(shape.size()) - 2; a >= 0; --a)
    s[a] = s[a + 1] * shape[a + 1];
  return s;
}

// A box of an array: its origin in the array (per axis) and its extents.
struct Box {
  std::vector<int64_t> origin;
  std::vector<int64_t> extent;
  int64_t size() const {
    int64_t n = 1;
    for (int64_t e : extent) n *= e;
    return n;
  }
};

// Calls row(from_offset, to_offset) for every row (run along the last
// axis) of a box of extents `extent`, in row-major order, given the
// offsets of its first point and the arrays' strides. The rows of the
// last-but-one axis run in a tight loop: a box one point wide along the
// last axis (a ring's columns) costs no index arithmetic per point.
template <class Row>
inline void for_rows(const std::vector<int64_t>& extent,
                     int64_t f,
                     const std::vector<int64_t>& fs,
                     int64_t t,
                     const std::vector<int64_t>& ts,
                     Row&& row) {
  const int nd = static_cast<int>(extent.size());
  if (nd == 1) {
    row(f, t);
    return;
  }
  const int64_t rows = extent[nd - 2], fr = fs[nd - 2], tr = ts[nd - 2];
  std::vector<int64_t> idx(nd - 2, 0);
  while (true) {
    for (int64_t r = 0; r < rows; ++r) row(f + r * fr, t + r * tr);
    int a = nd - 3;
    for (; a >= 0; --a) {
      f += fs[a];
      t += ts[a];
      if (++idx[a] < extent[a]) break;
      f -= extent[a] * fs[a];
      t -= extent[a] * ts[a];
      idx[a] = 0;
    }
    if (a < 0) return;
  }
}

// op(k) for k < n <= 8, written out without a loop: compilers turn a
// loop of stores into a call of memset or memcpy, which for the one-point
// rows of a ghost column cost more than the stores (a 256² heat step's
// four exchanges spent ~20 µs in such calls, 2 % of stencil_bench).
template <class Op>
inline void short_row(int64_t n, Op&& op) {
  switch (n) {
    case 8:
      op(7);
      [[fallthrough]];
    case 7:
      op(6);
      [[fallthrough]];
    case 6:
      op(5);
      [[fallthrough]];
    case 5:
      op(4);
      [[fallthrough]];
    case 4:
      op(3);
      [[fallthrough]];
    case 3:
      op(2);
      [[fallthrough]];
    case 2:
      op(1);
      [[fallthrough]];
    case 1:
      op(0);
      [[fallthrough]];
    default:
      break;
  }
}

inline int64_t offset_of(const std::vector<int64_t>& origin,
                         const std::vector<int64_t>& strides) {
  int64_t o = 0;
  for (std::size_t a = 0; a < origin.size(); ++a) o += origin[a] * strides[a];
  return o;
}

// Copies box `from_box` of array `from` (shape from_shape) onto box
// `to_box` of array `to` (shape to_shape); both boxes have one extent.
// When `add` is true the values are added (in the order of the box's
// points) instead of written.
inline void copy_box(const double* from,
                     const Shape& from_shape,
                     const Box& from_box,
                     double* to,
                     const Shape& to_shape,
                     const Box& to_box,
                     bool add = false) {
  const int nd = static_cast<int>(from_shape.size());
  if (from_box.size() == 0) return;
  const std::vector<int64_t> fs = strides_of(from_shape),
                             ts = strides_of(to_shape);
  const int64_t inner = from_box.extent[nd - 1];
  for_rows(from_box.extent,
           offset_of(from_box.origin, fs),
           fs,
           offset_of(to_box.origin, ts),
           ts,
           [&](int64_t f, int64_t t) {
             if (add) {
               for (int64_t k = 0; k < inner; ++k) to[t + k] += from[f + k];
             } else if (inner <= 8) {  // a ring's columns: no call per row
               short_row(inner, [&](int64_t k) { to[t + k] = from[f + k]; });
             } else {
               std::memcpy(to + t, from + f, sizeof(double) * inner);
             }
           });
}

// Writes `value` over box `box` of array `to` (shape to_shape).
inline void fill_box(double* to,
                     const Shape& to_shape,
                     const Box& box,
                     double value) {
  const int nd = static_cast<int>(to_shape.size());
  if (box.size() == 0) return;
  const std::vector<int64_t> ts = strides_of(to_shape);
  const int64_t inner = box.extent[nd - 1];
  for_rows(box.extent,
           0,
           ts,
           offset_of(box.origin, ts),
           ts,
           [&](int64_t, int64_t t) {
             if (inner <= 8) {
               short_row(inner, [&](int64_t k) { to[t + k] = value; });
             } else {
               std::fill_n(to + t, inner, value);
             }
           });
}

// A whole array of `shape` as a box.
inline Box whole(const Shape& shape) {
  return Box{std::vector<int64_t>(shape.size(), 0), shape};
}

}  // namespace adgraph::grid::detail
