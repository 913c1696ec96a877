// ADCME's first MPI example: θ = 2, fθ = mpi_bcast(θ), l = fθ^rank,
// L = sum(mpi_sum(l)). Rank 0 holds L = Σ_r 2^r and ∂L/∂θ = Σ_r r·2^(r−1):
// 15 and 17 with `mpirun -n 4 simple_sum`.
#include <cmath>
#include <cstdio>

#include "adgraph.h"
#include "examples/example_check.h"

using namespace adgraph;

int main(int argc, char** argv) {
  // doc:begin mpi
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  Graph g;
  Value theta = g.placeholder("theta", {1});
  Value ftheta = mpi_bcast(theta);
  Value l = pow(ftheta, mpi_rank(g));
  Value loss = sum(mpi_sum(l));
  Value grad = gradient(loss, theta);
  Session session(g);
  auto out = session.run({loss, grad}, {{theta, Tensor({2.0})}});
  // doc:end mpi
  if (comm->rank() == 0) {
    std::printf("L = %g\ndL/dtheta = %g\n", out[0].item(), out[1][0]);
  }
  double want_l = 0, want_g = 0;
  for (int r = 0; r < comm->size(); ++r) {
    want_l += std::pow(2.0, r);
    want_g += r * std::pow(2.0, r - 1);
  }
  examples::Checker check(*comm);
  check.expect("L", out[0].item(), comm->rank() == 0 ? want_l : 0.0);
  check.expect("dL/dtheta", out[1][0], comm->rank() == 0 ? want_g : 0.0);
  return check.exit_code();
}
