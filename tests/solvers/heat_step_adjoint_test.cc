// heat_step_adjoint on one patch, no MPI: the pass that writes ū over ū⁺
// when ū⁺ dies at it (OpDef::in_place), on rows split between two OpenMP
// threads (this suite runs with OMP_NUM_THREADS=2).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "adgraph.h"
#include "tests/solvers/wobbly.h"

namespace adgraph::solvers {
namespace {

using testing::wobbly;

struct StepInputs {
  int64_t n = 0, m = 0;
  double dt = 0, h = 0;
  // ū⁺ and the edge cotangents (left, right, up, down); u, κ, f; the halos
  // (left, right, up, down); κ̄ of the later steps.
  Tensor grad;
  std::array<Tensor, 4> edge_grads;
  Tensor u, kappa, f;
  std::array<Tensor, 4> halos;
  Tensor kappa_grad_in;
};

// The cotangents of heat_step's inputs, by their definition and nothing
// of the kernel's: with Ȳ = ū⁺ plus each edge cotangent on its edge and
// c = dt / h², ū = Ȳ + c·Σ over the in-patch neighbours of κȲ − 4c·κȲ,
// κ̄ = κ̄_in + c·Ȳ ⊙ Δu (Δ with the halos), f̄ = dt·Ȳ, and each halo's
// cotangent c·κȲ along the edge it borders.
std::vector<Tensor> reference(const StepInputs& s) {
  const int64_t n = s.n, m = s.m;
  const double c = s.dt / (s.h * s.h);
  auto at = [m](const Tensor& t, int64_t i, int64_t j) { return t[i * m + j]; };
  Tensor total = s.grad, kg(Shape{n, m});
  for (int64_t i = 0; i < n; ++i) {
    total[i * m] += s.edge_grads[0][i];
    total[i * m + m - 1] += s.edge_grads[1][i];
  }
  for (int64_t j = 0; j < m; ++j) {
    total[j] += s.edge_grads[2][j];
    total[(n - 1) * m + j] += s.edge_grads[3][j];
  }
  for (int64_t k = 0; k < n * m; ++k) kg[k] = s.kappa[k] * total[k];
  Tensor u_bar(Shape{n, m}), kappa_bar(Shape{n, m}), f_bar(Shape{n, m});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < m; ++j) {
      double spread = -4 * at(kg, i, j);
      if (i > 0) spread += at(kg, i - 1, j);
      if (i + 1 < n) spread += at(kg, i + 1, j);
      if (j > 0) spread += at(kg, i, j - 1);
      if (j + 1 < m) spread += at(kg, i, j + 1);
      u_bar[i * m + j] = at(total, i, j) + c * spread;
      const double north = i > 0 ? at(s.u, i - 1, j) : s.halos[2][j];
      const double south = i + 1 < n ? at(s.u, i + 1, j) : s.halos[3][j];
      const double west = j > 0 ? at(s.u, i, j - 1) : s.halos[0][i];
      const double east = j + 1 < m ? at(s.u, i, j + 1) : s.halos[1][i];
      const double laplacian = north + south + west + east - 4 * at(s.u, i, j);
      kappa_bar[i * m + j] =
          at(s.kappa_grad_in, i, j) + c * at(total, i, j) * laplacian;
      f_bar[i * m + j] = s.dt * at(total, i, j);
    }
  }
  Tensor left(Shape{n}), right(Shape{n}), up(Shape{m}), down(Shape{m});
  for (int64_t i = 0; i < n; ++i)
    left[i] = c * at(kg, i, 0), right[i] = c * at(kg, i, m - 1);
  for (int64_t j = 0; j < m; ++j)
    up[j] = c * at(kg, 0, j), down[j] = c * at(kg, n - 1, j);
  return {u_bar, kappa_bar, f_bar, left, right, up, down};
}

// Runs one heat_step_adjoint node on s. ū⁺ and κ̄_in are intermediates
// (1·x of a fed x) that die at the node, so a sequential session writes ū
// and κ̄ over them; with keep_grad, ū⁺ is fetched too and ū needs a buffer
// of its own. Returns the seven cotangents and the run's statistics.
std::pair<std::vector<Tensor>, RunStats> run_adjoint(const StepInputs& s,
                                                     bool keep_grad) {
  Graph g;
  const Shape patch{s.n, s.m};
  const Value grad_fed = g.placeholder("grad", patch);
  const Value kappa_fed = g.placeholder("kappa_grad_in", patch);
  const Value grad = grad_fed * 1.0, kappa_grad_in = kappa_fed * 1.0;
  std::vector<Value> inputs = {grad};
  for (const Tensor& t : s.edge_grads) inputs.push_back(g.constant(t));
  for (const Tensor* t : {&s.u, &s.kappa, &s.f})
    inputs.push_back(g.constant(*t));
  for (const Tensor& t : s.halos) inputs.push_back(g.constant(t));
  inputs.push_back(kappa_grad_in);
  std::vector<Value> fetches = g.add_node_outputs(
      "heat_step_adjoint", inputs, {{"dt", s.dt}, {"h", s.h}});
  if (keep_grad) fetches.push_back(grad);
  Session session(g);
  auto out =
      session.run(fetches, {{grad_fed, s.grad}, {kappa_fed, s.kappa_grad_in}});
  out.resize(7);
  return {out, session.stats()};
}

TEST(HeatStepAdjoint, WrittenOverItsCotangentOnTwoThreadsItIsExact) {
  // 130 × 131 points: enough for the pass to split its rows between the
  // two threads (kParallelPoints), rows that are not whole vectors.
  StepInputs s;
  s.n = 130, s.m = 131, s.dt = 1e-4, s.h = 0.05;
  const Shape patch{s.n, s.m}, column{s.n}, row{s.m};
  s.grad = wobbly(patch, 1);
  s.u = wobbly(patch, 2);
  s.kappa = wobbly(patch, 3);
  s.kappa.array() += 2.0;
  s.f = wobbly(patch, 4);
  s.kappa_grad_in = wobbly(patch, 5);
  for (int k = 0; k < 4; ++k) {
    s.edge_grads[k] = wobbly(k < 2 ? column : row, 6 + k);
    s.halos[k] = wobbly(k < 2 ? column : row, 10 + k);
  }
  const auto [kept, kept_stats] = run_adjoint(s, true);
  const std::vector<Tensor> want = reference(s);
  const char* names[] = {"u", "kappa", "f", "left", "right", "up", "down"};
  // A block that read its neighbours' edge rows after they were written
  // over would not fail every time: five runs.
  for (int run = 0; run < 5; ++run) {
    const auto [overwritten, overwritten_stats] = run_adjoint(s, false);
    // Writing ū over ū⁺ saves exactly ū's buffer.
    EXPECT_EQ(overwritten_stats.buffers_allocated + 1,
              kept_stats.buffers_allocated);
    for (int k = 0; k < 7; ++k) {
      ASSERT_EQ(overwritten[k].shape(), want[k].shape()) << names[k];
      EXPECT_EQ(overwritten[k].to_vector(), kept[k].to_vector())
          << names[k] << ", run " << run;
      const double scale = want[k].array().abs().maxCoeff();
      EXPECT_GT(scale, 0.0) << names[k];
      for (int64_t p = 0; p < want[k].size(); ++p) {
        ASSERT_NEAR(overwritten[k][p], want[k][p], 1e-13 * scale)
            << names[k] << " cotangent at " << p << ", run " << run;
      }
    }
  }
}

// The shape rules of the gather form's ops name the input that is wrong.
TEST(HeatStepAdjointGather, BadShapesNameTheInput) {
  Graph g;
  Value grad = g.placeholder("grad", {3, 4});
  Value rows = g.placeholder("rows", {3}), cols = g.placeholder("cols", {4});
  Value kappa = g.placeholder("kappa", {4, 3});
  auto message = [&](const std::string& op, std::vector<Value> inputs) {
    nlohmann::json attrs = nlohmann::json::object();
    if (op == "heat_step_adjoint_gather") attrs = {{"dt", 0.1}, {"h", 0.5}};
    try {
      g.add_node_outputs(op, inputs, attrs);
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no ShapeError");
  };
  const std::string edges =
      message("heat_step_adjoint_edges", {grad, rows, rows, cols, cols, kappa});
  EXPECT_NE(edges.find("input \"kappa\": differs from grad's"),
            std::string::npos)
      << edges;
  const std::string strip =
      message("heat_step_adjoint_edges", {grad, rows, rows, rows, cols, grad});
  EXPECT_NE(strip.find("input 3: bad edge"), std::string::npos) << strip;
  // heat_step_adjoint_gather: a Z halo of the wrong length.
  Value u = g.placeholder("u", {3, 4});
  const std::string halo = message("heat_step_adjoint_gather",
                                   {grad,
                                    rows,
                                    rows,
                                    cols,
                                    cols,
                                    u,
                                    u,
                                    u,
                                    rows,
                                    rows,
                                    cols,
                                    cols,
                                    rows,
                                    rows,
                                    cols,
                                    rows});
  EXPECT_NE(halo.find("input 15: bad halo of z"), std::string::npos) << halo;
}

}  // namespace
}  // namespace adgraph::solvers
