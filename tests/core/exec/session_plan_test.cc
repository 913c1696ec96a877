// What Session::plan_for decides (core/exec/session_plan.cc), seen from
// runs: which nodes a fetch needs, their order (control inputs too), one
// plan per fetch set, buffers released after their last reader and reused
// in place by element-wise chains, and never when the value is still
// wanted.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "core/loops/loop.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

std::atomic<int> g_counted_runs{0};

// y = x, counting how often the kernel runs.
void register_counted_op() {
  if (OpRegistry::global().find("test_counted")) return;
  OpDef def;
  def.name = "test_counted";
  def.inputs = {"x"};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    ++g_counted_runs;
    c.output(0).array() = c.input(0).array();
  };
  def.gradient = [](const GradientContext& c) { return Values{c.grad()}; };
  register_op(def);
}

TEST(SessionPlan, UnfetchedBranchNeverExecutes) {
  register_counted_op();
  Graph g;
  Value x = g.placeholder("x", {});
  Value needed = g.add_node("test_counted", {x});
  Value unneeded = g.add_node("test_counted", {x * 2.0});
  (void)unneeded;
  Session s(g);
  g_counted_runs = 0;
  EXPECT_EQ(s.run(needed + 1.0, {{x, Tensor::scalar(4)}}).item(), 5.0);
  EXPECT_EQ(g_counted_runs, 1);
  // x, test_counted, constant 1, add.
  EXPECT_EQ(s.stats().nodes_executed, 4);
}

TEST(SessionPlan, ControlInputsRunEvenWithoutDataEdges) {
  register_ops_layer();  // the ops named below
  register_counted_op();
  Graph g;
  Value x = g.placeholder("x", {});
  Value side = g.add_node("test_counted", {x});
  Value y = g.add_node("neg", {x}, {}, {.after = {side}});
  Session s(g);
  g_counted_runs = 0;
  EXPECT_EQ(s.run(y, {{x, Tensor::scalar(4)}}).item(), -4.0);
  EXPECT_EQ(g_counted_runs, 1);
}

TEST(SessionPlan, PlanIsCachedPerFetchSet) {
  Graph g;
  Value x = g.placeholder("x", {});
  Value a = x + 1.0, b = x * 3.0;
  Session s(g);
  FeedMap f{{x, Tensor::scalar(2)}};
  s.run({a}, f);
  EXPECT_FALSE(s.stats().plan_cached);
  s.run({a}, f);
  EXPECT_TRUE(s.stats().plan_cached);
  s.run({a, b}, f);
  EXPECT_FALSE(s.stats().plan_cached);
  EXPECT_EQ(s.num_plans(), 2);
  auto out = s.run({a, b}, f);
  EXPECT_TRUE(s.stats().plan_cached);
  EXPECT_EQ(out[0].item(), 3.0);
  EXPECT_EQ(out[1].item(), 6.0);
}

TEST(SessionPlan, LongChainKeepsOnlyAFewTensorsAlive) {
  constexpr int kLength = 1000;
  constexpr int64_t kSize = 1000;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  Value y = x;
  for (int i = 0; i < kLength; ++i) y = sin(y);
  Session s(g);
  s.run(y, {{x, Tensor({kSize}, 0.5)}});
  // Live at once: at most the input and output of the running node (plus a
  // feed copy), never the chain.
  EXPECT_LE(s.stats().peak_live_bytes, 3 * kSize * sizeof(double));
  EXPECT_EQ(s.stats().nodes_executed, kLength + 1);
}

TEST(SessionPlan, ElementwiseChainRunsInPlaceInOneBuffer) {
  constexpr int kLength = 100;
  constexpr int64_t kSize = 1000;
  Graph g;
  Value x = g.placeholder("x", {kSize});
  Value y = x;
  for (int i = 0; i < kLength; ++i) y = sin(y) + 0.5;
  Session s(g);
  Tensor xv(Shape{kSize});
  for (int64_t i = 0; i < kSize; ++i) xv[i] = 0.001 * i - 0.2;
  const Tensor fed = xv;
  Tensor out = s.run(y, {{x, xv}});
  // The first sin cannot overwrite the caller's feed; every later node
  // writes into its dying input, so one array (and a scalar constant) is
  // live at a time, not a node's input and output.
  EXPECT_LE(s.stats().peak_live_bytes, (kSize + 2) * sizeof(double));
  EXPECT_TRUE((xv.array() == fed.array()).all());
  for (int64_t i = 0; i < kSize; ++i) {
    double v = fed[i];
    for (int k = 0; k < kLength; ++k) v = std::sin(v) + 0.5;
    EXPECT_NEAR(out[i], v, 1e-13) << i;
  }
}

TEST(SessionPlan, InPlaceNeverOverwritesFetchedSharedOrRepeatedValues) {
  Graph g;
  Value x = g.placeholder("x", {3});
  Value a = exp(x);   // fetched, and the input of b
  Value b = a + 1.0;  // must not overwrite a
  Value c = x * x;    // the feed, twice
  Value d = sin(b);
  Value e = d + d;   // the same slot twice: not in place
  Value f = cos(e);  // e has two consumers: only the last may take it
  Value h = e * 2.0;
  Session s(g);
  const Tensor xv({0.5, -1.0, 2.0});
  auto out = s.run({a, b, c, f, h}, {{x, xv}});
  for (int i = 0; i < 3; ++i) {
    const double xi = xv[i], ai = std::exp(xi), ei = 2 * std::sin(ai + 1);
    EXPECT_DOUBLE_EQ(out[0][i], ai);
    EXPECT_DOUBLE_EQ(out[1][i], ai + 1);
    EXPECT_DOUBLE_EQ(out[2][i], xi * xi);
    EXPECT_DOUBLE_EQ(out[3][i], std::cos(ei));
    EXPECT_DOUBLE_EQ(out[4][i], ei * 2);
  }
  EXPECT_EQ(xv[0], 0.5);
  EXPECT_EQ(xv[1], -1.0);
  EXPECT_EQ(xv[2], 2.0);
}

}  // namespace
}  // namespace adgraph
