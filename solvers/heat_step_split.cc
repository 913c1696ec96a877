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
#include "solvers/heat_adjoint_row_impl.h"
#include "solvers/heat_step.h"
#include "solvers/heat_step_adjoint_impl.h"
#include "solvers/heat_step_impl.h"

namespace adgraph::solvers {

using namespace detail;

namespace {

// The rows of the ring (0 and n − 1, once when n = 1).
std::vector<int64_t> ring_rows(int64_t n) {
  return n == 1 ? std::vector<int64_t>{0} : std::vector<int64_t>{0, n - 1};
}

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
  OpDef interior(
      "heat_step_interior",
      "heat_step's update of the points that need no halo; u on the patch's "
      "outer ring",
      {"u", "kappa", "f"});
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

// heat_step_boundary's kernel: heat_step's update of the ring points, in
// the interior's buffer, and the edges of u⁺.
void boundary_kernel(KernelContext& c, const StepAttrs& a) {
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
    out[i * m + j] = row[j] + coef * kappa[i * m + j] * lap + dt * f[i * m + j];
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
}

void register_heat_step_boundary_op() {
  // (u⁺, its edges) = heat_step(u, κ, f, halos), taking the interior points
  // from `interior` (whose buffer it takes over) and computing the ring
  OpDef boundary(
      "heat_step_boundary",
      "completes heat_step_interior's result on the patch's outer ring with "
      "the halos; y = u+ and its edges, as heat_step",
      step_inputs({"interior"}));
  boundary.attrs = step_attrs();
  boundary.num_outputs = 5;
  boundary.in_place = {{0, 0}};
  boundary.shape = [](const ShapeContext& c) {
    check_shapes(c, 0, 4, 4);
    const Shape& u = c.input_shape(1);
    return Shapes{u, {u[0]}, {u[0]}, {u[1]}, {u[1]}};
  };
  boundary.bind = bind_step(boundary_kernel);
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

// heat_step_boundary_adjoint's kernel: heat_step_adjoint's rows 0 and
// n − 1 and the two ends of every other row, by heat_step_adjoint's own
// parts (start_row, adjoint_row, finish_row_ends; its Z from the same
// AdjointInputs), so each ring point gets heat_step_adjoint's value. ū and
// f̄ are 0 inside, κ̄ is κ̄_in there; W is ū⁺ with Z on the ring.
void ring_adjoint_kernel(KernelContext& c, const StepAttrs& a) {
  const AdjointInputs<false> in(c);
  const int64_t n = in.n, m = in.m;
  double *gu = c.output(0).data(), *gk = c.output(1).data(),
         *gf = c.output(2).data();
  std::fill(gu, gu + n * m, 0.0);
  if (a.want_f) std::fill(gf, gf + n * m, 0.0);
  // Z rows north, here and south (index j + 1 is point j; zeros outside
  // the patch), a row of zeros, and G's ring rows.
  const int64_t w = m + 2;
  std::vector<double> buffers(4 * w + 2 * m, 0.0);
  double *zero = buffers.data(), *z_rows = zero + w, *g_rows = z_rows + 3 * w;
  // Z on the ring, in the order W takes it: W may share ū⁺'s buffer.
  std::vector<double> z_ring;
  auto full_z_row = [&](int64_t i, double* padded) {
    in.z_row(i, in.g_row(i, g_rows + m, false), padded);
  };
  for (int64_t i = 0; i < n; ++i) {
    double *zno = z_rows, *zc = z_rows + w, *zs = z_rows + 2 * w;
    const bool ring_row = i == 0 || i == n - 1;
    const double* gc = in.g_row(i, g_rows, false);
    if (ring_row) {
      if (i > 0) full_z_row(i - 1, zno);
      full_z_row(i, zc);
      if (i + 1 < n) full_z_row(i + 1, zs);
    } else {
      // finish_row_ends reads Z at columns 0, 1, m − 2 and m − 1 only.
      for (int64_t j : {int64_t{0}, int64_t{1}, m - 2, m - 1}) {
        if (j < 0 || j >= m) continue;
        zno[j + 1] = in.z_at(i - 1, j);
        zc[j + 1] = in.z_at(i, j);
        zs[j + 1] = in.z_at(i + 1, j);
      }
    }
    const double* ur = in.u + i * m;
    const double* un = i > 0 ? ur - m : in.hu;
    const double* us = i + 1 < n ? ur + m : in.hd;
    if (i == 0) zno = zero;
    if (i == n - 1) zs = zero;
    // The ring rows' points between their ends, as heat_step_adjoint
    // computes an edge row; only the ends of the other rows.
    adjoint_of_row(c,
                   in,
                   a,
                   i,
                   gc,
                   {zno, zc, zs},
                   {un, ur, us},
                   1,
                   ring_row ? m - 1 : 1,
                   gu,
                   gk,
                   gf);
    if (ring_row) {
      z_ring.insert(z_ring.end(), zc + 1, zc + m + 1);
    } else {
      z_ring.push_back(zc[1]);
      z_ring.push_back(zc[m]);
    }
  }
  Tensor& out_w = c.output(7);
  if (out_w.data() != c.input(0).data()) out_w.array() = c.input(0).array();
  const double* z = z_ring.data();
  for (int64_t i = 0; i < n; ++i) {
    double* row = out_w.data() + i * m;
    if (i == 0 || i == n - 1) {
      std::copy(z, z + m, row);
      z += m;
    } else {
      row[0] = *z++;
      row[m - 1] = *z++;
    }
  }
}

// heat_step_interior_adjoint's kernel: heat_step_adjoint's row kernel over
// the points inside the ring, its ū added onto the ring's (0 there, or the
// cotangents of u from elsewhere); Z is W on the ring and κ ⊙ W inside.
void interior_adjoint_kernel(KernelContext& c, const StepAttrs& a) {
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
  if (m < 3) return;  // every point is on the ring
  auto z_row = [&](int64_t i, double* padded) {
    const double *wr = w + i * m, *k = kappa + i * m;
    if (i == 0 || i == n - 1) {
      std::copy(wr, wr + m, padded + 1);
      return;
    }
    for (int64_t j = 0; j < m; ++j) padded[j + 1] = k[j] * wr[j];
    padded[1] = wr[0];
    padded[m] = wr[m - 1];
  };
  for_rows(1, n - 1, n * m, [&](int64_t i0, int64_t i1) {
    std::vector<double> rows(3 * (m + 2), 0.0);
    double *zp = rows.data(), *zc = zp + m + 2, *zn = zc + m + 2;
    if (i0 < i1) {
      z_row(i0 - 1, zp);
      z_row(i0, zc);
    }
    for (int64_t i = i0; i < i1; ++i) {
      z_row(i + 1, zn);
      const double* ur = u + i * m;
      adjoint_row<true>(1,
                        m - 1,
                        coef,
                        w + i * m,
                        zp,
                        zc,
                        zn,
                        ur - m,
                        ur,
                        ur + m,
                        gu + i * m,
                        gk + i * m);
      if (want_f) {
        for (int64_t j = 1; j + 1 < m; ++j) gf[i * m + j] += dt * w[i * m + j];
      }
      std::swap(zp, zc);
      std::swap(zc, zn);
    }
  });
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
  ring.bind = bind_step(ring_adjoint_kernel);
  register_op(std::move(ring));
}

void register_heat_step_interior_adjoint_op() {
  // The rest of heat_step_adjoint: ū, κ̄, f̄ inside the ring, added onto
  // (and in the buffers of) what the ring's adjoint gave
  OpDef inside(
      "heat_step_interior_adjoint",
      "heat_step_adjoint inside the patch's outer ring, added onto the "
      "ring's cotangents",
      {"w", "u", "kappa", "u_grad_in", "kappa_grad_in", "f_grad_in"});
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
  inside.bind = bind_step(interior_adjoint_kernel);
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
  register_solvers_layer();
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
