// docs/REPRODUCIBILITY.md's example: sums over ranks that give the same
// bits on any number of ranks.
//
// x = (1e16, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, −1e16), split over the ranks in
// contiguous runs; w = 3 on rank 0, broadcast; L = Σ over every rank of w·x.
// By hand, exactly: L = 3·10 = 30 and ∂L/∂w = Σ x = 10. A plain sum in
// floating point from left to right gives 0 (1e16 + 1 rounds back to
// 1e16, ten times); a sum per rank and then over ranks loses a different
// number of ones for each split. mpi_total sums exactly and rounds once,
// and the adjoint of mpi_bcast sums every rank's terms the same way.
// The test examples/guides/exact_sums runs it on 1 to 4 ranks and compares
// the output with tests/guides/exact_sums.expected.
#include <cstdio>
#include <vector>

#include "adgraph.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto world = program_world();
  const int rank = world->rank(), size = world->size();
  std::vector<double> all = {1e16, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, -1e16};
  const int64_t n = 12, first = n * rank / size, last = n * (rank + 1) / size;
  std::vector<double> mine(all.begin() + first, all.begin() + last);

  // doc:begin exact
  Graph g;
  Value w = g.placeholder("w", {});  // a scalar
  Value x = g.placeholder("x", {static_cast<int64_t>(mine.size())});
  Value loss = mpi_total(mpi_bcast(w) * x);  // exact, rounded once, on rank 0
  Value dw = gradient(loss, w);              // Σ x over every rank, exact

  Session session(g);
  std::vector<Tensor> out =
      session.run({loss, dw},
                  {{w, Tensor::scalar(3.0)},
                   {x, Tensor({static_cast<int64_t>(mine.size())}, mine)}});
  // doc:end exact
  if (rank == 0) {
    std::printf("L = %.17g\n", out[0].item());
    std::printf("dL/dw = %.17g\n", out[1].item());
  }
  return out[0].item() == (rank == 0 ? 30.0 : 0.0) ? 0 : 1;
}
