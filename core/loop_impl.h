// Internals of loops (core/loop.h): running a body, copying a body into
// another graph, and the reversal schedules. Not installed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "core/loop.h"
#include "core/tensor.h"

namespace adgraph::detail {

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

  // Runs the plan with body input i read from *inputs[i].
  void run(const Tensor* const* inputs);
  // Output k (an index into body.outputs) of the last run.
  const Tensor& output(int k) const;
  // Moves the values of outputs first … first+count−1 into `into` (same
  // shapes), leaving `into`'s old buffers to be overwritten by the next
  // run. Reads every output before it changes anything, so outputs that
  // are inputs of the body (or alias each other) are copied correctly. A
  // runner is always called with the same `first` and count.
  void move_outputs(int first, std::vector<Tensor>& into);

 private:
  struct Step {
    const Node* node;
    std::vector<int> input_slots;
    int first_slot;
    std::vector<int> readers;
    std::vector<int64_t> sizes;  // elements of each output
  };
  const LoopBody& body_;
  CommContext* comm_;
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

// Copies into `dst` the nodes of `body` needed for `wanted` plus every
// communication node, with body.inputs[i] replaced by inputs[i], and
// returns the copies of `wanted`. Copies keep their names (names made up
// from the op and id are made up again), attributes, tensors, loops and
// control edges.
std::vector<Value> clone_body(const LoopBody& body,
                              Graph& dst,
                              const std::vector<Value>& inputs,
                              const std::vector<Value>& wanted);

// A new body graph sharing `comm_source`'s communicator, if it has one.
std::shared_ptr<Graph> new_body_graph(const Graph& comm_source);

// The state positions the tape of `spec`'s forward loop keeps: those the
// first forward sweep of its schedule stores, and n − 1.
std::vector<int64_t> tape_positions(const CheckpointSchedule& schedule,
                                    int64_t trips);

}  // namespace adgraph::detail
