#include "core/checker/gradient_checker.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph {
namespace {

using testing::register_cube;

TEST(GradientChecker, AcceptsACorrectCustomOp) {
  register_cube("test_cube_right", 3.0);
  Graph g;
  Value x = g.placeholder("x", {3});
  Value y = sum(g.add_node("test_cube_right", {x}));
  GradientCheckResult r =
      check_gradients(y, {x}, {{x, Tensor({0.5, -1.0, 2.0})}});
  EXPECT_TRUE(r.ok) << r.message;
  EXPECT_LE(r.max_fd_error, 1e-7);
  ASSERT_EQ(r.taylor_rates.size(), 3u);
  for (double rate : r.taylor_rates) EXPECT_NEAR(rate, 2.0, 0.1);
}

TEST(GradientChecker, RejectsAWrongCustomOp) {
  register_cube("test_cube_wrong", 3.01);
  Graph g;
  Value x = g.placeholder("x", {3});
  Value y = sum(g.add_node("test_cube_wrong", {x}));
  GradientCheckResult r =
      check_gradients(y, {x}, {{x, Tensor({0.5, -1.0, 2.0})}});
  EXPECT_FALSE(r.ok);
  EXPECT_GT(r.max_fd_error, 1e-3);
  // Without finite differences the Taylor test alone still catches it.
  GradientCheckOptions taylor_only;
  taylor_only.finite_differences = false;
  r = check_gradients(y, {x}, {{x, Tensor({0.5, -1.0, 2.0})}}, taylor_only);
  EXPECT_FALSE(r.ok);
  for (double rate : r.taylor_rates) EXPECT_LT(rate, 1.5);
}

TEST(GradientChecker, LinearFunctionPassesWithoutARate) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = sum(x * 3.0);
  GradientCheckResult r = check_gradients(y, {x}, {{x, Tensor({1.0, 2.0})}});
  EXPECT_TRUE(r.ok) << r.message;
  for (double rate : r.taylor_rates) EXPECT_TRUE(std::isnan(rate));
}

TEST(GradientChecker, ValidatesOptionsAndArguments) {
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = sum(x);
  GradientCheckOptions bad;
  bad.step = 0;
  EXPECT_THROW(check_gradients(y, {x}, {{x, Tensor({1.0, 2.0})}}, bad),
               OptionsError);
  EXPECT_THROW(check_gradients(x, {x}, {{x, Tensor({1.0, 2.0})}}), GraphError);
  EXPECT_THROW(check_gradients(y, {x}, {}), GraphError);
}

}  // namespace
}  // namespace adgraph
