// Calls made outside any graph node (the optimizer's reductions, a
// program's own) are watched too: rank 0 never joins the allreduce the
// others wait in, so with a 2 s deadline their message names the MPI call.
#include "adgraph.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  // Rank 0's own receive gets a longer deadline, so a loaded machine never
  // ends the job on it first.
  comm->set_deadline(comm->rank() == 0 ? 60.0 : 2.0);
  double values[2] = {1.0, 2.0};
  if (comm->rank() == 0) {
    comm->recv(values, 1, comm->size() - 1, 99);  // never sent
  } else {
    comm->allreduce(values, values, 2, ReduceOp::kSum);  // rank 0 never joins
  }
  return 0;
}
