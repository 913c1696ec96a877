#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "core/ad/gradients.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using testing::expect_gradients_ok;

struct UnaryCase {
  const char* name;
  std::function<Value(Value)> build;
  std::function<double(double)> reference;
  std::vector<double> at;  // away from kinks and outside domains
};

void PrintTo(const UnaryCase& c, std::ostream* os) { *os << c.name; }

class UnaryOps : public ::testing::TestWithParam<UnaryCase> {};

TEST_P(UnaryOps, ForwardMatchesCmathAndGradientChecks) {
  const UnaryCase& c = GetParam();
  Graph g;
  const int64_t n = static_cast<int64_t>(c.at.size());
  Value x = g.placeholder("x", {n});
  Value y = c.build(x);
  EXPECT_EQ(y.shape(), (Shape{n}));
  Tensor xv({n}, c.at);
  Session s(g);
  Tensor out = s.run(y, {{x, xv}});
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_NEAR(out[i], c.reference(c.at[i]), 1e-14 * (1 + std::fabs(out[i])))
        << c.name << " at " << c.at[i];
  }
  // A weighted sum makes every output entry matter to the checked scalar.
  Tensor w(Shape{n});
  for (int64_t i = 0; i < n; ++i) w[i] = 1.0 + 0.25 * static_cast<double>(i);
  expect_gradients_ok(dot(y, g.constant(w)), {x}, {{x, xv}});
}

const std::vector<double> kPositive = {0.3, 1.1, 2.5};
const std::vector<double> kMixed = {-1.3, 0.4, 2.2};

INSTANTIATE_TEST_SUITE_P(
    Elementwise,
    UnaryOps,
    ::testing::Values(UnaryCase{"neg",
                                [](Value x) { return -x; },
                                [](double v) { return -v; },
                                kMixed},
                      UnaryCase{"exp",
                                [](Value x) { return exp(x); },
                                [](double v) { return std::exp(v); },
                                kMixed},
                      UnaryCase{"log",
                                [](Value x) { return log(x); },
                                [](double v) { return std::log(v); },
                                kPositive},
                      UnaryCase{"sqrt",
                                [](Value x) { return sqrt(x); },
                                [](double v) { return std::sqrt(v); },
                                kPositive},
                      UnaryCase{"square",
                                [](Value x) { return square(x); },
                                [](double v) { return v * v; },
                                kMixed},
                      UnaryCase{"sin",
                                [](Value x) { return sin(x); },
                                [](double v) { return std::sin(v); },
                                kMixed},
                      UnaryCase{"cos",
                                [](Value x) { return cos(x); },
                                [](double v) { return std::cos(v); },
                                kMixed},
                      UnaryCase{"tanh",
                                [](Value x) { return tanh(x); },
                                [](double v) { return std::tanh(v); },
                                kMixed},
                      UnaryCase{"abs",
                                [](Value x) { return abs(x); },
                                [](double v) { return std::fabs(v); },
                                kMixed},
                      UnaryCase{"pow_scalar",
                                [](Value x) { return pow(x, 2.5); },
                                [](double v) { return std::pow(v, 2.5); },
                                kPositive},
                      UnaryCase{"pow_scalar_square",
                                [](Value x) { return pow(x, 2.0); },
                                [](double v) { return v * v; },
                                kMixed}),
    [](const ::testing::TestParamInfo<UnaryCase>& info) {
      return std::string(info.param.name);
    });

struct BinaryCase {
  const char* name;
  std::function<Value(Value, Value)> build;
  std::function<double(double, double)> reference;
};

void PrintTo(const BinaryCase& c, std::ostream* os) { *os << c.name; }

class BinaryOps : public ::testing::TestWithParam<BinaryCase> {};

TEST_P(BinaryOps, SameShapeAndScalarBroadcasting) {
  const BinaryCase& c = GetParam();
  const std::vector<double> av = {0.7, 1.5, 2.25, 0.4};
  const std::vector<double> bv = {1.2, 0.5, 1.75, 2.0};
  Graph g;
  Value a = g.placeholder("a", {2, 2});
  Value b = g.placeholder("b", {2, 2});
  Value s = g.placeholder("s", {});
  Value t = g.placeholder("t", {1});
  Value ab = c.build(a, b), as = c.build(a, s), sb = c.build(s, b),
        tb = c.build(t, b);
  EXPECT_EQ(as.shape(), (Shape{2, 2}));
  EXPECT_EQ(tb.shape(), (Shape{2, 2}));
  FeedMap feeds{{a, Tensor({2, 2}, av)},
                {b, Tensor({2, 2}, bv)},
                {s, Tensor::scalar(1.3)},
                {t, Tensor({1.3})}};
  Session session(g);
  auto out = session.run({ab, as, sb, tb}, feeds);
  for (int i = 0; i < 4; ++i) {
    EXPECT_NEAR(out[0][i], c.reference(av[i], bv[i]), 1e-14) << c.name;
    EXPECT_NEAR(out[1][i], c.reference(av[i], 1.3), 1e-14) << c.name;
    EXPECT_NEAR(out[2][i], c.reference(1.3, bv[i]), 1e-14) << c.name;
    EXPECT_NEAR(out[3][i], c.reference(1.3, bv[i]), 1e-14) << c.name;
  }
  Value w = g.constant(Tensor({2, 2}, {1.0, -0.5, 0.75, 2.0}));
  Value loss = dot(ab, w) + dot(as, w) + dot(sb, w) + dot(tb, w);
  expect_gradients_ok(loss, {a, b, s, t}, feeds);
}

INSTANTIATE_TEST_SUITE_P(
    Elementwise,
    BinaryOps,
    ::testing::Values(BinaryCase{"add",
                                 [](Value a, Value b) { return a + b; },
                                 [](double a, double b) { return a + b; }},
                      BinaryCase{"sub",
                                 [](Value a, Value b) { return a - b; },
                                 [](double a, double b) { return a - b; }},
                      BinaryCase{"mul",
                                 [](Value a, Value b) { return a * b; },
                                 [](double a, double b) { return a * b; }},
                      BinaryCase{"div",
                                 [](Value a, Value b) { return a / b; },
                                 [](double a, double b) { return a / b; }},
                      BinaryCase{
                          "pow",
                          [](Value a, Value b) { return pow(a, b); },
                          [](double a, double b) { return std::pow(a, b); }}),
    [](const ::testing::TestParamInfo<BinaryCase>& info) {
      return std::string(info.param.name);
    });

TEST(Elementwise, PowSecondDerivativesAndItsZeroSafeBaseDerivative) {
  // d/da a^b = b·a^(b−1) is exactly 0 where b = 0, even at a = 0.
  Graph g;
  Value a = g.placeholder("a", {3});
  Value b = g.placeholder("b", {3});
  Value d = g.add_node("pow_base_derivative", {a, b});
  Session s(g);
  Tensor out =
      s.run(d, {{a, Tensor({0.0, 2.0, 3.0})}, {b, Tensor({0.0, 3.0, 0.5})}});
  EXPECT_EQ(out[0], 0.0);
  EXPECT_DOUBLE_EQ(out[1], 12.0);
  EXPECT_DOUBLE_EQ(out[2], 0.5 / std::sqrt(3.0));
  // Its own gradient (the second derivative of pow) passes the checker.
  Value w = g.constant(Tensor({1.0, -2.0, 0.5}));
  FeedMap f{{a, Tensor({0.7, 1.3, 2.1})}, {b, Tensor({1.5, 2.5, -0.5})}};
  expect_gradients_ok(dot(d, w), {a, b}, f);
  Value hv = gradient(sum(gradient(sum(pow(a, b)), a)), a);
  Tensor h = s.run(hv, f);
  for (int i = 0; i < 3; ++i) {
    const double x = f.at(a)[i], p = f.at(b)[i];
    EXPECT_NEAR(
        h[i], p * (p - 1) * std::pow(x, p - 2), 1e-12 * (1 + std::fabs(h[i])));
  }
}

TEST(Elementwise, ScalarOperandsOnEitherSide) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Session s(g);
  FeedMap f{{x, Tensor({2.0, 4.0})}};
  EXPECT_EQ(s.run(1.0 + x, f)[1], 5.0);
  EXPECT_EQ(s.run(x - 1.0, f)[1], 3.0);
  EXPECT_EQ(s.run(1.0 - x, f)[1], -3.0);
  EXPECT_EQ(s.run(3.0 * x, f)[1], 12.0);
  EXPECT_EQ(s.run(x / 4.0, f)[1], 1.0);
  EXPECT_EQ(s.run(8.0 / x, f)[1], 2.0);
}

TEST(Elementwise, SignHasZeroDerivativeAndAbsIsZeroAtZero) {
  Graph g;
  Value x = g.placeholder("x", {3});
  Session s(g);
  FeedMap f{{x, Tensor({-2.0, 0.0, 3.0})}};
  Tensor sg = s.run(sign(x), f);
  EXPECT_EQ(sg.to_vector(), (std::vector<double>{-1, 0, 1}));
  EXPECT_EQ(s.run(gradient(sum(sign(x)), x), f).to_vector(),
            (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(s.run(gradient(sum(abs(x)), x), f).to_vector(),
            (std::vector<double>{-1, 0, 1}));
}

TEST(Elementwise, MismatchedShapesThrowAtBuildTime) {
  Graph g;
  Value a = g.placeholder("a", {2, 3});
  Value b = g.placeholder("b", {3, 2});
  Value s = g.placeholder("s", {1, 1, 1});
  EXPECT_THROW(a * b, ShapeError);
  // A one-element operand may not have a higher rank than the tensor.
  EXPECT_THROW(g.placeholder("v", {3}) + s, ShapeError);
}

}  // namespace
}  // namespace adgraph
