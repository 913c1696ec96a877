// Rank 1 waits for a nonblocking receive rank 0 never sends. With a 2 s
// deadline the job must end with a message naming the wait and the peer.
#include "adgraph.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  comm->set_deadline(2.0);
  Graph g;
  Value x = g.placeholder("x", {3});
  Value s = mpi_allreduce(x);  // communication #0: completes on every rank
  Value request = mpi_irecv(s, 0, 7);
  NodeOptions options;
  options.name = "never";
  Value r = g.add_node("mpi_wait", {request}, {}, options);
  Session session(g);
  FeedMap feeds{{x, Tensor({1.0, 2.0, 3.0})}};
  if (comm->rank() == 1) {
    session.run(r, feeds);  // never completes
  } else {
    session.run(s, feeds);
    // Stay in MPI until the stalled rank's deadline ends the job.
    session.run(mpi_allreduce(s), feeds);
  }
  return 0;
}
