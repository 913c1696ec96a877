// The pieces of L-BFGS-B (optim/lbfgsb.h): the compact limited-memory
// matrix, the generalized Cauchy point and the subspace minimization, each
// for variables that are replicated or sharded across ranks. Internal to
// optim/.
//
// Shared by the three files of L-BFGS-B: optim/compact_bfgs.cc (CompactBfgs
// and subspace_minimization), optim/cauchy_point.cc (cauchy_point) and
// optim/lbfgsb.cc (the Method that calls them); the tests of the first two
// call the pieces directly.
//
// Source: R. H. Byrd, P. Lu, J. Nocedal and C. Zhu, "A limited memory
// algorithm for bound constrained optimization", SIAM J. Sci. Comput.
// 16(5), 1995 (§3–§5), with the projected subspace step of J. L. Morales
// and J. Nocedal, "Remark on algorithm 778", ACM TOMS 38(1), 2011.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <limits>
#include <vector>

#include "optim/in_order_impl.h"
#include "optim/reducer_impl.h"

namespace adgraph::optim::detail {

// Where a variable stands relative to its bounds (L-BFGS-B's iwhere).
enum class Where : int8_t {
  kFree = 0,           // strictly inside, or may move
  kAtLower = 1,        // held at its lower bound
  kAtUpper = 2,        // held at its upper bound
  kFixed = 3,          // lower == upper: never moves
  kUnbounded = -1,     // no bound on either side
  kZeroGradient = -3,  // inside with ∇f_i = 0 (counts as free)
};
inline bool is_free(Where w) { return static_cast<int8_t>(w) <= 0; }

// B = θ·I − W·M·Wᵀ with W = [Y, θS] (n × 2k) and
// M⁻¹ = K = [[−D, Lᵀ], [L, θ·SᵀS]], D = diag(sᵢᵀyᵢ), L the strictly lower
// part of SᵀY (Byrd, Nocedal & Schnabel 1994). S and Y hold this rank's
// rows; the k × k products are global and identical on every rank.
// Memory: 2·m local vectors plus O(m²) scalars.
class CompactBfgs {
 public:
  int k() const { return static_cast<int>(s_.size()); }
  double theta() const { return theta_; }
  const std::vector<Eigen::VectorXd>& s() const { return s_; }
  const std::vector<Eigen::VectorXd>& y() const { return y_; }
  // sy(i, j) = sᵢᵀyⱼ for i ≥ j; ss(i, j) = sᵢᵀsⱼ for i ≤ j.
  const Eigen::MatrixXd& sy() const { return sy_; }
  const Eigen::MatrixXd& ss() const { return ss_; }

  void clear();
  // Restores a saved state (a checkpoint); false when T is not positive
  // definite. Collective (recomputes YᵀY and YᵀS).
  bool assign(std::vector<Eigen::VectorXd> s,
              std::vector<Eigen::VectorXd> y,
              Eigen::MatrixXd sy,
              Eigen::MatrixXd ss,
              double theta,
              const Reducer& reduce);
  // Appends the pair (s, y) with sᵀy = `sy` and sᵀs = `ss` (computed by
  // the caller), dropping the oldest beyond `history`. Collective (the new
  // products with the kept pairs). False when T is no longer positive
  // definite; the caller then clears the memory.
  bool push(Eigen::VectorXd s,
            Eigen::VectorXd y,
            double sy,
            double ss,
            int history,
            const Reducer& reduce);

  // WᵀW over all the variables (2k × 2k), from the kept products.
  Eigen::MatrixXd w_transpose_w() const;
  // K = M⁻¹ (2k × 2k).
  Eigen::MatrixXd middle_inverse() const;
  // M·v for a 2k vector.
  Eigen::VectorXd apply_middle(const Eigen::VectorXd& v) const;
  // Row i of W (local index); the second form fills `out` (sized 2k) without
  // allocating, for loops over the variables.
  Eigen::VectorXd w_row(int64_t i) const;
  void w_row(int64_t i, Eigen::VectorXd* out) const;
  // Wᵀv for a local vector v (collective when sharded).
  Eigen::VectorXd w_transpose(const Eigen::VectorXd& v,
                              const Reducer& reduce) const;

 private:
  bool factor();

  std::vector<Eigen::VectorXd> s_, y_;
  Eigen::MatrixXd sy_, ss_;
  // yᵢᵀyⱼ and yᵢᵀsⱼ (all i, j), exact sums: WᵀW without a pass over the
  // variables.
  Eigen::MatrixXd yy_, ys_;
  double theta_ = 1.0;
  // Cholesky factor of T = θ·SᵀS + L·D⁻¹·Lᵀ.
  CholeskyInOrder t_factor_;
};

// The box; ±infinity where a side is unbounded.
struct Box {
  const Eigen::VectorXd& lower;
  const Eigen::VectorXd& upper;
  // Bounds::global_index (empty or one per variable).
  const std::vector<int64_t>& global_index;
  bool has_lower(int64_t i) const { return lower[i] > -kInf; }
  bool has_upper(int64_t i) const { return upper[i] < kInf; }
  // Where variable i comes among tied ones (0 for all without an order).
  int64_t order(int64_t i) const {
    return global_index.empty() ? 0 : global_index[i];
  }
  static constexpr double kInf = std::numeric_limits<double>::infinity();
};

struct CauchyPoint {
  Eigen::VectorXd x;  // the generalized Cauchy point
  Eigen::VectorXd c;  // Wᵀ(x_cp − x), for the subspace step
  int segments = 0;
  bool ok = true;  // false: M could not be applied (refresh the memory)
};

// The first local minimiser of the quadratic model along the projected
// steepest-descent path x(t) = P(x − t·g) (Byrd et al. Algorithm CP).
// Breakpoints are taken in one global order, (t, rank, index), gathered
// from the ranks in batches when sharded. Updates `where` for the point.
// Collective.
CauchyPoint cauchy_point(const Eigen::VectorXd& x,
                         const Eigen::VectorXd& g,
                         const Box& box,
                         std::vector<Where>& where,
                         const CompactBfgs& bfgs,
                         const Reducer& reduce);

// Minimises the model over the variables free at the Cauchy point (direct
// primal method, Byrd et al. §5.1), projects the result onto the box and
// falls back to the longest feasible step along it when the projection does
// not descend (Morales & Nocedal 2011). Returns false when the reduced
// system is singular (refresh the memory). Collective.
bool subspace_minimization(const Eigen::VectorXd& x,
                           const Eigen::VectorXd& g,
                           const Box& box,
                           const std::vector<Where>& where,
                           const CompactBfgs& bfgs,
                           const Reducer& reduce,
                           CauchyPoint& cauchy);

}  // namespace adgraph::optim::detail
