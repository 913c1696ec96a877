// The heat adjoint's row kernel (heat_step_adjoint's pass over a row) and
// the vector lanes it is written with. Internal to solvers/.
#pragma once

#include <cstdint>
#include <utility>

#include "core/lanes.h"

namespace adgraph::solvers::detail {

// A vector of doubles as wide as the target's widest registers
// (core/lanes.h: results bitwise the same at any width).
constexpr int64_t kLanes = lanes::kWidest;
using Lanes = double __attribute__((vector_size(kLanes * sizeof(double))));

constexpr auto load = lanes::load<Lanes>;
constexpr auto store = lanes::store<Lanes>;

// Given the lanes of x[j..] in `here` and of x[j + kLanes..] in `next`:
// x[j + 1..] (east) and x[j + kLanes − 1..] (the next vector's west).
template <std::size_t... I>
Lanes east_of(Lanes here, Lanes next, std::index_sequence<I...>) {
  return __builtin_shufflevector(here, next, (I + 1)...);
}
template <std::size_t... I>
Lanes next_west_of(Lanes here, Lanes next, std::index_sequence<I...>) {
  return __builtin_shufflevector(here, next, (I + kLanes - 1)...);
}
constexpr auto kLaneIndices = std::make_index_sequence<kLanes>();

// heat_step_adjoint's (and the split step's) pass over points [j0, j1) of
// a row: ū = G + c·(the stencil of Z = κ ⊙ G over the Z rows north, here
// and south, whose index j + 1 is point j) and κ̄ += c·G ⊙ (the stencil of
// u over the u rows north, here and south).
//
// The pass is bound by loads, not bytes: written point by point it loads
// the row here of Z and of u three times each (west, centre, east), 14
// vectors per vector of points against the forward's 7. Here each vector
// of the rows here is loaded once and its west and east neighbours are
// shuffled out of it and the next one (10 loads per vector with z_row's
// two); the arithmetic is the scalar code's, in its order. out_u may be g
// (ū written over ū⁺): each point reads g before writing out_u, once.
// With kAddU, ū is added onto out_u (which then is not g): the split
// step's adjoint adds it onto the ring's.
template <bool kAddU = false>
inline void adjoint_row(int64_t j0,
                        int64_t j1,
                        double coef,
                        const double* g,
                        const double* __restrict z_north,
                        const double* __restrict z_here,
                        const double* __restrict z_south,
                        const double* __restrict u_north,
                        const double* __restrict u_here,
                        const double* __restrict u_south,
                        double* out_u,
                        double* __restrict out_k) {
  const double *zn = z_north, *zc = z_here, *zs = z_south;
  const double *un = u_north, *ur = u_here, *us = u_south;
  auto points = [&](int64_t j,
                    Lanes z_west,
                    Lanes z_centre,
                    Lanes z_east,
                    Lanes u_west,
                    Lanes u_centre,
                    Lanes u_east) {
    const Lanes gj = load(g + j);
    const Lanes du = gj + coef * (load(zn + j + 1) + load(zs + j + 1) + z_west +
                                  z_east - 4.0 * z_centre);
    store(out_u + j, kAddU ? load(out_u + j) + du : du);
    store(out_k + j,
          load(out_k + j) + coef * gj *
                                (load(un + j) + load(us + j) + u_west + u_east -
                                 4.0 * u_centre));
  };
  int64_t j = j0;
  if (j1 - j0 >= kLanes) {
    Lanes z_west = load(zc + j), z_centre = load(zc + j + 1);
    Lanes u_west = load(ur + j - 1), u_centre = load(ur + j);
    for (; j + 2 * kLanes <= j1; j += kLanes) {
      const Lanes z_next = load(zc + j + 1 + kLanes);
      const Lanes u_next = load(ur + j + kLanes);
      points(j,
             z_west,
             z_centre,
             east_of(z_centre, z_next, kLaneIndices),
             u_west,
             u_centre,
             east_of(u_centre, u_next, kLaneIndices));
      z_west = next_west_of(z_centre, z_next, kLaneIndices);
      u_west = next_west_of(u_centre, u_next, kLaneIndices);
      z_centre = z_next;
      u_centre = u_next;
    }
    // The last whole vector: its east neighbours end at point j1, which
    // the scalar pass reads too, but the vector after it may not exist.
    points(j,
           z_west,
           z_centre,
           load(zc + j + 2),
           u_west,
           u_centre,
           load(ur + j + 1));
    j += kLanes;
  }
  for (; j < j1; ++j) {
    const double gj = g[j];
    const double du =
        gj + coef * (zn[j + 1] + zs[j + 1] + zc[j] + zc[j + 2] - 4 * zc[j + 1]);
    out_u[j] = kAddU ? out_u[j] + du : du;
    out_k[j] += coef * gj * (un[j] + us[j] + ur[j - 1] + ur[j + 1] - 4 * ur[j]);
  }
}

}  // namespace adgraph::solvers::detail
