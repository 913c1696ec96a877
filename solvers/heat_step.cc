#include "solvers/heat_step.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "core/core_ops.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "solvers/heat_step_impl.h"

namespace adgraph::solvers {

using namespace detail;

namespace {

// A vector of doubles as wide as the target's widest registers (GCC and
// Clang vector extensions; element-wise arithmetic in the same order as
// the scalar code, so results are bitwise the same at any width: the build
// does not contract to FMA, -ffp-contract=off).
#if defined(__AVX512F__)
constexpr int64_t kLanes = 8;
#elif defined(__AVX__)
constexpr int64_t kLanes = 4;
#else
constexpr int64_t kLanes = 2;
#endif
using Lanes = double __attribute__((vector_size(kLanes * sizeof(double))));

inline Lanes load(const double* p) {
  Lanes v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

inline void store(double* p, Lanes v) { std::memcpy(p, &v, sizeof v); }

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

// heat_step_adjoint's pass over points [j0, j1) of a row: ū = G + c·(the
// stencil of Z = κ ⊙ G over the Z rows north, here and south, whose index
// j + 1 is point j) and κ̄ += c·G ⊙ (the stencil of u over the u rows
// north, here and south).
//
// The pass is bound by loads, not bytes: written point by point it loads
// the row here of Z and of u three times each (west, centre, east), 14
// vectors per vector of points against the forward's 7. Here each vector
// of the rows here is loaded once and its west and east neighbours are
// shuffled out of it and the next one (10 loads per vector with z_row's
// two); the arithmetic is the scalar code's, in its order. out_u may be g
// (ū written over ū⁺): each point reads g before writing out_u, once.
void adjoint_row(int64_t j0,
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
    store(out_u + j,
          gj + coef * (load(zn + j + 1) + load(zs + j + 1) + z_west + z_east -
                       4.0 * z_centre));
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
    out_u[j] =
        gj + coef * (zn[j + 1] + zs[j + 1] + zc[j] + zc[j + 2] - 4 * zc[j + 1]);
    out_k[j] += coef * gj * (un[j] + us[j] + ur[j - 1] + ur[j + 1] - 4 * ur[j]);
  }
}

}  // namespace

HeatStep heat_step(Value u,
                   Value kappa,
                   Value f,
                   const std::array<Value, 4>& halos,
                   double dt,
                   double h) {
  auto out = u.graph().add_node_outputs(
      "heat_step",
      {u, kappa, f, halos[0], halos[1], halos[2], halos[3]},
      {{"dt", dt}, {"h", h}});
  return {out[0], {out[1], out[2], out[3], out[4]}};
}

std::array<Value, 4> patch_edges(Value u) {
  auto out = u.graph().add_node_outputs("patch_edges", {u});
  return {out[0], out[1], out[2], out[3]};
}

void register_heat_split_ops();  // heat_step_split.cc

void register_heat_ops() {
  register_heat_split_ops();
  // (left, right, up, down) = (u[:, 0], u[:, m−1], u[0, :], u[n−1, :]);
  // ū = patch_edges_adjoint(l̄, r̄, ū_up, ū_down)
  OpDef edges;
  edges.name = "patch_edges";
  edges.doc =
      "the left and right columns and the top and bottom rows of an n x m "
      "patch";
  edges.inputs = {"u"};
  edges.num_outputs = 4;
  edges.shape = [](const ShapeContext& c) {
    const Shape& u = c.input_shape(0);
    if (u.size() != 2)
      c.fail("input \"u\"",
             "expected an n x m patch, got shape " + shape_string(u));
    return Shapes{{u[0]}, {u[0]}, {u[1]}, {u[1]}};
  };
  edges.compute = [](KernelContext& c) {
    const Tensor& u = c.input(0);
    write_edges(u.data(), u.shape()[0], u.shape()[1], &c.output(0));
  };
  edges.gradient = [](const GradientContext& c) {
    return Values{c.graph().add_node(
        "patch_edges_adjoint", {c.grad(0), c.grad(1), c.grad(2), c.grad(3)})};
  };
  edges.tangent = linear_tangent;
  register_op(std::move(edges));

  // y = 0 with the four strips added onto their edges;  strip̄ = edges of ȳ
  OpDef edges_adjoint;
  edges_adjoint.name = "patch_edges_adjoint";
  edges_adjoint.doc =
      "a zero n x m patch with left, right, up and down added onto its edges";
  edges_adjoint.inputs = {"left", "right", "up", "down"};
  edges_adjoint.shape = [](const ShapeContext& c) {
    const Shape &l = c.input_shape(0), &up = c.input_shape(2);
    if (l.size() != 1 || up.size() != 1 || c.input_shape(1) != l ||
        c.input_shape(3) != up) {
      c.fail("inputs", "expected strips [n], [n], [m], [m]");
    }
    return Shapes{{l[0], up[0]}};
  };
  edges_adjoint.compute = [](KernelContext& c) {
    Tensor& y = c.output(0);
    const int64_t n = y.shape()[0], m = y.shape()[1];
    y.array().setZero();
    for (int64_t i = 0; i < n; ++i)
      y[i * m] += c.input(0)[i], y[i * m + m - 1] += c.input(1)[i];
    for (int64_t j = 0; j < m; ++j)
      y[j] += c.input(2)[j], y[(n - 1) * m + j] += c.input(3)[j];
  };
  edges_adjoint.gradient = [](const GradientContext& c) {
    auto e = patch_edges(c.grad());
    return Values{e[0], e[1], e[2], e[3]};
  };
  edges_adjoint.tangent = linear_tangent;
  register_op(std::move(edges_adjoint));

  // u⁺ = u + dt·(κ ⊙ stencil(u, halos)/h² + f), and the edges of u⁺;
  // adjoint: heat_step_adjoint
  OpDef step;
  step.name = "heat_step";
  step.doc =
      "u + dt * (kappa * laplacian(u with halos) / h^2 + f) on an n x m patch, "
      "and its edges";
  step.inputs = {
      "u", "kappa", "f", "from_left", "from_right", "from_up", "from_down"};
  step.attrs = step_attrs();
  step.num_outputs = 5;
  step.shape = [](const ShapeContext& c) {
    check_shapes(c, 0, 3, 3);
    const Shape& u = c.input_shape(0);
    return Shapes{u, {u[0]}, {u[0]}, {u[1]}, {u[1]}};
  };
  step.bind = bind_step([](KernelContext& c, const StepAttrs& a) {
    const Stencil s = stencil_of(c, 3);
    const double dt = a.dt;
    const double coef = a.coef;
    const double* kappa = c.input(1).data();
    const double* f = c.input(2).data();
    double* out = c.output(0).data();
    const int64_t n = s.n, m = s.m, ahead = write_prefetch_distance(m);
    for_rows(0, n, n * m, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        if (ahead > 0 && i + ahead < n)
          prefetch_row<true>(out + (i + ahead) * m, m);
        // Row pointers make the inner loop branch-free except at its ends.
        const double* row = s.u + i * m;
        const double* north = i > 0 ? row - m : s.up;
        const double* south = i + 1 < n ? row + m : s.down;
        const double* k = kappa + i * m;
        const double* src = f + i * m;
        double* y = out + i * m;
        auto point = [&](int64_t j, double west, double east) {
          const double lap = north[j] + south[j] + west + east - 4 * row[j];
          y[j] = row[j] + coef * k[j] * lap + dt * src[j];
        };
        if (m == 1) {
          point(0, s.left[i], s.right[i]);
          continue;
        }
        if (i > 0 && i + 1 < n) {
          // All m points in one loop, whose trip count is the row length
          // (m = 256: 32 full AVX-512 vectors, no scalar remainder): west
          // of j = 0 and east of j = m − 1 read the neighbouring rows'
          // ends, inside u; those two points are then computed again
          // with their halos.
          for (int64_t j = 0; j < m; ++j) point(j, row[j - 1], row[j + 1]);
        } else {
          for (int64_t j = 1; j + 1 < m; ++j) point(j, row[j - 1], row[j + 1]);
        }
        point(0, s.left[i], row[1]);
        point(m - 1, row[m - 2], s.right[i]);
      }
    });
    write_edges(out, n, m, &c.output(1));
  });
  step.gradient = [](const GradientContext& c) {
    Values grads = add_step_adjoint(c, "heat_step_adjoint", 0);
    if (!c.needs_gradient(2)) grads[2] = Value();
    return grads;
  };
  // The step is linear in (u, f, halos) and bilinear in (κ, u-with-halos):
  // u̇⁺ = heat_step(u̇, κ, ḟ, halȯs) + (heat_step(u, κ̇, 0, halos) − u),
  // and the edges of u̇⁺.
  step.tangent = [](const TangentContext& c) {
    return step_tangent(c, "heat_step", 1);
  };
  register_op(std::move(step));

  // (ū, κ̄, f̄, halō…) of heat_step for the cotangents of u⁺ and its edges;
  // one pass over the patch with rolling rows (see the header).
  OpDef adjoint = step_adjoint_def(
      "heat_step_adjoint",
      "cotangents of heat_step's seven inputs for the cotangents of its "
      "outputs");
  // κ̄ accumulates in kappa_grad_in's buffer, and ū is written over ū⁺ when
  // ū⁺ dies here: at 1024² the pass then keeps three patches in the cache
  // hierarchy instead of four and reads no line of ū for ownership.
  adjoint.in_place = {{1, 12}, {0, 0}};
  adjoint.num_outputs = 7;
  adjoint.shape = step_adjoint_shapes;
  adjoint.bind = bind_step([](KernelContext& c, const StepAttrs& a) {
    const Tensor& g = c.input(0);
    const int64_t n = g.shape()[0], m = g.shape()[1];
    const double *el = c.input(1).data(), *er = c.input(2).data();
    const double *eu = c.input(3).data(), *ed = c.input(4).data();
    const double* u = c.input(5).data();
    const double* kappa = c.input(6).data();
    const double *hl = c.input(8).data(), *hr = c.input(9).data();
    const double *hu = c.input(10).data(), *hd = c.input(11).data();
    const double dt = a.dt;
    const double coef = a.coef;
    const bool want_f = a.want_f;
    const double* kappa_in =
        c.num_inputs() == 13 ? c.input(12).data() : nullptr;
    double *gu = c.output(0).data(), *gk = c.output(1).data(),
           *gf = c.output(2).data();
    double *ol = c.output(3).data(), *orr = c.output(4).data();
    double *ou = c.output(5).data(), *od = c.output(6).data();
    // G = ū⁺ with the edge cotangents added, Z = κ ⊙ G. Interior rows of G
    // are rows of ū⁺ but for their first and last points (the left and right
    // edge cotangents, added where G is used); rows 0 and n − 1 also take
    // the up and down edge cotangents, in a buffer. Z rows carry a zero on
    // either side (index 0 and m + 1), so the stencil over Z has no branches
    // and vectorises.
    const bool overwritten = gu == g.data();  // ū written over ū⁺
    auto g_row = [&](int64_t i, double* buffer, bool copy) -> const double* {
      const double* y = g.data() + i * m;
      if (!copy && i != 0 && i != n - 1) return y;
      std::copy(y, y + m, buffer);
      if (i == 0) {
        for (int64_t j = 0; j < m; ++j) buffer[j] += eu[j];
      }
      if (i == n - 1) {
        for (int64_t j = 0; j < m; ++j) buffer[j] += ed[j];
      }
      return buffer;
    };
    auto z_row = [&](int64_t i, const double* grow, double* padded) {
      const double* k = kappa + i * m;
      for (int64_t j = 0; j < m; ++j) padded[j + 1] = k[j] * grow[j];
      padded[1] += k[0] * el[i];
      padded[m] += k[m - 1] * er[i];
    };
    const int64_t ahead = prefetch_distance(m);
    for_row_blocks(0, n, n * m, [&](int64_t i0, int64_t i1, auto&& sync) {
      // Rows of m + 2 rounded up to whole cache lines, placed so that each
      // Z row's point 0 (index 1) starts a line: z_row's stores are then
      // aligned (split stores cost ~10 % of the pass).
      const int64_t w = (m + 2 + 7) / 8 * 8;
      std::vector<double> buffers(7 * w + 8, 0.0);
      double* base = buffers.data();
      while ((reinterpret_cast<std::uintptr_t>(base + 1) & 63) != 0) ++base;
      double *zero = base, *zp = zero + w, *zc = zp + w, *zn = zc + w,
             *bc = zn + w + 1, *bn = bc + w, *after = bn + w;
      const double *gc = nullptr, *gn = nullptr;
      // Rows i0 − 1 and i1 of ū⁺ belong to the blocks either side, which
      // may write ū over them: each block reads them before it syncs.
      if (i0 < i1 && i0 > 0) z_row(i0 - 1, g_row(i0 - 1, bn, false), zp);
      const double* g_after =
          overwritten && i1 < n && i0 < i1 ? g_row(i1, after, true) : nullptr;
      if (overwritten) sync();
      if (i0 < i1) {
        gc = g_row(i0, bc, false);
        z_row(i0, gc, zc);
      }
      for (int64_t i = i0; i < i1; ++i) {
        const bool south = i + 1 < n;
        if (south) {
          gn = i + 1 == i1 && g_after != nullptr ? g_after
                                                 : g_row(i + 1, bn, false);
          z_row(i + 1, gn, zn);
        }
        const double* zs = south ? zn : zero;  // rows −1 and n of Z are 0
        const double* zno = i > 0 ? zp : zero;
        const double* ur = u + i * m;
        const double* un = i > 0 ? ur - m : hu;
        const double* us = south ? ur + m : hd;
        if (ahead > 0 && i + 1 + ahead < n)
          prefetch_row<false>(ur + (1 + ahead) * m, m);
        double* out_u = gu + i * m;
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
        if (want_f) {
          double* out_f = gf + i * m;
          for (int64_t j = 0; j < m; ++j) out_f[j] = dt * gc[j];
          out_f[0] += dt * el[i];
          out_f[m - 1] += dt * er[i];
        }
        const double g_first = gc[0], g_last = gc[m - 1];
        // ū = G + c·stencil(Z) and κ̄ += c·G ⊙ stencil(u), in one pass.
        // In a middle row the pass covers all m points as the forward does
        // (west of 0 and east of m − 1 read inside u); κ̄'s two end points
        // are then put back and computed again with their halos and edge
        // cotangents.
        const bool whole = i > 0 && i + 1 < n && m > 1;
        const double k_first = out_k[0], k_last = out_k[m - 1];
        adjoint_row(whole ? 0 : 1,
                    whole ? m : m - 1,
                    coef,
                    gc,
                    zno,
                    zc,
                    zs,
                    un,
                    ur,
                    us,
                    out_u,
                    out_k);
        out_k[0] = k_first;
        out_k[m - 1] = k_last;
        for (int64_t j : {int64_t{0}, m - 1}) {
          out_u[j] = (j == 0 ? g_first : g_last) +
                     coef * (zno[j + 1] + zs[j + 1] + zc[j] + zc[j + 2] -
                             4 * zc[j + 1]);
        }
        out_u[0] += el[i];
        out_u[m - 1] += er[i];
        auto kappa_bar = [&](int64_t j, double gj, double west, double east) {
          out_k[j] += coef * gj * (un[j] + us[j] + west + east - 4 * ur[j]);
        };
        if (m == 1) {
          kappa_bar(0, g_first + el[i] + er[i], hl[i], hr[i]);
        } else {
          kappa_bar(0, g_first + el[i], hl[i], ur[1]);
          kappa_bar(m - 1, g_last + er[i], ur[m - 2], hr[i]);
        }
        ol[i] = coef * zc[1];
        orr[i] = coef * zc[m];
        if (i == 0) {
          for (int64_t j = 0; j < m; ++j) ou[j] = coef * zc[j + 1];
        }
        if (i == n - 1) {
          for (int64_t j = 0; j < m; ++j) od[j] = coef * zc[j + 1];
        }
        std::swap(zp, zc);
        std::swap(zc, zn);
        std::swap(bc, bn);
        gc = gn;
      }
    });
  });
  register_op(std::move(adjoint));
}

}  // namespace adgraph::solvers
