// mpi_sendrecv(a, 0, 2) (needs at least 3 ranks): rank 0 sends a to rank 2,
// which returns it; other ranks return their own a = (1, …, 10) + rank.
// Each rank's loss is sum(y²): ∂/∂a is 4a on rank 0 (its own loss and rank
// 2's), 0 on rank 2 (its a was replaced) and 2a elsewhere.
#include <cstdio>

#include "adgraph.h"
#include "examples/example_check.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const int rank = comm->rank(), size = comm->size();
  if (size < 3) {
    if (rank == 0)
      std::fprintf(stderr, "send_recv: needs at least 3 ranks, got %d\n", size);
    return 2;
  }
  Graph g;
  Value a = g.placeholder("a", {10});
  Value y = mpi_sendrecv(a, 0, 2);
  Value grad = gradient(sum(square(y)), a);
  Tensor av(Shape{10});
  for (int i = 0; i < 10; ++i) av[i] = i + 1.0 + rank;
  Session session(g);
  auto out = session.run({y, grad}, {{a, av}});
  if (rank == 0) std::printf("rank 0 sent (1, ..., 10) to rank 2\n");
  examples::Checker check(*comm);
  for (int i = 0; i < 10; ++i) {
    check.expect("y", out[0][i], rank == 2 ? i + 1.0 : av[i]);
    const double want = rank == 0 ? 4 * av[i] : rank == 2 ? 0.0 : 2 * av[i];
    check.expect("da", out[1][i], want);
  }
  return check.exit_code();
}
