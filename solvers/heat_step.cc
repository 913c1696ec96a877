#include "solvers/heat_step.h"

#include <string>
#include <vector>

#include "core/op.h"

namespace adgraph::solvers {
namespace {

// Patches smaller than this run their stencil on one thread.
constexpr int64_t kParallelPoints = 16384;

// Stencil sum of u at (i, j) with halos: N + S + W + E − 4u.
struct Stencil {
  const double* u;
  const double* left;
  const double* right;
  const double* up;
  const double* down;
  int64_t n, m;
  double at(int64_t i, int64_t j) const {
    const double c = u[i * m + j];
    const double north = i > 0 ? u[(i - 1) * m + j] : up[j];
    const double south = i + 1 < n ? u[(i + 1) * m + j] : down[j];
    const double west = j > 0 ? u[i * m + j - 1] : left[i];
    const double east = j + 1 < m ? u[i * m + j + 1] : right[i];
    return north + south + west + east - 4 * c;
  }
};

Stencil stencil_of(const KernelContext& c, int first_halo) {
  const Tensor& u = c.input(0);
  return {u.data(),
          c.input(first_halo).data(),
          c.input(first_halo + 1).data(),
          c.input(first_halo + 2).data(),
          c.input(first_halo + 3).data(),
          u.shape()[0],
          u.shape()[1]};
}

void check_shapes(const ShapeContext& c,
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

std::vector<AttrSpec> step_attrs() {
  return {{"dt", AttrType::kFloat, nlohmann::json(), "time step", 0},
          {"h", AttrType::kFloat, nlohmann::json(), "grid spacing", 1e-300}};
}

}  // namespace

Value heat_step(Value u,
                Value kappa,
                Value f,
                const std::array<Value, 4>& halos,
                double dt,
                double h) {
  return u.graph().add_node(
      "heat_step",
      {u, kappa, f, halos[0], halos[1], halos[2], halos[3]},
      {{"dt", dt}, {"h", h}});
}

std::array<Value, 4> patch_edges(Value u) {
  auto out = u.graph().add_node_outputs("patch_edges", {u});
  return {out[0], out[1], out[2], out[3]};
}

void register_heat_ops(OpRegistry& registry) {
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
    const int64_t n = u.shape()[0], m = u.shape()[1];
    for (int64_t i = 0; i < n; ++i)
      c.output(0)[i] = u[i * m], c.output(1)[i] = u[i * m + m - 1];
    for (int64_t j = 0; j < m; ++j)
      c.output(2)[j] = u[j], c.output(3)[j] = u[(n - 1) * m + j];
  };
  edges.gradient = [](const GradientContext& c) {
    return Values{c.graph().add_node(
        "patch_edges_adjoint", {c.grad(0), c.grad(1), c.grad(2), c.grad(3)})};
  };
  registry.add(std::move(edges));

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
  registry.add(std::move(edges_adjoint));

  // u⁺ = u + dt·(κ ⊙ stencil(u, halos)/h² + f);  adjoint: heat_step_adjoint
  OpDef step;
  step.name = "heat_step";
  step.doc =
      "u + dt * (kappa * laplacian(u with halos) / h^2 + f) on an n x m patch";
  step.inputs = {
      "u", "kappa", "f", "from_left", "from_right", "from_up", "from_down"};
  step.attrs = step_attrs();
  step.shape = [](const ShapeContext& c) {
    check_shapes(c, 0, 3, 3);
    return Shapes{c.input_shape(0)};
  };
  step.compute = [](KernelContext& c) {
    const Stencil s = stencil_of(c, 3);
    const double dt = c.attr_float("dt"), h = c.attr_float("h");
    const double coef = dt / (h * h);
    const double* kappa = c.input(1).data();
    const double* f = c.input(2).data();
    double* out = c.output(0).data();
    const int64_t n = s.n, m = s.m;
#pragma omp parallel for if (n * m >= kParallelPoints)
    for (int64_t i = 0; i < n; ++i) {
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
      point(0, s.left[i], row[1]);
      for (int64_t j = 1; j + 1 < m; ++j) point(j, row[j - 1], row[j + 1]);
      point(m - 1, row[m - 2], s.right[i]);
    }
  };
  step.gradient = [](const GradientContext& c) {
    std::vector<Value> inputs = {c.grad()};
    for (int k = 0; k < 7; ++k) inputs.push_back(c.input(k));
    auto out =
        c.graph().add_node_outputs("heat_step_adjoint", inputs, c.node().attrs);
    return Values(out.begin(), out.end());
  };
  registry.add(std::move(step));

  // (ū, κ̄, f̄, halō…) of heat_step for the cotangent ū⁺ (see the header).
  OpDef adjoint;
  adjoint.name = "heat_step_adjoint";
  adjoint.doc =
      "cotangents of heat_step's seven inputs for the cotangent of its output";
  adjoint.inputs = {"grad",
                    "u",
                    "kappa",
                    "f",
                    "from_left",
                    "from_right",
                    "from_up",
                    "from_down"};
  adjoint.attrs = step_attrs();
  adjoint.num_outputs = 7;
  adjoint.shape = [](const ShapeContext& c) {
    check_shapes(c, 0, 4, 4);
    const Shape& u = c.input_shape(0);
    return Shapes{u, u, u, {u[0]}, {u[0]}, {u[1]}, {u[1]}};
  };
  adjoint.compute = [](KernelContext& c) {
    const Tensor& g = c.input(0);
    const int64_t n = g.shape()[0], m = g.shape()[1];
    const Stencil s{c.input(1).data(),
                    c.input(4).data(),
                    c.input(5).data(),
                    c.input(6).data(),
                    c.input(7).data(),
                    n,
                    m};
    const double dt = c.attr_float("dt"), h = c.attr_float("h");
    const double coef = dt / (h * h);
    const double* gp = g.data();
    double* gu = c.output(0).data();
    double* gk = c.output(1).data();
    c.output(2).array() = dt * g.array();
    // z = κ ⊙ ū⁺; the stencil's transpose is the stencil with zero halos.
    // Scratch kept per thread: a fresh large vector per call would cost
    // page faults on every step.
    thread_local std::vector<double> z, zero;
    z.resize(n * m);
    zero.assign(m, 0.0);
    Eigen::Map<Eigen::ArrayXd>(z.data(), n * m) =
        c.input(2).array() * g.array();
#pragma omp parallel for if (n * m >= kParallelPoints)
    for (int64_t i = 0; i < n; ++i) {
      const double* zr = z.data() + i * m;
      const double* zn = i > 0 ? zr - m : zero.data();
      const double* zs = i + 1 < n ? zr + m : zero.data();
      const double* ur = s.u + i * m;
      const double* un = i > 0 ? ur - m : s.up;
      const double* us = i + 1 < n ? ur + m : s.down;
      const double* gr = gp + i * m;
      double* out_u = gu + i * m;
      double* out_k = gk + i * m;
      auto point = [&](int64_t j, double zw, double ze, double uw, double ue) {
        out_u[j] = gr[j] + coef * (zn[j] + zs[j] + zw + ze - 4 * zr[j]);
        out_k[j] = coef * gr[j] * (un[j] + us[j] + uw + ue - 4 * ur[j]);
      };
      if (m == 1) {
        point(0, 0, 0, s.left[i], s.right[i]);
        continue;
      }
      point(0, 0, zr[1], s.left[i], ur[1]);
      for (int64_t j = 1; j + 1 < m; ++j)
        point(j, zr[j - 1], zr[j + 1], ur[j - 1], ur[j + 1]);
      point(m - 1, zr[m - 2], 0, ur[m - 2], s.right[i]);
    }
    double* left = c.output(3).data();
    double* right = c.output(4).data();
    double* up = c.output(5).data();
    double* down = c.output(6).data();
    for (int64_t i = 0; i < n; ++i)
      left[i] = coef * z[i * m], right[i] = coef * z[i * m + m - 1];
    for (int64_t j = 0; j < m; ++j)
      up[j] = coef * z[j], down[j] = coef * z[(n - 1) * m + j];
  };
  registry.add(std::move(adjoint));
}

}  // namespace adgraph::solvers
