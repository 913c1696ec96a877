#include "core/ad/jvp.h"

#include <gtest/gtest.h>

#include <cmath>

#include "builtin_ops.h"
#include "core/ad/gradients.h"
#include "core/checker/gradient_checker.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"
#include "solvers/heat_step.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using testing::register_cube;

TEST(Jvp, MatchesHandDerivedDirectionalDerivatives) {
  // f(x, y) = x·y + sin(x) elementwise:  ḟ = y·ẋ + x·ẏ + cos(x)·ẋ
  Graph g;
  Value x = g.placeholder("x", {3});
  Value y = g.placeholder("y", {3});
  Value tx = g.placeholder("tx", {3});
  Value ty = g.placeholder("ty", {3});
  Value f = x * y + sin(x);
  Value f_dot = jvp({f}, {x, y}, {tx, ty})[0];
  Tensor xv({0.5, -1.0, 2.0}), yv({3.0, 0.25, -2.0});
  Tensor txv({1.0, 2.0, -1.0}), tyv({0.5, 0.0, 4.0});
  Tensor out = Session(g).run(f_dot, {{x, xv}, {y, yv}, {tx, txv}, {ty, tyv}});
  for (int i = 0; i < 3; ++i) {
    const double expected =
        yv[i] * txv[i] + xv[i] * tyv[i] + std::cos(xv[i]) * txv[i];
    EXPECT_NEAR(out[i], expected, 1e-15 * (1 + std::fabs(expected)));
  }
}

TEST(Jvp, MatrixProductAndReductions) {
  // f(A, v) = sum((A v)²):  ḟ = 2 (A v)·(Ȧ v + A v̇)
  Graph g;
  Value a = g.placeholder("a", {2, 2});
  Value v = g.placeholder("v", {2});
  Value ta = g.placeholder("ta", {2, 2});
  Value tv = g.placeholder("tv", {2});
  Value f = sum(square(matvec(a, v)));
  Value f_dot = jvp({f}, {a, v}, {ta, tv})[0];
  Tensor av({2, 2}, {1.0, 2.0, 3.0, 4.0}), vv({1.0, -1.0});
  Tensor tav({2, 2}, {0.0, 1.0, 0.0, 0.0}), tvv({2.0, 0.0});
  // A v = (−1, −1); Ȧ v = (−1, 0); A v̇ = (2, 6); ḟ = 2(−1·1 + −1·6) = −14.
  EXPECT_DOUBLE_EQ(
      Session(g).run(f_dot, {{a, av}, {v, vv}, {ta, tav}, {tv, tvv}}).item(),
      -14.0);
}

TEST(Jvp, EqualsGradientDotTangent) {
  // ⟨∇f, t⟩ = jvp(f, t) for a function mixing most local op families.
  Graph g;
  Value x = g.placeholder("x", {2, 3});
  Value t = g.placeholder("t", {2, 3});
  Value f = sum(exp(x) / (2.0 + cos(x))) + sum(matmul(x, transpose(x))) +
            dot(tanh(x), pow(abs(x) + 1.0, 1.5)) + mean(sqrt(square(x) + 1.0));
  Value grad = gradient(f, x);
  Value f_dot = jvp(f, x, t);
  Tensor xv({2, 3}, {0.3, -0.7, 1.1, 0.2, -1.4, 0.9});
  Tensor tv({2, 3}, {1, -2, 0.5, 3, 0.25, -1});
  auto out = Session(g).run({grad, f_dot}, {{x, xv}, {t, tv}});
  const double expected = (out[0].array() * tv.array()).sum();
  EXPECT_NEAR(out[1].item(), expected, 1e-13 * std::fabs(expected));
}

TEST(Jvp, OfAGradientIsAHessianVectorProduct) {
  // f = Σ x³ + x₀x₁:  H v = 6 x ⊙ v + (v₁, v₀, 0)
  Graph g;
  Value x = g.placeholder("x", {3});
  Value v = g.placeholder("v", {3});
  Value f = sum(pow(x, 3.0)) + sum(slice(x, 0, 0, 1) * slice(x, 0, 1, 2));
  Value hv = jvp(gradient(f, x), x, v);
  Tensor xv({1.0, -2.0, 0.5}), vv({0.5, 1.0, -3.0});
  Tensor out = Session(g).run(hv, {{x, xv}, {v, vv}});
  EXPECT_DOUBLE_EQ(out[0], 6 * 1.0 * 0.5 + 1.0);
  EXPECT_DOUBLE_EQ(out[1], 6 * -2.0 * 1.0 + 0.5);
  EXPECT_DOUBLE_EQ(out[2], 6 * 0.5 * -3.0);
}

TEST(Jvp, UnrelatedOutputGetsZerosAndIntermediateInputsWork) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value u = g.placeholder("u", {2});
  Value h = square(x);  // an intermediate value used as the input
  Value y = sin(h);     // ẏ = cos(h)·ḣ with ḣ given
  Value z = u * 2.0;    // does not depend on h
  Value t = g.placeholder("t", {2});
  auto out = jvp({y, z}, {h}, {t});
  Tensor xv({0.5, 1.5}), tv({2.0, -1.0});
  auto r = Session(g).run(out, {{x, xv}, {u, Tensor({1.0, 1.0})}, {t, tv}});
  for (int i = 0; i < 2; ++i) {
    EXPECT_DOUBLE_EQ(r[0][i], std::cos(xv[i] * xv[i]) * tv[i]);
    EXPECT_EQ(r[1][i], 0.0);
  }
}

TEST(Jvp, TangentOfALocalChainRunsInConstantMemory) {
  // x_{k+1} = sin(x_k), 200 steps of 10⁴ values. The tangent nodes are
  // appended after the whole chain, but the session runs each node when it
  // is first needed, so x_k dies once its tangent step has used it: the
  // live bytes stay at a few arrays, not 200. ẋ_K = Π cos(x_k)·ẋ_0.
  constexpr int kSteps = 200, kSize = 10000;
  Graph g;
  Value x0 = g.placeholder("x", {kSize});
  Value t = g.placeholder("t", {kSize});
  Value x = x0;
  for (int k = 0; k < kSteps; ++k) x = sin(x);
  Value x_dot = jvp(x, x0, t);
  Session session(g);
  Tensor xv(Shape{kSize}, 0.5), tv(Shape{kSize}, 2.0);
  Tensor out = session.run(x_dot, {{x0, xv}, {t, tv}});
  double value = 0.5, derivative = 2.0;
  for (int k = 0; k < kSteps; ++k) {
    derivative *= std::cos(value);
    value = std::sin(value);
  }
  EXPECT_NEAR(out[0], derivative, 1e-14);
  EXPECT_LE(session.stats().peak_live_bytes, 8u * sizeof(double) * kSize);
}

TEST(Jvp, UserOpWithoutTangentRuleUsesTheTransposedAdjoint) {
  register_cube("jvp_test_cube_no_tangent", 3.0);
  Graph g;
  Value x = g.placeholder("x", {3});
  Value t = g.placeholder("t", {3});
  Value y = g.add_node("jvp_test_cube_no_tangent", {x});
  Value y_dot = jvp(y, x, t);
  Tensor xv({0.5, -1.0, 2.0}), tv({1.0, 3.0, -0.5});
  Tensor out = Session(g).run(y_dot, {{x, xv}, {t, tv}});
  for (int i = 0; i < 3; ++i) {
    EXPECT_DOUBLE_EQ(out[i], 3 * xv[i] * xv[i] * tv[i]);
  }
}

TEST(Jvp, CheckerRejectsAWrongTangentRule) {
  register_cube("jvp_test_cube_right", 3.0, 3.0);
  register_cube("jvp_test_cube_wrong", 3.0, 3.01);
  for (const char* op : {"jvp_test_cube_right", "jvp_test_cube_wrong"}) {
    Graph g;
    Value x = g.placeholder("x", {3});
    Value y = sum(g.add_node(op, {x}));
    GradientCheckResult r =
        check_gradients(y, {x}, {{x, Tensor({0.5, -1.0, 2.0})}});
    if (std::string(op) == "jvp_test_cube_right") {
      EXPECT_TRUE(r.ok) << r.message;
      EXPECT_LE(r.max_jvp_error, 1e-12);
      for (double rate : r.jvp_taylor_rates) EXPECT_NEAR(rate, 2.0, 0.1);
    } else {
      EXPECT_FALSE(r.ok);
      EXPECT_GT(r.max_jvp_error, 1e-4);
      EXPECT_NE(r.message.find("jvp"), std::string::npos) << r.message;
    }
  }
}

TEST(Jvp, EveryBuiltInOpWithAGradientHasATangentRule) {
  register_all_ops();  // every op of every layer
  for (const OpDef* def : OpRegistry::global().all()) {
    if (def->name.rfind("jvp_test_", 0) == 0 ||
        def->name.rfind("test_", 0) == 0) {
      continue;  // ops registered by the tests themselves
    }
    if (def->gradient) {
      EXPECT_TRUE(static_cast<bool>(def->tangent)) << def->name;
    }
  }
}

TEST(Jvp, ErrorsNameTheNodeAndField) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = square(x);
  EXPECT_THROW(jvp(y, x, g.placeholder("t3", {3})), ShapeError);
  EXPECT_THROW(jvp({y}, {x}, {}), GraphError);
  // heat_step_adjoint has neither a gradient nor a tangent rule.
  Value u = g.placeholder("u", {2, 2});
  Value strip = g.placeholder("strip", {2});
  auto step = solvers::heat_step(u, u, u, {strip, strip, strip, strip}, 0.1, 1);
  Value adj = gradients(sum(step.u), {u})[0];
  try {
    jvp(adj, u, g.placeholder("tu", {2, 2}));
    FAIL() << "expected a GraphError";
  } catch (const GraphError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("heat_step_adjoint"), std::string::npos) << message;
    EXPECT_NE(message.find("tangent"), std::string::npos) << message;
  }
}

}  // namespace
}  // namespace adgraph
