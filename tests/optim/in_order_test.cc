// L-BFGS-B's fixed-order algebra (optim/in_order_impl.h) against Eigen's
// (a second implementation) to round-off, on known answers by hand, and
// for the refusals it promises.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <random>

#include "optim/in_order_impl.h"

namespace adgraph::optim::detail {
namespace {

Eigen::MatrixXd random_matrix(int n, unsigned seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  Eigen::MatrixXd m(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) m(i, j) = u(rng);
  return m;
}

TEST(InOrder, DotsAndProductsSumInIndexOrder) {
  // 1 + 2^-53 + 2^-53 is 1 left to right (each half-ulp tie rounds to
  // even), 1 + 2^-52 in any order that adds the small ones first.
  const Eigen::VectorXd a{{1.0, 0x1p-53, 0x1p-53}}, ones{{1.0, 1.0, 1.0}};
  EXPECT_EQ(dot_in_order(a, ones), 1.0);
  const Eigen::MatrixXd m{{1, 2}, {3, 4}};
  const Eigen::VectorXd v{{5, 6}};
  EXPECT_EQ(multiply_in_order(m, v), Eigen::VectorXd({{17, 39}}));
  EXPECT_EQ(multiply_transposed_in_order(m, v), Eigen::VectorXd({{23, 34}}));
}

TEST(InOrder, CholeskySolvesAsEigensLltDoes) {
  for (int n : {1, 2, 5, 20}) {
    const Eigen::MatrixXd r = random_matrix(n, 7 + n);
    const Eigen::MatrixXd a =
        r * r.transpose() + n * Eigen::MatrixXd::Identity(n, n);
    const Eigen::VectorXd b = random_matrix(n, 99).col(0);
    CholeskyInOrder mine;
    ASSERT_TRUE(mine.compute(a));
    const Eigen::VectorXd want = a.llt().solve(b);
    EXPECT_LT((mine.solve(b) - want).norm(), 1e-12 * want.norm()) << n;
  }
  // [[4, 2], [2, 3]] = L·Lᵀ with L = [[2, 0], [1, √2]]; A·[1, 1] = [6, 5].
  CholeskyInOrder two;
  ASSERT_TRUE(two.compute(Eigen::MatrixXd{{4, 2}, {2, 3}}));
  const Eigen::VectorXd x = two.solve(Eigen::VectorXd{{6, 5}});
  EXPECT_NEAR(x[0], 1.0, 1e-15);
  EXPECT_NEAR(x[1], 1.0, 1e-15);
  CholeskyInOrder indefinite;
  EXPECT_FALSE(indefinite.compute(Eigen::MatrixXd{{1, 2}, {2, 1}}));
}

TEST(InOrder, EliminationSolvesAsEigensLuDoes) {
  for (int n : {1, 3, 8, 20}) {
    const Eigen::MatrixXd a = random_matrix(n, 3 * n);
    const Eigen::VectorXd b = random_matrix(n, 5).col(0);
    Eigen::VectorXd x;
    ASSERT_TRUE(solve_in_order(a, b, &x)) << n;
    const Eigen::VectorXd want = a.fullPivLu().solve(b);
    EXPECT_LT((x - want).norm(), 1e-10 * want.norm()) << n;
  }
  // Needs a row swap: [[0, 1], [2, 0]]·[3, 4] = [4, 6].
  Eigen::VectorXd x;
  ASSERT_TRUE(solve_in_order(
      Eigen::MatrixXd{{0, 1}, {2, 0}}, Eigen::VectorXd{{4, 6}}, &x));
  EXPECT_EQ(x, Eigen::VectorXd({{3, 4}}));
  EXPECT_FALSE(solve_in_order(
      Eigen::MatrixXd{{1, 2}, {2, 4}}, Eigen::VectorXd{{1, 1}}, &x));
}

}  // namespace
}  // namespace adgraph::optim::detail
