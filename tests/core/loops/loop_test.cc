// Loops (core/loops/loop.h) without communication: values, gradients and
// tangents through one and two levels of loops, every checkpoint schedule, the
// binomial forward-step counts and the errors.
#include "core/loops/loop.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

// Relative agreement of the schedules with the unrolled graph.
constexpr double kUnrolledTolerance = 1e-14;

// One step of a small non-linear map on a carry pair (x, v) with invariant
// a: x⁺ = x + 0.1·sin(v)·a, v⁺ = 0.9·v + 0.05·x²·a; per-step output x·v.
LoopStep pendulum(const Values& c, Value a) {
  Value x = c[0], v = c[1];
  return {{x + 0.1 * sin(v) * a, 0.9 * v + 0.05 * square(x) * a}, {x * v}};
}

struct Problem {
  Graph g;
  Value x0, v0, a, loss;
  Value loop_node;
};

// loss = Σ x_n² + Σ v_n + Σ_t w_t·(x·v)_t over the kept steps.
void build(Problem& p,
           int64_t n,
           CheckpointSchedule schedule,
           std::vector<int64_t> steps = {}) {
  p.x0 = p.g.placeholder("x0", {3});
  p.v0 = p.g.placeholder("v0", {3});
  p.a = p.g.placeholder("a", {3});
  LoopOptions options;
  options.checkpoints = schedule;
  options.output_steps = steps;
  LoopResult r = loop(
      n,
      {p.x0, p.v0},
      {p.a},
      [](const LoopArgs& l) { return pendulum(l.carries, l.invariants[0]); },
      options);
  p.loop_node = r.node;
  Value y = r.outputs[0];  // [K, 3]
  Tensor w(y.shape());
  for (int64_t i = 0; i < w.size(); ++i) w[i] = 0.01 * (i % 7) - 0.02;
  p.loss =
      sum(square(r.carries[0])) + sum(r.carries[1]) + dot(y, p.g.constant(w));
}

// The same computation unrolled: the reference.
Value build_unrolled(Problem& p, int64_t n, std::vector<int64_t> steps = {}) {
  p.x0 = p.g.placeholder("x0", {3});
  p.v0 = p.g.placeholder("v0", {3});
  p.a = p.g.placeholder("a", {3});
  Values c = {p.x0, p.v0};
  Value weighted;
  int64_t row = 0;
  for (int64_t t = 0; t < n; ++t) {
    LoopStep s = pendulum(c, p.a);
    const bool kept = steps.empty() ||
                      std::find(steps.begin(), steps.end(), t) != steps.end();
    if (kept) {
      Tensor w(Shape{3});
      for (int64_t i = 0; i < 3; ++i) w[i] = 0.01 * ((row * 3 + i) % 7) - 0.02;
      Value term = dot(s.outputs[0], p.g.constant(w));
      weighted = weighted.valid() ? weighted + term : term;
      ++row;
    }
    c = s.carries;
  }
  p.loss = sum(square(c[0])) + sum(c[1]) + weighted;
  return p.loss;
}

FeedMap feeds_of(const Problem& p) {
  return {{p.x0, Tensor({0.3, -0.2, 0.5})},
          {p.v0, Tensor({0.1, 0.4, -0.3})},
          {p.a, Tensor({1.0, 0.7, 1.3})}};
}

// (loss, ∂loss/∂x0, ∂loss/∂v0, ∂loss/∂a) in one run.
std::vector<Tensor> loss_and_gradient(Problem& p) {
  Values g = gradients(p.loss, {p.x0, p.v0, p.a});
  Session s(p.g);
  return s.run({p.loss, g[0], g[1], g[2]}, feeds_of(p));
}

// LoopOptions::is_valid, message and field by hand.
TEST(LoopOptions, IsValidNamesTheFieldAndSaysWhy) {
  auto check = [](const LoopOptions& o, int64_t trips) {
    std::string error, field;
    return o.is_valid(trips, &error, &field) ? std::string("ok")
                                             : field + ": " + error;
  };
  LoopOptions o;
  EXPECT_EQ(check(o, 1), "ok");  // the graph's default schedule
  o.output_steps = {0, 2};
  EXPECT_EQ(check(o, 3), "ok");
  EXPECT_EQ(check(o, 2),
            "output_steps: output steps must increase strictly within [0, "
            "2); entry 1 is 2");
  o.output_steps = {1, 1};
  EXPECT_EQ(check(o, 3),
            "output_steps: output steps must increase strictly within [0, "
            "3); entry 1 is 1");
  o.output_steps = {-1};
  EXPECT_EQ(check(o, 3),
            "output_steps: output steps must increase strictly within [0, "
            "3); entry 0 is -1");
  o.output_steps.clear();
  o.checkpoints = CheckpointSchedule::binomial(0);
  std::string schedule_error;
  ASSERT_FALSE(o.checkpoints.is_valid(&schedule_error));
  EXPECT_EQ(check(o, 3), "checkpoints: " + schedule_error);
  o.checkpoints = CheckpointSchedule::binomial(2);
  EXPECT_EQ(check(o, 3), "ok");
}

TEST(Loop, ValuesMatchAHandWrittenRecurrence) {
  // x_{t+1} = 0.5·x_t + b, kept at steps 1 and 3 (x_2 and x_4).
  Graph g;
  Value x0 = g.placeholder("x0", {2});
  Value b = g.placeholder("b", {2});
  LoopOptions o;
  o.output_steps = {1, 3};
  LoopResult r = loop(
      5,
      {x0},
      {b},
      [](const LoopArgs& l) {
        Value next = 0.5 * l.carries[0] + l.invariants[0];
        return LoopStep{{next}, {next}};
      },
      o);
  Session s(g);
  auto out = s.run({r.carries[0], r.outputs[0]},
                   {{x0, Tensor({1.0, -2.0})}, {b, Tensor({1.0, 0.0})}});
  // By hand: x = 1, 1.5, 1.75, 1.875, 1.9375, 1.96875 and -2, -1, -0.5, …
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{1.96875, -2.0 / 32}));
  EXPECT_EQ(out[1].shape(), (Shape{2, 2}));
  EXPECT_EQ(out[1].to_vector(),
            (std::vector<double>{1.75, -0.5, 1.9375, -0.125}));
}

TEST(Loop, AnInPlaceLastReaderOfACarryRunsAfterItsOtherReaders) {
  // c_{t+1} = 3·c_t + (−c_t) = 2·c_t: the carry is read by the product
  // first and by the negation last, which may write over the carry's
  // buffer (OpDef::in_place, the body runner's last-reader rule) only
  // after the product has read it. 10 steps: c = 1024·x, exactly. And the
  // same through the adjoint (whose body reads the carried cotangent
  // twice too): dc/dx = 1024.
  Graph g;
  Value x = g.placeholder("x", {300});
  LoopResult r = loop(10, {x}, {}, [](const LoopArgs& l) {
    Value tripled = l.carries[0] * 3.0;
    Value negated = -l.carries[0];
    return LoopStep{{tripled + negated}, {}};
  });
  Value loss = sum(r.carries[0] * r.carries[0]) * 0.5;
  Value grad = gradient(loss, x);
  Tensor xv(Shape{300});
  for (int64_t i = 0; i < xv.size(); ++i) xv[i] = 0.25 * i - 7.0;
  Session s(g);
  const auto out = s.run({r.carries[0], grad}, {{x, xv}});
  for (int64_t i = 0; i < xv.size(); ++i) {
    EXPECT_EQ(out[0][i], 1024.0 * xv[i]) << i;
    EXPECT_EQ(out[1][i], 1024.0 * 1024.0 * xv[i]) << i;
  }
}

TEST(Loop, StepIndexIsFedToTheBody) {
  // c_{t+1} = c_t + t: after 5 steps c = 0 + 1 + 2 + 3 + 4 = 10.
  Graph g;
  Value c0 = g.constant(Tensor::scalar(0.0));
  LoopResult r = loop(5, {c0}, {}, [](const LoopArgs& l) {
    return LoopStep{{l.carries[0] + l.step}, {}};
  });
  Session s(g);
  EXPECT_EQ(s.run(r.carries[0]).item(), 10.0);
}

TEST(Loop, GraphSizeDoesNotGrowWithTheTripCount) {
  auto nodes_for = [](int64_t n) {
    Problem p;
    build(p, n, CheckpointSchedule::binomial(10));
    gradients(p.loss, {p.a});
    return p.g.num_nodes();
  };
  EXPECT_EQ(nodes_for(100), nodes_for(100000));
}

TEST(Loop, GradientCheckerPassesForEverySchedule) {
  for (auto schedule : {CheckpointSchedule::store_all(),
                        CheckpointSchedule::every(3),
                        CheckpointSchedule::binomial(2)}) {
    Problem p;
    build(p, 9, schedule, {0, 4, 8});
    expect_gradients_ok(p.loss, {p.x0, p.v0, p.a}, feeds_of(p));
  }
}

TEST(Loop, EveryScheduleGivesBitwiseTheSameLossAndGradient) {
  const int64_t n = 23;
  Problem ref;
  build(ref, n, CheckpointSchedule::store_all());
  const auto expected = loss_and_gradient(ref);
  for (auto schedule : {CheckpointSchedule::every(1),
                        CheckpointSchedule::every(4),
                        CheckpointSchedule::every(23),
                        CheckpointSchedule::every(50),
                        CheckpointSchedule::binomial(1),
                        CheckpointSchedule::binomial(2),
                        CheckpointSchedule::binomial(3),
                        CheckpointSchedule::binomial(7),
                        CheckpointSchedule::binomial(23),
                        CheckpointSchedule::binomial(100),
                        CheckpointSchedule::memory_budget(5 * 48)}) {
    Problem p;
    build(p, n, schedule);
    const auto got = loss_and_gradient(p);
    for (std::size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k].to_vector(), expected[k].to_vector())
          << schedule.describe() << " output " << k;
    }
  }
}

TEST(Loop, StoreAllAgreesWithTheUnrolledGraph) {
  const std::vector<int64_t> steps = {2, 5, 6};
  Problem loop_p, unrolled;
  build(loop_p, 11, CheckpointSchedule::store_all(), steps);
  build_unrolled(unrolled, 11, steps);
  const auto a = loss_and_gradient(loop_p), b = loss_and_gradient(unrolled);
  for (std::size_t k = 0; k < a.size(); ++k) {
    for (int64_t i = 0; i < a[k].size(); ++i) {
      EXPECT_NEAR(a[k][i],
                  b[k][i],
                  kUnrolledTolerance * std::max(1.0, std::fabs(b[k][i])))
          << "output " << k << " entry " << i;
    }
  }
}

// Revolve's optimum, from the formula alone: r is the integer with
// C(s+r−1, s) < n <= C(s+r, s) and t(n, s) = r·n − C(s+r, r−1).
int64_t choose(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0;
  double c = 1;
  for (int64_t i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return static_cast<int64_t>(std::llround(c));
}
int64_t revolve_steps(int64_t n, int64_t s) {
  int64_t r = 0;
  while (choose(s + r, s) < n) ++r;
  return r * n - choose(s + r, r - 1);
}

TEST(Loop, BinomialForwardStepsAreRevolvesOptimum) {
  // Hand values first: n = 3, s = 1 recomputes 2 + 1 = 3 steps; n = 10,
  // s = 3 (r = 2): 2·10 − C(5, 1) = 15.
  EXPECT_EQ(revolve_steps(3, 1), 3);
  EXPECT_EQ(revolve_steps(10, 3), 15);
  EXPECT_EQ(binomial_forward_steps(10, 3), 15);
  const std::vector<std::pair<int64_t, int64_t>> cases = {{1, 1},
                                                          {2, 1},
                                                          {7, 1},
                                                          {10, 3},
                                                          {11, 3},
                                                          {20, 2},
                                                          {35, 3},
                                                          {36, 3},
                                                          {50, 4},
                                                          {12, 12},
                                                          {12, 40},
                                                          {100, 5}};
  for (auto [n, s] : cases) {
    Problem p;
    build(p, n, CheckpointSchedule::binomial(s));
    loss_and_gradient(p);
    std::vector<Value> adjoints = loop_adjoints(p.loop_node);
    ASSERT_EQ(adjoints.size(), 1u);
    const LoopStats st = loop_stats(adjoints[0]);
    // The forward loop ran n steps and handed over its first sweep, which
    // holds n − 1 of the t(n, s) steps.
    EXPECT_EQ(loop_stats(p.loop_node).forward_steps, n);
    EXPECT_EQ(st.forward_steps, revolve_steps(n, std::min(s, n)) - (n - 1))
        << "n = " << n << ", s = " << s;
    EXPECT_EQ(st.taped_steps, n);
    EXPECT_LE(st.max_snapshots, std::min(s, n) + 1);
  }
}

TEST(Loop, EveryKRecomputesAllButOneSegment) {
  // every(k) recomputes k − 1 steps in each of the ⌈n/k⌉ − 1 earlier
  // segments; the first sweep is the forward loop's.
  for (auto [n, k] : std::vector<std::pair<int64_t, int64_t>>{
           {20, 4}, {21, 4}, {7, 1}, {9, 20}}) {
    Problem p;
    build(p, n, CheckpointSchedule::every(k));
    loss_and_gradient(p);
    const LoopStats st = loop_stats(loop_adjoints(p.loop_node)[0]);
    const int64_t segments = (n + k - 1) / k;
    EXPECT_EQ(st.forward_steps, (segments - 1) * (k - 1))
        << "n = " << n << ", k = " << k;
    // The plan's memory estimate assumes at most ⌈n/k⌉ + k snapshots.
    EXPECT_LE(st.max_snapshots, segments + k) << "n = " << n << ", k = " << k;
  }
}

TEST(Loop, HessianVectorProductMatchesTheUnrolledGraph) {
  // jvp(gradient) through the loop: a loop_adjoint's tangent, which
  // recomputes from c_0 without a tape (t(n, s) forward steps).
  for (auto schedule :
       {CheckpointSchedule::store_all(), CheckpointSchedule::binomial(3)}) {
    Problem lp, up;
    build(lp, 10, schedule);
    build_unrolled(up, 10);
    std::vector<Tensor> hv[2];
    Problem* ps[2] = {&lp, &up};
    for (int i = 0; i < 2; ++i) {
      Problem& p = *ps[i];
      Value g = gradient(p.loss, p.a);
      Value dir = p.g.constant(Tensor({0.3, -1.0, 0.5}));
      Value h = jvp(g, p.a, dir);
      Session s(p.g);
      hv[i] = s.run({g, h}, feeds_of(p));
    }
    for (int k = 0; k < 2; ++k) {
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_NEAR(hv[0][k][j],
                    hv[1][k][j],
                    1e-13 * std::max(1.0, std::fabs(hv[1][k][j])))
            << schedule.describe();
      }
    }
    if (schedule.kind == CheckpointSchedule::Kind::kBinomial) {
      // The tangent adjoint loop is the newest loop_adjoint of lp's graph.
      int newest = -1;
      for (int id = 0; id < lp.g.num_nodes(); ++id) {
        if (lp.g.node(id).op_name() == "loop_adjoint") newest = id;
      }
      EXPECT_EQ(loop_stats(Value(&lp.g, newest)).forward_steps,
                revolve_steps(10, 3));
    }
  }
}

TEST(Loop, TwoLevelsNest) {
  // Outer: 4 steps; inner: 3 steps of y ← y + 0.1·sin(y)·a starting at the
  // outer carry; the outer carry becomes the inner result times 0.9.
  Graph g;
  Value x0 = g.placeholder("x0", {2});
  Value a = g.placeholder("a", {2});
  LoopOptions outer;
  outer.checkpoints = CheckpointSchedule::binomial(2);
  LoopResult r = loop(
      4,
      {x0},
      {a},
      [](const LoopArgs& l) {
        LoopOptions inner;
        inner.checkpoints = CheckpointSchedule::every(2);
        LoopResult in = loop(
            3,
            {l.carries[0]},
            {l.invariants[0]},
            [](const LoopArgs& m) {
              Value y = m.carries[0];
              return LoopStep{{y + 0.1 * sin(y) * m.invariants[0]}, {}};
            },
            inner);
        return LoopStep{{0.9 * in.carries[0]}, {}};
      },
      outer);
  Value loss = sum(square(r.carries[0]));
  // Value by hand-written recurrence.
  double x[2] = {0.4, -0.7}, av[2] = {1.1, 0.6};
  for (int t = 0; t < 4; ++t) {
    for (int k = 0; k < 2; ++k) {
      double y = x[k];
      for (int i = 0; i < 3; ++i) y = y + 0.1 * std::sin(y) * av[k];
      x[k] = 0.9 * y;
    }
  }
  FeedMap feeds{{x0, Tensor({0.4, -0.7})}, {a, Tensor({1.1, 0.6})}};
  Session s(g);
  EXPECT_DOUBLE_EQ(s.run(loss, feeds).item(), x[0] * x[0] + x[1] * x[1]);
  expect_gradients_ok(loss, {x0, a}, feeds);
}

TEST(Loop, ErrorsNameTheLoopAndTheField) {
  Graph g;
  Value x = g.placeholder("x", {2});
  auto message = [&](const std::function<void()>& build_it) {
    try {
      build_it();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message([&] {
              LoopOptions o;
              o.name = "grow";
              loop(
                  3,
                  {x},
                  {},
                  [](const LoopArgs& l) {
                    Value bigger = l.graph->constant(Tensor({1.0, 2.0, 3.0}));
                    return LoopStep{{bigger + sum(l.carries[0])}, {}};
                  },
                  o);
            }),
            "node \"grow\" (loop): carry 0 (\"x\"): the body maps shape [2] "
            "to [3]");
  EXPECT_EQ(message([&] {
              LoopOptions o;
              o.name = "two";
              loop(
                  3,
                  {x},
                  {},
                  [](const LoopArgs& l) {
                    return LoopStep{{l.carries[0], l.carries[0]}, {}};
                  },
                  o);
            }),
            "node \"two\" (loop): body: the body returned 2 carries for 1");
  EXPECT_NE(message([&] {
              loop(3, {x}, {}, [&](const LoopArgs& l) {
                return LoopStep{{l.carries[0] + x}, {}};
              });
            }).find("pass values of the outer graph as invariants"),
            std::string::npos);
  EXPECT_EQ(message([&] {
              LoopOptions o;
              o.name = "none";
              loop(
                  0,
                  {x},
                  {},
                  [](const LoopArgs& l) {
                    return LoopStep{{l.carries[0]}, {}};
                  },
                  o);
            }),
            "node \"none\" (loop): trips: the trip count must be >= 1, got 0");
  EXPECT_EQ(message([&] {
              LoopOptions o;
              o.name = "steps";
              o.output_steps = {1, 1};
              loop(
                  3,
                  {x},
                  {},
                  [](const LoopArgs& l) {
                    return LoopStep{{l.carries[0]}, {l.carries[0]}};
                  },
                  o);
            }),
            "node \"steps\" (loop): output_steps: output steps must increase "
            "strictly within [0, 3); entry 1 is 1");
  EXPECT_EQ(message([&] {
              LoopOptions o;
              o.name = "snaps";
              o.checkpoints = CheckpointSchedule::binomial(0);
              loop(
                  3,
                  {x},
                  {},
                  [](const LoopArgs& l) {
                    return LoopStep{{l.carries[0]}, {}};
                  },
                  o);
            }),
            "node \"snaps\" (loop): checkpoints: binomial(s) needs s >= 1 "
            "snapshots, got 0");
  EXPECT_EQ(
      message([&] {
        LoopOptions o;
        o.name = "every0";
        o.checkpoints = CheckpointSchedule::every(0);
        loop(
            3,
            {x},
            {},
            [](const LoopArgs& l) {
              return LoopStep{{l.carries[0]}, {}};
            },
            o);
      }),
      "node \"every0\" (loop): checkpoints: every(k) needs k >= 1, got 0");
  EXPECT_EQ(message([&] {
              g.add_node("loop", {x}, {{"trips", 2}});
            }),
            "node \"loop_1\" (loop): op: a loop node is built by loop() (or a "
            "JSON repeat block), not by name");
  // Nothing was added to the graph by the failed loops but the last node.
  EXPECT_EQ(g.num_nodes(), 1);
}

TEST(Loop, SecondOrderReverseModeIsRefusedAtTheAdjointLoop) {
  Problem p;
  build(p, 4, CheckpointSchedule::store_all());
  Value g = gradient(p.loss, p.a);
  try {
    gradient(sum(g), p.a);
    ADD_FAILURE() << "no error";
  } catch (const GraphError& e) {
    EXPECT_NE(std::string(e.what()).find("(loop_adjoint): gradient: op has "
                                         "no gradient"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace adgraph
