// mpi_sum: a = (1, …, 10)·rank; b = mpi_sum(a) holds (1, …, 10)·P(P−1)/2 on
// rank 0; L = sum(b) and ∂L/∂a = 1 on every rank (the root's cotangent is
// broadcast back).
#include <cstdio>

#include "adgraph.h"
#include "examples/example_check.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const int rank = comm->rank(), size = comm->size();
  Graph g;
  Value a = g.placeholder("a", {10});
  Value b = mpi_sum(a);
  Value loss = sum(b);
  Value grad = gradient(loss, a);
  Tensor av(Shape{10});
  for (int i = 0; i < 10; ++i) av[i] = (i + 1.0) * rank;
  Session session(g);
  auto out = session.run({b, grad}, {{a, av}});
  if (rank == 0) {
    std::printf("b = ");
    for (int i = 0; i < 10; ++i) std::printf("%g ", out[0][i]);
    std::printf("\ndL/da = ");
    for (int i = 0; i < 10; ++i) std::printf("%g ", out[1][i]);
    std::printf("\n");
  }
  examples::Checker check(*comm);
  for (int i = 0; i < 10; ++i) {
    check.expect(
        "b", out[0][i], rank == 0 ? (i + 1.0) * size * (size - 1) / 2 : 0.0);
    check.expect("dL/da", out[1][i], 1.0);
  }
  return check.exit_code();
}
