#include "ops/elementwise.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
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

// Operand shapes that broadcast under NumPy's rules, and the result's.
struct BroadcastShapes {
  Shape a, b, y;
};

const std::vector<BroadcastShapes> kBroadcasts = {
    {{3, 4, 5}, {4, 5}, {3, 4, 5}},     // a missing leading axis
    {{4, 5}, {3, 4, 5}, {3, 4, 5}},     // the same, on the other side
    {{3, 1, 5}, {1, 4, 1}, {3, 4, 5}},  // stretched size-1 axes on both
    {{5}, {3, 1}, {3, 5}},              // an outer product's shapes
    {{3, 1}, {5}, {3, 5}},
    {{2, 3}, {1}, {2, 3}},  // a one-element operand
};

// Element i (row-major in y) of x broadcast to shape y, found by
// unravelling i: a second implementation of broadcasting, written out.
double broadcast_element(const Tensor& x, const Shape& y, int64_t i) {
  const Shape& s = x.shape();
  int64_t offset = 0, stride = 1;
  for (std::size_t k = 1; k <= y.size(); ++k) {  // the k-th axis from the end
    const int64_t index = i % y[y.size() - k];
    i /= y[y.size() - k];
    if (k <= s.size()) {
      const int64_t extent = s[s.size() - k];
      if (extent != 1) offset += index * stride;
      stride *= extent;
    }
  }
  return x[offset];
}

// first + 0.1·((step·i) mod period) for i = 0, 1, …: a's from 0.3 and b's
// from 0.35 never tie (they differ by at least 0.05), so max, min and the
// comparisons are smooth around them; all positive, for pow and div.
Tensor spaced_values(const Shape& shape, double first, int step, int period) {
  Tensor t(shape);
  for (int64_t i = 0; i < t.size(); ++i) {
    t[i] = first + 0.1 * static_cast<double>((step * i) % period);
  }
  return t;
}

Tensor weights(const Shape& shape) {
  Tensor w(shape);
  for (int64_t i = 0; i < w.size(); ++i) {
    w[i] = 1.0 + 0.125 * static_cast<double>(i % 7);
  }
  return w;
}

TEST_P(BinaryOps, NumpyBroadcastingMatchesAnIndexByIndexLoop) {
  const BinaryCase& c = GetParam();
  for (const BroadcastShapes& shapes : kBroadcasts) {
    SCOPED_TRACE(::testing::Message() << c.name << " " << shape_string(shapes.a)
                                      << " with " << shape_string(shapes.b));
    Graph g;
    Value a = g.placeholder("a", shapes.a);
    Value b = g.placeholder("b", shapes.b);
    Value y = c.build(a, b);
    ASSERT_EQ(y.shape(), shapes.y);
    FeedMap feeds{{a, spaced_values(shapes.a, 0.3, 7, 23)},
                  {b, spaced_values(shapes.b, 0.35, 5, 19)}};
    Session s(g);
    Tensor out = s.run(y, feeds);
    for (int64_t i = 0; i < out.size(); ++i) {
      // The same arithmetic on the same two doubles: the same bits.
      EXPECT_EQ(out[i],
                c.reference(broadcast_element(feeds.at(a), shapes.y, i),
                            broadcast_element(feeds.at(b), shapes.y, i)))
          << "at " << i;
    }
    expect_gradients_ok(dot(y, g.constant(weights(shapes.y))), {a, b}, feeds);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Elementwise,
    BinaryOps,
    ::testing::Values(
        BinaryCase{"add",
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
        BinaryCase{"pow",
                   [](Value a, Value b) { return pow(a, b); },
                   [](double a, double b) { return std::pow(a, b); }},
        BinaryCase{"maximum",
                   [](Value a, Value b) { return maximum(a, b); },
                   [](double a, double b) { return std::fmax(a, b); }},
        BinaryCase{"minimum",
                   [](Value a, Value b) { return minimum(a, b); },
                   [](double a, double b) { return std::fmin(a, b); }},
        BinaryCase{"less",
                   [](Value a, Value b) { return less(a, b); },
                   [](double a, double b) { return a < b ? 1.0 : 0.0; }},
        BinaryCase{"less_equal",
                   [](Value a, Value b) { return less_equal(a, b); },
                   [](double a, double b) { return a <= b ? 1.0 : 0.0; }},
        BinaryCase{"greater",
                   [](Value a, Value b) { return greater(a, b); },
                   [](double a, double b) { return a > b ? 1.0 : 0.0; }},
        BinaryCase{"greater_equal",
                   [](Value a, Value b) { return greater_equal(a, b); },
                   [](double a, double b) { return a >= b ? 1.0 : 0.0; }},
        BinaryCase{"equal",
                   [](Value a, Value b) { return equal(a, b); },
                   [](double a, double b) { return a == b ? 1.0 : 0.0; }},
        BinaryCase{"not_equal",
                   [](Value a, Value b) { return not_equal(a, b); },
                   [](double a, double b) { return a != b ? 1.0 : 0.0; }}),
    [](const ::testing::TestParamInfo<BinaryCase>& info) {
      return std::string(info.param.name);
    });

TEST(Elementwise, PowSecondDerivativesAndItsZeroSafeBaseDerivative) {
  register_ops_layer();  // pow_base_derivative is named below
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
  // Broadcast ([3, 1] with [2]), it and its gradient pass the checker too.
  Value c = g.placeholder("c", {3, 1});
  Value e = g.placeholder("e", {2});
  Value dc = g.add_node("pow_base_derivative", {c, e});
  ASSERT_EQ(dc.shape(), (Shape{3, 2}));
  FeedMap fc{{c, Tensor({3, 1}, {0.7, 1.3, 2.1})}, {e, Tensor({1.5, -0.5})}};
  expect_gradients_ok(dot(dc, g.constant(weights({3, 2}))), {c, e}, fc);
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
  EXPECT_THROW(a * b, ShapeError);
  // A one-element operand of higher rank broadcasts, as in NumPy.
  Value s = g.placeholder("s", {1, 1, 1});
  EXPECT_EQ((g.placeholder("v", {3}) + s).shape(), (Shape{1, 1, 3}));
}

TEST(Elementwise, NonBroadcastingShapesNameBothShapes) {
  Graph g;
  Value a = g.placeholder("a", {3, 4});
  Value b = g.placeholder("b", {2, 4});
  const auto message = [&](const char* op, std::vector<Value> inputs) {
    try {
      g.add_node(op, inputs, nlohmann::json::object(), {.name = "y"});
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no ShapeError");
  };
  EXPECT_EQ(message("add", {a, b}),
            "node \"y\" (add): input \"b\": shape [2, 4] does not "
            "broadcast with [3, 4]");
  EXPECT_EQ(message("mul", {b, a}),
            "node \"y\" (mul): input \"b\": shape [3, 4] does not "
            "broadcast with [2, 4]");
  // where names the first input that does not fit the ones before it.
  EXPECT_EQ(message("where", {g.placeholder("c", {4}), a, b}),
            "node \"y\" (where): input \"b\": shape [2, 4] does not "
            "broadcast with [3, 4]");
  for (const char* op : {"sub",
                         "div",
                         "pow",
                         "maximum",
                         "minimum",
                         "less",
                         "less_equal",
                         "greater",
                         "greater_equal",
                         "equal",
                         "not_equal"}) {
    EXPECT_EQ(message(op, {a, b}),
              "node \"y\" (" + std::string(op) +
                  "): input \"b\": shape [2, 4] does not broadcast with "
                  "[3, 4]");
  }
}

TEST(Elementwise, BroadcastGradientsSumInIndexOrder) {
  // y = a·b with a [3, 1, 5] and b [1, 4, 1]; for the loss Σ w·y,
  // ā[i, 0, k] = Σ_j w·b over j, b̄[0, j, 0] = Σ_(i,k) w·a, each sum from 0
  // in row-major order of the broadcast axes: the loops below, bit for bit.
  Graph g;
  Value a = g.placeholder("a", {3, 1, 5});
  Value b = g.placeholder("b", {1, 4, 1});
  const Tensor w = weights({3, 4, 5});
  FeedMap feeds{{a, spaced_values({3, 1, 5}, 0.3, 7, 23)},
                {b, spaced_values({1, 4, 1}, 0.35, 5, 19)}};
  std::vector<Value> grads = gradients(dot(a * b, g.constant(w)), {a, b});
  Session s(g);
  const std::vector<Tensor> out = s.run(grads, feeds);
  const Tensor &av = feeds.at(a), &bv = feeds.at(b);
  for (int i = 0; i < 3; ++i) {
    for (int k = 0; k < 5; ++k) {
      double sum = 0.0;
      for (int j = 0; j < 4; ++j) sum += w[(i * 4 + j) * 5 + k] * bv[j];
      EXPECT_EQ(out[0][i * 5 + k], sum) << i << ", " << k;
    }
  }
  for (int j = 0; j < 4; ++j) {
    double sum = 0.0;
    for (int i = 0; i < 3; ++i) {
      for (int k = 0; k < 5; ++k) sum += w[(i * 4 + j) * 5 + k] * av[i * 5 + k];
    }
    EXPECT_EQ(out[1][j], sum) << j;
  }
  // And the same bits on a second run.
  const std::vector<Tensor> again = s.run(grads, feeds);
  EXPECT_EQ(again[0].to_vector(), out[0].to_vector());
  EXPECT_EQ(again[1].to_vector(), out[1].to_vector());
}

TEST(Elementwise, EmptyOperandsBroadcast) {
  Graph g;
  Value a = g.placeholder("a", {0, 4});
  Value b = g.placeholder("b", {4});
  Value s = g.placeholder("s", {1});
  Value y = a * b + s;
  EXPECT_EQ(y.shape(), (Shape{0, 4}));
  Session session(g);
  FeedMap feeds{{a, Tensor(Shape{0, 4})},
                {b, Tensor({1.0, 2.0, 3.0, 4.0})},
                {s, Tensor({1.0})}};
  EXPECT_EQ(session.run(y, feeds).size(), 0);
  EXPECT_EQ(session.run(gradient(sum(y), b), feeds).to_vector(),
            (std::vector<double>{0, 0, 0, 0}));
  EXPECT_EQ(session.run(gradient(sum(y), s), feeds).to_vector(),
            (std::vector<double>{0}));
}

TEST(Elementwise, WhereBroadcastsAndRoutesCotangents) {
  // c [3, 1, 5] (zeros, negatives, a NaN: non-zero), a [1, 4, 1], b [4, 5].
  Graph g;
  Value c = g.placeholder("c", {3, 1, 5});
  Value a = g.placeholder("a", {1, 4, 1});
  Value b = g.placeholder("b", {4, 5});
  Value y = where(c, a, b);
  ASSERT_EQ(y.shape(), (Shape{3, 4, 5}));
  Tensor cv({3, 1, 5},
            {0, 1, -2, 0, 0.5, 3, 0, 0, std::nan(""), 0, 1, 1, 0, -1, 0});
  FeedMap feeds{{c, cv},
                {a, spaced_values({1, 4, 1}, 0.3, 7, 23)},
                {b, spaced_values({4, 5}, 0.35, 5, 19)}};
  Session s(g);
  Tensor out = s.run(y, feeds);
  const Shape shape{3, 4, 5};
  for (int64_t i = 0; i < out.size(); ++i) {
    const double ci = broadcast_element(cv, shape, i);
    EXPECT_EQ(out[i],
              ci != 0.0 ? broadcast_element(feeds.at(a), shape, i)
                        : broadcast_element(feeds.at(b), shape, i))
        << "at " << i;
  }
  const Tensor w = weights(shape);
  Value loss = dot(y, g.constant(w));
  expect_gradients_ok(loss, {a, b}, feeds);
  // ā sums ȳ where c ≠ 0 (c's NaN counts); b̄ the rest; c gets zeros.
  std::vector<Value> grads = gradients(loss, {c, a, b});
  std::vector<Tensor> gv = s.run(grads, feeds);
  EXPECT_EQ(gv[0].to_vector(), std::vector<double>(15, 0.0));
  for (int j = 0; j < 4; ++j) {
    double ga = 0.0, gb_total = 0.0;
    for (int i = 0; i < 3; ++i) {
      for (int k = 0; k < 5; ++k) {
        const double wi = w[(i * 4 + j) * 5 + k];
        (cv[i * 5 + k] != 0.0 ? ga : gb_total) += wi;
      }
    }
    EXPECT_EQ(gv[1][j], ga) << j;
    double gb_row = 0.0;
    for (int k = 0; k < 5; ++k) gb_row += gv[2][j * 5 + k];
    EXPECT_EQ(gb_row, gb_total) << j;
  }
  // A scalar operand and one of lower rank: [5], [3, 1] and [] give [3, 5].
  Value c1 = g.placeholder("c1", {5});
  Value a1 = g.placeholder("a1", {3, 1});
  Value b1 = g.placeholder("b1", {});
  Value y1 = where(c1, a1, b1);
  ASSERT_EQ(y1.shape(), (Shape{3, 5}));
  FeedMap f1{{c1, Tensor({1.0, 0.0, 0.0, 2.0, 0.0})},
             {a1, Tensor({3, 1}, {0.5, 1.5, 2.5})},
             {b1, Tensor::scalar(-4.0)}};
  EXPECT_EQ(s.run(y1, f1).to_vector(),
            (std::vector<double>{0.5,
                                 -4,
                                 -4,
                                 0.5,
                                 -4,  //
                                 1.5,
                                 -4,
                                 -4,
                                 1.5,
                                 -4,  //
                                 2.5,
                                 -4,
                                 -4,
                                 2.5,
                                 -4}));
  expect_gradients_ok(dot(y1, g.constant(weights({3, 5}))), {a1, b1}, f1);
}

TEST(Elementwise, MaximumAndMinimumGiveTiesToA) {
  Graph g;
  Value a = g.placeholder("a", {3});
  Value b = g.placeholder("b", {3});
  Value s = g.placeholder("s", {});
  Session session(g);
  FeedMap f{{a, Tensor({1.0, 2.0, 3.0})},
            {b, Tensor({1.0, 0.0, 5.0})},
            {s, Tensor::scalar(2.0)}};
  const auto run = [&](Value v) { return session.run(v, f).to_vector(); };
  using V = std::vector<double>;
  EXPECT_EQ(run(maximum(a, b)), (V{1, 2, 5}));
  EXPECT_EQ(run(minimum(a, b)), (V{1, 0, 3}));
  EXPECT_EQ(run(gradient(sum(maximum(a, b)), a)), (V{1, 1, 0}));
  EXPECT_EQ(run(gradient(sum(maximum(a, b)), b)), (V{0, 0, 1}));
  EXPECT_EQ(run(gradient(sum(minimum(a, b)), a)), (V{1, 0, 1}));
  EXPECT_EQ(run(gradient(sum(minimum(a, b)), b)), (V{0, 1, 0}));
  // Forward mode follows the same convention.
  Value ones = g.constant(Tensor({1.0, 1.0, 1.0}));
  EXPECT_EQ(run(jvp(maximum(a, b), a, ones)), (V{1, 1, 0}));
  EXPECT_EQ(run(jvp(maximum(a, b), b, ones)), (V{0, 0, 1}));
  EXPECT_EQ(run(jvp(minimum(a, b), b, ones)), (V{0, 1, 0}));
  // Broadcast: the tie a = s = 2 goes to a; s's cotangent sums the rest.
  EXPECT_EQ(run(maximum(a, s)), (V{2, 2, 3}));
  EXPECT_EQ(run(gradient(sum(maximum(a, s)), a)), (V{0, 1, 1}));
  EXPECT_EQ(run(gradient(sum(maximum(a, s)), s)), (V{1}));
  EXPECT_EQ(run(gradient(sum(minimum(s, a)), s)), (V{2}));
  // NaN on either side gives NaN, as NumPy's maximum and minimum.
  Value p = g.constant(Tensor({std::nan(""), 1.0}));
  Value q = g.constant(Tensor({1.0, std::nan("")}));
  for (Value v : {maximum(p, q), minimum(p, q), maximum(q, p)}) {
    for (double e : session.run(v).to_vector()) EXPECT_TRUE(std::isnan(e));
  }
}

TEST(Elementwise, ComparisonsGiveOneOrZeroAndZeroDerivatives) {
  Graph g;
  Value a = g.placeholder("a", {4});
  Value b = g.placeholder("b", {});
  Session s(g);
  FeedMap f{{a, Tensor({1.0, 2.0, 3.0, std::nan("")})},
            {b, Tensor::scalar(2.0)}};
  using V = std::vector<double>;
  const std::vector<std::pair<Value (*)(Value, Value), V>> cases = {
      {less, {1, 0, 0, 0}},
      {less_equal, {1, 1, 0, 0}},
      {greater, {0, 0, 1, 0}},
      {greater_equal, {0, 1, 1, 0}},
      {equal, {0, 1, 0, 0}},
      {not_equal, {1, 0, 1, 1}}};
  for (const auto& [op, expected] : cases) {
    Value y = op(a, b);
    EXPECT_EQ(s.run(y, f).to_vector(), expected);
    // Zero gradient and zero tangent, for either operand.
    std::vector<Value> grads = gradients(sum(y * a), {a, b});
    // ∂/∂a of Σ y·a is y: through the product only, y passing none.
    EXPECT_EQ(s.run(grads[0], f).to_vector(), expected);
    EXPECT_EQ(s.run(grads[1], f).to_vector(), (V{0}));
    EXPECT_EQ(s.run(jvp(y, b, g.constant(Tensor::scalar(1.0))), f).to_vector(),
              (V{0, 0, 0, 0}));
  }
  // Broadcasting: [3, 1] against [2] gives [3, 2].
  Value c = g.constant(Tensor({3, 1}, {1.0, 2.0, 3.0}));
  Value d = g.constant(Tensor({2.0, 2.5}));
  EXPECT_EQ(s.run(greater_equal(c, d)).to_vector(), (V{0, 0, 1, 0, 1, 1}));
}

}  // namespace
}  // namespace adgraph
