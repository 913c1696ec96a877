// The exact allreduce (CommContext::allreduce_exact_sum, allreduce_exact)
// on 1–4 ranks: one list of adversarial values, the same on every rank,
// split between the ranks in uneven contiguous chunks and by stride; the
// reduced sum equals (==) the one-process exact sum, which equals __float128
// where that is exact, and the cancelling case's known answer.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace adgraph
