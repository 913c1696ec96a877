// Small dense algebra whose rounding does not depend on the build: every
// sum runs in index order with one rounding an operation. Eigen's kernels
// sum in lanes as wide as the target's vectors and use FMA where it has
// it, so a native and a portable build would differ in the last bits (and
// L-BFGS-B's iterates with them). For L-BFGS-B's k × k matrices (k at most
// twice the history); the build compiles without FP contraction
// (-ffp-contract=off) and nothing here is vectorised across a sum.
// Internal to optim/.
//
// The interface of optim/in_order.cc, used by optim/compact_bfgs.cc (T's
// Cholesky factor, a member of lbfgsb_impl.h's CompactBfgs, and the
// subspace step's solve) and optim/cauchy_point.cc (its dot products).
#pragma once

#include <Eigen/Core>
#include <cstdint>

namespace adgraph::optim::detail {

// Σ a[i]·b[i], i = 0, 1, … in turn.
double dot_in_order(const double* a, const double* b, int64_t n);
inline double dot_in_order(const Eigen::VectorXd& a, const Eigen::VectorXd& b) {
  return dot_in_order(a.data(), b.data(), a.size());
}
// m·v and mᵀ·v, each entry summed in index order.
Eigen::VectorXd multiply_in_order(const Eigen::MatrixXd& m,
                                  const Eigen::VectorXd& v);
Eigen::VectorXd multiply_transposed_in_order(const Eigen::MatrixXd& m,
                                             const Eigen::VectorXd& v);

// A = L·Lᵀ for a symmetric positive definite A (its lower triangle read),
// column by column (Cholesky–Banachiewicz).
class CholeskyInOrder {
 public:
  // False when A is not positive definite (a pivot <= 0 or not finite).
  bool compute(const Eigen::MatrixXd& a);
  // A⁻¹·b by the two triangular solves.
  Eigen::VectorXd solve(const Eigen::VectorXd& b) const;

 private:
  Eigen::MatrixXd l_;
};

// x = A⁻¹·b by Gaussian elimination with partial pivoting (the first row
// of largest magnitude in the column). False when A is numerically
// singular: a pivot at most n·ε times the largest, or x not finite.
bool solve_in_order(Eigen::MatrixXd a, Eigen::VectorXd b, Eigen::VectorXd* x);

}  // namespace adgraph::optim::detail
