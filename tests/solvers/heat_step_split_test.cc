// heat_step_overlapped's split ops with halos that do not come from an
// exchange: then heat_step_boundary's adjoint is the scatter form split in
// two (heat_step_boundary_adjoint on the ring, heat_step_interior_adjoint
// inside), and the pair must give bitwise what heat_step and
// heat_step_adjoint give (tested against their definition in
// heat_step_test): the state, its edges and every cotangent, on patches of
// one row or column, of two, with rows shorter and longer than a vector,
// and with cotangents that reach u, κ and f from elsewhere too.
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

struct Patch {
  int64_t n, m;
};

// u⁺, its four edges, then the cotangents of u, κ, (f,) and the four halos
// of a weighted loss of one step, plain or split; `more` adds terms in u,
// κ and f of their own to the loss.
std::vector<Tensor> step_and_cotangents(Patch p,
                                        bool split,
                                        bool want_f,
                                        bool more) {
  constexpr double dt = 1e-3, h = 0.1;
  const Shape patch{p.n, p.m}, column{p.n}, row{p.m};
  Graph g;
  Value u = g.placeholder("u", patch), kappa = g.placeholder("kappa", patch),
        f = g.placeholder("f", patch);
  std::array<Value, 4> halos;
  const char* halo_names[] = {"left", "right", "up", "down"};
  for (int k = 0; k < 4; ++k)
    halos[k] = g.placeholder(halo_names[k], k < 2 ? column : row);
  HeatStep step;
  if (split) {
    Value inner =
        g.add_node("heat_step_interior", {u, kappa, f}, {{"dt", dt}, {"h", h}});
    auto out = g.add_node_outputs(
        "heat_step_boundary",
        {inner, u, kappa, f, halos[0], halos[1], halos[2], halos[3]},
        {{"dt", dt}, {"h", h}});
    step = {out[0], {out[1], out[2], out[3], out[4]}};
  } else {
    step = heat_step(u, kappa, f, halos, dt, h);
  }
  Value loss = sum(step.u * g.constant(wobbly(patch, 1)));
  for (int k = 0; k < 4; ++k)
    loss = loss +
           sum(step.edges[k] * g.constant(wobbly(k < 2 ? column : row, 2 + k)));
  if (more) loss = loss + sum(u * kappa) + sum(square(kappa)) + sum(f * u);
  std::vector<Value> wrt = {u, kappa};
  if (want_f) wrt.push_back(f);
  for (const Value& halo : halos) wrt.push_back(halo);
  std::vector<Value> fetches = {
      step.u, step.edges[0], step.edges[1], step.edges[2], step.edges[3]};
  for (const Value& grad : gradients(loss, wrt)) fetches.push_back(grad);
  Tensor kappa_value = wobbly(patch, 7);
  kappa_value.array() += 2.0;
  FeedMap feeds = {
      {u, wobbly(patch, 8)}, {kappa, kappa_value}, {f, wobbly(patch, 9)}};
  for (int k = 0; k < 4; ++k)
    feeds.emplace(halos[k], wobbly(k < 2 ? column : row, 10 + k));
  Session session(g);
  return session.run(fetches, feeds);
}

TEST(HeatStepSplit, ScatterFormPairIsBitwiseHeatStepAndItsAdjoint) {
  const char* names[] = {"u+",
                         "left edge",
                         "right edge",
                         "up edge",
                         "down edge",
                         "u cotangent",
                         "kappa cotangent",
                         "f cotangent",
                         "left halo cotangent",
                         "right halo cotangent",
                         "up halo cotangent",
                         "down halo cotangent"};
  for (Patch p : std::vector<Patch>{{1, 1},
                                    {1, 6},
                                    {6, 1},
                                    {2, 2},
                                    {2, 9},
                                    {3, 5},
                                    {7, 3},
                                    {12, 37},
                                    {33, 130}}) {
    for (bool want_f : {true, false}) {
      for (bool more : {false, true}) {
        const auto plain = step_and_cotangents(p, false, want_f, more);
        const auto split = step_and_cotangents(p, true, want_f, more);
        ASSERT_EQ(plain.size(), split.size());
        for (std::size_t k = 0; k < plain.size(); ++k) {
          const int name =
              want_f || k < 7 ? static_cast<int>(k) : static_cast<int>(k) + 1;
          const std::string where = std::string(names[name]) + " of a " +
                                    std::to_string(p.n) + " x " +
                                    std::to_string(p.m) + " patch" +
                                    (want_f ? "" : ", no f cotangent") +
                                    (more ? ", loss with more terms" : "");
          ASSERT_EQ(plain[k].shape(), split[k].shape()) << where;
          EXPECT_EQ(plain[k].to_vector(), split[k].to_vector()) << where;
          EXPECT_GT(plain[k].array().abs().maxCoeff(), 0.0) << where;
        }
      }
    }
  }
}

TEST(HeatStepSplit, ScatterFormPairPassesTheGradientChecker) {
  const Shape patch{5, 6};
  Graph g;
  Value u = g.placeholder("u", patch), kappa = g.placeholder("kappa", patch);
  Value f = g.constant(wobbly(patch, 3));
  std::array<Value, 4> halos = {g.placeholder("left", {5}),
                                g.placeholder("right", {5}),
                                g.placeholder("up", {6}),
                                g.placeholder("down", {6})};
  Value inner = g.add_node(
      "heat_step_interior", {u, kappa, f}, {{"dt", 0.01}, {"h", 0.5}});
  auto out = g.add_node_outputs(
      "heat_step_boundary",
      {inner, u, kappa, f, halos[0], halos[1], halos[2], halos[3]},
      {{"dt", 0.01}, {"h", 0.5}});
  Value loss = sum(square(out[0] - 0.3)) + sum(square(out[1])) +
               sum(out[3] * out[3] * 0.5);
  Tensor kappa_value = wobbly(patch, 4);
  kappa_value.array() += 2.0;
  FeedMap at = {{u, wobbly(patch, 5)}, {kappa, kappa_value}};
  for (int k = 0; k < 4; ++k)
    at.emplace(halos[k], wobbly(halos[k].shape(), 6 + k));
  const GradientCheckResult result = check_gradients(
      loss, {u, kappa, halos[0], halos[1], halos[2], halos[3]}, at);
  EXPECT_TRUE(result.ok) << result.message;
}

}  // namespace
}  // namespace adgraph::solvers
