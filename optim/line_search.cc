#include "optim/line_search.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace adgraph::optim {
namespace {

// Minimiser of the cubic interpolating φ and φ' at a and b, kept inside the
// middle 80 % of [a, b] (N&W eq. 3.59, safeguarded).
double cubic_step(
    double a, double fa, double da, double b, double fb, double db) {
  const double lo = std::min(a, b), hi = std::max(a, b);
  const double margin = 0.1 * (hi - lo);
  const double d1 = da + db - 3 * (fa - fb) / (a - b);
  const double disc = d1 * d1 - da * db;
  double t = 0.5 * (a + b);
  if (disc >= 0) {
    const double d2 = std::copysign(std::sqrt(disc), b - a);
    const double denom = db - da + 2 * d2;
    if (denom != 0) t = b - (b - a) * (db + d2 - d1) / denom;
  }
  auto inside = [&](double v) {
    return std::isfinite(v) && v >= lo + margin && v <= hi - margin;
  };
  if (inside(t)) return t;
  // Quadratic through φ(a), φ'(a), φ(b), then bisection.
  const double h = b - a, q = 2 * (fb - fa - da * h);
  t = q > 0 ? a - da * h * h / q : 0.5 * (a + b);
  return inside(t) ? t : 0.5 * (a + b);
}

}  // namespace

const FieldTable<LineSearchOptions>& LineSearchOptions::fields() {
  using O = LineSearchOptions;
  static const FieldTable<O> table = {
      field("c1",
            &O::c1,
            Range::open(0, 1),
            "sufficient decrease: phi(a) <= phi(0) + c1 a phi'(0); c1 < c2"),
      field("c2",
            &O::c2,
            Range::open(0, 1),
            "curvature: |phi'(a)| <= c2 |phi'(0)|; c2 > c1"),
      field("max_step", &O::max_step, Range::above(0), "largest step tried"),
      field("max_evaluations",
            &O::max_evaluations,
            Range::at_least(1),
            "evaluations allowed per search"),
      field("approximate_wolfe_epsilon",
            &O::approximate_wolfe_epsilon,
            Range::closed(0, 1e-6),
            "epsilon of the approximate Wolfe test (0: off)"),
  };
  return table;
}

bool LineSearchOptions::is_valid(std::string* error) const {
  std::string why, name;
  if (!check_fields(fields(), *this, &why, &name)) {
    *error = "line_search." + name + ": " + why;
    return false;
  }
  if (!(c1 < c2)) {
    *error = "line_search needs 0 < c1 < c2 < 1";
    return false;
  }
  return true;
}

namespace {

// The options, a descent direction and a positive first step, or
// OptionsError naming the one that is not.
void check_search(const LineSearchOptions& o, double dphi0, double initial) {
  std::string error;
  if (!o.is_valid(&error))
    throw OptionsError(error, {}, {}, "LineSearchOptions");
  if (!(dphi0 < 0)) {
    throw OptionsError(
        "the search direction must descend (dphi0 < 0)", {}, {}, "dphi0");
  }
  if (!(initial > 0))
    throw OptionsError("the initial step must be > 0", {}, {}, "initial");
}

}  // namespace

LineSearchResult line_search_strong_wolfe(const LineFunction& f,
                                          double phi0,
                                          double dphi0,
                                          double initial,
                                          const LineSearchOptions& o,
                                          const std::function<void()>& keep) {
  check_search(o, dphi0, initial);
  LineSearchResult best;
  best.alpha = 0;
  best.phi = phi0;
  best.dphi = dphi0;
  auto evaluate = [&](double alpha, double* phi, double* dphi) {
    f(alpha, phi, dphi);
    ++best.evaluations;
    if (std::isfinite(*phi) && *phi < best.phi) {
      best.alpha = alpha, best.phi = *phi, best.dphi = *dphi;
      if (keep) keep();
    }
  };
  // Called right after evaluating `alpha`.
  auto accept = [&](double alpha, double phi, double dphi) {
    const bool kept = best.alpha == alpha && best.phi == phi;
    best.found = true;
    best.alpha = alpha, best.phi = phi, best.dphi = dphi;
    if (keep && !kept) keep();
    return best;
  };
  // Sufficient decrease, exact or (within round-off of φ(0)) approximate.
  auto decreases = [&](double a, double fa, double da) {
    if (fa <= phi0 + o.c1 * a * dphi0) return true;
    return o.approximate_wolfe_epsilon > 0 &&
           fa <= phi0 + o.approximate_wolfe_epsilon * std::fabs(phi0) &&
           da <= (2 * o.c1 - 1) * dphi0;
  };
  auto zoom = [&](double lo,
                  double flo,
                  double dlo,
                  double hi,
                  double fhi,
                  double dhi) {
    while (best.evaluations < o.max_evaluations) {
      const double a = cubic_step(lo, flo, dlo, hi, fhi, dhi);
      double fa, da;
      evaluate(a, &fa, &da);
      if (!std::isfinite(fa) || !decreases(a, fa, da) || fa > flo) {
        hi = a, fhi = fa, dhi = da;
        if (!std::isfinite(fa)) fhi = flo + 1, dhi = 0;
      } else {
        if (std::fabs(da) <= -o.c2 * dphi0) return accept(a, fa, da);
        if (da * (hi - lo) >= 0) hi = lo, fhi = flo, dhi = dlo;
        lo = a, flo = fa, dlo = da;
      }
      if (std::fabs(hi - lo) <= 1e-16 * std::max(1.0, std::fabs(lo))) break;
    }
    return best;
  };

  double prev = 0, fprev = phi0, dprev = dphi0;
  double alpha = std::min(initial, o.max_step);
  for (int i = 0; best.evaluations < o.max_evaluations; ++i) {
    double fa, da;
    evaluate(alpha, &fa, &da);
    if (!std::isfinite(fa)) {
      // Step into a region where f is not defined: shrink towards prev.
      alpha = prev + 0.5 * (alpha - prev);
      continue;
    }
    if (!decreases(alpha, fa, da) || (i > 0 && fa > fprev)) {
      return zoom(prev, fprev, dprev, alpha, fa, da);
    }
    if (std::fabs(da) <= -o.c2 * dphi0) return accept(alpha, fa, da);
    if (da >= 0) return zoom(alpha, fa, da, prev, fprev, dprev);
    if (alpha >= o.max_step) break;
    prev = alpha, fprev = fa, dprev = da;
    alpha = std::min(2 * alpha, o.max_step);
  }
  return best;
}

}  // namespace adgraph::optim
