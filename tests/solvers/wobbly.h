// Test values for the heat step's suites.
#pragma once

#include <cmath>
#include <cstdint>

#include "adgraph.h"

namespace adgraph::solvers::testing {

// Values in [−1, 1) that differ from point to point and from salt to salt.
inline Tensor wobbly(const Shape& shape, double salt) {
  Tensor t(shape);
  for (int64_t k = 0; k < t.size(); ++k)
    t[k] = std::sin(0.37 * k + 1.7 * salt) * std::cos(0.011 * k * salt);
  return t;
}

}  // namespace adgraph::solvers::testing
