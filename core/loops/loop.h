// Loops: one node whose body is a subgraph, run a static number of times.
//
//   // u_{t+1} = u_t + dt·(κ ⊙ lap(u_t)), 1000 steps, one node in g:
//   LoopResult r = loop(1000, {u0}, {kappa}, [&](const LoopArgs& a) {
//     Value u = a.carries[0];
//     return LoopStep{{u + dt * a.invariants[0] * lap(u)}, {}};
//   });
//   Value u_final = r.carries[0];
//
// A loop has loop-carried values (carries: c_0 = init, c_{t+1} = body(c_t)),
// loop-invariant inputs read by every step (κ, f, …), a static trip count n,
// and optional per-step outputs y_t, stacked along a new leading axis (every
// step, or the steps listed in LoopOptions::output_steps). The graph does not
// grow with n: the body is built once, into a graph of its own, by calling
// `body` with placeholders for the carries, the invariants and the step
// index t (a scalar holding t). The body may hold any op, communication ops
// (data_exchange, allreduce, send/recv, …) and other loops.
//
// Communication. The body's communication nodes keep their ghost order
// inside the body, and a loop whose body communicates is itself a
// communication node of the outer graph, ordered among the others by ghost
// dependencies; its collectives join the plan-time sequence check (the
// loop's entry lists the body's collectives) and every body node runs under
// the communication deadline, which names the body node. Sends a step
// issues complete by the end of that step.
//
// Reverse mode. The gradient of a loop is one `loop_adjoint` node that runs
// the body's adjoint backwards, t = n−1 … 0, under the loop's checkpoint
// schedule (core/checkpoint_schedule.h). Each taped step reruns the part of
// the body's forward its adjoint needs (communication included), then the
// adjoint; the cotangents of the invariants are summed over the steps as a
// carry of the adjoint loop. When the forward loop node and its adjoint run
// in the same Session::run, the forward node hands over the snapshots of the
// schedule's first sweep (its "tape" output is a ticket for them, issued
// only when something reads it), so the adjoint recomputes t(n, s) − (n − 1)
// body steps instead of t(n, s). A taped step t reads c_{t+1} too, where
// the step before it in reverse order (or the forward node, for n − 1) left
// it: a carry that a node of the step makes by itself (say a linear solve,
// whose adjoint reads its solution) is not made again
// (LoopSpec::next_carries). Handed-over snapshots, spare state buffers
// and the bodies' buffers are kept with the loop between runs (like a
// Session's recycled buffers) and are not counted in RunStats. Recomputation is
// deterministic: every schedule gives bitwise the same gradient, and every rank
// follows the same schedule, so recomputed and adjoint messages pair up.
// Cotangents of loop_adjoint (second-order reverse mode) are not supported:
// gradients() through one throws GraphError naming it.
//
// Forward mode. The tangent of a loop is a loop carrying (c, ċ) with the
// body's tangent graph as its body (no stored states); the tangent of a
// loop_adjoint is a loop_adjoint over the tangent bodies, so jvp(gradient(
// …)) through a loop (a Hessian-vector product) works with every schedule.
//
// Memory. A body keeps the buffers of all its intermediate values from one
// step to the next (one step's worth), plus the carries; the adjoint holds
// its schedule's snapshots (one copy of every carry each).
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/checkpoint_schedule.h"
#include "core/fields.h"
#include "core/graph.h"

namespace adgraph {

namespace detail {
class LoopCache;
}

// What a loop body receives, as values of the body's own graph.
struct LoopArgs {
  // c_t, with the shapes of the initial carries.
  std::vector<Value> carries;
  // The loop-invariant inputs, with their shapes.
  std::vector<Value> invariants;
  // The step index t as a scalar (0 … n−1).
  Value step;
  // The body's graph, for constants (`graph->constant(...)`).
  Graph* graph = nullptr;
  // Per-step inputs (the loop's `xs`): row t of each, scan-style.
  std::vector<Value> xs;
};

// What a loop body returns.
struct LoopStep {
  // c_{t+1}: one per carry, each with its carry's shape.
  std::vector<Value> carries;
  // y_t: optional per-step outputs (any shapes).
  std::vector<Value> outputs;
};

using LoopBodyFn = std::function<LoopStep(const LoopArgs&)>;

struct LoopOptions {
  // Name of the loop node; empty gives "loop_<id>". Body nodes keep the
  // names the body gave them (errors name them).
  std::string name;
  // Schedule of the loop's adjoint. Default: the graph's default
  // (Graph::set_default_checkpoints, itself store_all() by default).
  CheckpointSchedule checkpoints;
  // Steps whose outputs are kept, strictly increasing, each in [0, n).
  // Empty: every step.
  std::vector<int64_t> output_steps;

  // The fields' table (core/fields.h).
  static const FieldTable<LoopOptions>& fields();
  // True when these options fit a loop of `trips` steps; otherwise false,
  // with the reason in *error and the option's name in *field (if given).
  bool is_valid(int64_t trips,
                std::string* error,
                std::string* field = nullptr) const;
};

struct LoopResult {
  // c_n, one per carry.
  std::vector<Value> carries;
  // Per-step output k stacked: shape [K] + shape(y_k), K = n or the number
  // of output_steps; row i is y at step i (or at output_steps[i]).
  std::vector<Value> outputs;
  // The loop node's first output (for loop_stats and control edges).
  Value node;
};

// Builds a loop node in the graph of the initial carries (or of the
// invariants when there are no carries; at least one of the two lists must
// be non-empty) and returns its outputs.
//
// Throws GraphError (values of different graphs, a body that returns the
// wrong number of carries, reads a value of another graph, creates a
// placeholder; bad options: n < 1, unsorted or out-of-range output_steps),
// ShapeError (a carry whose shape changes, naming the loop and the carry),
// OptionsError (an invalid schedule), and whatever the body's own nodes
// throw while it is built.
LoopResult loop(int64_t trips,
                const std::vector<Value>& init,
                const std::vector<Value>& invariants,
                const LoopBodyFn& body,
                LoopOptions options = {});

// The same with per-step inputs, as jax.lax.scan's xs: each xs[k] has a
// leading axis of `trips` rows, and step t reads row t as args.xs[k]
// (shape xs[k].shape() without its first axis). The cotangent of row t is
// step t's (each step adds its row into the xs' cotangent in place: O(row)
// a step), under every schedule. Throws GraphError (field "xs") for an
// array whose first axis is not `trips` long, besides what loop() throws.
LoopResult loop(int64_t trips,
                const std::vector<Value>& init,
                const std::vector<Value>& invariants,
                const std::vector<Value>& xs,
                const LoopBodyFn& body,
                LoopOptions options = {});

// y = x[t]: row t of x (t a scalar holding an integer in [0, x.shape[0])),
// shape x.shape() without its first axis. x̄ = row_add(x̄, ȳ, t).
Value step_row(Value x, Value t);
// y = a with r added to row t: y[t] = a[t] + r, the other rows a's (in
// place when a is not read later). ā = ȳ, r̄ = ȳ[t].
Value row_add(Value a, Value r, Value t);

// What the last run of a loop or loop_adjoint node did.
struct LoopStats {
  // Body forward steps run (for a loop: n; for its adjoint: the steps it
  // recomputed, taped steps not included).
  int64_t forward_steps = 0;
  // Adjoint steps run (n for a loop_adjoint, 0 for a loop).
  int64_t taped_steps = 0;
  // Most snapshots held at once, and their bytes (loop_adjoint).
  int64_t max_snapshots = 0;
  int64_t snapshot_bytes = 0;
  // The resolved schedule ("all", "binomial 100", …).
  std::string schedule;
};

// Stats of the last run of `node`'s loop (a loop or loop_adjoint output).
// Throws GraphError when `node` is not such a node.
LoopStats loop_stats(const Value& node);
// The loop_adjoint node(s) gradients() built for `loop_node`, oldest first.
std::vector<Value> loop_adjoints(const Value& loop_node);

// A body: a graph of its own with its input placeholders and its outputs.
struct LoopBody {
  std::shared_ptr<Graph> graph;
  std::vector<Value> inputs;
  std::vector<Value> outputs;
};

// A loop node's payload (Node::loop). Forward loops (op "loop") use
// `forward`; loop_adjoint nodes use `forward` to recompute states and
// `reverse` to step the cotangents back.
struct LoopSpec {
  enum class Kind { kForward, kAdjoint };
  Kind kind = Kind::kForward;
  int64_t trips = 1;
  int num_carries = 0, num_invariants = 0;
  // Per-step outputs of `forward` (after the carries).
  int num_step_outputs = 0;
  std::vector<int64_t> output_steps;  // empty: every step
  // Resolved: never kDefault; kMemoryBudget is turned into kBinomial.
  CheckpointSchedule schedule;
  // forward: inputs carries, invariants, step; outputs carries, y.
  LoopBody forward;
  // kAdjoint: inputs carries, invariants, step, reverse carries, step
  // cotangents, next carries; outputs reverse carries.
  LoopBody reverse;
  int num_reverse = 0;
  int num_step_cotangents = 0;
  // kAdjoint: carries whose next value c_{t+1} the reverse body reads
  // (inputs after the step cotangents, in this order) instead of computing
  // again the node that made it, a linear solve say. The node then takes
  // c_n of these carries as inputs, after the step cotangents.
  std::vector<int> next_carries;
  // kAdjoint: reads the forward node's tape (a ticket for the snapshots
  // its run handed over) as its last input.
  bool taped = false;
  // Runners, spare state buffers and handed-over snapshots; a loop and the
  // adjoint built from it share one.
  std::shared_ptr<detail::LoopCache> cache;

  // What the graph of the loop node needs to know of its bodies.
  BodyTraits traits() const {
    return {communicates(), has_every_rank_node(), shared_comm()};
  }
  bool communicates() const;
  bool has_every_rank_node() const;
  std::shared_ptr<CommContext> shared_comm() const;
  // The body's collectives, for the plan-time sequence check.
  const std::string& signature() const { return signature_; }
  // States kept by the tape, increasing (see loop_adjoint).
  std::vector<int64_t> tape_positions() const;
  // Elements of one state (all carries).
  int64_t state_elements() const;
  // States an adjoint of this schedule holds at most at once, the tape's
  // included: n for store_all, ⌈n/k⌉ + k for every(k), s + 1 for
  // binomial(s) (its s and the tape's last state). For the plan's memory
  // estimate.
  int64_t snapshots_bound() const;
  // Body runs one run of the node makes, nested loops' body runs included
  // (a double: nested counts multiply past 2^63). An adjoint counts its
  // schedule's recomputation in full, as if nothing were handed over:
  // n − 1 for store_all, n − 1 + (⌈n/k⌉ − 1)(k − 1) for every(k), t(n, s)
  // for binomial(s), plus its n taped steps. For the plan's work bound
  // (Session, ADGRAPH_MAX_LOOP_STEPS).
  double body_steps() const;
  // The recomputed forward steps of that count (0 for a forward loop).
  double recomputed_steps() const;
  void finish();  // computes signature_ (loop.cc)

  struct Stats {
    std::atomic<int64_t> forward_steps{0}, taped_steps{0}, max_snapshots{0},
        snapshot_bytes{0};
  };
  mutable Stats stats;
  // loop_adjoint nodes built from this loop (graph, node id).
  mutable std::vector<std::pair<Graph*, int>> adjoints;

 private:
  std::string signature_;
};

// Registers loop, loop_adjoint, step_row and row_add (once only: call
// register_loops_layer(), which loop() calls).
void register_loop_ops();
// The loops layer's package initialiser: registers its ops once per
// process, thread-safe, and returns at once after the first call. loop()
// calls it, so a graph built through loop() has them; the core below
// registers its own ops itself.
void register_loops_layer();

}  // namespace adgraph
