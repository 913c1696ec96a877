// docs/CPP.md's sub-communicator example, on 4 ranks.
//
// Ranks of one parity form a communicator (split(rank % 2, rank)); on it
// y = Σ_{q ≡ r mod 2} x_q with x_q = q + 1. The loss is the sum over every
// rank of y², on rank 0 (mpi_total, on the world).
// By hand, 4 ranks: even ranks {0, 2} hold x = 1, 3, so y = 4; odd ranks
// {1, 3} hold x = 2, 4, so y = 6. L = 2·4² + 2·6² = 104, and
// ∂L/∂x_0 = Σ over the even ranks of 2y = 2·(2·4) = 16.
// The test examples/guides/cpp_subcomm runs it on 4 ranks and compares the
// output with tests/guides/cpp_subcomm.expected.
#include <cstdio>

#include "adgraph.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto world = program_world();
  const int rank = world->rank();
  // doc:begin split
  auto parity = world->split(rank % 2, rank);  // every rank, while building
  Graph g;
  Value x = g.placeholder("x", {1});
  Value y;
  {
    CommScope on(g, parity);  // communication nodes here run on `parity`
    y = mpi_allreduce(x);     // and so do their adjoints and tangents
  }
  Value loss = mpi_total(square(y));  // on the world again
  Value grad = gradient(loss, x);
  Session session(g);
  auto out = session.run({loss, grad}, {{x, Tensor({rank + 1.0})}});
  // doc:end split
  if (rank == 0) {
    std::printf("L = %g\n", out[0].item());
    std::printf("dL/dx on rank 0 = %g\n", out[1][0]);
  }
  return rank != 0 || (out[0].item() == 104 && out[1][0] == 16) ? 0 : 1;
}
