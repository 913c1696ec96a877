// Inside a loop body, rank 1 waits for a message nobody sends. With a 2 s
// deadline the job must end with the deadline message naming the body's
// node, not hang: the deadline covers loop bodies too.
#include "adgraph.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  comm->set_deadline(2.0);
  const int rank = comm->rank();
  Graph g;
  Value x = g.placeholder("x", {3});
  LoopResult r = loop(3, {x}, {}, [&](const LoopArgs& a) {
    if (rank != 1) return LoopStep{{a.carries[0] * 2.0}, {}};
    NodeOptions options;
    options.name = "never";
    Value y = a.graph->add_node(
        "mpi_recv", {a.carries[0]}, {{"src", 0}, {"tag", 9}}, options);
    return LoopStep{{y}, {}};
  });
  Session session(g);
  FeedMap feeds{{x, Tensor({1.0, 2.0, 3.0})}};
  session.run(r.carries[0], feeds);  // rank 1 never completes
  // Stay in MPI until the stalled rank's deadline ends the job.
  comm->set_deadline(0.0);
  session.run(mpi_allreduce(x), feeds);
  return 0;
}
