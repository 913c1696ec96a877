// The compact limited-memory matrix and the subspace step of L-BFGS-B
// (optim/lbfgsb_impl.h).
#include <Eigen/LU>
#include <algorithm>
#include <cmath>

#include "optim/lbfgsb_impl.h"

namespace adgraph::optim::detail {

void CompactBfgs::clear() {
  s_.clear(), y_.clear();
  sy_.resize(0, 0), ss_.resize(0, 0);
  theta_ = 1.0;
}

bool CompactBfgs::assign(std::vector<Eigen::VectorXd> s,
                         std::vector<Eigen::VectorXd> y,
                         Eigen::MatrixXd sy,
                         Eigen::MatrixXd ss,
                         double theta) {
  s_ = std::move(s), y_ = std::move(y);
  sy_ = std::move(sy), ss_ = std::move(ss);
  theta_ = theta;
  return factor();
}

bool CompactBfgs::push(Eigen::VectorXd s,
                       Eigen::VectorXd y,
                       double sy,
                       double ss,
                       int history,
                       const Reducer& reduce) {
  if (k() == history) {
    s_.erase(s_.begin()), y_.erase(y_.begin());
    const int kept = history - 1;
    sy_ = Eigen::MatrixXd(sy_.bottomRightCorner(kept, kept));
    ss_ = Eigen::MatrixXd(ss_.bottomRightCorner(kept, kept));
  }
  const int old = k();
  // New products: sᵀyⱼ and sⱼᵀs with the kept pairs, and yᵀy, in one
  // reduction.
  Eigen::VectorXd products(2 * old + 1);
  for (int j = 0; j < old; ++j) {
    products[j] = s.dot(y_[j]);
    products[old + j] = s_[j].dot(s);
  }
  products[2 * old] = y.dot(y);
  reduce.sum_over_variables(products.data(), products.size());
  sy_.conservativeResize(old + 1, old + 1);
  ss_.conservativeResize(old + 1, old + 1);
  for (int j = 0; j < old; ++j) {
    sy_(old, j) = products[j];
    sy_(j, old) = 0.0;  // upper part unused
    ss_(j, old) = products[old + j];
    ss_(old, j) = products[old + j];
  }
  sy_(old, old) = sy;
  ss_(old, old) = ss;
  theta_ = products[2 * old] / sy;
  s_.push_back(std::move(s));
  y_.push_back(std::move(y));
  return factor();
}

bool CompactBfgs::factor() {
  const int n = k();
  if (n == 0) return true;
  const Eigen::VectorXd d = sy_.diagonal();
  const Eigen::MatrixXd l = sy_.triangularView<Eigen::StrictlyLower>();
  const Eigen::MatrixXd t =
      theta_ * Eigen::MatrixXd(ss_.selfadjointView<Eigen::Upper>()) +
      l * d.cwiseInverse().asDiagonal() * l.transpose();
  t_factor_.compute(t);
  return t_factor_.info() == Eigen::Success;
}

Eigen::MatrixXd CompactBfgs::middle_inverse() const {
  const int n = k();
  Eigen::MatrixXd m = Eigen::MatrixXd::Zero(2 * n, 2 * n);
  const Eigen::MatrixXd l = sy_.triangularView<Eigen::StrictlyLower>();
  m.topLeftCorner(n, n) = -Eigen::MatrixXd(sy_.diagonal().asDiagonal());
  m.topRightCorner(n, n) = l.transpose();
  m.bottomLeftCorner(n, n) = l;
  m.bottomRightCorner(n, n) =
      theta_ * Eigen::MatrixXd(ss_.selfadjointView<Eigen::Upper>());
  return m;
}

Eigen::VectorXd CompactBfgs::apply_middle(const Eigen::VectorXd& v) const {
  // K [a; b] = [v₁; v₂] by block elimination: T b = v₂ + L D⁻¹ v₁ and
  // a = D⁻¹ (Lᵀ b − v₁).
  const int n = k();
  if (n == 0) return v;
  const Eigen::ArrayXd d = sy_.diagonal().array();
  const Eigen::MatrixXd l = sy_.triangularView<Eigen::StrictlyLower>();
  const Eigen::VectorXd v1 = v.head(n), v2 = v.tail(n);
  const Eigen::VectorXd b = t_factor_.solve(v2 + l * (v1.array() / d).matrix());
  Eigen::VectorXd out(2 * n);
  out.head(n) = ((l.transpose() * b - v1).array() / d).matrix();
  out.tail(n) = b;
  return out;
}

Eigen::VectorXd CompactBfgs::w_row(int64_t i) const {
  Eigen::VectorXd w(2 * k());
  w_row(i, &w);
  return w;
}

void CompactBfgs::w_row(int64_t i, Eigen::VectorXd* out) const {
  const int n = k();
  for (int j = 0; j < n; ++j) {
    (*out)[j] = y_[j][i];
    (*out)[n + j] = theta_ * s_[j][i];
  }
}

Eigen::VectorXd CompactBfgs::w_transpose(const Eigen::VectorXd& v,
                                         const Reducer& reduce) const {
  const int n = k();
  Eigen::VectorXd out(2 * n);
  for (int j = 0; j < n; ++j) {
    out[j] = y_[j].dot(v);
    out[n + j] = s_[j].dot(v);
  }
  reduce.sum_over_variables(out.data(), out.size());
  out.tail(n) *= theta_;
  return out;
}

bool subspace_minimization(const Eigen::VectorXd& x,
                           const Eigen::VectorXd& g,
                           const Box& box,
                           const std::vector<Where>& where,
                           const CompactBfgs& bfgs,
                           const Reducer& reduce,
                           CauchyPoint& cauchy) {
  const int k = bfgs.k();
  const double theta = bfgs.theta();
  const int64_t n = x.size();
  Eigen::VectorXd& z = cauchy.x;

  // Reduced residual r = −Zᵀ(g + θ(z − x) − W·M·c) on the free variables,
  // with Wᵀ·Z·r and Wᵀ·Z·Zᵀ·W summed in one reduction.
  const Eigen::VectorXd mc = bfgs.apply_middle(cauchy.c);
  Eigen::VectorXd r = Eigen::VectorXd::Zero(n);
  Eigen::VectorXd sums = Eigen::VectorXd::Zero(2 * k + 4 * k * k);
  Eigen::Map<Eigen::VectorXd> wzr(sums.data(), 2 * k);
  Eigen::Map<Eigen::MatrixXd> wzzw(sums.data() + 2 * k, 2 * k, 2 * k);
  Eigen::VectorXd w(2 * k);
  for (int64_t i = 0; i < n; ++i) {
    if (!is_free(where[i])) continue;
    bfgs.w_row(i, &w);
    r[i] = -theta * (z[i] - x[i]) - g[i] + w.dot(mc);
    wzr += r[i] * w;
    wzzw.noalias() += w * w.transpose();
  }
  reduce.sum_over_variables(sums.data(), sums.size());

  // d = r/θ + Zᵀ·W·u/θ² with (K − Wᵀ·Z·Zᵀ·W/θ)·u = Wᵀ·Z·r: the
  // Sherman–Morrison–Woodbury form of the reduced inverse.
  const Eigen::MatrixXd system = bfgs.middle_inverse() - wzzw / theta;
  const Eigen::FullPivLU<Eigen::MatrixXd> lu(system);
  if (!lu.isInvertible()) return false;
  const Eigen::VectorXd u = lu.solve(Eigen::VectorXd(wzr));
  if (!u.allFinite()) return false;
  Eigen::VectorXd d = Eigen::VectorXd::Zero(n);
  for (int64_t i = 0; i < n; ++i) {
    if (!is_free(where[i])) continue;
    bfgs.w_row(i, &w);
    d[i] = r[i] / theta + w.dot(u) / (theta * theta);
  }

  // The projection of z + d onto the box; kept when it touches no bound or
  // still descends from x.
  Eigen::VectorXd projected = z;
  double touched = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!is_free(where[i])) continue;
    double v = z[i] + d[i];
    if (box.has_lower(i)) v = std::max(box.lower[i], v);
    if (box.has_upper(i)) v = std::min(box.upper[i], v);
    projected[i] = v;
    if ((box.has_lower(i) && v == box.lower[i]) ||
        (box.has_upper(i) && v == box.upper[i]))
      touched = 1;
  }
  double descent[2] = {touched, (projected - x).dot(g)};
  reduce.sum_over_variables(descent, 2);
  if (descent[0] == 0 || descent[1] <= 0) {
    z = std::move(projected);
    return true;
  }

  // Otherwise the longest step α ≤ 1 along d that stays feasible; the
  // variable that limits it lands exactly on its bound.
  double alpha = 1.0;
  int64_t limiting = -1;
  for (int64_t i = 0; i < n; ++i) {
    if (!is_free(where[i])) continue;
    double step = alpha;
    if (d[i] < 0 && box.has_lower(i)) {
      const double room = box.lower[i] - z[i];
      step = room >= 0 ? 0.0 : (d[i] * alpha < room ? room / d[i] : step);
    } else if (d[i] > 0 && box.has_upper(i)) {
      const double room = box.upper[i] - z[i];
      step = room <= 0 ? 0.0 : (d[i] * alpha > room ? room / d[i] : step);
    }
    if (step < alpha) alpha = step, limiting = i;
  }
  const double global_alpha = reduce.min_over_variables(alpha);
  // The lowest rank that holds the limiting variable pins it.
  const double owner = reduce.min_over_variables(
      limiting >= 0 && alpha == global_alpha ? reduce.rank() : reduce.size());
  if (global_alpha < 1.0 && owner == reduce.rank() && limiting >= 0) {
    z[limiting] = d[limiting] > 0 ? box.upper[limiting] : box.lower[limiting];
    d[limiting] = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (is_free(where[i])) z[i] += global_alpha * d[i];
  }
  return true;
}

}  // namespace adgraph::optim::detail
