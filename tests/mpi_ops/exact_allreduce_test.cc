// The exact allreduce (CommContext::allreduce_exact_sum, allreduce_exact)
// on 1–4 ranks: one list of adversarial values, the same on every rank,
// split between the ranks in uneven contiguous chunks and by stride; the
// reduced sum equals (==) the one-process exact sum, which equals __float128
// where that is exact, and the cancelling case's known answer.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "core/exact_sum.h"
#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

// Every rank makes the same list: wide values, their negatives, and small
// ones whose sum __float128 holds exactly; shuffled.
struct Values {
  std::vector<double> all;
  double small_sum = 0;
};

Values adversarial(unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> wide(-1000, 1000), narrow(-10, 10);
  auto value = [&](int exponent) {
    const uint64_t m = (rng() >> 11) | (uint64_t{1} << 52);
    const double v = std::ldexp(static_cast<double>(m), exponent - 52);
    return (rng() & 1) ? -v : v;
  };
  Values out;
  for (int i = 0; i < 500; ++i) {
    const double v = value(wide(rng));
    out.all.push_back(v);
    out.all.push_back(-v);
  }
  __float128 small = 0;
  for (int i = 0; i < 37; ++i) {
    const double v = value(narrow(rng));
    out.all.push_back(v);
    small += v;
  }
  out.small_sum = static_cast<double>(small);
  std::shuffle(out.all.begin(), out.all.end(), rng);
  return out;
}

TEST(ExactAllreduce, TheSumDoesNotDependOnHowTheValuesAreSplit) {
  auto comm = Communicator::world();
  const int rank = comm->rank(), size = comm->size();
  for (unsigned seed = 1; seed <= 5; ++seed) {
    const Values v = adversarial(seed);
    const auto n = static_cast<int64_t>(v.all.size());
    const double one_process = exact_sum(v.all.data(), n);
    EXPECT_EQ(one_process, v.small_sum);
    // Uneven chunks: rank r takes [r·n/size + r, ...) clipped, so the
    // chunk sizes differ.
    auto begin = [&](int r) { return std::min<int64_t>(n, r * n / size + r); };
    const int64_t b = begin(rank), e = rank + 1 == size ? n : begin(rank + 1);
    EXPECT_EQ(comm->allreduce_exact_sum(v.all.data() + b, e - b), one_process);
    std::vector<double> strided;
    for (int64_t i = rank; i < n; i += size) strided.push_back(v.all[i]);
    EXPECT_EQ(comm->allreduce_exact_sum(strided.data(),
                                        static_cast<int64_t>(strided.size())),
              one_process);
  }
}

TEST(ExactAllreduce, ElementwiseSumsAreExactOnEveryRank) {
  auto comm = Communicator::world();
  const int rank = comm->rank(), size = comm->size();
  const Values v = adversarial(9);
  // Element i of rank r's vector is value (r + i·size) of the list, so
  // over the ranks element i sums the values i·size … i·size + size − 1.
  const int64_t n = static_cast<int64_t>(v.all.size()) / size;
  std::vector<double> mine(n), out(n);
  for (int64_t i = 0; i < n; ++i) mine[i] = v.all[rank + i * size];
  comm->allreduce_exact(mine.data(), out.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    const double expected = exact_sum(v.all.data() + i * size, size);
    EXPECT_EQ(out[i], expected) << "element " << i;
  }
}

TEST(ExactAllreduce, LongVectorsCrossChunksInPlaceAndStayExact) {
  // 3 chunks of 4096 elements and 5 more, summed in place; element i of
  // rank r spans 2^±100 and both signs, and every rank can make every
  // rank's element, so the expected sum is exact_sum over them.
  auto comm = Communicator::world();
  const int size = comm->size();
  const int64_t n = 3 * 4096 + 5;
  auto element = [](int64_t i, int r) {
    const double v =
        std::ldexp(1.0 + static_cast<double>(i % 7) / 8.0,
                   static_cast<int>((i * 13 + r * 101) % 200) - 100);
    return (i + r) % 3 == 0 ? -v : v;
  };
  std::vector<double> v(n);
  for (int64_t i = 0; i < n; ++i) v[i] = element(i, comm->rank());
  comm->allreduce_exact(v.data(), v.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<double> terms;
    for (int r = 0; r < size; ++r) terms.push_back(element(i, r));
    ASSERT_EQ(v[i], exact_sum(terms.data(), size)) << "element " << i;
  }
}

// allreduce_exact_sums: sums that travel as a few terms a rank (narrow and
// 2^±40 ranges), sums some rank cannot send so (five powers 2^60 apart,
// a rank's sum beyond the largest double that the others cancel), NaN and
// infinities on different ranks, and an empty rank, in one call and one
// by one. The expected values are the one-process exact sums of every
// rank's terms together, which each rank can make.
TEST(ExactAllreduce, SumsOfManyTermsAgreeWhetherTheyTravelAsTermsOrAsWords) {
  auto comm = Communicator::world();
  const int rank = comm->rank(), size = comm->size();
  const double big = std::numeric_limits<double>::max();
  const double inf = std::numeric_limits<double>::infinity();
  // The terms of sum `k` on rank `r`.
  auto terms_of = [&](int k, int r) -> std::vector<double> {
    std::mt19937_64 rng(100 * k + r);
    std::uniform_real_distribution<double> unit(1.0, 2.0);
    std::vector<double> x;
    switch (k) {
      case 0:  // narrow: two terms a rank
        for (int i = 0; i < 1000 + 37 * r; ++i)
          x.push_back(unit(rng) * (i % 2 ? -1 : 1));
        break;
      case 1:  // 2^±40: three terms a rank
        for (int i = 0; i < 500; ++i)
          x.push_back(std::ldexp(unit(rng), static_cast<int>(rng() % 81) - 40));
        break;
      case 2:  // five terms on the last rank
        if (r == size - 1)
          x = {1.0, 0x1p-60, 0x1p-120, 0x1p-180, 0x1p-240};
        else
          x = {0.5};
        break;
      case 3:  // beyond the doubles on even ranks, cancelled on odd ones
        x = {r % 2 ? -big : big, r % 2 ? -big : big, 0x1p-30};
        break;
      case 4:  // +Inf on rank 0, −Inf on the last rank (NaN together)
        x = {1.0};
        if (r == 0) x.push_back(inf);
        if (r == size - 1) x.push_back(-inf);
        break;
      case 5:  // +Inf on the last rank only
        x = {2.0};
        if (r == size - 1) x.push_back(inf);
        break;
      default:  // nothing on rank 0
        if (r > 0) x = {std::ldexp(1.0, -r), 3.0};
    }
    return x;
  };
  constexpr int kSums = 7;
  std::vector<ExactSum> mine(kSums);
  std::vector<double> expected(kSums);
  for (int k = 0; k < kSums; ++k) {
    for (double v : terms_of(k, rank)) mine[k].add(v);
    std::vector<double> all;
    for (int r = 0; r < size; ++r)
      for (double v : terms_of(k, r)) all.push_back(v);
    expected[k] = exact_sum(all.data(), static_cast<int64_t>(all.size()));
  }
  // Checked by hand where the rank count decides: a sum of Inf and −Inf
  // is NaN; 2·max on an odd count of ranks overflows, else cancels.
  EXPECT_TRUE(std::isnan(expected[4]));
  EXPECT_EQ(expected[5], inf);
  EXPECT_EQ(expected[3], size % 2 ? inf : size * 0x1p-30);
  auto same = [](double a, double b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
  };
  std::vector<double> together(kSums);
  comm->allreduce_exact_sums(mine.data(), together.data(), kSums);
  for (int k = 0; k < kSums; ++k) {
    double alone = 0;
    comm->allreduce_exact_sums(&mine[k], &alone, 1);
    EXPECT_TRUE(same(together[k], expected[k]))
        << "sum " << k << ": " << together[k] << " against " << expected[k];
    EXPECT_TRUE(same(alone, expected[k]))
        << "sum " << k << " alone: " << alone << " against " << expected[k];
  }
}

}  // namespace
}  // namespace adgraph
