// The exact accumulator against independent correctly rounded sums:
// __float128 where its 113 bits hold every partial sum exactly (then one
// conversion rounds to nearest, ties to even), and constructions whose
// exact sum is known by hand (cancellations across 1e±300, subnormals,
// ties). Compared with ==.
#include "core/exact_sum.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

namespace adgraph {
namespace {

double sum_of(const std::vector<double>& x) {
  return exact_sum(x.data(), static_cast<int64_t>(x.size()));
}

// Random doubles with 53-bit significands and exponents in [lo, hi].
std::vector<double> random_values(int n, int lo, int hi, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> exponent(lo, hi);
  std::vector<double> x(n);
  for (double& v : x) {
    const uint64_t m = (rng() >> 11) | (uint64_t{1} << 52);
    v = std::ldexp(static_cast<double>(m), exponent(rng) - 52);
    if (rng() & 1) v = -v;
  }
  return x;
}

TEST(ExactSum, MatchesFloat128WhereItIsExact) {
  for (unsigned seed = 1; seed <= 20; ++seed) {
    // Bits from 2^-72 to 2^31 (with 1000 terms): 103 < 113.
    const std::vector<double> x = random_values(1000, -20, 20, seed);
    __float128 exact = 0;
    for (double v : x) exact += v;
    EXPECT_EQ(sum_of(x), static_cast<double>(exact)) << "seed " << seed;
  }
}

TEST(ExactSum, CancelsAcrossTheWholeExponentRange) {
  // Wide values and their negatives cancel exactly, leaving the small
  // ones, whose sum __float128 holds exactly; shuffled, so the cancelling
  // pairs are far apart.
  const std::vector<double> wide = random_values(2000, -1000, 1000, 7);
  const std::vector<double> small = random_values(50, -10, 10, 8);
  std::vector<double> x = wide;
  for (double v : wide) x.push_back(-v);
  x.insert(x.end(), small.begin(), small.end());
  std::mt19937 rng(3);
  std::shuffle(x.begin(), x.end(), rng);
  __float128 exact = 0;
  for (double v : small) exact += v;
  EXPECT_EQ(sum_of(x), static_cast<double>(exact));
  EXPECT_EQ(sum_of({1e300, 1.0, -1e300}), 1.0);
  EXPECT_EQ(sum_of({1e308, 1e308, -1e308}), 1e308);  // naive: inf
  EXPECT_EQ(sum_of({1e-300, 1e300, -1e300, 1e-300}), 2e-300);
}

TEST(ExactSum, RoundsTiesToEvenWithTheStickyBit) {
  const double ulp = std::ldexp(1.0, -52);  // of 1.0
  // 1 + ulp/2 is a tie: to even, 1.
  EXPECT_EQ(sum_of({1.0, ulp / 2}), 1.0);
  // (1 + ulp) + ulp/2 ties to 1 + 2ulp (even).
  EXPECT_EQ(sum_of({1.0 + ulp, ulp / 2}), 1.0 + 2 * ulp);
  // Anything beyond the tie, however far below, rounds up.
  EXPECT_EQ(sum_of({1.0, ulp / 2, std::ldexp(1.0, -1000)}), 1.0 + ulp);
  EXPECT_EQ(sum_of({1.0, ulp / 2, -std::ldexp(1.0, -1000)}), 1.0);
  EXPECT_EQ(sum_of({-1.0, -ulp / 2, -std::ldexp(1.0, -1000)}), -1.0 - ulp);
}

TEST(ExactSum, AddsSubnormalsExactly) {
  const double tiny = std::numeric_limits<double>::denorm_min();  // 2^-1074
  EXPECT_EQ(sum_of({tiny, tiny, tiny}), 3 * tiny);
  EXPECT_EQ(sum_of({DBL_MIN, -tiny}), DBL_MIN - tiny);
  EXPECT_EQ(sum_of({tiny, -tiny}), 0.0);
  EXPECT_EQ(sum_of({1.0, tiny, -1.0}), tiny);
  std::vector<double> many(1 << 20, tiny);
  EXPECT_EQ(sum_of(many), std::ldexp(1.0, 20 - 1074));
}

TEST(ExactSum, OverflowsOnlyWhenTheRoundedSumDoes) {
  EXPECT_EQ(sum_of({DBL_MAX, DBL_MAX, -DBL_MAX}), DBL_MAX);
  EXPECT_EQ(sum_of({DBL_MAX, DBL_MAX}),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(sum_of({-DBL_MAX, -DBL_MAX}),
            -std::numeric_limits<double>::infinity());
  // Half an ulp of DBL_MAX rounds up, to infinity; less does not.
  const double half_ulp = std::ldexp(1.0, 970);
  EXPECT_EQ(sum_of({DBL_MAX, half_ulp}),
            std::numeric_limits<double>::infinity());
  EXPECT_EQ(sum_of({DBL_MAX, half_ulp / 2}), DBL_MAX);
}

TEST(ExactSum, SpecialValuesAsDocumented) {
  const double inf = std::numeric_limits<double>::infinity();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(sum_of({1.0, inf, 2.0}), inf);
  EXPECT_EQ(sum_of({1.0, -inf}), -inf);
  EXPECT_TRUE(std::isnan(sum_of({inf, -inf})));
  EXPECT_TRUE(std::isnan(sum_of({1.0, nan})));
  EXPECT_EQ(sum_of({}), 0.0);
}

TEST(ExactSum, OrderGroupingAndSplitsGiveBitwiseTheSameSum) {
  std::vector<double> x = random_values(5000, -300, 300, 11);
  const std::vector<double> more = random_values(5000, -5, 5, 12);
  x.insert(x.end(), more.begin(), more.end());
  const double reference = sum_of(x);
  std::mt19937 rng(5);
  for (int trial = 0; trial < 10; ++trial) {
    std::shuffle(x.begin(), x.end(), rng);
    EXPECT_EQ(sum_of(x), reference);
    // Split into 1–4 parts merged two ways: by merge(), and by adding
    // normalized words (what an integer MPI_SUM does).
    const int parts = 1 + trial % 4;
    std::vector<ExactSum> part(parts);
    for (std::size_t i = 0; i < x.size(); ++i)
      part[i * parts / x.size()].add(x[i]);
    ExactSum merged;
    ExactSum by_words;
    for (ExactSum& p : part) {
      merged.merge(p);
      p.normalize();
      for (int k = 0; k < ExactSum::kWords; ++k)
        by_words.words()[k] += p.words()[k];
    }
    EXPECT_EQ(merged.round(), reference);
    EXPECT_EQ(by_words.round(), reference);
  }
}

// Arrays of 64 values or more go through extraction passes and
// per-exponent bins (ExactSum::add(const double*, n), add_products);
// element by element they do not. Both must hold the same exact sum:
// compared on block edges (2048 values a block), the largest and smallest
// exponents, subnormals, narrow and wide ranges, cancellation, and NaN and
// infinities among them.
TEST(ExactSum, LongArraysGoThroughExtractionAndBinsToTheSameBits) {
  const double inf = std::numeric_limits<double>::infinity();
  const double tiny = std::numeric_limits<double>::denorm_min();
  for (int n : {64, 65, 2047, 2048, 2049, 5000}) {
    std::vector<double> x = random_values(n, -1074 + 52, 1023, n);
    const std::vector<double> y = random_values(n, -600, 500, n + 1);
    x[n / 3] = DBL_MAX;
    x[n / 2] = -DBL_MAX;
    x[n - 1] = tiny;
    x[1] = -3 * tiny;
    for (int trial = 0; trial < 5; ++trial) {
      if (trial == 1) x[n / 5] = inf;
      if (trial == 2) x[n / 7] = -inf;  // with +inf: NaN
      if (trial == 3) {
        x[n / 5] = std::numeric_limits<double>::quiet_NaN();
        x[n / 7] = 1.0;
      }
      if (trial == 4) x[n / 5] = -inf;
      ExactSum binned, one_by_one;
      binned.add(x.data(), n);
      binned.add_products(x.data(), y.data(), n);
      for (int i = 0; i < n; ++i) one_by_one.add(x[i]);
      for (int i = 0; i < n; ++i) one_by_one.add(x[i] * y[i]);
      const double a = binned.round(), b = one_by_one.round();
      EXPECT_EQ(std::memcmp(&a, &b, sizeof a), 0)
          << "n " << n << " trial " << trial << ": " << a << " vs " << b;
    }
    // Narrow, moderate and tiny ranges (the extraction passes alone, with
    // leftovers for the bins, and below its lowest σ), with cancellation.
    for (auto [lo, hi] : {std::pair{-3, 3},
                          std::pair{-40, 30},
                          std::pair{-200, 100},
                          std::pair{-1000, -900}}) {
      std::vector<double> v = random_values(n, lo, hi, n + lo);
      const std::vector<double> w = random_values(n, lo / 2, hi / 2, n - lo);
      for (int i = 0; i < n; i += 3) v[i] = -v[i / 2];
      ExactSum extracted, one_by_one;
      extracted.add(v.data(), n);
      extracted.add_products(v.data(), w.data(), n);
      for (int i = 0; i < n; ++i) one_by_one.add(v[i]);
      for (int i = 0; i < n; ++i) one_by_one.add(v[i] * w[i]);
      EXPECT_EQ(extracted.round(), one_by_one.round())
          << "n " << n << " exponents " << lo << ".." << hi;
    }
    // Many equal values in one bin (its integer sum near its bound).
    std::vector<double> same(n, std::nextafter(2.0, 0.0));
    ExactSum binned;
    binned.add(same.data(), n);
    __float128 exact = 0;
    for (double v : same) exact += v;
    EXPECT_EQ(binned.round(), static_cast<double>(exact)) << "n " << n;
  }
}

// exact_sum_of_few against ExactSum (a second implementation: error-free
// additions against a fixed-point accumulator) on sets of 1 to 64 values
// built to be hard: wide and narrow exponent ranges, exact cancellation,
// subnormals, halfway ties, signed zeros, values near overflow, NaN and
// infinities.
TEST(ExactSum, TheFewValuesFormGivesExactSumsBits) {
  std::mt19937_64 rng(36);
  const double big = std::numeric_limits<double>::max();
  const double tiny = std::numeric_limits<double>::denorm_min();
  int cases = 0;
  for (int n = 1; n <= 64; n = n < 8 ? n + 1 : n * 2) {
    for (int trial = 0; trial < 200; ++trial) {
      const int kind = trial % 8;
      std::vector<double> x;
      switch (kind) {
        case 0:
          x = random_values(n, -1074, 1023, rng());
          break;
        case 1:
          x = random_values(n, -3, 3, rng());
          break;
        case 2: {  // pairs that cancel, and a remainder
          x = random_values(n / 2 + 1, -60, 60, rng());
          const std::size_t half = x.size() - 1;
          for (std::size_t k = 0; k < half && x.size() < std::size_t(n); ++k)
            x.push_back(-x[k]);
          break;
        }
        case 3:
          x = random_values(n, -1074, -1000, rng());
          break;
        case 4: {  // a tie: 1 + 2^-53 (+ a sticky tail when trial is odd)
          x = {1.0, 0x1p-53};
          if (trial % 16 == 12) x.push_back(0x1p-80);
          if (trial % 16 == 4) x.push_back(-0x1p-80);
          break;
        }
        case 5:
          x = {big, big * 0x1p-53, -big, tiny, -0.0};
          break;
        case 6:
          x = {-0.0, -0.0, 0.0};
          break;
        default: {
          x = random_values(n, -20, 20, rng());
          x[rng() % x.size()] =
              rng() % 2 ? big : -std::numeric_limits<double>::infinity();
        }
      }
      if (x.size() > std::size_t(n) && kind != 4 && kind != 5 && kind != 6)
        x.resize(n);
      std::shuffle(x.begin(), x.end(), rng);
      const double want = sum_of(x);
      const double got = exact_sum_of_few(x.data(), static_cast<int>(x.size()));
      ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
          << "kind " << kind << ", " << x.size() << " values: " << got
          << " against " << want;
      ++cases;
    }
  }
  EXPECT_GT(cases, 2000);
  // Checked by hand: the tie 1 + 2^-53 rounds to even (1), with a positive
  // tail up, with a negative one down; max + max overflows to +Inf.
  const double tie[] = {1.0, 0x1p-53}, up[] = {1.0, 0x1p-53, 0x1p-80},
               down[] = {0x1p-53, -0x1p-80, 1.0}, over[] = {big, big};
  EXPECT_EQ(exact_sum_of_few(tie, 2), 1.0);
  EXPECT_EQ(exact_sum_of_few(up, 3), 1.0 + 0x1p-52);
  EXPECT_EQ(exact_sum_of_few(down, 3), 1.0);
  EXPECT_EQ(exact_sum_of_few(over, 2), std::numeric_limits<double>::infinity());
}

// expand: the terms' exact sum is the sum (the remainder after taking them
// away is exactly zero), they shrink, the first has the sum's sign, and the
// counts by hand: 2^0 + 2^-60 + 2^-120 needs three terms, five such powers
// five, 1 − 2^-80 two.
TEST(ExactSum, ExpandWritesTermsWhoseExactSumIsTheSum) {
  auto accumulate = [](const std::vector<double>& x) {
    ExactSum s;
    for (double v : x) s.add(v);
    return s;
  };
  auto remainder = [](ExactSum s, const double* terms, int count) {
    for (int t = 0; t < count; ++t) s.add(-terms[t]);
    return s.round();
  };
  std::mt19937_64 rng(42);
  for (int trial = 0; trial < 300; ++trial) {
    // Narrow ranges need two terms, a 2^±40 range three.
    const int range = trial % 3 == 0 ? 0 : trial % 3 == 1 ? 20 : 40;
    const ExactSum s = accumulate(random_values(1000, -range, range, rng()));
    double terms[4];
    ASSERT_TRUE(s.expand(terms, 4)) << "range " << range;
    EXPECT_EQ(remainder(s, terms, 4), 0.0);
    EXPECT_EQ(std::signbit(terms[0]), std::signbit(s.round()));
    for (int t = 1; t < 4; ++t) {
      if (terms[t] != 0) {
        EXPECT_LT(std::fabs(terms[t]), std::fabs(terms[t - 1]));
      }
    }
  }
  double terms[5];
  const ExactSum three = accumulate({0x1p-120, 1.0, 0x1p-60});
  ASSERT_TRUE(three.expand(terms, 4));
  EXPECT_EQ(terms[0], 1.0);
  EXPECT_EQ(terms[1], 0x1p-60);
  EXPECT_EQ(terms[2], 0x1p-120);
  EXPECT_EQ(terms[3], 0.0);
  EXPECT_FALSE(three.expand(terms, 2));
  const ExactSum five =
      accumulate({-1.0, -0x1p-60, -0x1p-120, -0x1p-180, -0x1p-240});
  EXPECT_FALSE(five.expand(terms, 4));
  ASSERT_TRUE(five.expand(terms, 5));
  EXPECT_EQ(terms[0], -1.0);
  EXPECT_EQ(terms[4], -0x1p-240);
  const ExactSum ones = accumulate({1.0, -0x1p-80});
  ASSERT_TRUE(ones.expand(terms, 4));
  EXPECT_EQ(terms[0], 1.0);
  EXPECT_EQ(terms[1], -0x1p-80);
  EXPECT_EQ(terms[2], 0.0);
  // Empty: zeros. Beyond the doubles: no terms. NaN and infinities: first.
  ASSERT_TRUE(ExactSum().expand(terms, 4));
  EXPECT_EQ(terms[0], 0.0);
  const double big = std::numeric_limits<double>::max();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_FALSE(accumulate({big, big}).expand(terms, 4));
  ASSERT_TRUE(accumulate({big, big, -big, 1.0}).expand(terms, 4));
  EXPECT_EQ(terms[0], big);
  EXPECT_EQ(terms[1], 1.0);
  ASSERT_TRUE(accumulate({1.0, inf}).expand(terms, 4));
  EXPECT_EQ(terms[0], inf);
  EXPECT_EQ(terms[1], 0.0);
  ASSERT_TRUE(accumulate({inf, -inf}).expand(terms, 4));
  EXPECT_TRUE(std::isnan(terms[0]));
}

}  // namespace
}  // namespace adgraph
