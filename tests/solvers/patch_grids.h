// The patch grids of a test run: every px × py with px·py = ranks (P × 1,
// 1 × P and, on 4 ranks, 2 × 2), each sized by `size(px, py)`, which sets
// nx and ny of the config it is given.
#pragma once

#include <vector>

#include "solvers/heat_solver.h"

namespace adgraph::testing {

template <class Size>
std::vector<solvers::HeatConfig> patch_grids(int ranks, Size size) {
  std::vector<solvers::HeatConfig> out;
  for (int px = 1; px <= ranks; ++px) {
    if (ranks % px != 0) continue;
    solvers::HeatConfig c;
    c.px = px;
    c.py = ranks / px;
    size(c);
    out.push_back(c);
  }
  return out;
}

}  // namespace adgraph::testing
