// The compact limited-memory matrix and the subspace step of L-BFGS-B
// (optim/lbfgsb_impl.h).
#include <algorithm>
#include <cmath>
#include <limits>

#include "optim/in_order_impl.h"
#include "optim/lbfgsb_impl.h"

namespace adgraph::optim::detail {

namespace {

constexpr double kNoOrder = std::numeric_limits<double>::infinity();

// a[i]·b[i] summed exactly into `sum` (each product rounded).
void add_dot(ExactSum& sum,
             const Eigen::VectorXd& a,
             const Eigen::VectorXd& b) {
  sum.add_products(a.data(), b.data(), a.size());
}

}  // namespace

void CompactBfgs::clear() {
  s_.clear(), y_.clear();
  sy_.resize(0, 0), ss_.resize(0, 0), yy_.resize(0, 0), ys_.resize(0, 0);
  theta_ = 1.0;
}

bool CompactBfgs::assign(std::vector<Eigen::VectorXd> s,
                         std::vector<Eigen::VectorXd> y,
                         Eigen::MatrixXd sy,
                         Eigen::MatrixXd ss,
                         double theta,
                         const Reducer& reduce) {
  s_ = std::move(s), y_ = std::move(y);
  sy_ = std::move(sy), ss_ = std::move(ss);
  theta_ = theta;
  // YᵀY and YᵀS are not saved: recomputed from the pairs, with the same
  // exact products push() makes, so a resumed run continues bitwise.
  const int n = k();
  std::vector<ExactSum> sums(n * n + n * (n + 1) / 2);
  int next = n * n;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) add_dot(sums[i * n + j], y_[i], s_[j]);
    for (int j = 0; j <= i; ++j) add_dot(sums[next++], y_[i], y_[j]);
  }
  std::vector<double> out(sums.size());
  reduce.round_over_variables(sums.data(), out.data(), sums.size());
  ys_.resize(n, n), yy_.resize(n, n);
  next = n * n;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) ys_(i, j) = out[i * n + j];
    for (int j = 0; j <= i; ++j) yy_(i, j) = yy_(j, i) = out[next++];
  }
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
    yy_ = Eigen::MatrixXd(yy_.bottomRightCorner(kept, kept));
    ys_ = Eigen::MatrixXd(ys_.bottomRightCorner(kept, kept));
  }
  const int old = k();
  // The new products with the kept pairs, each an exact sum (the same bits
  // however the variables are split), in one reduction: sᵀyⱼ, sⱼᵀs, yⱼᵀy,
  // yᵀsⱼ, then yᵀy and yᵀs.
  std::vector<ExactSum> sums(4 * old + 2);
  for (int j = 0; j < old; ++j) {
    add_dot(sums[j], s, y_[j]);
    add_dot(sums[old + j], s_[j], s);
    add_dot(sums[2 * old + j], y_[j], y);
    add_dot(sums[3 * old + j], y, s_[j]);
  }
  add_dot(sums[4 * old], y, y);
  add_dot(sums[4 * old + 1], y, s);
  Eigen::VectorXd products(sums.size());
  reduce.round_over_variables(sums.data(), products.data(), sums.size());
  sy_.conservativeResize(old + 1, old + 1);
  ss_.conservativeResize(old + 1, old + 1);
  yy_.conservativeResize(old + 1, old + 1);
  ys_.conservativeResize(old + 1, old + 1);
  for (int j = 0; j < old; ++j) {
    sy_(old, j) = products[j];
    sy_(j, old) = 0.0;  // upper part unused
    ss_(j, old) = ss_(old, j) = products[old + j];
    yy_(j, old) = yy_(old, j) = products[2 * old + j];
    ys_(old, j) = products[3 * old + j];
    ys_(j, old) = products[j];  // yⱼᵀs = sᵀyⱼ
  }
  sy_(old, old) = sy;
  ss_(old, old) = ss;
  yy_(old, old) = products[4 * old];
  ys_(old, old) = products[4 * old + 1];
  theta_ = products[4 * old] / sy;
  s_.push_back(std::move(s));
  y_.push_back(std::move(y));
  return factor();
}

Eigen::MatrixXd CompactBfgs::w_transpose_w() const {
  const int n = k();
  Eigen::MatrixXd m(2 * n, 2 * n);
  m.topLeftCorner(n, n) = yy_;
  m.topRightCorner(n, n) = theta_ * ys_;
  m.bottomLeftCorner(n, n) = theta_ * ys_.transpose();
  m.bottomRightCorner(n, n) = (theta_ * theta_) * ss_;
  return m;
}

bool CompactBfgs::factor() {
  const int n = k();
  if (n == 0) return true;
  // T(i, j) = θ·sᵢᵀsⱼ + Σ_{k < min(i, j)} L(i, k)·L(j, k)/D(k), in order.
  Eigen::MatrixXd t(n, n);
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j <= i; ++j) {
      double v = theta_ * ss_(j, i);
      for (int k = 0; k < j; ++k) v += sy_(i, k) * (sy_(j, k) / sy_(k, k));
      t(i, j) = t(j, i) = v;
    }
  }
  return t_factor_.compute(t);
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
  // a = D⁻¹ (Lᵀ b − v₁); every sum in index order (optim/in_order_impl.h).
  const int n = k();
  if (n == 0) return v;
  Eigen::VectorXd scaled(n), rhs(n);
  for (int j = 0; j < n; ++j) scaled[j] = v[j] / sy_(j, j);
  for (int i = 0; i < n; ++i) {
    double s = 0;
    for (int j = 0; j < i; ++j) s += sy_(i, j) * scaled[j];
    rhs[i] = v[n + i] + s;
  }
  const Eigen::VectorXd b = t_factor_.solve(rhs);
  Eigen::VectorXd out(2 * n);
  for (int j = 0; j < n; ++j) {
    double s = 0;
    for (int i = j + 1; i < n; ++i) s += sy_(i, j) * b[i];
    out[j] = (s - v[j]) / sy_(j, j);
  }
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
  std::vector<ExactSum> sums(2 * n);
  for (int j = 0; j < n; ++j) {
    add_dot(sums[j], y_[j], v);
    add_dot(sums[n + j], s_[j], v);
  }
  Eigen::VectorXd out(2 * n);
  reduce.round_over_variables(sums.data(), out.data(), sums.size());
  out.tail(n) *= theta_;
  return out;
}

namespace {

// Wᵀ·Z·Zᵀ·W = Σ wᵢwᵢᵀ over the free variables i (rows of W), each entry an
// exact sum. When fewer variables are held than free, it is WᵀW (kept by
// the memory) minus the held variables' part, as L-BFGS-B's formk updates
// it: fewer terms, the same bits on any split. Collective.
Eigen::MatrixXd w_z_z_w(const CompactBfgs& bfgs,
                        const std::vector<Where>& where,
                        const Reducer& reduce) {
  const int m = 2 * bfgs.k();
  double counts[2] = {0, static_cast<double>(where.size())};  // free, all
  for (Where v : where) counts[0] += is_free(v);
  reduce.sum_over_variables(counts, 2);
  const bool free_terms = counts[0] <= counts[1] - counts[0];
  std::vector<ExactSum> sums(m * (m + 1) / 2);
  Eigen::VectorXd w(m);
  for (std::size_t i = 0; i < where.size(); ++i) {
    if (is_free(where[i]) != free_terms) continue;
    bfgs.w_row(static_cast<int64_t>(i), &w);
    int next = 0;
    for (int a = 0; a < m; ++a)
      for (int b = 0; b <= a; ++b) sums[next++].add(w[a] * w[b]);
  }
  std::vector<double> part(sums.size());
  reduce.round_over_variables(sums.data(), part.data(), sums.size());
  Eigen::MatrixXd out(m, m);
  int next = 0;
  for (int a = 0; a < m; ++a)
    for (int b = 0; b <= a; ++b) out(a, b) = out(b, a) = part[next++];
  return free_terms ? out : Eigen::MatrixXd(bfgs.w_transpose_w() - out);
}

// z += α·d with the longest step α ≤ 1 along d that stays feasible; the
// variable that limits it lands exactly on its bound.
void step_within_box(const Box& box,
                     const std::vector<Where>& where,
                     const Reducer& reduce,
                     Eigen::VectorXd& z,
                     Eigen::VectorXd& d) {
  const int64_t n = z.size();
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
    if (step < alpha ||
        (step == alpha && limiting >= 0 && box.order(i) < box.order(limiting)))
      alpha = step, limiting = i;
  }
  const double global_alpha = reduce.min_over_variables(alpha);
  // Among the variables that limit it, the first in Box::order pins it
  // (the lowest rank's, without an order).
  const bool limits = limiting >= 0 && alpha == global_alpha;
  const double first = reduce.min_over_variables(
      limits ? static_cast<double>(box.order(limiting)) : kNoOrder);
  const double owner = reduce.min_over_variables(
      limits && static_cast<double>(box.order(limiting)) == first
          ? reduce.rank()
          : reduce.size());
  if (global_alpha < 1.0 && owner == reduce.rank() && limiting >= 0) {
    z[limiting] = d[limiting] > 0 ? box.upper[limiting] : box.lower[limiting];
    d[limiting] = 0;
  }
  for (int64_t i = 0; i < n; ++i) {
    if (is_free(where[i])) z[i] += global_alpha * d[i];
  }
}

}  // namespace

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
  // then Wᵀ·Z·r and Wᵀ·Z·Zᵀ·W as exact sums (the same bits however the
  // variables are split between ranks).
  const Eigen::VectorXd mc = bfgs.apply_middle(cauchy.c);
  Eigen::VectorXd r = Eigen::VectorXd::Zero(n);
  std::vector<ExactSum> sums(2 * k);
  Eigen::VectorXd w(2 * k);
  for (int64_t i = 0; i < n; ++i) {
    if (!is_free(where[i])) continue;
    bfgs.w_row(i, &w);
    r[i] = -theta * (z[i] - x[i]) - g[i] + dot_in_order(w, mc);
    for (int a = 0; a < 2 * k; ++a) sums[a].add(r[i] * w[a]);
  }
  Eigen::VectorXd wzr(2 * k);
  reduce.round_over_variables(sums.data(), wzr.data(), sums.size());
  const Eigen::MatrixXd wzzw = w_z_z_w(bfgs, where, reduce);
  // d = r/θ + Zᵀ·W·u/θ² with (K − Wᵀ·Z·Zᵀ·W/θ)·u = Wᵀ·Z·r: the
  // Sherman–Morrison–Woodbury form of the reduced inverse.
  const Eigen::MatrixXd system = bfgs.middle_inverse() - wzzw / theta;
  Eigen::VectorXd u;
  if (!solve_in_order(system, wzr, &u)) return false;
  Eigen::VectorXd d = Eigen::VectorXd::Zero(n);
  for (int64_t i = 0; i < n; ++i) {
    if (!is_free(where[i])) continue;
    bfgs.w_row(i, &w);
    d[i] = r[i] / theta + dot_in_order(w, u) / (theta * theta);
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
  double descent[2] = {touched, 0.0};
  reduce.sum_over_variables(descent, 1);
  descent[1] = reduce.dot(projected - x, g);
  if (descent[0] == 0 || descent[1] <= 0) {
    z = std::move(projected);
    return true;
  }

  step_within_box(box, where, reduce, z, d);
  return true;
}

}  // namespace adgraph::optim::detail
