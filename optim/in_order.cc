// Small dense algebra in a fixed order (optim/in_order_impl.h).
#include <cmath>
#include <limits>
#include <utility>

#include "optim/in_order_impl.h"

namespace adgraph::optim::detail {

double dot_in_order(const double* a, const double* b, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

Eigen::VectorXd multiply_in_order(const Eigen::MatrixXd& m,
                                  const Eigen::VectorXd& v) {
  Eigen::VectorXd out(m.rows());
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    double s = 0;
    for (Eigen::Index j = 0; j < m.cols(); ++j) s += m(i, j) * v[j];
    out[i] = s;
  }
  return out;
}

Eigen::VectorXd multiply_transposed_in_order(const Eigen::MatrixXd& m,
                                             const Eigen::VectorXd& v) {
  Eigen::VectorXd out(m.cols());
  for (Eigen::Index j = 0; j < m.cols(); ++j) {
    double s = 0;
    for (Eigen::Index i = 0; i < m.rows(); ++i) s += m(i, j) * v[i];
    out[j] = s;
  }
  return out;
}

bool CholeskyInOrder::compute(const Eigen::MatrixXd& a) {
  const Eigen::Index n = a.rows();
  l_ = Eigen::MatrixXd::Zero(n, n);
  for (Eigen::Index j = 0; j < n; ++j) {
    double d = a(j, j);
    for (Eigen::Index k = 0; k < j; ++k) d -= l_(j, k) * l_(j, k);
    if (!(d > 0) || !std::isfinite(d)) return false;
    const double root = std::sqrt(d);
    l_(j, j) = root;
    for (Eigen::Index i = j + 1; i < n; ++i) {
      double s = a(i, j);
      for (Eigen::Index k = 0; k < j; ++k) s -= l_(i, k) * l_(j, k);
      l_(i, j) = s / root;
    }
  }
  return true;
}

Eigen::VectorXd CholeskyInOrder::solve(const Eigen::VectorXd& b) const {
  const Eigen::Index n = l_.rows();
  Eigen::VectorXd y(n);
  for (Eigen::Index i = 0; i < n; ++i) {  // L·y = b
    double s = b[i];
    for (Eigen::Index k = 0; k < i; ++k) s -= l_(i, k) * y[k];
    y[i] = s / l_(i, i);
  }
  for (Eigen::Index i = n - 1; i >= 0; --i) {  // Lᵀ·x = y
    double s = y[i];
    for (Eigen::Index k = i + 1; k < n; ++k) s -= l_(k, i) * y[k];
    y[i] = s / l_(i, i);
  }
  return y;
}

bool solve_in_order(Eigen::MatrixXd a, Eigen::VectorXd b, Eigen::VectorXd* x) {
  const Eigen::Index n = a.rows();
  double largest = 0;
  for (Eigen::Index c = 0; c < n; ++c) {
    Eigen::Index pivot = c;
    for (Eigen::Index r = c + 1; r < n; ++r)
      if (std::fabs(a(r, c)) > std::fabs(a(pivot, c))) pivot = r;
    if (pivot != c) {
      a.row(c).swap(a.row(pivot));
      std::swap(b[c], b[pivot]);
    }
    const double p = a(c, c);
    largest = std::max(largest, std::fabs(p));
    if (!(std::fabs(p) > static_cast<double>(n) *
                             std::numeric_limits<double>::epsilon() * largest))
      return false;
    for (Eigen::Index r = c + 1; r < n; ++r) {
      const double f = a(r, c) / p;
      for (Eigen::Index k = c + 1; k < n; ++k) a(r, k) -= f * a(c, k);
      b[r] -= f * b[c];
    }
  }
  x->resize(n);
  for (Eigen::Index i = n - 1; i >= 0; --i) {
    double s = b[i];
    for (Eigen::Index k = i + 1; k < n; ++k) s -= a(i, k) * (*x)[k];
    (*x)[i] = s / a(i, i);
  }
  return x->allFinite();
}

}  // namespace adgraph::optim::detail
