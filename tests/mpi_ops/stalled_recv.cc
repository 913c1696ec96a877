// Rank 1 waits for a message rank 0 never sends. With a 2 s deadline the job
// must end with the deadline message naming the node, not hang.
#include "adgraph.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  // The other ranks then wait in an allreduce for rank 1; a longer deadline
  // there keeps a loaded machine from ending the job on theirs first.
  comm->set_deadline(comm->rank() == 1 ? 2.0 : 60.0);
  Graph g;
  Value x = g.placeholder("x", {3});
  Value s = mpi_allreduce(x);  // communication #0: completes on every rank
  NodeOptions options;
  options.name = "never";
  Value r = g.add_node("mpi_recv", {s}, {{"src", 0}, {"tag", 7}}, options);
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
