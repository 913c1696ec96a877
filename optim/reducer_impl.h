// Global reductions for the optimizers that leave bit-identical results on
// every rank: an allreduce, then rank 0's result is broadcast (MPI does not
// promise equal floating-point sums on all ranks, and lockstep decisions
// need them). Internal to optim/.
//
// Every part of the optimizers reduces through it: the run
// (optim/run_impl.h: optim/run.cc, lbfgs.cc, lbfgsb.cc), L-BFGS-B's pieces
// (optim/lbfgsb_impl.h: compact_bfgs.cc, cauchy_point.cc) and the
// checkpoints (optim/checkpoint_impl.h: checkpoint.cc).
#pragma once

#include <Eigen/Core>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "core/comm_context.h"
#include "core/error.h"
#include "core/exact_sum.h"
#include "optim/lbfgs.h"

namespace adgraph::optim::detail {

class Reducer {
 public:
  Reducer(CommContext* comm, Layout layout)
      : comm_(comm != nullptr && comm->size() > 1 ? comm : nullptr),
        layout_(layout) {}

  // True when each rank holds only its slice of the variables.
  bool sharded() const { return layout_ == Layout::kSharded && comm_; }

  // v[0..n) summed over ranks, identical everywhere. A no-op on one rank.
  void sum(double* v, int64_t n) const {
    if (!comm_) return;
    comm_->allreduce(v, v, n, ReduceOp::kSum);
    comm_->bcast(v, n, 0);
  }
  double max(double v) const {
    if (!comm_) return v;
    comm_->allreduce(&v, &v, 1, ReduceOp::kMax);
    comm_->bcast(&v, 1, 0);
    return v;
  }
  double min(double v) const { return -max(-v); }
  // Dot product of two vectors laid out per `layout`: each product
  // rounded, their sum exact and rounded once (core/exact_sum.h), so it is
  // bitwise the same however the variables are split between ranks, and
  // in any build (no vector width or FMA changes it).
  double dot(const Eigen::VectorXd& a, const Eigen::VectorXd& b) const {
    ExactSum s;
    s.add_products(a.data(), b.data(), a.size());
    double d = 0;
    round_over_variables(&s, &d, 1);
    return d;
  }
  // Each of n accumulators of terms over this rank's variables, summed
  // over the ranks when sharded and rounded once: bitwise the same however
  // the variables are split. One message for all n.
  void round_over_variables(const ExactSum* sums, double* out, int n) const {
    if (sharded()) return comm_->allreduce_exact_sums(sums, out, n);
    for (int i = 0; i < n; ++i) out[i] = sums[i].round();
  }
  double norm_inf(const Eigen::VectorXd& g) const {
    const double local = g.size() ? g.cwiseAbs().maxCoeff() : 0.0;
    return layout_ == Layout::kSharded ? max(local) : local;
  }
  // A per-rank sum (sharded) or the local value (replicated): for counts and
  // sums over the variables.
  void sum_over_variables(double* v, int64_t n) const {
    if (layout_ == Layout::kSharded) sum(v, n);
  }
  double max_over_variables(double v) const {
    return layout_ == Layout::kSharded ? max(v) : v;
  }
  double min_over_variables(double v) const {
    return layout_ == Layout::kSharded ? min(v) : v;
  }
  // Every rank's `mine` (the same length `n` everywhere) side by side, rank
  // order, on every rank: an allreduce of zero-padded slots, which is exact.
  std::vector<double> gather(const std::vector<double>& mine) const {
    if (!sharded()) return mine;
    const std::size_t n = mine.size();
    std::vector<double> all(n * comm_->size(), 0.0);
    std::copy(mine.begin(), mine.end(), all.begin() + n * comm_->rank());
    comm_->allreduce(all.data(), all.data(), all.size(), ReduceOp::kSum);
    return all;
  }
  // f and ∇f of one evaluation, combined per layout. Sharded: the ranks'
  // f summed exactly and rounded once (no reduction order shows).
  double combine(double f, Eigen::VectorXd& g) const {
    if (layout_ == Layout::kSharded) {
      if (!comm_) return f;
      ExactSum s;
      s.add(f);
      comm_->allreduce_exact_sums(&s, &f, 1);
      return f;
    }
    if (!comm_) return f;
    Eigen::VectorXd packed(g.size() + 1);
    packed.head(g.size()) = g;
    packed[g.size()] = f;
    comm_->bcast(packed.data(), packed.size(), 0);
    g = packed.head(g.size());
    return packed[g.size()];
  }
  CommContext* comm() const { return comm_; }
  int rank() const { return comm_ ? comm_->rank() : 0; }
  int size() const { return comm_ ? comm_->size() : 1; }

 private:
  CommContext* comm_;
  Layout layout_;
};

// Raises the same error on every rank when any rank's `problem` is
// non-empty (the lowest such rank's text): `raise(text)` throws it, by
// default an Error for field "checkpoint".
inline void agree_or_throw(
    const Reducer& reduce,
    const std::string& problem,
    const std::function<void(const std::string&)>& raise =
        [](const std::string& text) {
          throw Error(text, {}, {}, "checkpoint");
        }) {
  CommContext* comm = reduce.comm();
  if (comm == nullptr) {
    if (!problem.empty()) raise(problem);
    return;
  }
  const double first =
      comm->allreduce_min(problem.empty() ? comm->size() : comm->rank());
  if (first >= comm->size()) return;
  raise(comm->bcast(problem, static_cast<int>(first)));
}

}  // namespace adgraph::optim::detail
