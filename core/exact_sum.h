// An exact sum of doubles, rounded once (issue #36's reproducible
// reductions): a Kulisch-style fixed-point accumulator covering every
// double from 2^−1074 to past 2^1088, so no addition rounds and the result
// does not depend on the order, the grouping, the thread count or how the
// values were split between ranks.
//
//   ExactSum s;
//   for (double x : xs) s.add(x);
//   double total = s.round();   // the correctly rounded Σ xs
//
// The accumulator is 70 signed 64-bit words, each holding a 32-bit digit
// plus room for carries; after normalize() every word but the last is in
// [0, 2^32). Two normalized accumulators merge by adding their words, so
// ranks combine theirs with a plain integer MPI_SUM (exact and
// associative) and round afterwards.
//
// Special values: any NaN, or both +Inf and −Inf, give NaN; otherwise an
// infinity gives itself. A finite exact sum whose rounding exceeds the
// largest double gives ±Inf (round to nearest, ties to even, throughout).
#pragma once

#include <array>
#include <cstdint>

namespace adgraph {

class ExactSum {
 public:
  static constexpr int kDigitWords = 68;
  // The digit words, then the counts of NaN, +Inf and −Inf.
  static constexpr int kWords = kDigitWords + 3;

  void add(double x);
  void add(const double* x, int64_t n);
  // Adds a[i]·b[i] for i < n, each product rounded (a dot product whose
  // sum is exact: the same bits however the terms are split).
  void add_products(const double* a, const double* b, int64_t n);
  // Adds v·2^(−1074 + offset) for |v| < 2^63 and 0 <= offset < 2046.
  void add_shifted(int64_t v, int offset);
  // Adds another accumulator (both are normalized first).
  void merge(const ExactSum& other);
  // The sum rounded to the nearest double (ties to even).
  double round() const;
  // Writes the sum as `count` doubles whose exact sum it is: the sum
  // rounded, then what remains rounded, and so on, zeros after the last
  // (a NaN or an infinity: itself, then zeros). False when it needs more
  // terms, or when its rounding overflows a finite sum.
  bool expand(double* terms, int count) const;

  // Propagates carries so every digit word but the last is in [0, 2^32).
  void normalize();
  // The words, for combining accumulators across ranks (normalize first;
  // the element-wise integer sum of normalized accumulators is the
  // accumulator of the union).
  std::array<int64_t, kWords>& words() { return words_; }
  const std::array<int64_t, kWords>& words() const { return words_; }

 private:
  std::array<int64_t, kWords> words_{};
  // Additions since the last normalize(): each adds less than 2^32 to a
  // word, so 2^30 of them cannot overflow it.
  int64_t pending_ = 0;
};

// Σ x exactly, rounded once.
double exact_sum(const double* x, int64_t n);

// The same bits as exact_sum, faster for a few values (n <= 64): the exact
// sum kept as non-overlapping partials by error-free additions, then
// rounded once with the half-way correction (J. R. Shewchuk, "Adaptive
// precision floating-point arithmetic", DCG 18, 1997; the algorithm of
// Python's math.fsum). Falls back to ExactSum for NaN, infinities, an
// intermediate overflow or more values.
double exact_sum_of_few(const double* x, int n);

}  // namespace adgraph
