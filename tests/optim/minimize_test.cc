// L-BFGS and L-BFGS-B on a graph (optim/minimize.cc), in one process:
// minimisers worked out by hand (a linear least-squares fit, a projection
// onto a box), other placeholders fed, the values packed back per
// variable, and the problem's refusals naming the node and the field.
#include "optim/minimize.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "adgraph.h"

namespace adgraph::optim {
namespace {

std::string refusal(const std::function<void()>& call) {
  try {
    call();
  } catch (const Error& e) {
    return e.what();
  }
  return "accepted";
}

TEST(Minimize, ALeastSquaresFitOverTwoVariables) {
  // L = (2a − 4)² + (a + b − 3)² + (b − c)² with c = 1 fed: zero at a = 2,
  // b = 1.
  Graph g;
  Value a = g.placeholder("a", {}), b = g.placeholder("b", {1});
  Value c = g.placeholder("c", {1});
  Value r0 = 2.0 * a - 4.0, r1 = a + sum(b) - 3.0, r2 = sum(b - c);
  Value loss = square(r0) + square(r1) + square(r2);
  std::vector<Tensor> values = {Tensor::scalar(-3.0), Tensor({10.0})};
  LbfgsOptions options;
  options.tolerance_gradient = 1e-12;
  options.tolerance_function = 0;
  const LbfgsSummary s =
      minimize(loss, {a, b}, values, {{c, Tensor({1.0})}}, options);
  EXPECT_EQ(s.termination, Termination::kGradientNorm) << s.message;
  EXPECT_NEAR(values[0].item(), 2.0, 1e-10);
  EXPECT_EQ(values[1].shape(), Shape{1});
  EXPECT_NEAR(values[1][0], 1.0, 1e-10);
  // f(x0) = 100 + 16 + 81.
  EXPECT_EQ(s.initial_f, 197.0);
  EXPECT_LT(s.final_f, 1e-20);
  EXPECT_EQ(s.f_history.front(), 197.0);
}

TEST(Minimize, WithinBoundsTheMinimiserIsTheProjection) {
  // Σ (x − t)², t = (−1, 0.5, 3), 0 ≤ x ≤ 2: x = (0, 0.5, 2), two bounds
  // active; an open side stays open.
  Graph g;
  Value x = g.placeholder("x", {3});
  Value loss = sum(square(x - g.constant(Tensor({-1.0, 0.5, 3.0}))));
  std::vector<Tensor> values = {Tensor({1.0, 1.0, 1.0})};
  VariableBounds bounds;
  bounds.lower = {Tensor({0.0, 0.0, 0.0})};
  bounds.upper = {Tensor({2.0, std::numeric_limits<double>::infinity(), 2.0})};
  const LbfgsSummary s = minimize(loss, {x}, values, bounds);
  EXPECT_EQ(values[0][0], 0.0);  // at its bounds exactly
  EXPECT_EQ(values[0][2], 2.0);
  EXPECT_NEAR(values[0][1], 0.5, 1e-10);
  EXPECT_EQ(s.active_bounds, 2);
  EXPECT_NEAR(s.final_f, 2.0, 1e-15);  // 1 + 0 + 1
}

TEST(Minimize, RefusalsNameTheNodeAndTheField) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = square(x);
  Value loss = sum(y);
  std::vector<Tensor> start = {Tensor({1.0, 2.0})};
  EXPECT_NE(refusal([&] {
              minimize(y, {x}, start);
            }).find("the objective must have one element, it has shape [2]"),
            std::string::npos);
  EXPECT_NE(refusal([&] {
              minimize(loss, {y}, start);
            }).find("a variable must be a placeholder"),
            std::string::npos);
  std::vector<Tensor> wrong = {Tensor({1.0, 2.0, 3.0})};
  EXPECT_NE(refusal([&] {
              minimize(loss, {x}, wrong);
            }).find("start value has shape [3], the variable [2]"),
            std::string::npos);
  std::vector<Tensor> none;
  EXPECT_NE(refusal([&] {
              minimize(loss, {x}, none);
            }).find("one start value per variable is needed"),
            std::string::npos);
  VariableBounds short_side;
  short_side.lower = {Tensor({0.0})};
  EXPECT_NE(refusal([&] {
              minimize(loss, {x}, start, short_side);
            }).find("lower bound has shape [1], the variable [2]"),
            std::string::npos);
}

}  // namespace
}  // namespace adgraph::optim
