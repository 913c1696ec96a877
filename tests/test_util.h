// Helpers shared by the test suites.
#pragma once

#include <gtest/gtest.h>

#include "core/gradient_checker.h"

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

}  // namespace adgraph::testing
