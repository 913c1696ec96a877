// Checks a --dump-gradient file of heat_inversion against the hand-written
// serial reference: dump_check FILE NX NY NT.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <vector>

#include "tests/solvers/heat_reference.h"

int main(int argc, char** argv) {
  using namespace adgraph;
  if (argc != 5) return 2;
  solvers::HeatConfig c;
  c.nx = std::atoi(argv[2]), c.ny = std::atoi(argv[3]),
  c.nt = std::atoi(argv[4]);
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<double> dump(static_cast<std::size_t>(c.nx) * c.ny);
  in.read(reinterpret_cast<char*>(dump.data()), sizeof(double) * dump.size());
  if (!in || in.peek() != EOF) {
    std::printf("dump_check: %s does not hold exactly %d x %d doubles\n",
                argv[1],
                c.nx,
                c.ny);
    return 1;
  }
  solvers::Patch whole;
  whole.n = c.nx, whole.m = c.ny;
  const Tensor truth = solvers::heat_kappa_true(c, whole);
  std::vector<double> ones(dump.size(), 1.0);
  const auto obs =
      testing::heat_reference(c, truth.to_vector(), ones, ones).u_final;
  const auto ref = testing::heat_reference(c, ones, obs, ones);
  double gmax = 0, worst = 0;
  for (std::size_t k = 0; k < dump.size(); ++k) {
    gmax = std::max(gmax, std::fabs(ref.gradient[k]));
    worst = std::max(worst, std::fabs(dump[k] - ref.gradient[k]));
  }
  std::printf(
      "dump_check: max |dump - reference| = %.3e (max |gradient| %.3e)\n",
      worst,
      gmax);
  return worst <= 1e-12 * gmax ? 0 : 1;
}
