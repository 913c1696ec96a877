#include "solvers/heat_step.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/core_ops.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "solvers/heat_step_impl.h"
#include "solvers/patch_operators.h"
#include "solvers/regularization.h"
#include "sparse/sparse_matrix.h"

namespace adgraph::solvers {

using namespace detail;

HeatStep heat_step(Value u,
                   Value kappa,
                   Value f,
                   const std::array<Value, 4>& halos,
                   double dt,
                   double h) {
  register_solvers_layer();
  auto out = u.graph().add_node_outputs(
      "heat_step",
      {u, kappa, f, halos[0], halos[1], halos[2], halos[3]},
      {{"dt", dt}, {"h", h}});
  return {out[0], {out[1], out[2], out[3], out[4]}};
}

std::array<Value, 4> patch_edges(Value u) {
  register_solvers_layer();
  auto out = u.graph().add_node_outputs("patch_edges", {u});
  return {out[0], out[1], out[2], out[3]};
}

void register_heat_split_ops();    // heat_step_split.cc
void register_heat_adjoint_ops();  // heat_step_adjoint.cc

namespace {

void register_patch_edges_op() {
  // (left, right, up, down) = (u[:, 0], u[:, m−1], u[0, :], u[n−1, :]);
  // ū = patch_edges_adjoint(l̄, r̄, ū_up, ū_down)
  OpDef edges(
      "patch_edges",
      "the left and right columns and the top and bottom rows of an n x m "
      "patch",
      {"u"});
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
}

void register_patch_edges_adjoint_op() {
  // y = 0 with the four strips added onto their edges;  strip̄ = edges of ȳ
  OpDef edges_adjoint(
      "patch_edges_adjoint",
      "a zero n x m patch with left, right, up and down added onto its edges",
      {"left", "right", "up", "down"});
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
}

void register_heat_step_op() {
  // u⁺ = u + dt·(κ ⊙ stencil(u, halos)/h² + f), and the edges of u⁺;
  // adjoint: heat_step_adjoint
  OpDef step(
      "heat_step",
      "u + dt * (kappa * laplacian(u with halos) / h^2 + f) on an n x m patch, "
      "and its edges",
      step_inputs());
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
  // The gather form when the halos come from one exchange (heat_solve's
  // steps), the scatter form otherwise.
  step.gradient = [](const GradientContext& c) {
    if (const HaloSource source = halo_source(c, 3); source.node != nullptr) {
      Values grads = add_gather_adjoint(c, 0, source);
      grads.resize(7);
      return grads;
    }
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
}

}  // namespace

void register_heat_ops() {
  register_heat_split_ops();
  register_heat_adjoint_ops();
  register_patch_edges_op();
  register_patch_edges_adjoint_op();
  register_heat_step_op();
}

void register_solvers_layer() {
  static std::once_flag once;
  std::call_once(once, [] {
    sparse::register_sparse_layer();
    register_heat_ops();
    register_patch_operator_ops();
    register_regularization_ops();
  });
}

}  // namespace adgraph::solvers
