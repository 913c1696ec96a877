// docs/LOOPS.md's example: a loop with a carry, an invariant and per-step
// inputs, its gradient under every checkpoint schedule.
//
//   u_0 = 1, u_{t+1} = a·u_t + x_t (t = 0 … 3), L = u_4, a = 0.5, x = (1, 2, 3,
//   4)
//
// By hand: u = 1.5, 2.75, 4.375, 6.1875 (the per-step outputs; L = 6.1875);
// ∂L/∂x_t = a^(3−t) = 0.125, 0.25, 0.5, 1;
// ∂L/∂a = Σ_t a^(3−t)·u_t = 0.125·1 + 0.25·1.5 + 0.5·2.75 + 4.375 = 6.25.
// Every schedule gives these bits. The schedules a 4-step loop runs: all;
// every 2; binomial 2; budget:16 holds two states of 8 bytes, so binomial
// 2; auto is binomial with the fewest s for which C(s+2, 2) >= 4 steps: 2.
// The test examples/guides/loops compares the output with
// tests/guides/loops.expected.
#include <cstdio>
#include <string>
#include <vector>

#include "adgraph.h"

using namespace adgraph;

// Loss, per-step outputs, ∂L/∂a and ∂L/∂x with `schedule`, and the
// schedule the adjoint ran.
struct Run {
  std::vector<Tensor> out;
  std::string schedule;
};

Run run_with(CheckpointSchedule schedule) {
  // doc:begin loop
  Graph g;
  Value a = g.placeholder("a", {1});
  Value x = g.placeholder("x", {4, 1});  // one row per step
  Value u0 = g.constant(Tensor({1.0}), "u0");

  LoopOptions options;
  options.checkpoints = schedule;  // e.g. CheckpointSchedule::binomial(2)
  LoopResult r = loop(
      4,
      {u0},
      {a},
      {x},
      [](const LoopArgs& s) {
        Value next = s.invariants[0] * s.carries[0] + s.xs[0];
        return LoopStep{{next}, {next}};  // next carries, per-step outputs
      },
      options);
  Value loss = sum(r.carries[0]);
  std::vector<Value> grads = gradients(loss, {a, x});  // one loop_adjoint

  Session session(g);
  std::vector<Tensor> out =
      session.run({loss, r.outputs[0], grads[0], grads[1]},
                  {{a, Tensor({0.5})}, {x, Tensor({4, 1}, {1, 2, 3, 4})}});
  // doc:end loop
  return {out, loop_stats(loop_adjoints(r.node).at(0)).schedule};
}

void print(const char* label, const Tensor& t) {
  std::printf("%s", label);
  for (int64_t i = 0; i < t.size(); ++i) std::printf(" %g", t[i]);
  std::printf("\n");
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  for (size_t k = 0; k < a.size(); ++k) {
    for (int64_t i = 0; i < a[k].size(); ++i) {
      if (!(a[k][i] == b[k][i])) return false;
    }
  }
  return true;
}

int main() {
  const Run all = run_with(CheckpointSchedule::store_all());
  print("L =", all.out[0]);
  print("u_1..u_4 =", all.out[1]);
  print("dL/da =", all.out[2]);
  print("dL/dx =", all.out[3]);
  // doc:begin schedules
  std::vector<CheckpointSchedule> schedules = {
      CheckpointSchedule::store_all(),        // "all"
      CheckpointSchedule::every(2),           // "every:2"
      CheckpointSchedule::binomial(2),        // "2"
      CheckpointSchedule::memory_budget(16),  // "budget:16"
      CheckpointSchedule::automatic()};       // "auto": per loop
  // doc:end schedules
  // The text form of each, as a JSON document or Python would give it.
  const char* texts[] = {"all", "every:2", "2", "budget:16", "auto"};
  bool ok = true;
  for (size_t k = 0; k < schedules.size(); ++k) {
    const Run run = run_with(schedules[k]);
    const bool same = same_bits(run.out, all.out);
    ok = ok && same;
    std::printf("%-10s ran as %-12s same bits as all: %s\n",
                texts[k],
                run.schedule.c_str(),
                same ? "yes" : "NO");
  }
  return ok ? 0 : 1;
}
