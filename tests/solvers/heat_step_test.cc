// heat_step and patch_edges on one patch, no MPI (solvers/heat_step.cc):
// the step against its formula written out point by point here, the
// edges by hand, patch_edges_adjoint as patch_edges' transpose
// (⟨patch_edges(u), e⟩ = ⟨u, patch_edges_adjoint(e)⟩), and the step's
// gradient with respect to every input by finite differences.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "adgraph.h"
#include "tests/solvers/wobbly.h"
#include "tests/test_util.h"

namespace adgraph::solvers {
namespace {

using testing::wobbly;

// u⁺ at (i, j) with neighbours outside the n × m patch from the halos
// (left[i] = u(i, −1), right[i] = u(i, m), up[j] = u(−1, j),
// down[j] = u(n, j)).
double step_at(const Tensor& u,
               const Tensor& kappa,
               const Tensor& f,
               const std::array<Tensor, 4>& halo,
               int64_t i,
               int64_t j,
               double dt,
               double h) {
  const int64_t n = u.shape()[0], m = u.shape()[1];
  const auto at = [&](int64_t r, int64_t c) {
    if (c < 0) return halo[0][r];
    if (c == m) return halo[1][r];
    if (r < 0) return halo[2][c];
    if (r == n) return halo[3][c];
    return u[r * m + c];
  };
  const double laplacian = at(i + 1, j) + at(i - 1, j) + at(i, j + 1) +
                           at(i, j - 1) - 4.0 * at(i, j);
  const int64_t k = i * m + j;
  return u[k] + dt * (kappa[k] * laplacian / (h * h) + f[k]);
}

struct Patch {
  Tensor u, kappa, f;
  std::array<Tensor, 4> halo;
};

Patch wobbly_patch(int64_t n, int64_t m) {
  Patch p{wobbly({n, m}, 1), wobbly({n, m}, 2), wobbly({n, m}, 3), {}};
  for (int64_t k = 0; k < n * m; ++k) p.kappa[k] = 1.5 + 0.5 * p.kappa[k];
  p.halo = {wobbly({n}, 4), wobbly({n}, 5), wobbly({m}, 6), wobbly({m}, 7)};
  return p;
}

TEST(HeatStep, EveryPointFollowsTheFivePointFormula) {
  const double dt = 0.01, h = 0.5;
  for (const auto& [n, m] :
       {std::pair<int64_t, int64_t>{1, 1}, {1, 6}, {5, 1}, {3, 4}, {17, 40}}) {
    const Patch p = wobbly_patch(n, m);
    Graph g;
    const HeatStep step = heat_step(g.constant(p.u),
                                    g.constant(p.kappa),
                                    g.constant(p.f),
                                    {g.constant(p.halo[0]),
                                     g.constant(p.halo[1]),
                                     g.constant(p.halo[2]),
                                     g.constant(p.halo[3])},
                                    dt,
                                    h);
    Session s(g);
    const std::vector<Tensor> out = s.run(
        {step.u, step.edges[0], step.edges[1], step.edges[2], step.edges[3]});
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < m; ++j) {
        EXPECT_NEAR(out[0][i * m + j],
                    step_at(p.u, p.kappa, p.f, p.halo, i, j, dt, h),
                    1e-14)
            << n << " x " << m << " at (" << i << ", " << j << ")";
      }
    }
    // The edges are u⁺'s own columns and rows, bit for bit.
    for (int64_t i = 0; i < n; ++i) {
      EXPECT_EQ(out[1][i], out[0][i * m]);
      EXPECT_EQ(out[2][i], out[0][i * m + m - 1]);
    }
    for (int64_t j = 0; j < m; ++j) {
      EXPECT_EQ(out[3][j], out[0][j]);
      EXPECT_EQ(out[4][j], out[0][(n - 1) * m + j]);
    }
  }
}

TEST(PatchEdges, TheEdgesAndTheirTransposeByHand) {
  // u = [[1, 2, 3], [4, 5, 6]]: left (1, 4), right (3, 6), up (1, 2, 3),
  // down (4, 5, 6).
  Graph g;
  Value u =
      g.constant(Tensor(Shape{2, 3}, std::vector<double>{1, 2, 3, 4, 5, 6}));
  const std::array<Value, 4> edges = patch_edges(u);
  Session s(g);
  const std::vector<Tensor> out =
      s.run({edges[0], edges[1], edges[2], edges[3]});
  EXPECT_EQ(out[0].to_vector(), std::vector<double>({1, 4}));
  EXPECT_EQ(out[1].to_vector(), std::vector<double>({3, 6}));
  EXPECT_EQ(out[2].to_vector(), std::vector<double>({1, 2, 3}));
  EXPECT_EQ(out[3].to_vector(), std::vector<double>({4, 5, 6}));

  // ⟨patch_edges(w), e⟩ = ⟨w, patch_edges_adjoint(e)⟩ for every w: the
  // adjoint's value is the gradient of the left side with respect to w.
  Graph h;
  Value w = h.placeholder("w", {2, 3});
  const std::array<Value, 4> strips = patch_edges(w);
  const std::array<Tensor, 4> e = {
      Tensor({10, 20}), Tensor({30, 40}), Tensor({1, 2, 3}), Tensor({4, 5, 6})};
  Value pairing = dot(strips[0], h.constant(e[0]));
  for (int k = 1; k < 4; ++k)
    pairing = pairing + dot(strips[k], h.constant(e[k]));
  Session t(h);
  // Corner (0, 0) is on left and up: 10 + 1; (0, 2) on right and up:
  // 30 + 3; (1, 0) on left and down: 20 + 4; (1, 2) right and down: 40 + 6.
  EXPECT_EQ(
      t.run(gradient(pairing, w), {{w, Tensor::zeros({2, 3})}}).to_vector(),
      std::vector<double>({11, 2, 33, 24, 5, 46}));
}

TEST(HeatStep, GradientOfEveryInputByFiniteDifferences) {
  const int64_t n = 4, m = 5;
  const Patch p = wobbly_patch(n, m);
  Graph g;
  Value u = g.placeholder("u", {n, m});
  Value kappa = g.placeholder("kappa", {n, m});
  Value f = g.placeholder("f", {n, m});
  std::array<Value, 4> halo = {g.placeholder("left", {n}),
                               g.placeholder("right", {n}),
                               g.placeholder("up", {m}),
                               g.placeholder("down", {m})};
  const HeatStep step = heat_step(u, kappa, f, halo, 0.02, 0.7);
  // Weights reach u⁺ and every edge, so every cotangent path is checked.
  Value loss = sum(step.u * g.constant(wobbly({n, m}, 8)));
  for (int k = 0; k < 4; ++k) loss = loss + sum(square(step.edges[k]));
  FeedMap feeds = {{u, p.u}, {kappa, p.kappa}, {f, p.f}};
  for (int k = 0; k < 4; ++k) feeds[halo[k]] = p.halo[k];
  adgraph::testing::expect_gradients_ok(
      loss, {u, kappa, f, halo[0], halo[1], halo[2], halo[3]}, feeds);
}

}  // namespace
}  // namespace adgraph::solvers
