// The strong-Wolfe line search (Nocedal & Wright's Algorithms 3.5 and
// 3.6) on its own: steps worked out by hand, and the strong Wolfe
// conditions checked independently on Moré and Thuente's first test
// function from four initial steps.
#include "optim/line_search.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/error.h"

namespace adgraph::optim {
namespace {

// φ(α) = (α − 2)², φ'(0) = −4: the first trial α = 1 has φ'(1) = −2 and
// |−2| ≤ 0.9·4, φ(1) = 1 ≤ 4 − 1e-4·4: accepted at once.
TEST(LineSearch, AcceptsTheFirstStepThatSatisfiesStrongWolfe) {
  int calls = 0;
  auto line = [&](double a, double* phi, double* dphi) {
    ++calls;
    *phi = (a - 2) * (a - 2);
    *dphi = 2 * (a - 2);
  };
  const LineSearchResult r = line_search_strong_wolfe(line, 4, -4, 1, {});
  EXPECT_TRUE(r.found);
  EXPECT_EQ(r.alpha, 1.0);
  EXPECT_EQ(r.phi, 1.0);
  EXPECT_EQ(r.dphi, -2.0);
  EXPECT_EQ(r.evaluations, 1);
  EXPECT_EQ(calls, 1);
}

// With c2 = 0.1 the step must nearly reach the minimum at α = 2: α = 1
// fails the curvature test (|−2| > 0.4), so the search goes on, and any
// step it accepts has |2(α − 2)| ≤ 0.4, i.e. α in [1.8, 2.2].
TEST(LineSearch, SearchesOnUntilTheCurvatureConditionHolds) {
  auto line = [](double a, double* phi, double* dphi) {
    *phi = (a - 2) * (a - 2);
    *dphi = 2 * (a - 2);
  };
  LineSearchOptions o;
  o.c2 = 0.1;
  const LineSearchResult r = line_search_strong_wolfe(line, 4, -4, 1, o);
  EXPECT_TRUE(r.found);
  EXPECT_GE(r.alpha, 1.8);
  EXPECT_LE(r.alpha, 2.2);
  EXPECT_GT(r.evaluations, 1);
}

// Moré–Thuente's function (5.1), φ(α) = −α/(α² + 2), minimum at √2: from
// every initial step the accepted one satisfies both conditions. (Without
// Hager and Zhang's approximate test, which accepts α = 1000 here: φ(0) =
// 0 leaves it no round-off margin to require.)
TEST(LineSearch, StrongWolfeHoldsOnMoreThuentesFirstFunction) {
  auto phi = [](double a) { return -a / (a * a + 2); };
  auto dphi = [](double a) {
    return (a * a - 2) / ((a * a + 2) * (a * a + 2));
  };
  auto line = [&](double a, double* p, double* d) {
    *p = phi(a);
    *d = dphi(a);
  };
  LineSearchOptions o;
  o.c1 = 1e-3;
  o.c2 = 0.1;
  o.approximate_wolfe_epsilon = 0;
  for (double initial : {1e-3, 1e-1, 1e1, 1e3}) {
    SCOPED_TRACE(initial);
    const LineSearchResult r =
        line_search_strong_wolfe(line, phi(0), dphi(0), initial, o);
    ASSERT_TRUE(r.found);
    EXPECT_EQ(r.phi, phi(r.alpha));
    EXPECT_LE(r.phi, phi(0) + o.c1 * r.alpha * dphi(0));
    EXPECT_LE(std::fabs(dphi(r.alpha)), o.c2 * std::fabs(dphi(0)));
    EXPECT_LE(r.evaluations, o.max_evaluations);
  }
}

TEST(LineSearch, RefusesAnAscentDirectionAndABadInitialStep) {
  auto line = [](double, double* phi, double* dphi) { *phi = *dphi = 0; };
  EXPECT_THROW(line_search_strong_wolfe(line, 0, 1, 1, {}), OptionsError);
  EXPECT_THROW(line_search_strong_wolfe(line, 0, -1, 0, {}), OptionsError);
  LineSearchOptions o;
  o.c1 = 0.95;  // not below c2
  std::string error;
  EXPECT_FALSE(o.is_valid(&error));
  EXPECT_NE(error.find("c1"), std::string::npos) << error;
}

}  // namespace
}  // namespace adgraph::optim
