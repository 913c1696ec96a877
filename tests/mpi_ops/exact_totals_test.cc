// The exact totals over every rank (mpi_ops/exact_totals.cc): mpi_total,
// mpi_dot and mpi_total_rows on 1–4 ranks, with terms split unevenly (a
// rank may hold none); the expected sums are __float128's, which holds
// every partial sum exactly, rounded once.
#include <gtest/gtest.h>

#include <cmath>

#include "mpi_ops/collectives.h"
#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

// Twelve terms whose sum cancels (1e16 − 1e16) and rounds (1e16 + 5.7):
// in __float128 every partial sum is exact (bits from 2^−56 to 2^56), so
// one conversion gives the correctly rounded total.
const std::vector<double> kTotalTerms = {
    1.0, 1e16, -1e16, 1.0, 0.1, 1e16, 0.3, -0.7, 3.0, 1.0, -1e16, 1e16};

double rounded_total() {
  __float128 total = 0;
  for (double v : kTotalTerms) total += v;
  return static_cast<double>(total);
}

// Rank r's share of kTotalTerms: [N·r²/P², N·(r+1)²/P²), uneven and empty
// on rank 1 of 4.
Tensor share_of_terms(int r, int size) {
  const auto n = static_cast<int64_t>(kTotalTerms.size());
  const int64_t b = n * r * r / (size * size);
  const int64_t e = n * (r + 1) * (r + 1) / (size * size);
  return Tensor(
      Shape{e - b},
      std::vector<double>(kTotalTerms.begin() + b, kTotalTerms.begin() + e));
}

TEST(MpiTotal, SumsEveryElementOfEveryRankRoundedOnce) {
  const int rank = world_rank(), size = world_size();
  // 1e16 + 5.7 (Python's math.fsum agrees); summed left to right: 1e16 + 4.
  ASSERT_EQ(rounded_total(), 1e16 + 6.0);
  for (int root : {0, size - 1}) {
    Graph g;
    Value x = g.constant(share_of_terms(rank, size));
    Session s(g);
    EXPECT_EQ(s.run(mpi_total(x, root)).item(),
              rank == root ? rounded_total() : 0.0);
  }
}

TEST(MpiTotal, AdjointBroadcastsTheRootCotangentToEveryElement) {
  // L_q = (q + 1) · mpi_total(x); only the root's output depends on x, so
  // ∂(Σ_q L_q)/∂x_r[i] = root + 1 everywhere.
  const int rank = world_rank(), size = world_size();
  const int root = size - 1;
  Graph g;
  const Shape shape{rank + 1, 2};  // a different shape on each rank
  Value x = g.placeholder("x", shape);
  Value grad = gradient(mpi_total(x, root) * (rank + 1.0), x);
  Session s(g);
  const Tensor got = s.run(grad, {{x, random_tensor(shape, 4)}});
  ASSERT_EQ(got.shape(), shape);
  for (int64_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], root + 1.0);
  expect_gradients_ok(rank_weighted_loss(mpi_total(x, root)),
                      {x},
                      {{x, random_tensor(shape, 5)}});
  expect_adjoint_identity([&](Value v) { return mpi_total(v, root); }, {3});
  EXPECT_THROW(mpi_total(x, size), ShapeError);
}

TEST(MpiDot, SumsTheProductsOfEveryRankRoundedOnce) {
  // a = the shares of kTotalTerms, b = 1 but −1 where a term is doubled
  // below: Σ a·b with its products exact, so the expected total is
  // kTotalTerms' (as by __float128) minus twice the negated terms.
  const int rank = world_rank(), size = world_size();
  const Tensor a = share_of_terms(rank, size);
  Tensor b(a.shape(), 1.0);
  Tensor a_times_b = a;
  for (int64_t i = 0; i < b.size(); i += 3) b[i] = -1.0, a_times_b[i] = -a[i];
  Graph g;
  Value va = g.constant(a), vb = g.constant(b);
  Value products = g.constant(a_times_b);
  const int root = size - 1;
  Session s(g);
  const double dot = s.run(mpi_dot(va, vb, root)).item();
  const double total = s.run(mpi_total(products, root)).item();
  EXPECT_EQ(dot, total);
  // The negated terms over all ranks: every third of each share.
  __float128 want = 0;
  for (int r = 0; r < size; ++r) {
    const Tensor share = share_of_terms(r, size);
    for (int64_t i = 0; i < share.size(); ++i)
      want += i % 3 == 0 ? -static_cast<__float128>(share[i]) : share[i];
  }
  EXPECT_EQ(dot, rank == root ? static_cast<double>(want) : 0.0);
}

TEST(MpiDot, GradientsAndRefusals) {
  const int rank = world_rank(), size = world_size();
  const int root = size - 1;
  Graph g;
  const Shape shape{rank + 1, 2};  // a different shape on each rank
  Value a = g.placeholder("a", shape), b = g.placeholder("b", shape);
  expect_gradients_ok(
      rank_weighted_loss(mpi_dot(a, b, root)),
      {a, b},
      {{a, random_tensor(shape, 7)}, {b, random_tensor(shape, 8)}});
  // ∂/∂a of (q + 1)·mpi_dot(a, a) summed over q: 2·(root + 1)·a.
  Graph h;
  Value h_a = h.placeholder("a", shape);
  Value grad = gradient(mpi_dot(h_a, h_a, root) * (rank + 1.0), h_a);
  Session s(h);
  const Tensor x = random_tensor(shape, 9);
  const Tensor got = s.run(grad, {{h_a, x}});
  for (int64_t i = 0; i < x.size(); ++i)
    EXPECT_EQ(got[i], 2 * (root + 1.0) * x[i]);
  Value other = g.placeholder("c", {rank + 2});
  EXPECT_THROW(mpi_dot(a, other, root), ShapeError);
  EXPECT_THROW(mpi_dot(a, b, size), ShapeError);
}

// A scalar every rank holds (from mpi_bcast or mpi_allreduce) multiplies
// each rank's share of 36 terms: ±2^40 … ±2^51, small dyadic ones, and the
// big ones negated, so a split puts cancelling terms on different ranks.
// Its gradient is Σ of every term plus 3 for each rank's 3·w, summed
// exactly and rounded once (in __float128, which holds that sum exactly)
// on any split, rather than each rank's rounded share summed (the small
// terms lost beside the big ones).
TEST(MpiBcastAndAllreduce, AScalarsCotangentOverADistributedArrayIsExact) {
  const int rank = world_rank(), size = world_size();
  std::vector<double> terms(36);
  for (int i = 0; i < 12; ++i) {
    terms[i] = std::ldexp(i % 2 ? -1.0 : 1.0, 40 + i);
    terms[35 - i] = -terms[i];
    terms[12 + i] = std::ldexp(2 * i + 1, -i);
  }
  __float128 exact = 3.0 * size;
  for (double v : terms) exact += v;
  const double want = static_cast<double>(exact);
  const int64_t n = 36, b = n * rank * rank / (size * size),
                e = n * (rank + 1) * (rank + 1) / (size * size);
  const Tensor share(Shape{e - b},
                     std::vector<double>(terms.begin() + b, terms.begin() + e));
  for (const bool by_bcast : {true, false}) {
    Graph g;
    Value w0 = g.placeholder("w0", {});
    Value w = by_bcast ? mpi_bcast(w0, 0) : mpi_allreduce(w0);
    Value loss = mpi_total(w * g.constant(share)) + w * 3.0;
    Session s(g);
    const double got =
        s.run(gradient(loss, w0), {{w0, Tensor::scalar(0.5)}}).item();
    EXPECT_EQ(got, by_bcast && rank != 0 ? 0.0 : want)
        << (by_bcast ? "mpi_bcast" : "mpi_allreduce");
  }
}

// kTotalTerms as a 12 × 2 matrix: column 0 in order, column 1 reversed;
// rank r holds the rows of its share (uneven, empty on rank 1 of 4).
Tensor rows_of_terms(int r, int size) {
  const auto n = static_cast<int64_t>(kTotalTerms.size());
  const int64_t b = n * r * r / (size * size);
  const int64_t e = n * (r + 1) * (r + 1) / (size * size);
  Tensor t(Shape{e - b, 2});
  for (int64_t i = b; i < e; ++i) {
    t[(i - b) * 2] = kTotalTerms[i];
    t[(i - b) * 2 + 1] = kTotalTerms[n - 1 - i];
  }
  return t;
}

TEST(MpiTotalRows, SumsTheRowsOfEveryRankRoundedOnce) {
  const int rank = world_rank(), size = world_size();
  for (int root : {0, size - 1}) {
    Graph g;
    Value x = g.constant(rows_of_terms(rank, size));
    Session s(g);
    const Tensor y = s.run(mpi_total_rows(x, root));
    ASSERT_EQ(y.shape(), Shape{2});
    const double want = rank == root ? rounded_total() : 0.0;
    EXPECT_EQ(y.to_vector(), std::vector<double>({want, want}));
  }
}

TEST(MpiTotalRows, GradientsAndRefusals) {
  const int rank = world_rank(), size = world_size();
  const int root = size - 1;
  Graph g;
  const Shape shape{rank + 1, 3};  // its own number of rows on each rank
  Value x = g.placeholder("x", shape);
  expect_gradients_ok(rank_weighted_loss(mpi_total_rows(x, root)),
                      {x},
                      {{x, random_tensor(shape, 6)}});
  expect_adjoint_identity([&](Value v) { return mpi_total_rows(v, root); },
                          {2, 3});
  Value scalar = g.placeholder("s", {});
  EXPECT_THROW(mpi_total_rows(scalar), ShapeError);
  if (size > 1) {
    // Rows of 2 entries on rank 0, of 3 elsewhere: refused on every rank.
    Graph h;
    Value odd = h.placeholder("odd", {2, rank == 0 ? 2 : 3});
    Value y = mpi_total_rows(odd);
    Session s(h);
    try {
      s.run(y, {{odd, Tensor(odd.shape(), 1.0)}});
      ADD_FAILURE() << "rows of unequal length accepted";
    } catch (const RunError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "the entries of a row differ between ranks (2 to 3)"),
                std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace adgraph
