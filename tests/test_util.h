// Helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "core/checker/gradient_checker.h"
#include "core/op.h"
#include "ops/elementwise.h"

namespace adgraph::testing {

// The acceptance thresholds of every op test.
constexpr double kFdTolerance = 1e-7;
constexpr double kRateTolerance = 0.1;

// Runs the public gradient checker with the acceptance thresholds and
// reports its message on failure.
inline void expect_gradients_ok(Value y,
                                const std::vector<Value>& xs,
                                const FeedMap& feeds,
                                GradientCheckOptions options = {}) {
  options.tolerance = kFdTolerance;
  options.rate_tolerance = kRateTolerance;
  GradientCheckResult r = check_gradients(y, xs, feeds, options);
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_LE(r.max_fd_error, kFdTolerance);
}

// Registers y = x³ as a user-style custom op (once per name) whose gradient
// builder uses gradient_factor·x² (3 is right) and, when tangent_factor is
// given, whose tangent rule is tangent_factor·x²·ẋ.
inline void register_cube(const std::string& name,
                          double gradient_factor,
                          std::optional<double> tangent_factor = {}) {
  if (OpRegistry::global().find(name)) return;
  OpDef def;
  def.name = name;
  def.inputs = {"x"};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    c.output(0).array() = c.input(0).array().cube();
  };
  def.gradient = [gradient_factor](const GradientContext& c) {
    return Values{c.grad() * (gradient_factor * square(c.input(0)))};
  };
  if (tangent_factor) {
    def.tangent = [factor = *tangent_factor](const TangentContext& c) {
      return Values{c.tangent() * (factor * square(c.input(0)))};
    };
  }
  register_op(def);
}

}  // namespace adgraph::testing
