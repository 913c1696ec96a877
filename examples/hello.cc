// Hello, distributed gradient: every rank r holds x_r = (r + 1)·[1, 2];
// s = mpi_sum(x ⊙ x) sums the squares onto rank 0, L = ½ Σ_i s_i², and
// gradient() adds the adjoint graph, in which the reduce becomes a
// broadcast: dL/dx_r = 2 x_r ⊙ s on every rank. mpi_gather brings every
// rank's gradient to rank 0, which prints (tests/docs/hello_cpp.expected).
//
//   mpirun -n 4 build/examples/hello
//
// By hand, at 4 ranks: s = Σ_r (r + 1)²·[1, 4] = 30·[1, 4] = [30, 120];
// L = ½ (30² + 120²) = ½ (900 + 14400) = 7650;
// dL/dx_r = 2 (r + 1)·[1, 2] ⊙ [30, 120] = (r + 1)·[60, 480].
// doc:begin hello
#include <cstdio>

#include "adgraph.h"
using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  const int rank = program_world()->rank();

  Graph g;
  Value x = g.placeholder("x", {2});  // this rank's part
  Value s = mpi_sum(x * x);           // Σ over ranks, on rank 0
  Value loss = 0.5 * sum(square(s));  // zero on the other ranks
  Value grad = gradient(loss, x);     // this rank's dL/dx
  Value grads = mpi_gather(grad);     // [ranks, 2] on rank 0

  const double r1 = rank + 1;
  Session session(g);
  auto out = session.run({s, loss, grads}, {{x, Tensor({r1, 2 * r1})}});
  if (rank == 0) {
    std::printf("s = [%g, %g]\nL = %g\n", out[0][0], out[0][1], out[1].item());
    for (int64_t q = 0; q < out[2].shape()[0]; ++q)
      std::printf("dL/dx on rank %lld = [%g, %g]\n",
                  static_cast<long long>(q),
                  out[2][2 * q],
                  out[2][2 * q + 1]);
  }
}
// doc:end hello
