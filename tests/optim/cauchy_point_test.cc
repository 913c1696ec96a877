// The generalized Cauchy point (optim/cauchy_point.cc) against a second
// implementation: the quadratic model m(x) = gᵀ(x − x₀) + ½(x − x₀)ᵀB(x − x₀)
// with B formed densely from the compact matrix, walked along the
// projected path P(x₀ − t·g) segment by segment, and against a case worked
// by hand.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <algorithm>
#include <random>

#include "optim/lbfgsb_impl.h"

namespace adgraph::optim::detail {
namespace {

const Reducer kOneRank(nullptr, Layout::kReplicated);
constexpr double kInf = Box::kInf;

// How lbfgsb starts `where` (free, unbounded or fixed by the box).
std::vector<Where> start_where(const Eigen::VectorXd& lower,
                               const Eigen::VectorXd& upper) {
  std::vector<Where> where(lower.size(), Where::kFree);
  for (int64_t i = 0; i < lower.size(); ++i) {
    if (lower[i] == -kInf && upper[i] == kInf) where[i] = Where::kUnbounded;
    if (upper[i] - lower[i] <= 0) where[i] = Where::kFixed;
  }
  return where;
}

// B = θI − W·M·Wᵀ as a dense matrix (θI without pairs: a W of no columns
// has no rows to assign).
Eigen::MatrixXd dense(const CompactBfgs& bfgs, int64_t n) {
  Eigen::MatrixXd b = bfgs.theta() * Eigen::MatrixXd::Identity(n, n);
  if (bfgs.k() == 0) return b;
  Eigen::MatrixXd w(n, 2 * bfgs.k());
  for (int64_t i = 0; i < n; ++i) w.row(i) = bfgs.w_row(i).transpose();
  return b - w * bfgs.middle_inverse().inverse() * w.transpose();
}

// The first local minimiser of m along P(x − t·g): between consecutive
// breakpoints the path is a line and m a parabola in t.
Eigen::VectorXd walk_the_path(const Eigen::VectorXd& x,
                              const Eigen::VectorXd& g,
                              const Eigen::VectorXd& lower,
                              const Eigen::VectorXd& upper,
                              const Eigen::MatrixXd& b) {
  const int64_t n = x.size();
  Eigen::VectorXd t_hit = Eigen::VectorXd::Constant(n, kInf);
  for (int64_t i = 0; i < n; ++i) {
    if (g[i] < 0) t_hit[i] = (x[i] - upper[i]) / g[i];
    if (g[i] > 0) t_hit[i] = (x[i] - lower[i]) / g[i];
  }
  std::vector<double> ts(t_hit.data(), t_hit.data() + n);
  ts.push_back(0.0);
  std::sort(ts.begin(), ts.end());
  ts.erase(std::unique(ts.begin(), ts.end()), ts.end());
  for (size_t j = 0; j < ts.size(); ++j) {
    const double t0 = ts[j];
    if (t0 == kInf) break;
    Eigen::VectorXd at(n), d = Eigen::VectorXd::Zero(n);
    for (int64_t i = 0; i < n; ++i) {
      at[i] = x[i] - std::min(t0, t_hit[i]) * g[i];
      if (t_hit[i] > t0) d[i] = -g[i];
    }
    if (d.isZero()) return at;  // every variable at a bound
    const Eigen::VectorXd z = at - x;
    const double f1 = g.dot(d) + d.dot(b * z), f2 = d.dot(b * d);
    if (f1 >= 0) return at;
    const double length = j + 1 < ts.size() ? ts[j + 1] - t0 : kInf;
    if (f2 > 0 && -f1 / f2 < length) return at + (-f1 / f2) * d;
  }
  ADD_FAILURE() << "the model is unbounded along the path";
  return x;
}

TEST(CauchyPoint, WorkedByHandWithTheIdentityModel) {
  // B = I (no pairs, θ = 1), x = 0, g = (−1, −2), x₁ ≤ 0.5: the path
  // (t, 2t) meets x₁'s bound at t = ½, where m' = −5 + 5t < 0; along
  // (½, 1) + s·(0, 2) m' = −4 + 2 + 4s vanishes at s = ½: the point (½, 2).
  const Eigen::VectorXd x{{0.0, 0.0}}, g{{-1.0, -2.0}};
  const Eigen::VectorXd lower{{-kInf, -kInf}}, upper{{0.5, 10.0}};
  const std::vector<int64_t> order;
  std::vector<Where> where = start_where(lower, upper);
  CompactBfgs bfgs;
  const CauchyPoint cp =
      cauchy_point(x, g, Box{lower, upper, order}, where, bfgs, kOneRank);
  ASSERT_TRUE(cp.ok);
  EXPECT_DOUBLE_EQ(cp.x[0], 0.5);
  EXPECT_DOUBLE_EQ(cp.x[1], 2.0);
  EXPECT_EQ(cp.segments, 2);
  EXPECT_EQ(where[0], Where::kAtUpper);
  EXPECT_EQ(cp.c.size(), 0);
}

TEST(CauchyPoint, NoVariableMovesAtACornerTheGradientPushesInto) {
  const Eigen::VectorXd x{{1.0, -1.0}}, g{{-3.0, 2.0}};
  const Eigen::VectorXd lower{{0.0, -1.0}}, upper{{1.0, 0.0}};
  const std::vector<int64_t> order;
  std::vector<Where> where = start_where(lower, upper);
  CompactBfgs bfgs;
  const CauchyPoint cp =
      cauchy_point(x, g, Box{lower, upper, order}, where, bfgs, kOneRank);
  EXPECT_EQ(cp.x, x);
}

TEST(CauchyPoint, EqualsTheModelWalkedSegmentBySegment) {
  std::mt19937_64 rng(2024);
  std::uniform_real_distribution<double> u(-1, 1);
  int bent = 0;  // cases whose point lies past a breakpoint
  for (int trial = 0; trial < 40; ++trial) {
    const int n = 3 + trial % 6;
    Eigen::MatrixXd r(n, n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) r(i, j) = u(rng);
    const Eigen::MatrixXd a =
        r * r.transpose() + 0.5 * Eigen::MatrixXd::Identity(n, n);
    CompactBfgs bfgs;
    for (int p = 0; p < trial % 4; ++p) {
      Eigen::VectorXd s(n);
      for (int i = 0; i < n; ++i) s[i] = u(rng);
      const Eigen::VectorXd y = a * s;
      ASSERT_TRUE(bfgs.push(s, y, s.dot(y), s.dot(s), 5, kOneRank));
    }
    Eigen::VectorXd x(n), g(n), lower(n), upper(n);
    for (int i = 0; i < n; ++i) {
      lower[i] = i % 5 == 4 ? -kInf : -0.3 - 0.5 * (u(rng) + 1);
      upper[i] = i % 7 == 6 ? kInf : 0.3 + 0.5 * (u(rng) + 1);
      x[i] = 0.3 * u(rng);
      g[i] = 3.0 * u(rng);
    }
    const std::vector<int64_t> order;
    std::vector<Where> where = start_where(lower, upper);
    const CauchyPoint cp =
        cauchy_point(x, g, Box{lower, upper, order}, where, bfgs, kOneRank);
    ASSERT_TRUE(cp.ok);
    const Eigen::MatrixXd b = dense(bfgs, n);
    const Eigen::VectorXd expected = walk_the_path(x, g, lower, upper, b);
    EXPECT_LT((cp.x - expected).cwiseAbs().maxCoeff(), 1e-12)
        << "trial " << trial;
    if (cp.segments > 1) ++bent;
    for (int i = 0; i < n; ++i) {
      ASSERT_GE(cp.x[i], lower[i]);
      ASSERT_LE(cp.x[i], upper[i]);
      if (cp.x[i] == upper[i] && g[i] < 0) {
        EXPECT_EQ(where[i], Where::kAtUpper);
      }
      if (cp.x[i] == lower[i] && g[i] > 0) {
        EXPECT_EQ(where[i], Where::kAtLower);
      }
    }
    // c = Wᵀ(x_cp − x), for the subspace step.
    if (bfgs.k() > 0) {
      const Eigen::VectorXd c =
          bfgs.w_transpose(Eigen::VectorXd(cp.x - x), kOneRank);
      EXPECT_LT((cp.c - c).cwiseAbs().maxCoeff(), 1e-11) << "trial " << trial;
    }
  }
  EXPECT_GE(bent, 10);  // the walk past breakpoints is exercised
}

}  // namespace
}  // namespace adgraph::optim::detail
