#include "solvers/dense_network.h"

#include <cmath>
#include <random>

#include "ops/elementwise.h"
#include "ops/linalg.h"
#include "ops/reductions.h"
#include "ops/shape_ops.h"

namespace adgraph::solvers {

int64_t DenseNetwork::parameter_count() const {
  int64_t count = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    count += widths[l] * widths[l + 1] + widths[l + 1];
  }
  return count;
}

Tensor DenseNetwork::initial_parameters(uint64_t seed) const {
  Tensor p(Shape{parameter_count()}, 0.0);
  std::mt19937_64 rng(seed);
  int64_t at = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const double bound =
        std::sqrt(6.0 / static_cast<double>(widths[l] + widths[l + 1]));
    std::uniform_real_distribution<double> weight(-bound, bound);
    for (int64_t k = 0; k < widths[l] * widths[l + 1]; ++k)
      p[at++] = weight(rng);
    at += widths[l + 1];  // biases stay 0
  }
  return p;
}

Value DenseNetwork::apply(Value parameters, Value inputs) const {
  const int64_t rows = inputs.shape()[0];
  Value h = inputs;
  int64_t at = 0;
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const int64_t in = widths[l], out = widths[l + 1];
    Value w = reshape(slice(parameters, 0, at, at + in * out), {in, out});
    at += in * out;
    Value b = slice(parameters, 0, at, at + out);
    at += out;
    Value z = matmul(h, w) + broadcast_to(b, {rows, out});
    h = l + 2 < widths.size() ? tanh(z) : z;
  }
  return h;
}

}  // namespace adgraph::solvers
