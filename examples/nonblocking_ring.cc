// The mpi4py course's nonblocking ring: every rank starts sending its value
// to the right neighbour (mpi_isend) and receiving from the left
// (mpi_irecv), computes meanwhile, then waits. With x_r = (r + 1, 2r) and
// the loss L = Σ_r [Σ_i (i + 1)·y_{r,i}² + Σ_i x_{r,i}²], y_r = x_{r−1}:
//   y_r = x_{r−1},   ∂L/∂x_{r,i} = 2(i + 1)·x_{r,i} + 2·x_{r,i}
// (each rank's x is received once, by its right neighbour).
#include <cstdio>

#include "adgraph.h"
#include "examples/example_check.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const int rank = comm->rank(), size = comm->size();
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;

  // doc:begin ring
  Graph g;
  Value x = g.placeholder("x", {2});
  Value send = mpi_isend(x, right, 0);
  Value recv = mpi_irecv(g, {2}, left, 0);
  Value own = sum(square(x));             // computed while the messages travel
  auto done = mpi_waitall({send, recv});  // the send's wait is done[0]
  Value y = done[1];
  Value loss = sum(g.constant(Tensor({1.0, 2.0})) * square(y)) + own;
  Value grad = gradient(loss, x);
  // doc:end ring

  Session session(g);
  const Tensor xv({rank + 1.0, 2.0 * rank});
  auto out = session.run({y, grad, loss}, {{x, xv}});
  const double total = comm->allreduce_sum(out[2].item());
  if (rank == 0) {
    std::printf("rank 0 received (%g, %g) from rank %d; total loss %g\n",
                out[0][0],
                out[0][1],
                left,
                total);
  }
  examples::Checker check(*comm);
  check.expect("y0", out[0][0], left + 1.0);
  check.expect("y1", out[0][1], 2.0 * left);
  for (int i = 0; i < 2; ++i)
    check.expect("dx", out[1][i], 2 * (i + 1) * xv[i] + 2 * xv[i]);
  return check.exit_code();
}
