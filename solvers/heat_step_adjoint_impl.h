// The parts of heat_step_adjoint's kernel that the split step's adjoint
// (heat_step_split.cc) runs too: what the kernel reads, how a row's κ̄ and
// f̄ start, and a row's two end points after the row kernel
// (heat_adjoint_row_impl.h). Internal to solvers/.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "core/op.h"
#include "solvers/heat_adjoint_row_impl.h"
#include "solvers/heat_step_impl.h"

namespace adgraph::solvers::detail {

// What heat_step_adjoint's kernel reads (kGather false) and
// heat_step_adjoint_gather's (kGather true; see heat_step.h). Inputs: ū⁺
// and its four edge cotangents, the step's seven inputs, in the gather
// form the four halos of Z = κ ⊙ G, then optionally κ̄_in. The gather form
// takes Z's missing neighbours from those halos instead of zeros, so every
// point computes the same expression whichever rank holds its neighbours,
// and adds an edge cotangent only when it is not 0 (add_nonzero), so a −0
// in ū⁺ stays −0 where a patch edge falls too; it outputs no halo
// cotangents.
//
// G = ū⁺ with the edge cotangents added, Z = κ ⊙ G. Interior rows of G are
// rows of ū⁺ but for their first and last points (the left and right edge
// cotangents, added where G is used); rows 0 and n − 1 also take the up
// and down edge cotangents, in a buffer. Z rows carry a zero (the gather
// form: the Z halo) on either side (index 0 and m + 1), so the stencil
// over Z has no branches and vectorises.
template <bool kGather>
struct AdjointInputs {
  AdjointInputs(KernelContext& c)
      : g(c.input(0).data()),
        n(c.input(0).shape()[0]),
        m(c.input(0).shape()[1]),
        el(c.input(1).data()),
        er(c.input(2).data()),
        eu(c.input(3).data()),
        ed(c.input(4).data()),
        u(c.input(5).data()),
        kappa(c.input(6).data()),
        hl(c.input(8).data()),
        hr(c.input(9).data()),
        hu(c.input(10).data()),
        hd(c.input(11).data()),
        zhl(kGather ? c.input(12).data() : nullptr),
        zhr(kGather ? c.input(13).data() : nullptr),
        zhu(kGather ? c.input(14).data() : nullptr),
        zhd(kGather ? c.input(15).data() : nullptr),
        kappa_in(c.num_inputs() == (kGather ? 16 : 12) + 1
                     ? c.input(kGather ? 16 : 12).data()
                     : nullptr) {}

  // G's edge terms: added onto G (gather) or in the scatter form's order.
  static double edge(double v, double e) {
    return kGather ? add_nonzero(v, e) : v + e;
  }
  // Row i of G: ū⁺'s own row, or (rows 0 and n − 1, or when `copy`) a
  // copy in `buffer` with the up and down edge cotangents added.
  const double* g_row(int64_t i, double* buffer, bool copy) const {
    const double* y = g + i * m;
    if (!copy && i != 0 && i != n - 1) return y;
    std::copy(y, y + m, buffer);
    if (i == 0) {
      for (int64_t j = 0; j < m; ++j) buffer[j] = edge(buffer[j], eu[j]);
    }
    if (i == n - 1) {
      for (int64_t j = 0; j < m; ++j) buffer[j] = edge(buffer[j], ed[j]);
    }
    return buffer;
  }
  // G at row i's two ends, with the left and right edge cotangents.
  double g_first(int64_t i, const double* grow) const {
    const double v = edge(grow[0], el[i]);
    return m == 1 ? edge(v, er[i]) : v;
  }
  double g_last(int64_t i, const double* grow) const {
    return m == 1 ? g_first(i, grow) : edge(grow[m - 1], er[i]);
  }
  // Row i of Z into padded[1..m], with its halo or zeros either side.
  void z_row(int64_t i, const double* grow, double* padded) const {
    const double* k = kappa + i * m;
    for (int64_t j = 0; j < m; ++j) padded[j + 1] = k[j] * grow[j];
    if constexpr (kGather) {
      padded[0] = zhl[i];
      padded[m + 1] = zhr[i];
      padded[1] = k[0] * g_first(i, grow);
      padded[m] = k[m - 1] * g_last(i, grow);
    } else {
      padded[1] += k[0] * el[i];
      padded[m] += k[m - 1] * er[i];
    }
  }

  // Z at point (i, j), as z_row writes it (the scatter form), for a kernel
  // that needs a few points of a row.
  double z_at(int64_t i, int64_t j) const requires(!kGather) {
    double v = g[i * m + j];
    if (i == 0) v = edge(v, eu[j]);
    if (i == n - 1) v = edge(v, ed[j]);
    const double* k = kappa + i * m;
    double z = k[j] * v;
    if (j == 0) z += k[0] * el[i];
    if (j == m - 1) z += k[m - 1] * er[i];
    return z;
  }

  const double* g;
  const int64_t n, m;
  const double *el, *er, *eu, *ed;  // edge cotangents
  const double *u, *kappa;
  const double *hl, *hr, *hu, *hd;      // halos of u
  const double *zhl, *zhr, *zhu, *zhd;  // halos of Z (gather form)
  const double* kappa_in;               // κ̄ of the later steps, or null
};

// Before a row's pass: κ̄ from κ̄ of the later steps (or zeros), and f̄ =
// dt·G with G's two ends (the pass may write ū over this row of G); f̄ only
// at the two ends with `f_ends_only`.
template <bool kGather>
void start_row(const AdjointInputs<kGather>& in,
               const StepAttrs& a,
               int64_t i,
               const double* gc,
               double* gk,
               double* gf,
               bool f_ends_only = false) {
  const int64_t m = in.m;
  const double* kappa_in = in.kappa_in;
  const double dt = a.dt;
  double* out_k = gk + i * m;
  // κ̄ starts from κ̄ of the later steps, when given: the session
  // normally hands its buffer to κ̄ (OpDef::in_place), so out_k
  // already holds it.
  if (kappa_in == nullptr) {
    std::fill(out_k, out_k + m, 0.0);
  } else if (kappa_in != gk) {
    std::copy(kappa_in + i * m, kappa_in + (i + 1) * m, out_k);
  }
  // f̄ = dt·G, and G's two end points for the edge terms, before the
  // pass: it may write ū over this row of G (a middle row's G is ū⁺'s
  // own row).
  if (a.want_f) {
    double* out_f = gf + i * m;
    if (f_ends_only) {
      out_f[0] = dt * gc[0];
      out_f[m - 1] = dt * gc[m - 1];
    } else {
      for (int64_t j = 0; j < m; ++j) out_f[j] = dt * gc[j];
    }
    if constexpr (kGather) {
      out_f[0] = dt * in.g_first(i, gc);
      out_f[m - 1] = dt * in.g_last(i, gc);
    } else {
      out_f[0] += dt * in.el[i];
      out_f[m - 1] += dt * in.er[i];
    }
  }
}

// A row's two end points after adjoint_row: ū with G's end values
// `ends` (the scatter form then adds the edge cotangents), κ̄ put back to
// `k_ends` and computed again with the halos and edge cotangents; the
// scatter form also writes the halos' cotangents c·Z on the edges. `z`
// and `rows` are the Z rows and the u rows north, here and south.
template <bool kGather>
void finish_row_ends(KernelContext& c,
                     const AdjointInputs<kGather>& in,
                     double coef,
                     int64_t i,
                     std::array<double, 2> ends,
                     std::array<double, 2> k_ends,
                     std::array<const double*, 3> z,
                     std::array<const double*, 3> rows,
                     double* out_u,
                     double* out_k) {
  const int64_t n = in.n, m = in.m;
  const double *el = in.el, *er = in.er, *hl = in.hl, *hr = in.hr;
  // (Plain names, not structured bindings: older Clang cannot capture
  // those in kappa_bar below.)
  const double end0 = ends[0], end1 = ends[1];
  const double k_first = k_ends[0], k_last = k_ends[1];
  const double *zno = z[0], *zc = z[1], *zs = z[2];
  const double *un = rows[0], *ur = rows[1], *us = rows[2];
  out_k[0] = k_first;
  out_k[m - 1] = k_last;
  for (int64_t j : {int64_t{0}, m - 1}) {
    out_u[j] = (j == 0 ? end0 : end1) + coef * (zno[j + 1] + zs[j + 1] + zc[j] +
                                                zc[j + 2] - 4 * zc[j + 1]);
  }
  if constexpr (!kGather) {
    out_u[0] += el[i];
    out_u[m - 1] += er[i];
  }
  auto kappa_bar = [&](int64_t j, double gj, double west, double east) {
    out_k[j] += coef * gj * (un[j] + us[j] + west + east - 4 * ur[j]);
  };
  if (m == 1) {
    kappa_bar(0, kGather ? end0 : end0 + el[i] + er[i], hl[i], hr[i]);
  } else {
    kappa_bar(0, kGather ? end0 : end0 + el[i], hl[i], ur[1]);
    kappa_bar(m - 1, kGather ? end1 : end1 + er[i], ur[m - 2], hr[i]);
  }
  if constexpr (!kGather) {
    double *ol = c.output(3).data(), *orr = c.output(4).data();
    ol[i] = coef * zc[1];
    orr[i] = coef * zc[m];
    if (i == 0) {
      double* ou = c.output(5).data();
      for (int64_t j = 0; j < m; ++j) ou[j] = coef * zc[j + 1];
    }
    if (i == n - 1) {
      double* od = c.output(6).data();
      for (int64_t j = 0; j < m; ++j) od[j] = coef * zc[j + 1];
    }
  }
}

// Row i of heat_step_adjoint after its κ̄ and f̄ start (start_row; f̄ only
// at the ends when [j0, j1) is empty): ū and κ̄ by adjoint_row over points
// [j0, j1), then the two ends (finish_row_ends). `gc` is G's row i (the
// pass may write ū over it: what the ends need is read first); `z` and
// `rows` the Z and u rows north, here and south.
template <bool kGather>
void adjoint_of_row(KernelContext& c,
                    const AdjointInputs<kGather>& in,
                    const StepAttrs& a,
                    int64_t i,
                    const double* gc,
                    std::array<const double*, 3> z,
                    std::array<const double*, 3> rows,
                    int64_t j0,
                    int64_t j1,
                    double* gu,
                    double* gk,
                    double* gf) {
  const int64_t m = in.m;
  double* out_u = gu + i * m;
  double* out_k = gk + i * m;
  start_row(in, a, i, gc, gk, gf, j0 >= j1);
  // The gather form's G at the ends has its edge cotangents; the scatter
  // form adds them to ū after the stencil.
  const double end0 = kGather ? in.g_first(i, gc) : gc[0];
  const double end1 = kGather ? in.g_last(i, gc) : gc[m - 1];
  // adjoint_row may cover the ends too (west of 0 and east of m − 1 read
  // inside u, as the forward does): κ̄'s two end points are put back and
  // computed again with their halos and edge cotangents.
  const double k_first = out_k[0], k_last = out_k[m - 1];
  adjoint_row(j0,
              j1,
              a.coef,
              gc,
              z[0],
              z[1],
              z[2],
              rows[0],
              rows[1],
              rows[2],
              out_u,
              out_k);
  finish_row_ends(
      c, in, a.coef, i, {end0, end1}, {k_first, k_last}, z, rows, out_u, out_k);
}

}  // namespace adgraph::solvers::detail
