// The execution plan of a Session (internal to core/): the steps a fetch
// list needs, in order, with the slots they read, write and release.
#pragma once

#include <utility>
#include <vector>

#include "core/comm_context.h"
#include "core/session.h"

namespace adgraph {

struct Session::Plan {
  struct Step {
    const Node* node = nullptr;
    bool placeholder = false;
    int first_slot = 0;  // slots of this step's outputs
    std::vector<int> input_slots;
    std::vector<int> release;  // slots dead after this step
    // (output, input slot) pairs whose output takes the input's buffer.
    std::vector<std::pair<int, int>> in_place;
    // Per output: how many later inputs and fetches read it.
    std::vector<int> readers;
  };
  std::vector<Step> steps;
  std::vector<std::vector<int>> levels;  // step indices, for concurrency
  std::vector<int> fetch_slots;
  // How many times each slot is fetched (a slot fetched once is moved out).
  std::vector<int> fetch_count;
  int num_slots = 0;
  std::vector<Tensor> slots;  // reused across runs
  // What kernels read: &slots[s], or the caller's feed for a placeholder,
  // which is therefore never copied.
  std::vector<const Tensor*> views;
  // Communicators of the plan's nodes other than the graph's.
  std::vector<CommContext*> comms;
};

}  // namespace adgraph
