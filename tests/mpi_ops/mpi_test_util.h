// Helpers for the MPI suites.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "adgraph.h"
#include "optim/checkpoint_impl.h"
#include "tests/test_util.h"

namespace adgraph::testing {

// The dot-product test's bound on |⟨Ax, y⟩ − ⟨x, Aᵀy⟩| / |⟨Ax, y⟩|.
constexpr double kAdjointTolerance = 1e-12;

inline int world_rank() { return Communicator::world()->rank(); }
inline int world_size() { return Communicator::world()->size(); }

// Values in [-1, 1] that differ on every rank.
inline Tensor random_tensor(const Shape& shape, unsigned salt) {
  std::mt19937_64 rng(1000003u * static_cast<unsigned>(world_rank()) + salt);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Tensor t{Shape(shape)};
  for (int64_t i = 0; i < t.size(); ++i) t[i] = u(rng);
  return t;
}

// Checks ⟨A x, y⟩ = ⟨x, Aᵀ y⟩ summed over ranks, where A is the linear map
// `op` and Aᵀ is what gradients() builds for it; x and y differ per rank.
inline void expect_adjoint_identity(const std::function<Value(Value)>& op,
                                    const Shape& in_shape) {
  Graph g;
  Value x = g.placeholder("x", in_shape);
  Value ax = op(x);
  Value y = g.placeholder("y", ax.shape());
  Value at_y = gradient(dot(ax, y), x);
  Session s(g);
  Tensor xv = random_tensor(in_shape, 1), yv = random_tensor(ax.shape(), 2);
  auto out = s.run({ax, at_y}, {{x, xv}, {y, yv}});
  auto comm = Communicator::world();
  const double lhs = comm->allreduce_sum((out[0].array() * yv.array()).sum());
  const double rhs = comm->allreduce_sum((xv.array() * out[1].array()).sum());
  EXPECT_LE(std::fabs(lhs - rhs), kAdjointTolerance * std::fabs(lhs))
      << "<Ax, y> = " << lhs << ", <x, A^T y> = " << rhs;
  // A is linear, so its tangent map is A itself: jvp(A x, x, t) = A t.
  Graph h;
  Value x0 = h.placeholder("x", in_shape);
  Value t = h.placeholder("t", in_shape);
  Value a_t = jvp(op(x0), x0, t);
  Session forward(h);
  Tensor a_xv = forward.run(a_t, {{x0, random_tensor(in_shape, 3)}, {t, xv}});
  ASSERT_EQ(a_xv.shape(), out[0].shape());
  if (a_xv.size() == 0) return;  // empty tensors: nothing to compare
  const double scale = out[0].array().abs().maxCoeff();
  EXPECT_LE((a_xv.array() - out[0].array()).abs().maxCoeff(),
            kAdjointTolerance * std::max(1.0, scale))
      << "jvp of a linear map differs from the map";
}

// A loss that differs by rank (weights depend on the rank), so a wrong
// cotangent convention changes the gradient.
inline Value rank_weighted_loss(Value y) {
  Tensor w{Shape(y.shape())};
  for (int64_t i = 0; i < w.size(); ++i)
    w[i] = 1.0 + 0.5 * world_rank() + 0.1 * i;
  return dot(square(y), y.graph().constant(w));
}

}  // namespace adgraph::testing
