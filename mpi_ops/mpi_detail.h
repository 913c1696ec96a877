// The helpers every file that calls MPI shares (internal to mpi_ops/).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "core/comm_context.h"
#include "mpi_ops/communicator.h"

namespace adgraph::mpi_detail {

// MPI counts are int; adgraph tensors may be larger. Communication of more
// than INT_MAX doubles at once is not supported and is a programming error.
int count_of(int64_t n);
// Aborts the job with MPI's message when `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* call);
MPI_Op mpi_op(ReduceOp op);
// The world's duplicate for every_rank_failed() (MpiEnvironment's), or
// MPI_COMM_NULL when adgraph did not initialise MPI.
MPI_Comm world_failure_comm();

}  // namespace adgraph::mpi_detail

namespace adgraph {

// The MPI communicator behind a Communicator; freed with it unless it is
// MPI_COMM_WORLD.
struct Communicator::MpiComm {
  MPI_Comm comm = MPI_COMM_WORLD;
  // For agree_on_failure(): a duplicate of `comm` made with it (a
  // duplicate's or split's own; the world's is MpiEnvironment's), so the
  // failed ranks' barrier never meets the others' messages. MPI_COMM_NULL
  // when there is none.
  MPI_Comm failure = MPI_COMM_NULL;
  bool owns_failure = false;
};

}  // namespace adgraph
