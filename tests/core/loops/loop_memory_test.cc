// The memory a loop holds (core/loops/loop.h): snapshots under each schedule,
// and the plan's estimate of them, of the tape two adjoints read, of nested
// loops and of the values body runners keep, each refused under a limit
// with the message that names what is large.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "core/loops/loop.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

// x_{t+1} = x_t + 0.01·step(x_t) over n steps of a one-carry loop from a
// placeholder "x0" of `size` doubles, kept by `schedule`.
struct OneCarry {
  Value x0;
  LoopResult r;
};
OneCarry one_carry_loop(Graph& g,
                        int64_t size,
                        int64_t n,
                        CheckpointSchedule schedule,
                        Value (*step)(Value)) {
  OneCarry out;
  out.x0 = g.placeholder("x0", {size});
  LoopOptions o;
  o.checkpoints = schedule;
  o.name = "time";
  out.r = loop(
      n,
      {out.x0},
      {},
      [step](const LoopArgs& l) {
        return LoopStep{{l.carries[0] + 0.01 * step(l.carries[0])}, {}};
      },
      o);
  return out;
}

TEST(Loop, BinomialSnapshotsBoundThePeakMemory) {
  // 200 steps on a 4096-element state: store_all holds 199 snapshots,
  // binomial(5) at most 6 (5 and the tape's last state).
  auto peak = [](CheckpointSchedule schedule) {
    Graph g;
    OneCarry l = one_carry_loop(g, 4096, 200, schedule, sin);
    Value gx = gradient(sum(l.r.carries[0]), l.x0);
    Session s(g);
    s.run(gx, {{l.x0, Tensor(Shape{4096}, 0.5)}});
    return loop_stats(loop_adjoints(l.r.node)[0]).snapshot_bytes;
  };
  EXPECT_GE(peak(CheckpointSchedule::store_all()), 199 * 4096 * 8);
  EXPECT_LE(peak(CheckpointSchedule::binomial(5)), 6 * 4096 * 8);
}

// Sets an environment variable for one scope.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old, had_ = true;
    setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, old_.c_str(), 1);
    else
      unsetenv(name_);
  }

 private:
  const char* name_;
  std::string old_;
  bool had_ = false;
};

// What a run says when it is refused ("no error" when it runs).
std::string run_error(Session& s,
                      const std::vector<Value>& fetches,
                      const FeedMap& feeds) {
  try {
    s.run(fetches, feeds);
  } catch (const RunError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Loop, TheMemoryEstimateCountsTheSnapshotsAndNamesTheLoop) {
  // A 4 MiB state (2^19 doubles) over 80 steps. With store_all, the tape
  // holds states 1…79 (316 MiB) until the adjoint, which holds at most 80
  // (320 MiB) beside two more 4 MiB tensors (the cotangent of x_80 and the
  // gradient): 328 MiB. The body runners keep their values too: the
  // forward body's x², 0.01·x² and x + 0.01·x² (12 MiB), the reverse
  // body's 0.01·x̄, 2·x, their product and x̄ plus it (16 MiB): 356 MiB,
  // past a 300 MiB limit before anything runs. (The run peaks at ~360 MiB
  // resident above the process's start.) The forward alone tapes nothing;
  // binomial(3) holds at most 4 states.
  ScopedEnv limit("ADGRAPH_MEMORY_LIMIT", "300M");
  auto build_loop = [](Graph& g, CheckpointSchedule schedule) {
    OneCarry l = one_carry_loop(g, int64_t{1} << 19, 80, schedule, square);
    return std::pair{l.x0, sum(l.r.carries[0])};
  };
  const Tensor x(Shape{int64_t{1} << 19}, 0.5);
  {
    Graph g;
    auto [x0, loss] = build_loop(g, CheckpointSchedule::store_all());
    Value gx = gradient(loss, x0);
    Session s(g);
    const std::string message = run_error(s, {gx}, {{x0, x}});
    EXPECT_EQ(message.rfind(
                  "fetch: this run needs an estimated 356 MiB of intermediate "
                  "tensors at its peak (the snapshots of loop node \"time\" "
                  "take 320 MiB (checkpoints \"all\"; a binomial or "
                  "memory-budget schedule keeps fewer)), more than the 300 MiB "
                  "this process can allocate",
                  0),
              0u)
        << message;
    // Nothing ran: the forward alone needs no tape and runs.
    const double forward = s.run(loss, {{x0, x}})[0];
    const double step = 0.5;  // every element follows the same recurrence
    double y = step;
    for (int t = 0; t < 80; ++t) y += 0.01 * y * y;
    EXPECT_NEAR(forward, y * (1 << 19), 1e-9 * y * (1 << 19));
  }
  {
    Graph g;
    auto [x0, loss] = build_loop(g, CheckpointSchedule::binomial(3));
    Value gx = gradient(loss, x0);
    Session s(g);
    const Tensor got = s.run(gx, {{x0, x}});
    // d x_n / d x_0 = Π (1 + 0.02 x_t), the same for every element.
    double y = 0.5, d = 1;
    for (int t = 0; t < 80; ++t) d *= 1 + 0.02 * y, y += 0.01 * y * y;
    EXPECT_NEAR(got[0], d, 1e-13);
    EXPECT_EQ(got[got.size() - 1], got[0]);
  }
}

// Two gradients of one loop in one run: two adjoints read its tape. The
// first works on a copy (up to 80 states, 320 MiB) while the 316 MiB tape
// stays for the second, so the run peaks at 636 MiB, plus the body
// runners' 28 MiB (see above) and a few 4 MiB tensors (x_80, cotangents,
// gradients): refused under a 600 MiB limit. Counting the tape once, as
// for a single adjoint, said ~330 MiB.
TEST(Loop, TheMemoryEstimateCountsATapeReadByTwoAdjointsTwice) {
  Graph g;
  OneCarry l = one_carry_loop(
      g, int64_t{1} << 19, 80, CheckpointSchedule::store_all(), square);
  Value last = l.r.carries[0];
  Value g1 = gradient(sum(last), l.x0);
  Value g2 = gradient(sum(last * last), l.x0);
  ASSERT_EQ(loop_adjoints(l.r.node).size(), 2u);
  const Tensor x(Shape{int64_t{1} << 19}, 0.5);
  Session s(g);
  {
    ScopedEnv limit("ADGRAPH_MEMORY_LIMIT", "600M");
    const std::string message = run_error(s, {g1, g2}, {{l.x0, x}});
    const std::string head = "fetch: this run needs an estimated ";
    ASSERT_EQ(message.rfind(head, 0), 0u) << message;
    const double mib = std::stod(message.substr(head.size()));
    EXPECT_GE(mib, 664.0) << message;
    EXPECT_LE(mib, 690.0) << message;
    EXPECT_NE(message.find("the snapshots of loop node \"time\" take 320 MiB"),
              std::string::npos)
        << message;
  }
  // Without the limit both gradients run: d x_80 / d x_0 = Π (1 + 0.02 x_t)
  // and d Σ x_80² / d x_0 = 2 x_80 · that.
  const std::vector<Tensor> got = s.run({g1, g2}, {{l.x0, x}});
  double y = 0.5, d = 1;
  for (int t = 0; t < 80; ++t) d *= 1 + 0.02 * y, y += 0.01 * y * y;
  EXPECT_NEAR(got[0][0], d, 1e-13);
  EXPECT_NEAR(got[1][0], 2 * y * d, 1e-13);
  EXPECT_EQ(got[1][got[1].size() - 1], got[1][0]);
}

// Nested loops: 3 outer steps, each an inner loop of 80 steps over a 4 MiB
// state that keeps every state. The outer loop's own snapshots are 3
// states (12 MiB), but each outer adjoint step runs the inner loop's
// adjoint, which holds up to 80 states (320 MiB): refused under a 300 MiB
// limit, naming the inner loop. (Counting only the outer loop's snapshots,
// the estimate stayed under the check's 256 MiB threshold and the run
// peaked at 411 MiB resident.) With binomial(3) inside, each level holds
// at most 4 states and the gradient runs.
TEST(Loop, TheMemoryEstimateCountsTheSnapshotsOfNestedLoops) {
  ScopedEnv limit("ADGRAPH_MEMORY_LIMIT", "300M");
  constexpr int64_t size = int64_t{1} << 19;
  auto build = [](Graph& g, CheckpointSchedule inner_schedule) {
    Value x0 = g.placeholder("x0", {size});
    LoopOptions outer;
    outer.name = "outer";
    LoopResult r = loop(
        3,
        {x0},
        {},
        [&](const LoopArgs& a) {
          LoopOptions inner;
          inner.name = "inner";
          inner.checkpoints = inner_schedule;
          LoopResult in = loop(
              80,
              {a.carries[0]},
              {},
              [](const LoopArgs& b) {
                return LoopStep{{b.carries[0] + 0.001 * square(b.carries[0])},
                                {}};
              },
              inner);
          return LoopStep{{in.carries[0]}, {}};
        },
        outer);
    return std::pair{x0, gradient(sum(r.carries[0]), x0)};
  };
  const Tensor x(Shape{size}, 0.5);
  {
    Graph g;
    auto [x0, gx] = build(g, CheckpointSchedule::store_all());
    Session s(g);
    const std::string message = run_error(s, {gx}, {{x0, x}});
    EXPECT_NE(message.find("the snapshots of loop node \"inner\" take 320 MiB "
                           "(checkpoints \"all\""),
              std::string::npos)
        << message;
  }
  {
    Graph g;
    auto [x0, gx] = build(g, CheckpointSchedule::binomial(3));
    Session s(g);
    const Tensor got = s.run(gx, {{x0, x}});
    // 240 steps of x ← x + 0.001 x²: d x_240 / d x_0 = Π (1 + 0.002 x_t).
    double y = 0.5, d = 1;
    for (int t = 0; t < 240; ++t) d *= 1 + 0.002 * y, y += 0.001 * y * y;
    EXPECT_NEAR(got[0], d, 1e-12);
  }
}

constexpr int64_t kWideRows = 40960, kWideCols = 1024;

// `steps` steps from x0 (kWideCols points) of x ← x + 0.001·m², m the mean
// of x broadcast to kWideRows × kWideCols (node "wide", 320 MiB); with
// `output`, m is also each step's output. The loop node is "widen".
LoopResult widening_loop(Value x0,
                         int64_t steps,
                         LoopOptions options,
                         bool output) {
  options.name = "widen";
  return loop(
      steps,
      {x0},
      {},
      [output](const LoopArgs& a) {
        const Value& x = a.carries[0];
        NodeOptions named;
        named.name = "wide";
        Value wide =
            x.graph().add_node("broadcast_to",
                               {x},
                               {{"shape", Shape{kWideRows, kWideCols}}},
                               named);
        Value m = mean(wide, {0});
        return LoopStep{{x + 0.001 * square(m)},
                        output ? std::vector<Value>{m} : std::vector<Value>{}};
      },
      options);
}

// A body value far larger than the loop's state: each step broadcasts the
// 1024-point state to 40960 × 1024 (320 MiB) and takes its mean back. The
// body's runner keeps that value from the loop's first step on, so the
// estimate is at least 320 MiB and names it, refused under a 300 MiB
// limit. (Counting only snapshots and the plan's own values, the estimate
// was a few KiB, under the check's threshold, and the run took 320 MiB.)
TEST(Loop, TheMemoryEstimateCountsTheValuesALoopBodyKeeps) {
  constexpr int64_t cols = kWideCols;
  Graph g;
  Value x0 = g.placeholder("x0", {cols});
  LoopResult r = widening_loop(x0, 3, {}, false);
  Tensor x(Shape{cols});
  for (int64_t j = 0; j < cols; ++j) x[j] = 0.25 + 0.5 * j / cols;
  Session s(g);
  {
    ScopedEnv limit("ADGRAPH_MEMORY_LIMIT", "300M");
    const std::string message = run_error(s, {r.carries[0]}, {{x0, x}});
    const std::string head = "fetch: this run needs an estimated ";
    ASSERT_EQ(message.rfind(head, 0), 0u) << message;
    const double mib = std::stod(message.substr(head.size()));
    EXPECT_GE(mib, 320.0) << message;
    EXPECT_LE(mib, 321.0) << message;
    EXPECT_NE(message.find("the largest, 320 MiB, is node \"wide\" in the "
                           "body of loop node \"widen\""),
              std::string::npos)
        << message;
  }
  // Without the limit it runs: x ← x + 0.001 x², the mean of 40960 copies
  // of a value being that value up to rounding.
  const Tensor got = s.run(r.carries[0], {{x0, x}});
  for (int64_t j = 0; j < cols; j += 341) {
    double y = x[j];
    for (int t = 0; t < 3; ++t) y += 0.001 * y * y;
    EXPECT_NEAR(got[j], y, 1e-12) << j;
  }
}

// A forward loop whose step outputs are read, and its adjoint under
// binomial(2) over 8 steps: widening_loop with the mean as each step's
// output. Three runners keep values: the forward loop's, which makes the
// carry and the output (the broadcast, 320 MiB); the one the adjoint
// recomputes states with, which makes the carry only (320 MiB: a runner
// per set of wanted outputs, both kept in the loop's cache); and the
// reverse body's, which holds the broadcast again, the broadcast cotangent
// of the mean and that times 1/40960 (960 MiB). With a few KiB of small
// values the estimate is 1600 MiB, "1.56 GiB"; the run peaks at 1607 MiB
// resident. Counting the forward body once, it said 1.25 GiB.
TEST(Loop, TheMemoryEstimateCountsEachRunnerOfABody) {
  Graph g;
  Value x0 = g.placeholder("x0", {kWideCols});
  LoopOptions options;
  options.checkpoints = CheckpointSchedule::binomial(2);
  LoopResult r = widening_loop(x0, 8, options, true);
  Value seen = sum(r.outputs[0]);
  Value grad = gradient(sum(r.carries[0]), x0);
  Session s(g);
  ScopedEnv limit("ADGRAPH_MEMORY_LIMIT", "300M");
  const std::string message =
      run_error(s, {seen, grad}, {{x0, Tensor(Shape{kWideCols}, 0.5)}});
  EXPECT_EQ(message.rfind("fetch: this run needs an estimated 1.56 GiB of "
                          "intermediate tensors at its peak",
                          0),
            0u)
      << message;
}

}  // namespace
}  // namespace adgraph
