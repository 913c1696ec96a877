// A loop's adjoint reads c_{t+1} where its step's last node made it, instead
// of running that node again (LoopSpec::next_carries): the node's kernel
// runs once per forward step, the derivatives are those of the unrolled
// graph, under every schedule and through jvp(gradient).
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/exec/session.h"
#include "core/loops/loop.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

std::atomic<int> exp_calls{0};

// y = exp(x), counting its kernel's runs; its adjoint and tangent read y,
// as a linear solve's read its solution.
Value counted_exp(Value x) {
  if (!OpRegistry::global().find("test_counted_exp")) {
    OpDef def;
    def.name = "test_counted_exp";
    def.inputs = {"x"};
    def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
    def.compute = [](KernelContext& c) {
      ++exp_calls;
      c.output(0).array() = c.input(0).array().exp();
    };
    def.gradient = [](const GradientContext& c) {
      return Values{c.grad() * c.output(0)};
    };
    def.tangent = [](const TangentContext& c) {
      return Values{c.tangent() * c.output(0)};
    };
    register_op(def);
  }
  return x.graph().add_node("test_counted_exp", {x});
}

// x⁺ = exp(−0.3·a·x), v⁺ = v + x⁺·a: the first carry is the counted node's
// output, the second is not.
Values step(const Values& c, Value a) {
  Value x = counted_exp(-0.3 * a * c[0]);
  return {x, c[1] + x * a};
}

struct Problem {
  Graph g;
  Value x0, v0, a, loss, loop_node;
};

void build(Problem& p, int64_t n, const CheckpointSchedule* schedule) {
  p.x0 = p.g.placeholder("x0", {3});
  p.v0 = p.g.placeholder("v0", {3});
  p.a = p.g.placeholder("a", {3});
  Values c;
  if (schedule) {
    LoopOptions o;
    o.checkpoints = *schedule;
    LoopResult r = loop(
        n,
        {p.x0, p.v0},
        {p.a},
        [](const LoopArgs& l) {
          return LoopStep{step(l.carries, l.invariants[0]), {}};
        },
        o);
    p.loop_node = r.node;
    c = r.carries;
  } else {  // unrolled: the reference
    c = {p.x0, p.v0};
    for (int64_t t = 0; t < n; ++t) c = step(c, p.a);
  }
  p.loss = sum(square(c[0])) + sum(c[1] * c[1] * c[0]);
}

FeedMap feeds(const Problem& p) {
  return {{p.x0, Tensor({0.3, -0.2, 0.5})},
          {p.v0, Tensor({0.1, 0.4, -0.3})},
          {p.a, Tensor({1.0, 0.7, 1.3})}};
}

const CheckpointSchedule kSchedules[] = {CheckpointSchedule::store_all(),
                                         CheckpointSchedule::every(3),
                                         CheckpointSchedule::binomial(2)};

TEST(LoopNextCarry, TheNodeRunsOncePerForwardStepAndNotInTheAdjoint) {
  constexpr int64_t n = 7;
  for (const CheckpointSchedule& schedule : kSchedules) {
    Problem p;
    build(p, n, &schedule);
    Values g = gradients(p.loss, {p.x0, p.v0, p.a});
    Session s(p.g);
    exp_calls = 0;
    s.run({p.loss, g[0], g[1], g[2]}, feeds(p));
    // The forward loop's n steps, and the steps the schedule recomputes
    // (each runs the body once); the adjoint's n steps run it no more.
    const LoopStats adjoint = loop_stats(loop_adjoints(p.loop_node)[0]);
    EXPECT_EQ(adjoint.taped_steps, n);
    EXPECT_EQ(exp_calls, n + adjoint.forward_steps) << schedule.describe();
    if (schedule.kind == CheckpointSchedule::Kind::kStoreAll) {
      EXPECT_EQ(exp_calls, n);
    }
  }
}

TEST(LoopNextCarry, GradientsAndHessianVectorProductsMatchTheUnrolledGraph) {
  constexpr int64_t n = 7;
  Problem up;
  build(up, n, nullptr);
  Values ug = gradients(up.loss, {up.x0, up.v0, up.a});
  Value dir = up.g.constant(Tensor({0.3, -1.0, 0.5}));
  Value uh = jvp(ug[2], up.a, dir);
  Session us(up.g);
  std::vector<Tensor> ref =
      us.run({up.loss, ug[0], ug[1], ug[2], uh}, feeds(up));
  std::vector<Tensor> first;
  for (const CheckpointSchedule& schedule : kSchedules) {
    Problem p;
    build(p, n, &schedule);
    Values g = gradients(p.loss, {p.x0, p.v0, p.a});
    Value h = jvp(g[2], p.a, p.g.constant(Tensor({0.3, -1.0, 0.5})));
    Session s(p.g);
    std::vector<Tensor> got = s.run({p.loss, g[0], g[1], g[2], h}, feeds(p));
    for (std::size_t k = 0; k < got.size(); ++k) {
      for (int64_t i = 0; i < got[k].size(); ++i) {
        EXPECT_NEAR(
            got[k][i], ref[k][i], 1e-13 * std::max(1.0, std::fabs(ref[k][i])))
            << schedule.describe() << ", output " << k << "[" << i << "]";
      }
    }
    // Every schedule gives the same bits.
    if (first.empty()) {
      first = got;
    } else {
      for (std::size_t k = 0; k < got.size(); ++k)
        EXPECT_EQ(got[k].to_vector(), first[k].to_vector())
            << schedule.describe() << ", output " << k;
    }
  }
}

TEST(LoopNextCarry, TheGradientPassesTheChecker) {
  const CheckpointSchedule schedule = CheckpointSchedule::binomial(2);
  Problem p;
  build(p, 5, &schedule);
  auto result = check_gradients(p.loss, {p.x0, p.v0, p.a}, feeds(p));
  EXPECT_TRUE(result.ok) << result.message;
}

}  // namespace
}  // namespace adgraph
