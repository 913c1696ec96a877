// A hand-written serial heat solver and its adjoint over the whole grid:
// the independent implementation the solver tests compare with.
#pragma once

#include <vector>

#include "solvers/heat_solver.h"

namespace adgraph::testing {

struct HeatReference {
  double loss = 0;
  std::vector<double> gradient;  // ∂L/∂κ, global row-major
  std::vector<double> u_final;
};

// L = Σ w_ij (u^NT_ij − obs_ij)² with κ, obs, w given on the whole grid.
inline HeatReference heat_reference(const solvers::HeatConfig& c,
                                    const std::vector<double>& kappa,
                                    const std::vector<double>& obs,
                                    const std::vector<double>& weight) {
  const int nx = c.nx, ny = c.ny;
  const double dt = solvers::heat_dt(c), h = c.h(), coef = dt / (h * h);
  solvers::Patch whole;
  whole.n = nx, whole.m = ny;
  const Tensor u0 = solvers::heat_initial(c, whole);
  auto at = [&](const std::vector<double>& u, int i, int j) {
    return i < 0 || i >= nx || j < 0 || j >= ny ? 0.0 : u[i * ny + j];
  };
  auto lap = [&](const std::vector<double>& u, int i, int j) {
    return at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) +
           at(u, i, j + 1) - 4 * at(u, i, j);
  };
  std::vector<std::vector<double>> states(c.nt + 1);
  states[0] = u0.to_vector();
  for (int n = 0; n < c.nt; ++n) {
    const auto& u = states[n];
    std::vector<double> next(u.size());
    for (int i = 0; i < nx; ++i) {
      for (int j = 0; j < ny; ++j) {
        next[i * ny + j] =
            u[i * ny + j] + coef * kappa[i * ny + j] * lap(u, i, j) + dt * 1.0;
      }
    }
    states[n + 1] = std::move(next);
  }
  HeatReference r;
  r.u_final = states[c.nt];
  std::vector<double> ubar(nx * ny);
  for (int k = 0; k < nx * ny; ++k) {
    const double d = r.u_final[k] - obs[k];
    r.loss += weight[k] * d * d;
    ubar[k] = 2 * weight[k] * d;
  }
  r.gradient.assign(nx * ny, 0.0);
  for (int n = c.nt - 1; n >= 0; --n) {
    const auto& u = states[n];
    std::vector<double> z(nx * ny), prev(nx * ny);
    for (int k = 0; k < nx * ny; ++k) z[k] = kappa[k] * ubar[k];
    for (int i = 0; i < nx; ++i) {
      for (int j = 0; j < ny; ++j) {
        r.gradient[i * ny + j] += coef * ubar[i * ny + j] * lap(u, i, j);
        prev[i * ny + j] = ubar[i * ny + j] + coef * lap(z, i, j);
      }
    }
    ubar = std::move(prev);
  }
  return r;
}

}  // namespace adgraph::testing
