// mpi_bcast from root 3 (needs at least 4 ranks): a = (1, …, 10)·rank;
// b = mpi_bcast(a, 3) = (1, …, 10)·3 everywhere; each rank's loss is
// sum(b²), so ∂(Σ_r L_r)/∂a is 2P·b on rank 3 and 0 elsewhere.
#include <cstdio>

#include "adgraph.h"
#include "examples/example_check.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const int rank = comm->rank(), size = comm->size();
  constexpr int kRoot = 3;
  if (size <= kRoot) {
    if (rank == 0)
      std::fprintf(stderr, "broadcast: needs at least 4 ranks, got %d\n", size);
    return 2;
  }
  Graph g;
  Value a = g.placeholder("a", {10});
  Value b = mpi_bcast(a, kRoot);
  Value loss = sum(square(b));
  Value grad = gradient(loss, a);
  Tensor av(Shape{10});
  for (int i = 0; i < 10; ++i) av[i] = (i + 1.0) * rank;
  Session session(g);
  auto out = session.run({b, grad}, {{a, av}});
  if (rank == 0) {
    std::printf("b = ");
    for (int i = 0; i < 10; ++i) std::printf("%g ", out[0][i]);
    std::printf("\n");
  }
  examples::Checker check(*comm);
  for (int i = 0; i < 10; ++i) {
    const double b_i = (i + 1.0) * kRoot;
    check.expect("b", out[0][i], b_i);
    check.expect("dL/da", out[1][i], rank == kRoot ? 2.0 * size * b_i : 0.0);
  }
  return check.exit_code();
}
