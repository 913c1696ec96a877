// The fully connected network (solvers/dense_network.cc) against the same
// network written out with Eigen, layer by layer: its parameter count,
// its Glorot initial weights within their bound and zero biases, its
// values, and its gradient by finite differences.
#include "solvers/dense_network.h"

#include <gtest/gtest.h>

#include <Eigen/Core>
#include <cmath>

#include "adgraph.h"
#include "tests/test_util.h"

namespace adgraph::solvers {
namespace {

TEST(DenseNetwork, ParameterCountByHand) {
  // (2·20 + 20) + (20·20 + 20) + (20·20 + 20) + (20·1 + 1) = 921.
  EXPECT_EQ((DenseNetwork{{2, 20, 20, 20, 1}}.parameter_count()), 921);
  EXPECT_EQ((DenseNetwork{{3, 1}}.parameter_count()), 4);
  EXPECT_EQ((DenseNetwork{{5}}.parameter_count()), 0);
}

TEST(DenseNetwork, GlorotWeightsAndZeroBiasesTheSameForOneSeed) {
  const DenseNetwork net{{2, 3, 1}};
  const Tensor p = net.initial_parameters(7);
  ASSERT_EQ(p.size(), 13);
  // W₀ (6 entries), b₀ (3), W₁ (3), b₁ (1).
  const double bound0 = std::sqrt(6.0 / 5.0), bound1 = std::sqrt(6.0 / 4.0);
  for (int k = 0; k < 6; ++k) EXPECT_LE(std::abs(p[k]), bound0);
  for (int k = 6; k < 9; ++k) EXPECT_EQ(p[k], 0.0);
  for (int k = 9; k < 12; ++k) EXPECT_LE(std::abs(p[k]), bound1);
  EXPECT_EQ(p[12], 0.0);
  EXPECT_EQ(net.initial_parameters(7).to_vector(), p.to_vector());
  EXPECT_NE(net.initial_parameters(8).to_vector(), p.to_vector());
}

// tanh(x·W₀ + b₀)·W₁ + b₁ with row-major W's read from the flat vector.
Eigen::MatrixXd reference(const Tensor& p, const Eigen::MatrixXd& x) {
  using RowMajor =
      Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Eigen::Map<const RowMajor> w0(p.data(), 2, 3), w1(p.data() + 9, 3, 1);
  const Eigen::Map<const Eigen::RowVectorXd> b0(p.data() + 6, 3),
      b1(p.data() + 12, 1);
  Eigen::MatrixXd h = x * w0;
  h.rowwise() += b0;
  h = h.array().tanh().matrix();
  Eigen::MatrixXd y = h * w1;
  y.rowwise() += b1;
  return y;
}

TEST(DenseNetwork, ValuesAndGradientAgainstEigen) {
  const DenseNetwork net{{2, 3, 1}};
  Tensor p = net.initial_parameters(3);
  for (int k = 6; k < 9; ++k) p[k] = 0.1 * k;  // biases that matter
  p[12] = -0.4;
  const Tensor x(Shape{4, 2},
                 std::vector<double>{0.5, -1, 0.25, 2, -0.75, 0.1, 1.5, 0.3});
  Graph g;
  Value params = g.placeholder("p", {13});
  Value inputs = g.constant(x);
  Value y = net.apply(params, inputs);
  EXPECT_EQ(y.shape(), (Shape{4, 1}));
  Session s(g);
  const Tensor got = s.run(y, {{params, p}});
  Eigen::MatrixXd xm(4, 2);
  for (int i = 0; i < 4; ++i) xm(i, 0) = x[2 * i], xm(i, 1) = x[2 * i + 1];
  const Eigen::MatrixXd want = reference(p, xm);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], want(i, 0), 1e-15) << i;
  adgraph::testing::expect_gradients_ok(
      sum(square(y)), {params}, {{params, p}});
}

}  // namespace
}  // namespace adgraph::solvers
