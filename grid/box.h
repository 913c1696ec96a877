// Boxes of row-major arrays: the copies that scatter, gather and the halo
// exchange are made of (internal to grid/).
#pragma once

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
  std::vector<int64_t> idx(nd - 1, 0);
  while (true) {
    int64_t f = from_box.origin[nd - 1], t = to_box.origin[nd - 1];
    for (int a = 0; a < nd - 1; ++a) {
      f += (from_box.origin[a] + idx[a]) * fs[a];
      t += (to_box.origin[a] + idx[a]) * ts[a];
    }
    if (add) {
      for (int64_t k = 0; k < inner; ++k) to[t + k] += from[f + k];
    } else if (inner <= 8) {  // the columns of a ring: no call per row
      for (int64_t k = 0; k < inner; ++k) to[t + k] = from[f + k];
    } else {
      std::memcpy(to + t, from + f, sizeof(double) * inner);
    }
    int a = nd - 2;
    while (a >= 0 && ++idx[a] == from_box.extent[a]) idx[a--] = 0;
    if (a < 0) return;
  }
}

// Writes `value` over box `box` of array `to` (shape to_shape).
inline void fill_box(double* to,
                     const Shape& to_shape,
                     const Box& box,
                     double value) {
  const int nd = static_cast<int>(to_shape.size());
  if (box.size() == 0) return;
  const std::vector<int64_t> ts = strides_of(to_shape);
  std::vector<int64_t> idx(nd - 1, 0);
  while (true) {
    int64_t t = box.origin[nd - 1];
    for (int a = 0; a < nd - 1; ++a) t += (box.origin[a] + idx[a]) * ts[a];
    for (int64_t k = 0; k < box.extent[nd - 1]; ++k) to[t + k] = value;
    int a = nd - 2;
    while (a >= 0 && ++idx[a] == box.extent[a]) idx[a--] = 0;
    if (a < 0) return;
  }
}

// A whole array of `shape` as a box.
inline Box whole(const Shape& shape) {
  return Box{std::vector<int64_t>(shape.size(), 0), shape};
}

}  // namespace adgraph::grid::detail
