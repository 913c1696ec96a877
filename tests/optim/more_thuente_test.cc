// Moré–Thuente's line search on the six test functions of their paper
// (ACM TOMS 20(3), 1994, §5): the evaluation counts and steps of its
// Tables 1–6, which MINPACK-2's dcsrch as SciPy ships it reproduces
// (bench/more_thuente_reference.py prints them; its full-precision steps
// are the second oracle here).
#include "optim/more_thuente.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <numbers>
#include <string>
#include <vector>

namespace adgraph::optim {
namespace {

struct TestFunction {
  std::function<double(double)> phi, dphi;
  double ftol, gtol;
};

// (5.1) φ(α) = −α / (α² + β), β = 2.
TestFunction function1() {
  const double b = 2;
  return {[=](double a) { return -a / (a * a + b); },
          [=](double a) { return (a * a - b) / ((a * a + b) * (a * a + b)); },
          1e-3,
          0.1};
}

// (5.2) φ(α) = (α + β)⁵ − 2(α + β)⁴, β = 0.004.
TestFunction function2() {
  const double b = 0.004;
  return {[=](double a) { return std::pow(a + b, 5) - 2 * std::pow(a + b, 4); },
          [=](double a) { return std::pow(a + b, 3) * (5 * (a + b) - 8); },
          0.1,
          0.1};
}

// (5.3) φ(α) = φ₀(α) + 2(1 − β)/(lπ)·sin(lπα/2), β = 0.01, l = 39, with
// φ₀ = 1 − α (α ≤ 1 − β), α − 1 (α ≥ 1 + β), (α − 1)²/(2β) + β/2 between.
TestFunction function3() {
  const double b = 0.01, l = 39, pi = std::numbers::pi;
  return {
      [=](double a) {
        const double base = a <= 1 - b   ? 1 - a
                            : a >= 1 + b ? a - 1
                                         : (a - 1) * (a - 1) / (2 * b) + b / 2;
        return base + 2 * (1 - b) / (l * pi) * std::sin(l * pi * a / 2);
      },
      [=](double a) {
        const double base = a <= 1 - b ? -1.0 : a >= 1 + b ? 1.0 : (a - 1) / b;
        return base + (1 - b) * std::cos(l * pi * a / 2);
      },
      0.1,
      0.1};
}

// (5.4)–(5.6), Yanai, Ozawa and Kaneko's: φ(α) = γ(β₁)·√((1 − α)² + β₂²)
// + γ(β₂)·√(α² + β₁²), γ(β) = √(1 + β²) − β.
TestFunction yanai(double b1, double b2) {
  auto gamma = [](double b) { return std::sqrt(1 + b * b) - b; };
  const double g1 = gamma(b1), g2 = gamma(b2);
  return {[=](double a) {
            return g1 * std::sqrt((1 - a) * (1 - a) + b2 * b2) +
                   g2 * std::sqrt(a * a + b1 * b1);
          },
          [=](double a) {
            return -g1 * (1 - a) / std::sqrt((1 - a) * (1 - a) + b2 * b2) +
                   g2 * a / std::sqrt(a * a + b1 * b1);
          },
          1e-3,
          1e-3};
}

struct Expected {
  double initial;
  int evaluations;   // the paper's m
  double published;  // the paper's α, to two significant digits
  double minpack;    // dcsrch's α (bench/more_thuente_reference.py)
};

void check(const TestFunction& t, const Expected& e, const std::string& name) {
  SCOPED_TRACE(name + " from " + std::to_string(e.initial));
  MoreThuenteOptions o;
  o.ftol = t.ftol;
  o.gtol = t.gtol;
  o.xtol = 1e-10;
  o.max_evaluations = 100;
  auto line = [&](double a, double* phi, double* dphi) {
    *phi = t.phi(a);
    *dphi = t.dphi(a);
  };
  const MoreThuenteResult r = line_search_more_thuente(
      line, t.phi(0), t.dphi(0), e.initial, 0.0, 1e10, o);
  EXPECT_EQ(r.status, MoreThuenteStatus::kConverged);
  EXPECT_EQ(r.evaluations, e.evaluations);
  // Half a unit of the published second digit.
  const double unit = std::pow(10.0, std::floor(std::log10(e.published)) - 1);
  EXPECT_NEAR(r.alpha, e.published, 0.5 * unit);
  EXPECT_NEAR(r.alpha, e.minpack, 1e-9 * e.minpack);
  // The strong Wolfe conditions hold where it stopped.
  EXPECT_LE(t.phi(r.alpha), t.phi(0) + t.ftol * r.alpha * t.dphi(0));
  EXPECT_LE(std::fabs(t.dphi(r.alpha)), t.gtol * std::fabs(t.dphi(0)));
}

TEST(MoreThuente, Table1) {
  for (const Expected& e : {Expected{1e-3, 6, 1.4, 1.365},
                            Expected{1e-1, 3, 1.4, 1.4413720790892741},
                            Expected{1e1, 1, 10, 10.0},
                            Expected{1e3, 4, 37, 36.88760696396662}})
    check(function1(), e, "function 1");
}

TEST(MoreThuente, Table2) {
  for (const Expected& e : {Expected{1e-3, 12, 1.6, 1.596000000186075},
                            Expected{1e-1, 8, 1.6, 1.5960000000049348},
                            Expected{1e1, 8, 1.6, 1.5959999997572036},
                            Expected{1e3, 11, 1.6, 1.595999998872531}})
    check(function2(), e, "function 2");
}

TEST(MoreThuente, Table3) {
  for (const Expected& e : {Expected{1e-3, 12, 1.0, 0.9999996797968318},
                            Expected{1e-1, 12, 1.0, 0.9999988033548208},
                            Expected{1e1, 10, 1.0, 0.9999999876178056},
                            Expected{1e3, 13, 1.0, 0.9999999017146377}})
    check(function3(), e, "function 3");
}

TEST(MoreThuente, Tables4To6) {
  for (const Expected& e : {Expected{1e-3, 4, 0.085, 0.085},
                            Expected{1e-1, 1, 0.10, 0.1},
                            Expected{1e1, 3, 0.35, 0.3491046164172457},
                            Expected{1e3, 4, 0.83, 0.8294012431694555}})
    check(yanai(1e-3, 1e-3), e, "function 4");
  for (const Expected& e : {Expected{1e-3, 6, 0.075, 0.07501087060006814},
                            Expected{1e-1, 3, 0.078, 0.07751042197802409},
                            Expected{1e1, 7, 0.073, 0.07314201106894994},
                            Expected{1e3, 8, 0.076, 0.07615927320141007}})
    check(yanai(1e-2, 1e-3), e, "function 5");
  for (const Expected& e : {Expected{1e-3, 13, 0.93, 0.9279032286386139},
                            Expected{1e-1, 11, 0.93, 0.9261500138380064},
                            Expected{1e1, 8, 0.92, 0.924781673432206},
                            Expected{1e3, 11, 0.92, 0.9243979067536415}})
    check(yanai(1e-3, 1e-2), e, "function 6");
}

// Options out of range name their field, with the table's message (the
// ranges by hand from the struct: ftol, gtol, xtol in (0, 1), at least one
// evaluation); ftol < gtol is checked after the ranges.
TEST(MoreThuente, OptionsNameTheField) {
  auto check = [](const MoreThuenteOptions& o) {
    std::string error;
    return o.is_valid(&error) ? std::string("ok") : error;
  };
  MoreThuenteOptions o;
  EXPECT_EQ(check(o), "ok");
  o.ftol = 0.95;  // not below gtol = 0.9
  EXPECT_EQ(check(o), "line_search_bounded needs 0 < ftol < gtol < 1");
  o.gtol = 0.99;
  EXPECT_EQ(check(o), "ok");
  o = MoreThuenteOptions();
  o.ftol = 0;
  EXPECT_EQ(check(o), "line_search_bounded.ftol: must be in (0, 1), got 0");
  o = MoreThuenteOptions();
  o.gtol = 1;
  EXPECT_EQ(check(o), "line_search_bounded.gtol: must be in (0, 1), got 1");
  o = MoreThuenteOptions();
  o.xtol = 1.5;
  EXPECT_EQ(check(o), "line_search_bounded.xtol: must be in (0, 1), got 1.5");
  o = MoreThuenteOptions();
  o.max_evaluations = 0;
  EXPECT_EQ(check(o),
            "line_search_bounded.max_evaluations: must be in [1, 2147483647], "
            "got 0");
  // The table: every member once, by name, with the defaults above.
  std::vector<std::string> names;
  for (const auto& f : MoreThuenteOptions::fields()) names.push_back(f.name);
  EXPECT_EQ(
      names,
      (std::vector<std::string>{"ftol", "gtol", "xtol", "max_evaluations"}));
}

}  // namespace
}  // namespace adgraph::optim
