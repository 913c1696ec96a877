// What the heat-step kernels share (internal to solvers/): the stencil's
// inputs, the shape checks and attributes, and edge extraction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/op.h"

namespace adgraph::solvers::detail {

// Patches smaller than this run their stencil on one thread.
constexpr int64_t kParallelPoints = 16384;

// An n × m patch u with the four halo strips around it.
struct Stencil {
  const double* u;
  const double* left;
  const double* right;
  const double* up;
  const double* down;
  int64_t n, m;
};

inline Stencil stencil_of(const KernelContext& c, int first_halo) {
  const Tensor& u = c.input(0);
  return {u.data(),
          c.input(first_halo).data(),
          c.input(first_halo + 1).data(),
          c.input(first_halo + 2).data(),
          c.input(first_halo + 3).data(),
          u.shape()[0],
          u.shape()[1]};
}

inline void check_shapes(const ShapeContext& c,
                         int first_patch_input,
                         int n_patch_inputs,
                         int first_halo) {
  const Shape& u = c.input_shape(first_patch_input);
  if (u.size() != 2)
    c.fail("input \"u\"",
           "expected an n x m patch, got shape " + shape_string(u));
  for (int k = first_patch_input + 1; k < first_patch_input + n_patch_inputs;
       ++k) {
    if (c.input_shape(k) != u) {
      c.fail("input " + std::to_string(k),
             "shape " + shape_string(c.input_shape(k)) + " differs from u's " +
                 shape_string(u));
    }
  }
  const Shape rows{u[0]}, cols{u[1]};
  const char* names[4] = {"from_left", "from_right", "from_up", "from_down"};
  for (int k = 0; k < 4; ++k) {
    const Shape& want = k < 2 ? rows : cols;
    if (c.input_shape(first_halo + k) != want) {
      c.fail(std::string("input \"") + names[k] + "\"",
             "shape " + shape_string(c.input_shape(first_halo + k)) +
                 ", expected " + shape_string(want) + " for a patch of " +
                 shape_string(u));
    }
  }
}

inline std::vector<AttrSpec> step_attrs() {
  return {{"dt", AttrType::kFloat, nlohmann::json(), "time step", 0},
          {"h", AttrType::kFloat, nlohmann::json(), "grid spacing", 1e-300}};
}

// Writes the four edges of the n × m patch `u` into `edges` (left, right,
// up, down).
inline void write_edges(const double* u, int64_t n, int64_t m, Tensor* edges) {
  for (int64_t i = 0; i < n; ++i)
    edges[0][i] = u[i * m], edges[1][i] = u[i * m + m - 1];
  for (int64_t j = 0; j < m; ++j)
    edges[2][j] = u[j], edges[3][j] = u[(n - 1) * m + j];
}

}  // namespace adgraph::solvers::detail
