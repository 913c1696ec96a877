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
#include <nlohmann/json.hpp>
#include <optional>
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
  EXPECT_EQ(CheckpointSchedule::automatic().describe(), "auto");
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
  error.clear();
  EXPECT_TRUE(CheckpointSchedule::automatic().is_valid(&error));
  EXPECT_EQ(error, "");
  EXPECT_EQ(CheckpointSchedule::every(3), CheckpointSchedule::every(3));
  EXPECT_FALSE(CheckpointSchedule::every(3) == CheckpointSchedule::binomial(3));
}

using S = CheckpointSchedule;

std::optional<S> parsed(const std::string& text) {
  std::string error;
  std::optional<S> s = S::parse(text, &error);
  EXPECT_EQ(error, "") << text;
  return s;
}

// The message of a refused text: the grammar, then the text as written.
std::string refused(const std::string& text) {
  std::string error;
  EXPECT_EQ(S::parse(text, &error), std::nullopt) << text;
  return error;
}

const std::string kGrammarMessage =
    "a checkpoint schedule is all, auto, N (binomial with N >= 1 snapshots), "
    "every:K (K >= 1) or budget:BYTES (BYTES >= 1, optionally with KiB, MiB "
    "or GiB); got ";

TEST(CheckpointSchedule, ParsesEachFormOfTheGrammar) {
  EXPECT_EQ(parsed("all"), S::store_all());
  EXPECT_EQ(parsed("auto"), S::automatic());
  EXPECT_EQ(parsed("1"), S::binomial(1));
  EXPECT_EQ(parsed("40"), S::binomial(40));
  EXPECT_EQ(parsed("007"), S::binomial(7));
  EXPECT_EQ(parsed("every:1"), S::every(1));
  EXPECT_EQ(parsed("every:25"), S::every(25));
  EXPECT_EQ(parsed("budget:1"), S::memory_budget(1));
  EXPECT_EQ(parsed("budget:4096"), S::memory_budget(4096));
  EXPECT_EQ(parsed("budget:3KiB"), S::memory_budget(3 * 1024));
  EXPECT_EQ(parsed("budget:64MiB"), S::memory_budget(64 * 1048576));
  EXPECT_EQ(parsed("budget:2GiB"), S::memory_budget(2147483648));
  EXPECT_EQ(parsed("999999999999999999"), S::binomial(999999999999999999));
}

TEST(CheckpointSchedule, RefusesWithTheGrammarAndTheTextAsWritten) {
  for (const char* text : {"",
                           "0",
                           "-1",
                           "+3",
                           " 3",
                           "3 ",
                           "3.0",
                           "1e3",
                           "All",
                           "AUTO",
                           "every",
                           "every:",
                           "every:0",
                           "every:-2",
                           "every 10",
                           "every:3:4",
                           "binomial 100",
                           "binomial:4",
                           "budget",
                           "budget:",
                           "budget:0",
                           "budget:0KiB",
                           "budget:KiB",
                           "budget:1kB",
                           "budget:1 MiB",
                           "budget:1TiB",
                           "default",
                           "9999999999999999999",
                           "budget:9999999999GiB"}) {
    EXPECT_EQ(refused(text), kGrammarMessage + nlohmann::json(text).dump());
  }
  // The text is quoted as JSON writes it.
  EXPECT_EQ(refused("say \"x\""), kGrammarMessage + "\"say \\\"x\\\"\"");
}

TEST(CheckpointSchedule, ReadsItsJsonFormTheSameWay) {
  std::string error;
  auto from = [&](const char* text) {
    error.clear();
    return S::from_json(nlohmann::json::parse(text), &error);
  };
  EXPECT_EQ(from(R"("every:4")"), S::every(4));
  EXPECT_EQ(from("12"), S::binomial(12));
  EXPECT_EQ(from(R"({"every": 3})"), S::every(3));
  EXPECT_EQ(from(R"({"binomial": 5})"), S::binomial(5));
  EXPECT_EQ(from(R"({"budget": 512})"), S::memory_budget(512));
  EXPECT_EQ(error, "");
  const std::pair<const char*, const char*> bad[] = {
      {"0", "0"},
      {"-4", "-4"},
      {"2.5", "2.5"},
      {"true", "true"},
      {"null", "null"},
      {"[3]", "[3]"},
      {R"("every:0")", R"("every:0")"},
      {R"({"every": 0})", R"({"every":0})"},
      {R"({"every": "2"})", R"({"every":"2"})"},
      {R"({"every": 2, "budget": 9})", R"({"budget":9,"every":2})"},
      {R"({"often": 2})", R"({"often":2})"},
      {"18446744073709551615", "18446744073709551615"}};
  for (const auto& [text, shown] : bad) {
    EXPECT_EQ(from(text), std::nullopt) << text;
    EXPECT_EQ(error, kGrammarMessage + shown) << text;
  }
}

TEST(CheckpointSchedule, ToStringReadsBackToTheSameSchedule) {
  const S all[] = {S::store_all(),
                   S::automatic(),
                   S::binomial(1),
                   S::binomial(123456789012),
                   S::every(1),
                   S::every(17),
                   S::memory_budget(1),
                   S::memory_budget(int64_t{5} << 30)};
  const char* text[] = {"all",
                        "auto",
                        "1",
                        "123456789012",
                        "every:1",
                        "every:17",
                        "budget:1",
                        "budget:5368709120"};
  for (std::size_t i = 0; i < std::size(all); ++i) {
    EXPECT_EQ(all[i].to_string(), text[i]);
    EXPECT_EQ(parsed(all[i].to_string()), all[i]) << text[i];
  }
  EXPECT_EQ(S::graph_default().to_string(), "default");
}

TEST(CheckpointSchedule, AutoResolvesToTheTwoSweepBinomial) {
  // C(s + 2, 2) >= n: 1 step needs 1 snapshot, 10 steps 3 (C(5,2) = 10),
  // 11 steps 4, 1000 steps 44.
  EXPECT_EQ(S::automatic().resolved(1), S::binomial(1));
  EXPECT_EQ(S::automatic().resolved(10), S::binomial(3));
  EXPECT_EQ(S::automatic().resolved(11), S::binomial(4));
  EXPECT_EQ(S::automatic().resolved(1000), S::binomial(44));
  EXPECT_EQ(S::automatic().resolved(0), S::binomial(1));
  EXPECT_EQ(S::every(5).resolved(1000), S::every(5));
  EXPECT_EQ(S::store_all().resolved(7), S::store_all());
  EXPECT_EQ(S::graph_default().resolved(7), S::graph_default());
}

}  // namespace
}  // namespace adgraph
