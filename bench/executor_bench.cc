// Executor overhead: a chain of N tiny nodes (y ← y + c on scalars) run by a
// Session, against the same chain as a hand-written loop over heap-allocated
// scalars. Prints one RESULT line; see docs/PERFORMANCE.md.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <vector>

#include "adgraph.h"

using namespace adgraph;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 100000;
  const int reps = argc > 2 ? std::atoi(argv[2]) : 7;
  Graph g;
  Value x = g.placeholder("x", {});
  Value c = g.scalar(1e-6);
  Value y = x;
  for (int i = 0; i < n; ++i) y = y + c;
  Session session(g);
  FeedMap feeds{{x, Tensor::scalar(1.0)}};
  session.run(y, feeds);  // plan and warm-up

  std::vector<double> graph_s, loop_s;
  double result = 0, baseline = 0;
  for (int r = 0; r < reps; ++r) {
    auto t0 = Clock::now();
    result = session.run(y, feeds).item();
    graph_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());

    // Baseline: each step allocates its result like a node output does.
    t0 = Clock::now();
    auto value = std::make_unique<double>(1.0);
    for (int i = 0; i < n; ++i) {
      auto next = std::make_unique<double>(*value + 1e-6);
      value = std::move(next);
    }
    baseline = *value;
    loop_s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(graph_s.begin(), graph_s.end());
  std::sort(loop_s.begin(), loop_s.end());
  const double per_node = graph_s[reps / 2] / n * 1e9;
  const double per_step = loop_s[reps / 2] / n * 1e9;
  std::printf(
      "RESULT bench=executor nodes=%d reps=%d graph_ns_per_node=%.1f "
      "loop_ns_per_step=%.1f result=%.12g baseline=%.12g\n",
      n,
      reps,
      per_node,
      per_step,
      result,
      baseline);
  return result == baseline ? 0 : 1;
}
