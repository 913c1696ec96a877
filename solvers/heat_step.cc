#include "solvers/heat_step.h"

#include <string>

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

void check_shapes(const ShapeContext& c, int first_patch_input, int n_patch_inputs, int first_halo) {
  const Shape& u = c.input_shape(first_patch_input);
  if (u.size() != 2) c.fail("input \"u\"", "expected an n x m patch, got shape " + shape_string(u));
  for (int k = first_patch_input + 1; k < first_patch_input + n_patch_inputs; ++k) {
    if (c.input_shape(k) != u) {
      c.fail("input " + std::to_string(k), "shape " + shape_string(c.input_shape(k)) +
                                               " differs from u's " + shape_string(u));
    }
  }
  const Shape rows{u[0]}, cols{u[1]};
  const char* names[4] = {"from_left", "from_right", "from_up", "from_down"};
  for (int k = 0; k < 4; ++k) {
    const Shape& want = k < 2 ? rows : cols;
    if (c.input_shape(first_halo + k) != want) {
      c.fail(std::string("input \"") + names[k] + "\"",
             "shape " + shape_string(c.input_shape(first_halo + k)) + ", expected " +
                 shape_string(want) + " for a patch of " + shape_string(u));
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
  return u.graph().add_node("heat_step", {u, kappa, f, halos[0], halos[1], halos[2], halos[3]},
                            {{"dt", dt}, {"h", h}});
}

void register_heat_ops(OpRegistry& registry) {
  // u⁺ = u + dt·(κ ⊙ stencil(u, halos)/h² + f);  adjoint: heat_step_adjoint
  OpDef step;
  step.name = "heat_step";
  step.doc = "u + dt * (kappa * laplacian(u with halos) / h^2 + f) on an n x m patch";
  step.inputs = {"u", "kappa", "f", "from_left", "from_right", "from_up", "from_down"};
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
#pragma omp parallel for if (s.n * s.m >= kParallelPoints)
    for (int64_t i = 0; i < s.n; ++i) {
      for (int64_t j = 0; j < s.m; ++j) {
        const int64_t k = i * s.m + j;
        out[k] = s.u[k] + coef * kappa[k] * s.at(i, j) + dt * f[k];
      }
    }
  };
  step.gradient = [](const GradientContext& c) {
    std::vector<Value> inputs = {c.grad()};
    for (int k = 0; k < 7; ++k) inputs.push_back(c.input(k));
    auto out = c.graph().add_node_outputs("heat_step_adjoint", inputs, c.node().attrs);
    return Values(out.begin(), out.end());
  };
  registry.add(std::move(step));

  // (ū, κ̄, f̄, halō…) of heat_step for the cotangent ū⁺ (see the header).
  OpDef adjoint;
  adjoint.name = "heat_step_adjoint";
  adjoint.doc = "cotangents of heat_step's seven inputs for the cotangent of its output";
  adjoint.inputs = {"grad",      "u",          "kappa",   "f",
                    "from_left", "from_right", "from_up", "from_down"};
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
    const Stencil s{c.input(1).data(), c.input(4).data(), c.input(5).data(),
                    c.input(6).data(), c.input(7).data(), n, m};
    const double dt = c.attr_float("dt"), h = c.attr_float("h");
    const double coef = dt / (h * h);
    const double* kappa = c.input(2).data();
    const double* gp = g.data();
    double* gu = c.output(0).data();
    double* gk = c.output(1).data();
    c.output(2).array() = dt * g.array();
    // z = κ ⊙ ū⁺; the stencil transpose is the stencil with zero halos.
    auto z = [&](int64_t i, int64_t j) { return kappa[i * m + j] * gp[i * m + j]; };
#pragma omp parallel for if (n * m >= kParallelPoints)
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        const int64_t k = i * m + j;
        double lap = -4 * z(i, j);
        if (i > 0) lap += z(i - 1, j);
        if (i + 1 < n) lap += z(i + 1, j);
        if (j > 0) lap += z(i, j - 1);
        if (j + 1 < m) lap += z(i, j + 1);
        gu[k] = gp[k] + coef * lap;
        gk[k] = coef * gp[k] * s.at(i, j);
      }
    }
    double* left = c.output(3).data();
    double* right = c.output(4).data();
    double* up = c.output(5).data();
    double* down = c.output(6).data();
    for (int64_t i = 0; i < n; ++i) left[i] = coef * z(i, 0), right[i] = coef * z(i, m - 1);
    for (int64_t j = 0; j < m; ++j) up[j] = coef * z(0, j), down[j] = coef * z(n - 1, j);
  };
  registry.add(std::move(adjoint));
}

}  // namespace adgraph::solvers
