// heat_step in two halves, so that the halo exchange overlaps the update of
// the points that do not need halos (see heat_step_overlapped in
// heat_step.h). Every point is computed by the same expression, in the same
// order, as heat_step and heat_step_adjoint compute it, so both paths give
// bitwise the same states and cotangents.
#include <algorithm>
#include <string>
#include <vector>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/op.h"
#include "mpi_ops/halo.h"
#include "ops/elementwise.h"
#include "solvers/heat_step.h"
#include "solvers/heat_step_impl.h"

namespace adgraph::solvers {

using namespace detail;

namespace {

// The rows of the ring (0 and n − 1, once when n = 1).
std::vector<int64_t> ring_rows(int64_t n) {
  return n == 1 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, n - 1};
}

// The cotangent side of the stencil, as heat_step_adjoint computes it:
// G = ū⁺ with the up/down edge cotangents added on rows 0 and n − 1, and
// z = κ ⊙ G with κ ⊙ (left/right edge cotangents) added on columns 0 and
// m − 1; z is 0 outside the patch.
struct AdjointStencil {
  const double *g, *el, *er, *eu, *ed, *kappa;
  int64_t n, m;

  double g_at(int64_t i, int64_t j) const {
    double v = g[i * m + j];
    if (i == 0) v += eu[j];
    if (i == n - 1) v += ed[j];
    return v;
  }
  double z_at(int64_t i, int64_t j) const {
    if (i < 0 || i >= n || j < 0 || j >= m) return 0.0;
    double z = kappa[i * m + j] * g_at(i, j);
    if (j == 0) z += kappa[i * m] * el[i];
    if (j == m - 1) z += kappa[i * m + m - 1] * er[i];
    return z;
  }
};

Shapes interior_shape(const ShapeContext& c) {
  const Shape& u = c.input_shape(0);
  if (u.size() != 2)
    c.fail("input \"u\"",
           "expected an n x m patch, got shape " + shape_string(u));
  for (int k = 1; k < 3; ++k) {
    if (c.input_shape(k) != u)
      c.fail("input " + std::to_string(k),
             "shape " + shape_string(c.input_shape(k)) + " differs from u's " +
                 shape_string(u));
  }
  return Shapes{u};
}

void register_heat_step_interior_op() {
  // y = u⁺ of heat_step on the points 1 ≤ i ≤ n − 2, 1 ≤ j ≤ m − 2 (which
  // need no halo), u elsewhere (its columns 0 and m − 1 written in the same
  // pass as the rows, where their cache lines are)
  OpDef interior;
  interior.name = "heat_step_interior";
  interior.doc =
      "heat_step's update of the points that need no halo; u on the patch's "
      "outer ring";
  interior.inputs = {"u", "kappa", "f"};
  interior.attrs = step_attrs();
  interior.shape = interior_shape;
  interior.bind = bind_step([](KernelContext& c, const StepAttrs& a) {
    const Tensor& ut = c.input(0);
    const int64_t n = ut.shape()[0], m = ut.shape()[1];
    const double dt = a.dt;
    const double coef = a.coef;
    const double *u = ut.data(), *kappa = c.input(1).data(),
                 *f = c.input(2).data();
    double* out = c.output(0).data();
    for (int64_t i : ring_rows(n))
      std::copy(u + i * m, u + i * m + m, out + i * m);
    for_rows(1, n - 1, n * m, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const double* row = u + i * m;
        const double *north = row - m, *south = row + m;
        const double* k = kappa + i * m;
        const double* src = f + i * m;
        double* y = out + i * m;
        // Over the whole row, as heat_step does (one vector loop of the
        // row's length); j = 0 and m − 1 read the neighbouring rows' ends
        // and are overwritten below.
        for (int64_t j = 0; j < m; ++j) {
          const double lap =
              north[j] + south[j] + row[j - 1] + row[j + 1] - 4 * row[j];
          y[j] = row[j] + coef * k[j] * lap + dt * src[j];
        }
        // The ring's columns keep u (in the same pass: their lines are here).
        y[0] = row[0];
        y[m - 1] = row[m - 1];
      }
    });
  });
  // Its adjoint comes with heat_step_boundary's (see there).
  interior.gradient = [](const GradientContext& c) {
    // ū and κ̄ (and f̄ when wanted) continue in the buffers of the ring's
    // adjoint, accumulated(k); zeros stand in for one not computed.
    std::vector<Value> inputs = {c.grad(), c.input(0), c.input(1)};
    const bool want_f = c.needs_gradient(2);
    for (int k = 0; k < (want_f ? 3 : 2); ++k) {
      if (c.accumulated(k).valid()) {
        inputs.push_back(c.accumulated(k));
        c.absorb(k);
      } else {
        inputs.push_back(zeros(c.graph(), c.input(k).shape()));
      }
    }
    nlohmann::json attrs = c.node().attrs;
    attrs["f_gradient"] = want_f;
    auto out =
        c.graph().add_node_outputs("heat_step_interior_adjoint", inputs, attrs);
    return Values{out[0], out[1], want_f ? out[2] : Value()};
  };
  // Linear in (u, f), bilinear in (κ, u), as heat_step:
  // ẏ = interior(u̇, κ, ḟ) + (interior(u, κ̇, 0) − u).
  interior.tangent = [](const TangentContext& c) {
    return step_tangent(c, "heat_step_interior", 1);
  };
  register_op(std::move(interior));
}

void register_heat_step_boundary_op() {
  // (u⁺, its edges) = heat_step(u, κ, f, halos), taking the interior points
  // from `interior` (whose buffer it takes over) and computing the ring
  OpDef boundary;
  boundary.name = "heat_step_boundary";
  boundary.doc =
      "completes heat_step_interior's result on the patch's outer ring with "
      "the halos; y = u+ and its edges, as heat_step";
  boundary.inputs = {"interior",
                     "u",
                     "kappa",
                     "f",
                     "from_left",
                     "from_right",
                     "from_up",
                     "from_down"};
  boundary.attrs = step_attrs();
  boundary.num_outputs = 5;
  boundary.in_place = {{0, 0}};
  boundary.shape = [](const ShapeContext& c) {
    check_shapes(c, 0, 4, 4);
    const Shape& u = c.input_shape(1);
    return Shapes{u, {u[0]}, {u[0]}, {u[1]}, {u[1]}};
  };
  boundary.bind = bind_step([](KernelContext& c, const StepAttrs& a) {
    const Tensor& ut = c.input(1);
    const int64_t n = ut.shape()[0], m = ut.shape()[1];
    const double dt = a.dt;
    const double coef = a.coef;
    const double *u = ut.data(), *kappa = c.input(2).data(),
                 *f = c.input(3).data();
    const double *left = c.input(4).data(), *right = c.input(5).data();
    const double *up = c.input(6).data(), *down = c.input(7).data();
    Tensor& y = c.output(0);
    if (y.data() != c.input(0).data()) y.array() = c.input(0).array();
    double* out = y.data();
    auto update = [&](int64_t i, int64_t j, double west, double east) {
      const double* row = u + i * m;
      const double* north = i > 0 ? row - m : up;
      const double* south = i + 1 < n ? row + m : down;
      const double lap = north[j] + south[j] + west + east - 4 * row[j];
      out[i * m + j] =
          row[j] + coef * kappa[i * m + j] * lap + dt * f[i * m + j];
    };
    auto ends = [&](int64_t i) {
      const double* row = u + i * m;
      if (m == 1) return update(i, 0, left[i], right[i]);
      update(i, 0, left[i], row[1]);
      update(i, m - 1, row[m - 2], right[i]);
    };
    for (int64_t i : ring_rows(n)) {
      const double* row = u + i * m;
      ends(i);
      for (int64_t j = 1; j + 1 < m; ++j) update(i, j, row[j - 1], row[j + 1]);
    }
    for (int64_t i = 1; i + 1 < n; ++i) ends(i);
    write_edges(out, n, m, &c.output(1));
  });
  // Builds the ring's adjoint here (it yields the halos' cotangents, which
  // the reverse exchange then sends while heat_step_interior's adjoint
  // runs); the interior's cotangent is ū⁺ with the ring's z written on the
  // ring, which heat_step_interior_adjoint needs.
  // With its halos from an exchange, the pair's adjoint is heat_step's
  // gather form for the whole step (bitwise heat_step's, as the pair's
  // forward is): u, κ and f take the whole cotangents, the interior none.
  boundary.gradient = [](const GradientContext& c) {
    if (const HaloSource source = halo_source(c, 4); source.node != nullptr) {
      const Values out = add_gather_adjoint(c, 1, source);
      Values grads(8);
      std::copy(out.begin(), out.end(), grads.begin() + 1);
      return grads;
    }
    auto out = add_step_adjoint(c, "heat_step_boundary_adjoint", 1);
    // (interior, u, κ, f, halos)
    Values grads = {
        out[7], out[0], out[1], out[2], out[3], out[4], out[5], out[6]};
    if (!c.needs_gradient(3)) grads[3] = Value();
    return grads;
  };
  // ẏ = boundary(ẏ_interior, u̇, κ, ḟ, halȯs) + (boundary(u, u, κ̇, 0,
  // halos) − u), whose interior is 0; and the edges of ẏ.
  boundary.tangent = [](const TangentContext& c) {
    return step_tangent(c, "heat_step_boundary", 2);
  };
  register_op(std::move(boundary));
}

void register_forward_halves() {
  register_heat_step_interior_op();
  register_heat_step_boundary_op();
}

void register_heat_step_boundary_adjoint_op() {
  // The ring's part of heat_step_adjoint: ū, κ̄, f̄ on the ring (0 inside;
  // κ̄ = κ̄_in inside), every halo cotangent, and W = ū⁺ inside, z on the
  // ring
  OpDef ring = step_adjoint_def(
      "heat_step_boundary_adjoint",
      "heat_step_adjoint on the patch's outer ring, the halos' cotangents, "
      "and what heat_step_interior_adjoint needs");
  ring.in_place = {{1, 12}, {7, 0}};
  ring.num_outputs = 8;
  ring.shape = [](const ShapeContext& c) {
    Shapes out = step_adjoint_shapes(c);
    out.push_back(out[0]);  // W
    return out;
  };
  ring.bind = bind_step([](KernelContext& c, const StepAttrs& a) {
    const Tensor& gt = c.input(0);
    const int64_t n = gt.shape()[0], m = gt.shape()[1];
    const AdjointStencil s{gt.data(),
                           c.input(1).data(),
                           c.input(2).data(),
                           c.input(3).data(),
                           c.input(4).data(),
                           c.input(6).data(),
                           n,
                           m};
    const double* u = c.input(5).data();
    const double *hl = c.input(8).data(), *hr = c.input(9).data();
    const double *hu = c.input(10).data(), *hd = c.input(11).data();
    const double dt = a.dt;
    const double coef = a.coef;
    const bool want_f = a.want_f;
    const double* kappa_in =
        c.num_inputs() == 13 ? c.input(12).data() : nullptr;
    // The z values of the ring first: W may share ū⁺'s buffer.
    std::vector<double> z_ring;
    std::vector<std::pair<int64_t, int64_t>> ring_points;
    for (int64_t i = 0; i < n; ++i) {
      const bool edge_row = i == 0 || i == n - 1;
      for (int64_t j = 0; j < m; ++j) {
        if (!edge_row && j != 0 && j != m - 1) continue;
        ring_points.emplace_back(i, j);
      }
    }
    double *gu = c.output(0).data(), *gk = c.output(1).data(),
           *gf = c.output(2).data();
    double *ol = c.output(3).data(), *orr = c.output(4).data();
    double *ou = c.output(5).data(), *od = c.output(6).data();
    // κ̄ starts as κ̄_in (or 0) everywhere; ū and f̄ are 0 inside.
    if (kappa_in == nullptr) {
      std::fill(gk, gk + n * m, 0.0);
    } else if (kappa_in != gk) {
      std::copy(kappa_in, kappa_in + n * m, gk);
    }
    std::fill(gu, gu + n * m, 0.0);
    if (want_f) std::fill(gf, gf + n * m, 0.0);
    auto u_at = [&](int64_t i, int64_t j) {
      if (i < 0) return hu[j];
      if (i >= n) return hd[j];
      if (j < 0) return hl[i];
      if (j >= m) return hr[i];
      return u[i * m + j];
    };
    for (const auto& [i, j] : ring_points) {
      const double gc = s.g_at(i, j);
      double ubar =
          gc + coef * (s.z_at(i - 1, j) + s.z_at(i + 1, j) + s.z_at(i, j - 1) +
                       s.z_at(i, j + 1) - 4 * s.z_at(i, j));
      if (j == 0) ubar += s.el[i];
      if (j == m - 1) ubar += s.er[i];
      gu[i * m + j] = ubar;
      double gj = gc;
      if (j == 0) gj = gj + s.el[i];
      if (j == m - 1) gj = gj + s.er[i];
      gk[i * m + j] += coef * gj *
                       (u_at(i - 1, j) + u_at(i + 1, j) + u_at(i, j - 1) +
                        u_at(i, j + 1) - 4 * u[i * m + j]);
      if (want_f) {
        double fbar = dt * gc;
        if (j == 0) fbar += dt * s.el[i];
        if (j == m - 1) fbar += dt * s.er[i];
        gf[i * m + j] = fbar;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      ol[i] = coef * s.z_at(i, 0);
      orr[i] = coef * s.z_at(i, m - 1);
    }
    for (int64_t j = 0; j < m; ++j) {
      ou[j] = coef * s.z_at(0, j);
      od[j] = coef * s.z_at(n - 1, j);
    }
    for (const auto& [i, j] : ring_points) z_ring.push_back(s.z_at(i, j));
    Tensor& w = c.output(7);
    if (w.data() != gt.data()) w.array() = gt.array();
    for (std::size_t p = 0; p < ring_points.size(); ++p) {
      const auto [i, j] = ring_points[p];
      w[i * m + j] = z_ring[p];
    }
  });
  register_op(std::move(ring));
}

void register_heat_step_interior_adjoint_op() {
  // The rest of heat_step_adjoint: ū, κ̄, f̄ inside the ring, added onto
  // (and in the buffers of) what the ring's adjoint gave
  OpDef inside;
  inside.name = "heat_step_interior_adjoint";
  inside.doc =
      "heat_step_adjoint inside the patch's outer ring, added onto the "
      "ring's cotangents";
  inside.inputs = {
      "w", "u", "kappa", "u_grad_in", "kappa_grad_in", "f_grad_in"};
  inside.variadic = true;  // f_grad_in only with f_gradient
  inside.in_place = {{0, 3}, {1, 4}, {2, 5}};
  inside.attrs = step_attrs();
  inside.attrs.push_back(
      {"f_gradient", AttrType::kBool, true, "compute the cotangent of f"});
  inside.num_outputs = 3;
  inside.shape = [](const ShapeContext& c) {
    const Shape& u = c.input_shape(1);
    const int expected = c.node().attr_bool("f_gradient") ? 6 : 5;
    if (c.num_inputs() != expected)
      c.fail("inputs", "expected " + std::to_string(expected) + " inputs");
    for (int k = 0; k < expected; ++k) {
      if (c.input_shape(k) != u)
        c.fail("input " + std::to_string(k), "differs from u's shape");
    }
    return Shapes{u, u, u};
  };
  inside.bind = bind_step([](KernelContext& c, const StepAttrs& a) {
    const Tensor& wt = c.input(0);
    const int64_t n = wt.shape()[0], m = wt.shape()[1];
    const double* w = wt.data();
    const double *u = c.input(1).data(), *kappa = c.input(2).data();
    const double dt = a.dt;
    const double coef = a.coef;
    const bool want_f = a.want_f;
    for (int k = 0; k < (want_f ? 3 : 2); ++k) {
      if (c.output(k).data() != c.input(3 + k).data())
        c.output(k).array() = c.input(3 + k).array();
    }
    double *gu = c.output(0).data(), *gk = c.output(1).data(),
           *gf = c.output(2).data();
    // z inside the ring is κ ⊙ ū⁺; on the ring W holds it already.
    auto z_at = [&](int64_t i, int64_t j) {
      const bool ring = i == 0 || i == n - 1 || j == 0 || j == m - 1;
      return ring ? w[i * m + j] : kappa[i * m + j] * w[i * m + j];
    };
    for_rows(1, n - 1, n * m, [&](int64_t i0, int64_t i1) {
      for (int64_t i = i0; i < i1; ++i) {
        const double* ur = u + i * m;
        const double *un = ur - m, *us = ur + m;
        for (int64_t j = 1; j + 1 < m; ++j) {
          const double gc = w[i * m + j];
          gu[i * m + j] +=
              gc + coef * (z_at(i - 1, j) + z_at(i + 1, j) + z_at(i, j - 1) +
                           z_at(i, j + 1) - 4 * z_at(i, j));
          gk[i * m + j] +=
              coef * gc * (un[j] + us[j] + ur[j - 1] + ur[j + 1] - 4 * ur[j]);
          if (want_f) gf[i * m + j] += dt * gc;
        }
      }
    });
  });
  register_op(std::move(inside));
}

void register_adjoint_halves() {
  register_heat_step_boundary_adjoint_op();
  register_heat_step_interior_adjoint_op();
}

}  // namespace

HeatStep heat_step_overlapped(Value u,
                              Value kappa,
                              Value f,
                              const std::array<Value, 4>& edges,
                              int rows,
                              int cols,
                              double dt,
                              double h) {
  Graph& g = u.graph();
  Value request =
      data_exchange_start(edges[0], edges[1], edges[2], edges[3], rows, cols);
  Value inner =
      g.add_node("heat_step_interior", {u, kappa, f}, {{"dt", dt}, {"h", h}});
  auto halos = data_exchange_finish(request);
  auto out = g.add_node_outputs(
      "heat_step_boundary",
      {inner, u, kappa, f, halos[0], halos[1], halos[2], halos[3]},
      {{"dt", dt}, {"h", h}});
  return {out[0], {out[1], out[2], out[3], out[4]}};
}

void register_heat_split_ops() {
  register_forward_halves();
  register_adjoint_halves();
}

}  // namespace adgraph::solvers
