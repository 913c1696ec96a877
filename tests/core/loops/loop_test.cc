// Loops (core/loops/loop.cc) without communication: LoopOptions' checks, a
// graph that does not grow with the trip count, two levels of loops and
// the errors naming the loop and its field. The forward run, the reversal
// schedules and the derivative rules have suites of their own
// (loop_runner_test, loop_kernels_test, loop_derivatives_test).
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
#include "tests/core/loops/pendulum.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

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
  // A negative step is out of the field's range, whatever the trip count
  // (the table's form: the range of each entry).
  o.output_steps = {-1};
  EXPECT_EQ(check(o, 3), "output_steps: every entry must be >= 0, got -1");
  o.output_steps = {0, 5, -2};
  EXPECT_EQ(check(o, 3), "output_steps: every entry must be >= 0, got -2");
  o.output_steps.clear();
  o.checkpoints = CheckpointSchedule::binomial(0);
  std::string schedule_error;
  ASSERT_FALSE(o.checkpoints.is_valid(&schedule_error));
  EXPECT_EQ(check(o, 3), "checkpoints: " + schedule_error);
  o.checkpoints = CheckpointSchedule::binomial(2);
  EXPECT_EQ(check(o, 3), "ok");
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
              LoopOptions o;
              o.name = "tiny";
              o.checkpoints = CheckpointSchedule::memory_budget(10);
              loop(
                  3,
                  {x},
                  {},
                  [](const LoopArgs& l) {
                    return LoopStep{{l.carries[0]}, {}};
                  },
                  o);
            }),
            "node \"tiny\" (loop): checkpoints: a budget of 10 B holds no "
            "snapshot "
            "of the loop's state (16 B: every carry once); give at least 16 B");
  EXPECT_EQ(message([&] {
              g.add_node("loop", {x}, {{"trips", 2}});
            }),
            "node \"loop_1\" (loop): op: a loop node is built by loop() (or a "
            "JSON repeat block), not by name");
  // Nothing was added to the graph by the failed loops but the last node.
  EXPECT_EQ(g.num_nodes(), 1);
}

// Per-step inputs: c_{t+1} = 2·c_t + x_t, so c_T = 2^T·c_0 + Σ_t 2^(T−1−t)·x_t
// and ∂(w·c_T)/∂x_t = 2^(T−1−t)·w, by hand.
TEST(LoopXs, EachStepReadsItsRowAndItsCotangentGoesBackToIt) {
  constexpr int kSteps = 5;
  Tensor xs_value(Shape{kSteps, 2});
  for (int t = 0; t < kSteps; ++t) {
    xs_value[2 * t] = t + 1.0;
    xs_value[2 * t + 1] = -0.5 * t;
  }
  std::vector<std::vector<double>> gradients_by_schedule;
  for (const CheckpointSchedule& schedule : {CheckpointSchedule::store_all(),
                                             CheckpointSchedule::every(2),
                                             CheckpointSchedule::binomial(2)}) {
    Graph g;
    Value c0 = g.placeholder("c0", {2});
    Value xs = g.placeholder("xs", {kSteps, 2});
    LoopOptions options;
    options.checkpoints = schedule;
    LoopResult r = loop(
        kSteps,
        {c0},
        {},
        {xs},
        [](const LoopArgs& a) {
          return LoopStep{{2.0 * a.carries[0] + a.xs[0]}, {}};
        },
        options);
    Value w = g.constant(Tensor({3.0, -1.0}));
    Value loss = sum(r.carries[0] * w);
    Value grad = gradient(loss, xs);
    Session s(g);
    auto out =
        s.run({r.carries[0], grad}, {{c0, Tensor({1.0, 2.0})}, {xs, xs_value}});
    double want0 = 32.0 * 1.0, want1 = 32.0 * 2.0;
    for (int t = 0; t < kSteps; ++t) {
      want0 += std::ldexp(1.0, kSteps - 1 - t) * xs_value[2 * t];
      want1 += std::ldexp(1.0, kSteps - 1 - t) * xs_value[2 * t + 1];
      EXPECT_EQ(out[1][2 * t], 3.0 * std::ldexp(1.0, kSteps - 1 - t)) << t;
      EXPECT_EQ(out[1][2 * t + 1], -1.0 * std::ldexp(1.0, kSteps - 1 - t)) << t;
    }
    EXPECT_EQ(out[0][0], want0);
    EXPECT_EQ(out[0][1], want1);
    gradients_by_schedule.push_back(out[1].to_vector());
    expect_gradients_ok(sum(square(r.carries[0]) * w),
                        {c0, xs},
                        {{c0, Tensor({1.0, 2.0})}, {xs, xs_value}});
  }
  EXPECT_EQ(gradients_by_schedule[1], gradients_by_schedule[0]);
  EXPECT_EQ(gradients_by_schedule[2], gradients_by_schedule[0]);
}

TEST(LoopXs, AnArrayOfTheWrongLengthIsRefusedNamingXs) {
  Graph g;
  Value c0 = g.placeholder("c0", {2});
  Value xs = g.placeholder("xs", {4, 2});
  try {
    loop(5, {c0}, {}, {xs}, [](const LoopArgs& a) {
      return LoopStep{{a.carries[0] + a.xs[0]}, {}};
    });
    ADD_FAILURE() << "accepted";
  } catch (const GraphError& e) {
    EXPECT_EQ(e.field(), "xs");
    EXPECT_NE(
        std::string(e.what()).find(
            "xs[0] must have a first axis of 5 rows (one a step), got [4, 2]"),
        std::string::npos)
        << e.what();
  }
}

TEST(StepRow, RowsAndTheirAdjointsPassTheGradientChecker) {
  Graph g;
  Value x = g.placeholder("x", {3, 2}), r = g.placeholder("r", {2});
  Value t = g.scalar(1.0);
  Value loss =
      sum(square(step_row(x, t)) * 1.5) + sum(square(row_add(x, r, t)));
  Tensor xv(Shape{3, 2}, std::vector<double>{1, 2, 3, 4, 5, 6});
  Session s(g);
  EXPECT_EQ(s.run(step_row(x, t), {{x, xv}}).to_vector(),
            (std::vector<double>{3, 4}));
  expect_gradients_ok(loss, {x, r}, {{x, xv}, {r, Tensor({0.5, -0.5})}});
  Value bad = step_row(x, g.scalar(3.0));
  EXPECT_THROW(s.run(bad, {{x, xv}}), RunError);
}

}  // namespace
}  // namespace adgraph
