// Checkpoint schedules on their own: binomial coefficients from Pascal's
// rule, Revolve's step counts and splits against the dynamic programme
// they solve (written out here, independently of the closed forms), the
// snapshot rule of the "auto" schedule by search, and the schedules' own
// descriptions and checks.
#include "core/checkpoint_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace adgraph {
namespace {

TEST(CheckpointSchedule, BinomialCoefficientsFollowPascalsRuleAndSaturate) {
  std::vector<std::vector<int64_t>> pascal(61);
  for (int n = 0; n <= 60; ++n) {
    pascal[n].assign(n + 1, 1);
    for (int k = 1; k < n; ++k)
      pascal[n][k] = pascal[n - 1][k - 1] + pascal[n - 1][k];
    for (int k = 0; k <= n; ++k)
      ASSERT_EQ(binomial_coefficient(n, k), pascal[n][k]) << n << ", " << k;
  }
  EXPECT_EQ(binomial_coefficient(5, -1), 0);
  EXPECT_EQ(binomial_coefficient(5, 6), 0);
  EXPECT_EQ(binomial_coefficient(-1, 0), 0);
  // C(200, 100) ≈ 9.05e58: saturates.
  EXPECT_EQ(binomial_coefficient(200, 100),
            std::numeric_limits<int64_t>::max());
}

// t(n, s) by the dynamic programme the header states: with one snapshot
// every step is recomputed from c_0, n(n−1)/2 steps; otherwise the best
// split j (j forward steps, then reverse [j, n) with s − 1 snapshots and
// [0, j) with s).
class Programme {
 public:
  Programme(int64_t n_max, int64_t s_max)
      : t_(s_max + 1, std::vector<int64_t>(n_max + 1, 0)) {
    for (int64_t n = 1; n <= n_max; ++n) t_[1][n] = n * (n - 1) / 2;
    for (int64_t s = 2; s <= s_max; ++s) {
      for (int64_t n = 2; n <= n_max; ++n) {
        int64_t best = std::numeric_limits<int64_t>::max();
        for (int64_t j = 1; j < n; ++j) best = std::min(best, cost(n, s, j));
        t_[s][n] = best;
      }
    }
  }
  int64_t t(int64_t n, int64_t s) const { return t_[s][n]; }
  int64_t cost(int64_t n, int64_t s, int64_t j) const {
    return j + t_[s - 1][n - j] + t_[s][j];
  }

 private:
  std::vector<std::vector<int64_t>> t_;
};

TEST(CheckpointSchedule, RevolveStepsAndSplitsSolveTheDynamicProgramme) {
  const Programme p(150, 9);
  for (int64_t s = 1; s <= 9; ++s) {
    for (int64_t n = 1; n <= 150; ++n) {
      ASSERT_EQ(binomial_forward_steps(n, s), p.t(n, s))
          << "n " << n << ", s " << s;
      if (n < 2 || s < 2) continue;
      const int64_t j = binomial_split(n, s);
      ASSERT_GE(j, 1);
      ASSERT_LT(j, n);
      ASSERT_EQ(p.cost(n, s, j), p.t(n, s))
          << "the split " << j << " of n " << n << ", s " << s
          << " is not optimal";
    }
  }
  // Two values by hand: 10 steps with 3 snapshots take 15 forward steps
  // (r = 2: 2·10 − C(5, 1)); with a snapshot per step, one sweep: n − 1.
  EXPECT_EQ(binomial_forward_steps(10, 3), 15);
  EXPECT_EQ(binomial_forward_steps(20, 20), 19);
}

TEST(CheckpointSchedule, AutoTakesTheFewestSnapshotsOfAtMostOneRecomputation) {
  for (int64_t n = 1; n <= 500; ++n) {
    // The smallest s with C(s + 2, 2) = (s + 2)(s + 1)/2 >= n, at most n.
    int64_t want = 1;
    while (want < n && (want + 2) * (want + 1) / 2 < n) ++want;
    ASSERT_EQ(binomial_two_sweep_snapshots(n), want) << n;
  }
  EXPECT_EQ(binomial_two_sweep_snapshots(1000), 44);  // 46·45/2 = 1035
}

TEST(CheckpointSchedule, DescribesAndChecksItself) {
  EXPECT_EQ(CheckpointSchedule::graph_default().describe(), "default");
  EXPECT_EQ(CheckpointSchedule::store_all().describe(), "all");
  EXPECT_EQ(CheckpointSchedule::every(10).describe(), "every 10");
  EXPECT_EQ(CheckpointSchedule::binomial(100).describe(), "binomial 100");
  EXPECT_EQ(CheckpointSchedule::memory_budget(1 << 20).describe(),
            "budget 1048576 B");
  std::string error;
  EXPECT_TRUE(CheckpointSchedule::store_all().is_valid(&error));
  EXPECT_TRUE(CheckpointSchedule::binomial(1).is_valid(&error));
  EXPECT_EQ(error, "");
  EXPECT_FALSE(CheckpointSchedule::every(0).is_valid(&error));
  EXPECT_EQ(error, "every(k) needs k >= 1, got 0");
  EXPECT_FALSE(CheckpointSchedule::binomial(-2).is_valid(&error));
  EXPECT_EQ(error, "binomial(s) needs s >= 1 snapshots, got -2");
  EXPECT_FALSE(CheckpointSchedule::memory_budget(0).is_valid(&error));
  EXPECT_EQ(error, "memory_budget needs at least 1 byte, got 0");
  EXPECT_EQ(CheckpointSchedule::every(3), CheckpointSchedule::every(3));
  EXPECT_FALSE(CheckpointSchedule::every(3) == CheckpointSchedule::binomial(3));
}

}  // namespace
}  // namespace adgraph
