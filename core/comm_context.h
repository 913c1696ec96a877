// The slice of a communicator that core/ needs, without <mpi.h>. The MPI
// implementation lives in mpi_ops/communicator.h; a graph without
// communication nodes has no CommContext and runs as a single process.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace adgraph {

class CommContext {
 public:
  virtual ~CommContext() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sum of `value` over all ranks. Collective.
  virtual double allreduce_sum(double value) = 0;
  // Maximum of `value` over all ranks. Collective.
  virtual double allreduce_max(double value) = 0;

  // Collective. Throws adgraph::RunError with the same message on every rank
  // when the ranks' `descriptors` (one per collective node of a plan, in
  // execution order) differ; the message names the first differing entry.
  // Session calls it for every new plan that contains a collective.
  virtual void check_same_sequence(
      const std::vector<std::string>& descriptors) = 0;

  // Called by Session::run after the last node: completes outstanding
  // non-blocking sends so no message outlives the run.
  virtual void finish_run() = 0;

  // Non-blocking sends issued and not yet completed.
  virtual std::size_t pending_sends() const { return 0; }
  // Completes the pending sends after the first `first` ones (a loop body
  // completes the sends of each step within the step).
  virtual void complete_sends_from(std::size_t first) { (void)first; }
};

}  // namespace adgraph
