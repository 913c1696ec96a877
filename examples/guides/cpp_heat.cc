// docs/CPP.md's heat inversion: solvers::HeatInverse on 1 × P patches.
//
// The observations are the forward solution at κ_true without noise, so
// (by hand) the loss at κ_true is 0 and so is its gradient: every
// observed value is reproduced exactly. A fit from κ = 1 with bounds
// 1 ≤ κ ≤ 1.6 must lower the loss and keep every κ inside the bounds.
// The test examples/guides/cpp_heat runs it on 1 and 2 ranks and compares
// the output with tests/guides/cpp_heat.expected.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "adgraph.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto world = program_world();
  // doc:begin heat
  solvers::HeatInverseOptions options;
  options.config.nx = 16;  // interior points
  options.config.ny = 16;
  options.config.px = 1;  // patch rows × columns = the rank count
  options.config.py = world->size();
  options.config.nt = 40;  // time steps
  options.sensors_every = 2;
  options.kappa_min = 1.0;  // bounds: L-BFGS-B
  options.kappa_max = 1.6;
  solvers::HeatInverse problem(options, world);

  Tensor kappa = problem.kappa_start();  // κ = 1, this rank's patch
  optim::LbfgsOptions lbfgs;
  lbfgs.max_iterations = 10;
  optim::LbfgsSummary summary = problem.fit(kappa, lbfgs);
  // doc:end heat
  auto [at_truth, gradient] = problem.loss_and_gradient(problem.kappa_true());
  double largest = 0;
  for (int64_t i = 0; i < gradient.size(); ++i)
    largest = std::max(largest, std::abs(gradient[i]));
  largest = world->allreduce_max(largest);
  bool inside = true;
  for (int64_t i = 0; i < kappa.size(); ++i)
    inside = inside && kappa[i] >= 1.0 && kappa[i] <= 1.6;
  inside = world->allreduce_min(inside ? 1.0 : 0.0) == 1.0;
  const bool lower = summary.final_f < summary.initial_f;
  if (world->rank() == 0) {
    std::printf("loss at kappa_true = %g\n", at_truth);
    std::printf("largest gradient entry at kappa_true = %g\n", largest);
    std::printf("the fit lowered the loss: %s\n", lower ? "yes" : "no");
    std::printf("every kappa inside [1, 1.6]: %s\n", inside ? "yes" : "no");
  }
  return at_truth == 0 && largest == 0 && lower && inside ? 0 : 1;
}
