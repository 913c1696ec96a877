#include "optim/more_thuente.h"

#include <algorithm>
#include <cmath>

namespace adgraph::optim {
namespace {

// The interval of uncertainty [stx, sty] (unordered) with φ and φ' at both
// ends; stx is the best step so far.
struct Interval {
  double stx, fx, dx;
  double sty, fy, dy;
  bool bracketed = false;
};

// Minimiser of the cubic through (a, fa, da) and (b, fb, db), measured from
// a, with the scaling of Moré–Thuente §4 that avoids overflow.
double cubic_minimizer(
    double a, double fa, double da, double b, double fb, double db) {
  const double theta = 3 * (fa - fb) / (b - a) + da + db;
  const double s = std::max({std::fabs(theta), std::fabs(da), std::fabs(db)});
  double gamma = s * std::sqrt((theta / s) * (theta / s) - (da / s) * (db / s));
  if (b < a) gamma = -gamma;
  const double p = (gamma - da) + theta;
  const double q = ((gamma - da) + gamma) + db;
  return a + (p / q) * (b - a);
}

// One update of the interval and the next trial step (MINPACK-2 dcstep):
// the four cases of Moré–Thuente §4 by how φ and φ' at the trial step
// `stp` compare with the best point stx.
double next_step(Interval& iv,
                 double stp,
                 double fp,
                 double dp,
                 double stpmin,
                 double stpmax) {
  constexpr double kP66 = 0.66;
  const double sgnd = dp * (iv.dx / std::fabs(iv.dx));
  double stpf;
  if (fp > iv.fx) {
    // Case 1: a higher value; the minimum is bracketed. Cubic step if it is
    // closer to stx than the quadratic one, else their midpoint.
    const double stpc = cubic_minimizer(iv.stx, iv.fx, iv.dx, stp, fp, dp);
    const double stpq =
        iv.stx + ((iv.dx / ((iv.fx - fp) / (stp - iv.stx) + iv.dx)) / 2) *
                     (stp - iv.stx);
    stpf = std::fabs(stpc - iv.stx) < std::fabs(stpq - iv.stx)
               ? stpc
               : stpc + (stpq - stpc) / 2;
    iv.bracketed = true;
  } else if (sgnd < 0) {
    // Case 2: derivatives of opposite sign; bracketed. The step farther
    // from stp of the cubic and the secant step.
    const double stpc = cubic_minimizer(stp, fp, dp, iv.stx, iv.fx, iv.dx);
    const double stpq = stp + (dp / (dp - iv.dx)) * (iv.stx - stp);
    stpf = std::fabs(stpc - stp) > std::fabs(stpq - stp) ? stpc : stpq;
    iv.bracketed = true;
  } else if (std::fabs(dp) < std::fabs(iv.dx)) {
    // Case 3: the derivative shrinks in magnitude. The cubic step is used
    // only if it tends to infinity in the direction of the step or its
    // minimum lies beyond stp; otherwise the end of the allowed range.
    const double theta = 3 * (iv.fx - fp) / (stp - iv.stx) + iv.dx + dp;
    const double s =
        std::max({std::fabs(theta), std::fabs(iv.dx), std::fabs(dp)});
    double gamma =
        s * std::sqrt(std::max(
                0.0, (theta / s) * (theta / s) - (iv.dx / s) * (dp / s)));
    if (stp > iv.stx) gamma = -gamma;
    const double p = (gamma - dp) + theta;
    const double q = (gamma + (iv.dx - dp)) + gamma;
    const double r = p / q;
    double stpc;
    if (r < 0 && gamma != 0) {
      stpc = stp + r * (iv.stx - stp);
    } else {
      stpc = stp > iv.stx ? stpmax : stpmin;
    }
    const double stpq = stp + (dp / (dp - iv.dx)) * (iv.stx - stp);
    if (iv.bracketed) {
      stpf = std::fabs(stpc - stp) < std::fabs(stpq - stp) ? stpc : stpq;
      stpf = stp > iv.stx ? std::min(stp + kP66 * (iv.sty - stp), stpf)
                          : std::max(stp + kP66 * (iv.sty - stp), stpf);
    } else {
      stpf = std::fabs(stpc - stp) > std::fabs(stpq - stp) ? stpc : stpq;
      stpf = std::max(stpmin, std::min(stpmax, stpf));
    }
  } else {
    // Case 4: the derivative does not shrink. Cubic step through stp and
    // sty when bracketed, else the end of the range.
    if (iv.bracketed) {
      stpf = cubic_minimizer(stp, fp, dp, iv.sty, iv.fy, iv.dy);
    } else {
      stpf = stp > iv.stx ? stpmax : stpmin;
    }
  }
  if (fp > iv.fx) {
    iv.sty = stp, iv.fy = fp, iv.dy = dp;
  } else {
    if (sgnd < 0) iv.sty = iv.stx, iv.fy = iv.fx, iv.dy = iv.dx;
    iv.stx = stp, iv.fx = fp, iv.dx = dp;
  }
  return stpf;
}

}  // namespace

const FieldTable<MoreThuenteOptions>& MoreThuenteOptions::fields() {
  using O = MoreThuenteOptions;
  static const FieldTable<O> table = {
      field("ftol",
            &O::ftol,
            Range::open(0, 1),
            "sufficient decrease: phi(a) <= phi(0) + ftol a phi'(0); "
            "ftol < gtol"),
      field("gtol",
            &O::gtol,
            Range::open(0, 1),
            "curvature: |phi'(a)| <= gtol |phi'(0)|; gtol > ftol"),
      field("xtol",
            &O::xtol,
            Range::open(0, 1),
            "relative width of the interval below which the search stops"),
      field("max_evaluations",
            &O::max_evaluations,
            Range::at_least(1),
            "evaluations allowed per search"),
  };
  return table;
}

bool MoreThuenteOptions::is_valid(std::string* error) const {
  std::string why, name;
  if (!check_fields(fields(), *this, &why, &name)) {
    *error = "line_search_bounded." + name + ": " + why;
    return false;
  }
  if (!(ftol < gtol)) {
    *error = "line_search_bounded needs 0 < ftol < gtol < 1";
    return false;
  }
  return true;
}

MoreThuenteResult line_search_more_thuente(const LineFunction& f,
                                           double phi0,
                                           double dphi0,
                                           double initial,
                                           double stpmin,
                                           double stpmax,
                                           const MoreThuenteOptions& o) {
  constexpr double kExtrapolateLower = 1.1, kExtrapolateUpper = 4.0;
  MoreThuenteResult result;
  double stp = initial;
  if (!(stp >= stpmin) || !(stp <= stpmax) || !(dphi0 < 0) || stpmin < 0 ||
      !(o.ftol > 0) || !(o.gtol > 0) || !(o.xtol > 0)) {
    return result;  // kError
  }
  const double gtest = o.ftol * dphi0;
  double width = stpmax - stpmin, width1 = 2 * width;
  Interval iv{0.0, phi0, dphi0, 0.0, phi0, dphi0};
  bool stage_one = true;
  double stmin = 0.0, stmax = stp + kExtrapolateUpper * stp;
  while (true) {
    double fp, dp;
    f(stp, &fp, &dp);
    ++result.evaluations;
    result.alpha = stp, result.phi = fp, result.dphi = dp;

    const double ftest = phi0 + stp * gtest;
    if (stage_one && fp <= ftest && dp >= 0) stage_one = false;
    bool warning = false;
    if (iv.bracketed && (stp <= stmin || stp >= stmax)) warning = true;
    if (iv.bracketed && stmax - stmin <= o.xtol * stmax) warning = true;
    if (stp == stpmax && fp <= ftest && dp <= gtest) warning = true;
    if (stp == stpmin && (fp > ftest || dp >= gtest)) warning = true;
    if (fp <= ftest && std::fabs(dp) <= o.gtol * (-dphi0)) {
      result.status = MoreThuenteStatus::kConverged;
      return result;
    }
    if (warning) {
      result.status = MoreThuenteStatus::kWarning;
      return result;
    }
    if (result.evaluations >= o.max_evaluations) {
      result.status = MoreThuenteStatus::kTooManyEvaluations;
      return result;
    }

    // In the first stage, while the sufficient decrease fails, the search
    // works on the modified function ψ(α) = φ(α) − φ(0) − ftol·α·φ'(0).
    if (stage_one && fp <= iv.fx && fp > ftest) {
      Interval m = iv;
      m.fx -= iv.stx * gtest, m.fy -= iv.sty * gtest;
      m.dx -= gtest, m.dy -= gtest;
      stp = next_step(m, stp, fp - stp * gtest, dp - gtest, stmin, stmax);
      iv.stx = m.stx, iv.sty = m.sty, iv.bracketed = m.bracketed;
      iv.fx = m.fx + m.stx * gtest, iv.fy = m.fy + m.sty * gtest;
      iv.dx = m.dx + gtest, iv.dy = m.dy + gtest;
    } else {
      stp = next_step(iv, stp, fp, dp, stmin, stmax);
    }

    // Bisect when the interval did not shrink enough in two steps.
    if (iv.bracketed) {
      if (std::fabs(iv.sty - iv.stx) >= 0.66 * width1)
        stp = iv.stx + 0.5 * (iv.sty - iv.stx);
      width1 = width;
      width = std::fabs(iv.sty - iv.stx);
    }
    if (iv.bracketed) {
      stmin = std::min(iv.stx, iv.sty);
      stmax = std::max(iv.stx, iv.sty);
    } else {
      stmin = stp + kExtrapolateLower * (stp - iv.stx);
      stmax = stp + kExtrapolateUpper * (stp - iv.stx);
    }
    stp = std::max(stp, stpmin);
    stp = std::min(stp, stpmax);
    // No progress possible: the best point so far.
    if ((iv.bracketed && (stp <= stmin || stp >= stmax)) ||
        (iv.bracketed && stmax - stmin <= o.xtol * stmax)) {
      stp = iv.stx;
    }
  }
}

}  // namespace adgraph::optim
