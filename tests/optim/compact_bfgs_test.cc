// L-BFGS-B's compact limited-memory matrix (optim/compact_bfgs.cc) against
// a second implementation: the BFGS recursion written out densely,
// B ← B − B s sᵀ B / sᵀB s + y yᵀ / yᵀs from B₀ = θ·I over the kept pairs,
// which the compact form B = θ·I − W·M·Wᵀ equals (Byrd, Nocedal &
// Schnabel 1994, Theorem 2.3).
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <random>

#include "optim/lbfgsb_impl.h"

namespace adgraph::optim::detail {
namespace {

const Reducer kOneProcess(nullptr, Layout::kReplicated);

struct Pair {
  Eigen::VectorXd s, y;
};

// Pairs with positive curvature: y = A·s for a symmetric positive definite
// A (the secant pairs of a quadratic).
std::vector<Pair> quadratic_pairs(int n, int count, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Eigen::MatrixXd r(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) r(i, j) = u(rng);
  const Eigen::MatrixXd a = r * r.transpose() + Eigen::MatrixXd::Identity(n, n);
  std::vector<Pair> pairs;
  for (int p = 0; p < count; ++p) {
    Eigen::VectorXd s(n);
    for (int i = 0; i < n; ++i) s[i] = u(rng);
    pairs.push_back({s, a * s});
  }
  return pairs;
}

bool push(CompactBfgs& bfgs, const Pair& p, int history) {
  return bfgs.push(p.s, p.y, p.s.dot(p.y), p.s.dot(p.s), history, kOneProcess);
}

// The BFGS recursion from θ·I over `pairs`, θ = yᵀy / sᵀy of the last one.
Eigen::MatrixXd recursive_bfgs(const std::vector<Pair>& pairs) {
  const Pair& last = pairs.back();
  const double theta = last.y.dot(last.y) / last.s.dot(last.y);
  const auto n = last.s.size();
  Eigen::MatrixXd b = theta * Eigen::MatrixXd::Identity(n, n);
  for (const Pair& p : pairs) {
    const Eigen::VectorXd bs = b * p.s;
    b += p.y * p.y.transpose() / p.y.dot(p.s) -
         bs * bs.transpose() / p.s.dot(bs);
  }
  return b;
}

// W (n × 2k) row by row, as the Cauchy point and subspace step read it.
Eigen::MatrixXd w_of(const CompactBfgs& bfgs, int64_t n) {
  Eigen::MatrixXd w(n, 2 * bfgs.k());
  for (int64_t i = 0; i < n; ++i) w.row(i) = bfgs.w_row(i).transpose();
  return w;
}

// θ·I − W·M·Wᵀ with M = K⁻¹.
Eigen::MatrixXd compact_matrix(const CompactBfgs& bfgs, int64_t n) {
  const Eigen::MatrixXd w = w_of(bfgs, n);
  const Eigen::MatrixXd m = bfgs.middle_inverse().inverse();
  return bfgs.theta() * Eigen::MatrixXd::Identity(n, n) - w * m * w.transpose();
}

double max_difference(const Eigen::MatrixXd& a, const Eigen::MatrixXd& b) {
  return (a - b).cwiseAbs().maxCoeff();
}

TEST(CompactBfgs, EqualsTheRecursiveUpdateFromThetaTimesIdentity) {
  for (int count : {1, 2, 4}) {
    const std::vector<Pair> pairs = quadratic_pairs(7, count, 11 + count);
    CompactBfgs bfgs;
    for (const Pair& p : pairs) ASSERT_TRUE(push(bfgs, p, 5));
    ASSERT_EQ(bfgs.k(), count);
    const Pair& last = pairs.back();
    EXPECT_DOUBLE_EQ(bfgs.theta(), last.y.dot(last.y) / last.s.dot(last.y));
    const Eigen::MatrixXd expected = recursive_bfgs(pairs);
    EXPECT_LT(max_difference(compact_matrix(bfgs, 7), expected),
              1e-10 * expected.cwiseAbs().maxCoeff())
        << count << " pairs";
  }
}

TEST(CompactBfgs, KeepsOnlyTheNewestPairsOfItsHistory) {
  const std::vector<Pair> pairs = quadratic_pairs(6, 5, 3);
  CompactBfgs bfgs;
  for (const Pair& p : pairs) ASSERT_TRUE(push(bfgs, p, 3));
  ASSERT_EQ(bfgs.k(), 3);
  for (int j = 0; j < 3; ++j) {
    EXPECT_EQ(bfgs.s()[j], pairs[2 + j].s);
    EXPECT_EQ(bfgs.y()[j], pairs[2 + j].y);
  }
  const std::vector<Pair> newest(pairs.begin() + 2, pairs.end());
  const Eigen::MatrixXd expected = recursive_bfgs(newest);
  EXPECT_LT(max_difference(compact_matrix(bfgs, 6), expected),
            1e-10 * expected.cwiseAbs().maxCoeff());
}

TEST(CompactBfgs, MiddleMatrixAndProductsWithW) {
  const std::vector<Pair> pairs = quadratic_pairs(5, 3, 8);
  CompactBfgs bfgs;
  for (const Pair& p : pairs) ASSERT_TRUE(push(bfgs, p, 4));
  const int k = 3;
  const double theta = bfgs.theta();
  Eigen::MatrixXd s(5, k), y(5, k);
  for (int j = 0; j < k; ++j) s.col(j) = pairs[j].s, y.col(j) = pairs[j].y;
  // K = [[−D, Lᵀ], [L, θ·SᵀS]] with D = diag(SᵀY), L its strictly lower part.
  const Eigen::MatrixXd sty = s.transpose() * y;
  Eigen::MatrixXd l = Eigen::MatrixXd::Zero(k, k);
  for (int i = 0; i < k; ++i)
    for (int j = 0; j < i; ++j) l(i, j) = sty(i, j);
  Eigen::MatrixXd kk(2 * k, 2 * k);
  kk << -Eigen::MatrixXd(sty.diagonal().asDiagonal()), l.transpose(), l,
      theta * s.transpose() * s;
  EXPECT_LT(max_difference(bfgs.middle_inverse(), kk), 1e-12);

  Eigen::MatrixXd w(5, 2 * k);
  w << y, theta * s;
  EXPECT_LT(max_difference(w_of(bfgs, 5), w), 1e-15 * theta);
  EXPECT_LT(max_difference(bfgs.w_transpose_w(), w.transpose() * w), 1e-11);
  const Eigen::VectorXd v{{0.5, -1.0, 2.0, 0.25, -0.75}};
  EXPECT_LT(max_difference(bfgs.w_transpose(v, kOneProcess), w.transpose() * v),
            1e-12);
  const Eigen::VectorXd q = Eigen::VectorXd::LinSpaced(2 * k, -1.0, 1.0);
  EXPECT_LT(max_difference(bfgs.apply_middle(q), kk.lu().solve(q)), 1e-10);
}

TEST(CompactBfgs, AssignRestoresTheSameMatrixBitwise) {
  const std::vector<Pair> pairs = quadratic_pairs(6, 3, 21);
  CompactBfgs bfgs;
  for (const Pair& p : pairs) ASSERT_TRUE(push(bfgs, p, 4));
  CompactBfgs restored;
  ASSERT_TRUE(restored.assign(
      bfgs.s(), bfgs.y(), bfgs.sy(), bfgs.ss(), bfgs.theta(), kOneProcess));
  EXPECT_EQ(restored.theta(), bfgs.theta());
  EXPECT_EQ(restored.middle_inverse(), bfgs.middle_inverse());
  EXPECT_EQ(restored.w_transpose_w(), bfgs.w_transpose_w());
  const Eigen::VectorXd q = Eigen::VectorXd::LinSpaced(6, -2.0, 3.0);
  EXPECT_EQ(restored.apply_middle(q), bfgs.apply_middle(q));
  // The next pair continues both alike.
  const Pair next = quadratic_pairs(6, 1, 22)[0];
  ASSERT_TRUE(push(bfgs, next, 4));
  ASSERT_TRUE(push(restored, next, 4));
  EXPECT_EQ(restored.middle_inverse(), bfgs.middle_inverse());
}

TEST(CompactBfgs, RefusesAPairOfNegativeCurvatureAndClears) {
  // sᵀy < 0 makes θ and T = θ·SᵀS negative: not positive definite.
  CompactBfgs bfgs;
  const Pair p{Eigen::VectorXd{{1.0, 0.0}}, Eigen::VectorXd{{-1.0, 0.5}}};
  EXPECT_FALSE(push(bfgs, p, 3));
  bfgs.clear();
  EXPECT_EQ(bfgs.k(), 0);
  EXPECT_EQ(bfgs.theta(), 1.0);
  EXPECT_TRUE(push(bfgs, quadratic_pairs(2, 1, 5)[0], 3));
}

}  // namespace
}  // namespace adgraph::optim::detail
