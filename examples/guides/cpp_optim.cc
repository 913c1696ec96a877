// docs/CPP.md's optimiser example: optim::lbfgs and optim::lbfgsb on a
// callback, with the variables sharded over the ranks.
//
// f(x) = Σ_i (x_i − i)² over i = 0 … 7, each rank holding a contiguous
// slice of x (Layout::kSharded: f is the sum of the ranks' values).
// By hand: without bounds the minimiser is x_i = i, f = 0. With
// 0 ≤ x ≤ 3.5 it is x = (0, 1, 2, 3, 3.5, 3.5, 3.5, 3.5), with
// f = 0.5² + 1.5² + 2.5² + 3.5² = 0.25 + 2.25 + 6.25 + 12.25 = 21, and five
// bounds active (x_0 at its lower bound, the last four at their upper).
// The test examples/guides/cpp_optim runs it on 1 to 4 ranks and compares
// the output (rank 0's, rounded to 6 decimals) with
// tests/guides/cpp_optim.expected.
#include <cmath>
#include <cstdio>
#include <vector>

#include "adgraph.h"

using namespace adgraph;

namespace {

// The whole x gathered on rank 0, rounded to 6 decimals.
void print_x(Communicator& world, const Eigen::VectorXd& mine, int first) {
  std::vector<double> all(8, 0.0);
  for (int i = 0; i < mine.size(); ++i) all[first + i] = mine[i];
  for (double& v : all) v = world.allreduce_sum(v);
  if (world.rank() != 0) return;
  std::printf("x =");
  for (double v : all) std::printf(" %.6f", std::abs(v) < 5e-7 ? 0.0 : v);
  std::printf("\n");
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto world = program_world();
  const int rank = world->rank(), size = world->size();
  const int first = 8 * rank / size, last = 8 * (rank + 1) / size;
  // doc:begin lbfgs
  // f(x) = Σ_i (x_i − i)², this rank's part: entries first … last − 1.
  optim::Objective f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
    double value = 0;
    for (int i = 0; i < x.size(); ++i) {
      const double r = x[i] - (first + i);
      value += r * r;
      grad[i] = 2 * r;
    }
    return value;  // this rank's share; kSharded sums them
  };
  optim::LbfgsOptions options;
  options.tolerance_gradient = 1e-10;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(last - first);
  optim::LbfgsSummary free =
      optim::lbfgs(f, x, options, world.get(), optim::Layout::kSharded);

  optim::Bounds box{Eigen::VectorXd::Constant(last - first, 0.0),
                    Eigen::VectorXd::Constant(last - first, 3.5)};
  Eigen::VectorXd xb = Eigen::VectorXd::Zero(last - first);
  optim::LbfgsSummary bounded =
      optim::lbfgsb(f, xb, box, options, world.get(), optim::Layout::kSharded);
  // bounded.active_bounds == 5; optim::lbfgsb_message(bounded.termination)
  // doc:end lbfgs
  print_x(*world, x, first);
  if (rank == 0) std::printf("f = %.6f\n", std::abs(free.final_f));
  print_x(*world, xb, first);
  if (rank == 0) {
    std::printf("f = %.6f, active bounds %lld\n",
                bounded.final_f,
                static_cast<long long>(bounded.active_bounds));
  }
  const bool ok = std::abs(free.final_f) < 1e-12 &&
                  std::abs(bounded.final_f - 21) < 1e-9 &&
                  bounded.active_bounds == 5;
  return ok ? 0 : 1;
}
