// A fully connected network built from existing ops (matmul, broadcast_to,
// tanh), for coefficients given by a neural network (ADCME's
// κ = |NN_θ(x, y) + 5|). Its parameters are one flat vector, so an
// optimizer sees one variable.
#pragma once

#include <cstdint>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace adgraph::solvers {

// Layer widths, input first: {2, 20, 20, 20, 1} has three tanh hidden
// layers and a linear output. Parameters, layer by layer: W_l
// ([w_l, w_{l+1}], row-major), then b_l ([w_{l+1}]).
struct DenseNetwork {
  std::vector<int64_t> widths;

  // 921 for {2, 20, 20, 20, 1}.
  int64_t parameter_count() const;
  // Glorot-uniform weights (±√(6 / (fan_in + fan_out))) from a generator
  // seeded with `seed`, zero biases: the same on every rank.
  Tensor initial_parameters(uint64_t seed) const;
  // The network applied to each row of `inputs` ([N, widths.front()]):
  // [N, widths.back()]. `parameters` has parameter_count() elements.
  Value apply(Value parameters, Value inputs) const;
};

}  // namespace adgraph::solvers
