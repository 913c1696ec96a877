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

// A send in flight: its own copy of the data and its request.
struct Communicator::PendingSend {
  Eigen::ArrayXd buffer;
  MPI_Request request = MPI_REQUEST_NULL;
};

// A nonblocking request in flight: its buffer (the copy sent, or where the
// message arrives) and MPI's request.
struct Communicator::Request {
  Eigen::ArrayXd buffer;
  MPI_Request request = MPI_REQUEST_NULL;
  bool receive = false;
};

// wait()'s arrays, grown to the most requests waited on at once.
struct Communicator::WaitArrays {
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  std::vector<Request*> waited;
};

// A halo swap in flight: its requests (receives first), the neighbour of
// each, and its own copies of what it sends and receives, by direction.
struct Communicator::HaloExchange {
  MPI_Request requests[8];
  int peer_of_request[8];
  int n_requests = 0;
  bool has_peer[4] = {false, false, false, false};
  std::vector<double> sent[4], received[4];
};

// Watches one MPI call for the deadline and the stop report when no node's
// watch covers it (the optimizer's reductions, a program's own calls).
class Communicator::CallWatch final {
 public:
  CallWatch(Communicator& comm, const char* call, int64_t n);
  ~CallWatch();
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

 private:
  Communicator& comm_;
  bool own_;
};

}  // namespace adgraph
