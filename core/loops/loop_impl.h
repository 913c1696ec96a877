// Internals of loops (core/loops/loop.h): running a body, copying a body into
// another graph, and the reversal schedules. Not installed.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/loops/loop.h"
#include "core/op.h"
#include "core/tensor.h"

namespace adgraph::detail {

// Marks, in a loop's signature, a body node whose input shapes may differ
// by rank (JSON dumps escape control characters, so no attribute holds it).
constexpr char kRankShapes = '\x1e';

// A node whose input shapes may differ by rank (OpDef::shapes_differ_by_rank,
// or a loop whose body holds one): the cross-rank sequence check compares
// it without its shapes.
inline bool shapes_differ_by_rank(const Node& n) {
  return n.op->shapes_differ_by_rank ||
         (n.loop && n.loop->signature().find(kRankShapes) != std::string::npos);
}

// Runs a body's plan again and again with cheap binding: the nodes its
// requested outputs need plus every communication node of the body (so all
// ranks run the same messages each step), in demand order, with one buffer
// per intermediate value kept from one run to the next.
class BodyRunner final {
 public:
  // `wanted`: indices into body.outputs that run() must produce.
  BodyRunner(const LoopBody& body, const std::vector<int>& wanted);
  BodyRunner(const BodyRunner&) = delete;
  BodyRunner& operator=(const BodyRunner&) = delete;

  // Runs the plan with body input i read from *inputs[i]. When `donated`
  // is given and donated[i] == inputs[i], the caller gives up that input's
  // buffer: an in-place op (OpDef::in_place) that is its last reader writes
  // its output there, and *donated[i] is left holding some buffer of the
  // same size (contents undefined). Donated or not, the results are the same.
  void run(const Tensor* const* inputs, Tensor* const* donated = nullptr);
  // Output k (an index into body.outputs) of the last run.
  const Tensor& output(int k) const;
  // Moves the values of outputs first … first+count−1 into `into` (same
  // shapes), leaving `into`'s old buffers to be overwritten by the next
  // run. Reads every output before it changes anything, so outputs that
  // are inputs of the body (or alias each other) are copied correctly. A
  // runner is always called with the same `first` and count. With
  // `inputs_stay`, the caller keeps the last run's inputs where they are,
  // unchanged, for as long as it keeps `into`'s new values: an output that
  // passes an input straight through (a leapfrog's c_{t−1} = c_t) becomes
  // a view of that input (Tensor::borrow) instead of a copy.
  void move_outputs(int first,
                    std::vector<Tensor>& into,
                    bool inputs_stay = false);

 private:
  // Outputs that take over an input's buffer, inputs a kernel may keep.
  void hand_over_buffers(const std::vector<int>& readers);
  struct Step {
    const Node* node;
    std::vector<int> input_slots;
    int first_slot;
    std::vector<int> readers;
    std::vector<int64_t> sizes;  // elements of each output
    // (output, input slot): the output takes the dying input's buffer
    // (OpDef::in_place), as in a sequential Session.
    std::vector<std::pair<int, int>> in_place;
    // (output, body input): the same for a body input, when donated (the
    // first donated candidate of an output; donated_to: per output, taken
    // in this run).
    std::vector<std::pair<int, int>> in_place_donated;
    mutable std::vector<char> donated_to;
    // Per input: its slot when the kernel may take its buffer
    // (OpDef::consumes), else nullptr; empty when there is none.
    std::vector<Tensor*> consumable;
    ComputeFn kernel;  // kernel_of(*node)
  };
  CommContext* comm_;
  // The communicators the steps run on (the body's and its nodes'
  // sub-communicators), and their pending sends when a run starts.
  std::vector<CommContext*> comms_;
  std::vector<std::size_t> pending_;
  std::vector<Step> steps_;
  std::vector<Tensor> slots_;
  std::vector<const Tensor*> views_;
  // Per body input: its slot.
  std::vector<int> input_slot_;
  // Per body output: its slot.
  std::vector<int> output_slot_;
  std::vector<char> is_input_slot_;
  std::vector<Tensor> scratch_;
  // Per moved output (move_outputs is always called with one `first`):
  // whether it is copied rather than swapped.
  std::vector<char> copied_;
};

// What a loop node keeps from one run to the next: body runners (with their
// buffers), spare state buffers, and the snapshots a forward run hands to
// its adjoint. Shared by every node of one LoopSpec; safe for concurrent
// sessions.
class LoopCache final {
 public:
  using State = std::vector<Tensor>;
  // A runner for `body` and `wanted` (built on first use); give it back.
  std::unique_ptr<BodyRunner> take_runner(const LoopBody& body,
                                          const std::vector<int>& wanted);
  void give_runner(std::unique_ptr<BodyRunner> runner,
                   const LoopBody& body,
                   const std::vector<int>& wanted);
  // A state buffer shaped like `like` (contents undefined); give it back.
  State take_state(const State& like);
  void give_state(State state);
  // Snapshots of one forward run, under a new ticket, for `takers` adjoint
  // runs (the last one takes them, the others get copies).
  int64_t hand_over(std::map<int64_t, State> snapshots, int takers);
  std::map<int64_t, State> take_over(int64_t ticket);

 private:
  std::mutex mutex_;
  std::map<std::pair<const Graph*, std::vector<int>>,
           std::vector<std::unique_ptr<BodyRunner>>>
      runners_;
  std::vector<State> states_;
  struct Handed {
    std::map<int64_t, State> snapshots;
    int takers = 0;
  };
  std::map<int64_t, Handed> handed_;
};

// Small helpers of loop.cc, loop_kernels.cc and loop_derivatives.cc.
using Values = std::vector<Value>;
inline int as_int(std::size_t n) { return static_cast<int>(n); }

inline Values take(const Values& v, int first, int count) {
  return Values(v.begin() + first, v.begin() + first + count);
}

inline Values join(std::initializer_list<Values> parts) {
  Values out;
  for (const Values& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

inline Values placeholders(Graph& g,
                           const std::string& prefix,
                           const Values& like) {
  Values out;
  for (std::size_t k = 0; k < like.size(); ++k)
    out.push_back(
        g.placeholder(prefix + "[" + std::to_string(k) + "]", like[k].shape()));
  return out;
}

inline Value zeros_like(Graph& g, const Shape& shape) {
  return g.add_node("zeros", {}, {{"shape", shape}});
}

// The stacked shape of a per-step output: [K] + shape.
inline Shape stacked(const LoopSpec& spec, const Shape& shape) {
  Shape out{spec.output_steps.empty()
                ? spec.trips
                : static_cast<int64_t>(spec.output_steps.size())};
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// Row of step t in the stacked outputs, -1 when t is not kept.
inline std::vector<int64_t> rows_of_steps(const LoopSpec& spec) {
  std::vector<int64_t> row(spec.trips, -1);
  if (spec.output_steps.empty()) {
    for (int64_t t = 0; t < spec.trips; ++t) row[t] = t;
  } else {
    for (std::size_t i = 0; i < spec.output_steps.size(); ++i)
      row[spec.output_steps[i]] = static_cast<int64_t>(i);
  }
  return row;
}

inline void copy_row(const Tensor& from, Tensor& stacked_tensor, int64_t row) {
  const int64_t n = from.size();
  std::memcpy(stacked_tensor.data() + row * n, from.data(), n * sizeof(double));
}

// The kernels (loop_kernels.cc) and derivative rules (loop_derivatives.cc)
// of loop and loop_adjoint.
void run_loop(KernelContext& c);
void run_loop_adjoint(KernelContext& c);
Values loop_gradient(const GradientContext& c);
Values loop_tangent(const TangentContext& c);
Values loop_adjoint_tangent(const TangentContext& c);
// Adds a loop or loop_adjoint node for `spec` (given a cache if it has
// none) and returns its outputs.
std::vector<Value> add_loop_node(Graph& g,
                                 const std::string& op,
                                 const Values& inputs,
                                 std::shared_ptr<LoopSpec> spec,
                                 const std::string& name);

// Values of a body graph, by (node id, output), that a copy reads from
// given values of the destination graph instead.
using Replaced = std::map<std::pair<int, int>, Value>;

// Copies into `dst` the nodes of `body` needed for `wanted` plus every
// communication node, with body.inputs[i] replaced by inputs[i], and
// returns the copies of `wanted`. Copies keep their names (names made up
// from the op and id are made up again), attributes, tensors, loops and
// control edges. A node all of whose outputs are in `replaced` is not
// copied (communication node or not): its readers read the replacements.
std::vector<Value> clone_body(const LoopBody& body,
                              Graph& dst,
                              const std::vector<Value>& inputs,
                              const std::vector<Value>& wanted,
                              const Replaced& replaced = {});

// Nodes of `g` that `roots` need through data, control and ghost edges, plus
// every communication node and what it needs: what a BodyRunner runs.
// Nodes marked in `skipped` are neither needed nor followed (a ghost edge to
// one leads on to its own ghost input).
std::vector<char> needed_nodes(const Graph& g,
                               const std::vector<int>& roots,
                               const std::vector<char>& skipped = {});

// A new body graph sharing `comm_source`'s communicator, if it has one.
std::shared_ptr<Graph> new_body_graph(const Graph& comm_source);

// The state positions the tape of `spec`'s forward loop keeps: those the
// first forward sweep of its schedule stores, and n − 1.
std::vector<int64_t> tape_positions(const CheckpointSchedule& schedule,
                                    int64_t trips);

}  // namespace adgraph::detail
