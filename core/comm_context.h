// The slice of a communicator that the layers below mpi_ops/ need (the
// executor, loops, the optimizers), without <mpi.h>. The MPI implementation
// is mpi_ops/communicator.h; tests may implement it in process. A graph
// without communication nodes has no CommContext and runs as one process.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace adgraph {

class ExactSum;

enum class ReduceOp { kSum, kMax, kMin, kProd };

class CommContext {
 public:
  virtual ~CommContext() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // For the plan-time pairing check (core/exec/plan_checks.h), which simulates
  // every rank: the world ranks of the group that world rank `world_rank`
  // belongs to here, in this communicator's rank order (every rank for the
  // world, the ranks that passed the same color for a split of it). Null
  // when this process cannot tell (a split of a split): the check then
  // leaves the communicator's nodes out.
  virtual const std::vector<int>* group_of(int world_rank) const {
    (void)world_rank;
    return nullptr;
  }

  // Collectives; every rank calls them with the same n (and root).
  // out[i] = op over ranks of in[i]; `in` may equal `out` (in place).
  virtual void allreduce(const double* in,
                         double* out,
                         int64_t n,
                         ReduceOp op) = 0;
  // Rank root's data[0..n) on every rank.
  virtual void bcast(double* data, int64_t n, int root) = 0;
  // Rank root's text on every rank.
  virtual std::string bcast(const std::string& text, int root) = 0;

  // One value reduced over all ranks. Collective.
  double allreduce_sum(double value) {
    return reduce_one(value, ReduceOp::kSum);
  }
  double allreduce_max(double value) {
    return reduce_one(value, ReduceOp::kMax);
  }
  double allreduce_min(double value) {
    return reduce_one(value, ReduceOp::kMin);
  }

  // Σ of every rank's in[0..n) (each rank its own n), exactly and rounded
  // once (core/exact_sum.h): bitwise the same on every rank whatever the
  // rank count and however the values are split. Collective.
  double allreduce_exact_sum(const double* in, int64_t n);
  // out[i] = Σ over ranks of in[i], each exact and rounded once. Collective
  // (the same n everywhere); up to 16 ranks it sends one double a rank and
  // element, beyond ExactSum::kWords doubles an element.
  void allreduce_exact(const double* in, double* out, int64_t n);
  // out[k] = the union over ranks of every rank's sums[k] (each rank its
  // own terms), rounded once, for k < n. Collective (the same n
  // everywhere): up to 16 ranks one message of four doubles a rank and
  // sum, a second of ExactSum::kWords doubles a sum when some rank's sum
  // needs more than four; beyond 16 ranks the second alone.
  void allreduce_exact_sums(const ExactSum* sums, double* out, int n);

  // Collective. Throws adgraph::RunError with the same message on every rank
  // when the ranks' `descriptors` (one per every-rank node of a plan, in
  // execution order) differ; the message names the first differing entry.
  // A descriptor's text up to the first kNameEnd is the node's name: shown
  // in the message, not compared (rank-dependent graphs may number their
  // nodes differently). Session calls it for every new plan that contains
  // such a node.
  static constexpr char kNameEnd = '\x1f';
  virtual void check_same_sequence(
      const std::vector<std::string>& descriptors) = 0;

  // Called by Session::run after the last node: completes outstanding
  // non-blocking sends so no message outlives the run.
  virtual void finish_run() = 0;

  // Bytes of message buffers the communicator keeps between runs for later
  // messages of the same size (0 when it keeps none).
  virtual std::size_t kept_bytes() const { return 0; }
  // Frees those buffers (Session::release_buffers calls it). Local, not
  // collective; not while a run uses the communicator.
  virtual void release_buffers() {}

  // Called by Session::run on a rank whose run failed (a kernel threw) while
  // later nodes of the run communicate, so other ranks may wait for this
  // one's messages forever. Returns when every rank of the communicator
  // failed too (each then throws its own error, as a run on one process
  // would); otherwise ends the job with `message` rather than let the
  // others hang. In-process implementations need not do anything.
  virtual void agree_on_failure(const std::string& message) { (void)message; }

  // Non-blocking sends issued and not yet completed.
  virtual std::size_t pending_sends() const { return 0; }
  // Completes the pending sends after the first `first` ones (a loop body
  // completes the sends of each step within the step).
  virtual void complete_sends_from(std::size_t first) { (void)first; }

 private:
  // allreduce_exact_sums by the accumulators' words (any rank count).
  void allreduce_exact_words(const ExactSum* sums, double* out, int n);
  double reduce_one(double value, ReduceOp op) {
    allreduce(&value, &value, 1, op);
    return value;
  }
};

}  // namespace adgraph
