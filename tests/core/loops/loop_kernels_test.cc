// The reversal schedules of a loop's adjoint (core/loops/loop_kernels.cc):
// every schedule gives bitwise the same loss and gradient, and the forward
// steps each one recomputes are counted against Revolve's optimum and the
// every-k rule.
#include <gtest/gtest.h>

#include "tests/core/loops/pendulum.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

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

}  // namespace
}  // namespace adgraph
