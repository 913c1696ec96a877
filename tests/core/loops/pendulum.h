// The loop suites' problem: a small non-linear map on a carry pair, as a
// loop and unrolled (the reference), with its feeds and gradient.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>

#include "core/ad/gradients.h"
#include "core/ad/jvp.h"
#include "core/error.h"
#include "core/exec/session.h"
#include "core/loops/loop.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/test_util.h"

namespace adgraph::testing {

// Relative agreement of the schedules with the unrolled graph.
constexpr double kUnrolledTolerance = 1e-14;

// One step of a small non-linear map on a carry pair (x, v) with invariant
// a: x⁺ = x + 0.1·sin(v)·a, v⁺ = 0.9·v + 0.05·x²·a; per-step output x·v.
inline LoopStep pendulum(const Values& c, Value a) {
  Value x = c[0], v = c[1];
  return {{x + 0.1 * sin(v) * a, 0.9 * v + 0.05 * square(x) * a}, {x * v}};
}

struct Problem {
  Graph g;
  Value x0, v0, a, loss;
  Value loop_node;
};

// loss = Σ x_n² + Σ v_n + Σ_t w_t·(x·v)_t over the kept steps.
inline void build(Problem& p,
                  int64_t n,
                  CheckpointSchedule schedule,
                  std::vector<int64_t> steps = {}) {
  p.x0 = p.g.placeholder("x0", {3});
  p.v0 = p.g.placeholder("v0", {3});
  p.a = p.g.placeholder("a", {3});
  LoopOptions options;
  options.checkpoints = schedule;
  options.output_steps = steps;
  LoopResult r = loop(
      n,
      {p.x0, p.v0},
      {p.a},
      [](const LoopArgs& l) { return pendulum(l.carries, l.invariants[0]); },
      options);
  p.loop_node = r.node;
  Value y = r.outputs[0];  // [K, 3]
  Tensor w(y.shape());
  for (int64_t i = 0; i < w.size(); ++i) w[i] = 0.01 * (i % 7) - 0.02;
  p.loss =
      sum(square(r.carries[0])) + sum(r.carries[1]) + dot(y, p.g.constant(w));
}

// The same computation unrolled: the reference.
inline Value build_unrolled(Problem& p,
                            int64_t n,
                            std::vector<int64_t> steps = {}) {
  p.x0 = p.g.placeholder("x0", {3});
  p.v0 = p.g.placeholder("v0", {3});
  p.a = p.g.placeholder("a", {3});
  Values c = {p.x0, p.v0};
  Value weighted;
  int64_t row = 0;
  for (int64_t t = 0; t < n; ++t) {
    LoopStep s = pendulum(c, p.a);
    const bool kept = steps.empty() ||
                      std::find(steps.begin(), steps.end(), t) != steps.end();
    if (kept) {
      Tensor w(Shape{3});
      for (int64_t i = 0; i < 3; ++i) w[i] = 0.01 * ((row * 3 + i) % 7) - 0.02;
      Value term = dot(s.outputs[0], p.g.constant(w));
      weighted = weighted.valid() ? weighted + term : term;
      ++row;
    }
    c = s.carries;
  }
  p.loss = sum(square(c[0])) + sum(c[1]) + weighted;
  return p.loss;
}

inline FeedMap feeds_of(const Problem& p) {
  return {{p.x0, Tensor({0.3, -0.2, 0.5})},
          {p.v0, Tensor({0.1, 0.4, -0.3})},
          {p.a, Tensor({1.0, 0.7, 1.3})}};
}

// (loss, ∂loss/∂x0, ∂loss/∂v0, ∂loss/∂a) in one run.
inline std::vector<Tensor> loss_and_gradient(Problem& p) {
  Values g = gradients(p.loss, {p.x0, p.v0, p.a});
  Session s(p.g);
  return s.run({p.loss, g[0], g[1], g[2]}, feeds_of(p));
}

// Revolve's optimum, from the formula alone: r is the integer with
// C(s+r−1, s) < n <= C(s+r, s) and t(n, s) = r·n − C(s+r, r−1).
inline int64_t choose(int64_t n, int64_t k) {
  if (k < 0 || k > n) return 0;
  double c = 1;
  for (int64_t i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return static_cast<int64_t>(std::llround(c));
}
inline int64_t revolve_steps(int64_t n, int64_t s) {
  int64_t r = 0;
  while (choose(s + r, s) < n) ++r;
  return r * n - choose(s + r, r - 1);
}

}  // namespace adgraph::testing
