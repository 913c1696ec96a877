// The execution plan of a Session (internal to core/): the steps a fetch
// list needs, in order, with the slots they read, write and release.
#pragma once

#include <utility>
#include <vector>

#include "core/comm_context.h"
#include "core/exec/session.h"
#include "core/op.h"

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
    // Per in_place entry: whether the output's shape differs from the
    // input's.
    std::vector<char> in_place_reshape;
    // (input, slot) pairs the kernel may take the buffer of
    // (OpDef::consumes).
    std::vector<std::pair<int, int>> consumed;
    // Per output: its declared number of elements.
    std::vector<int64_t> counts;
    // Copied from the node so the executor need not touch it.
    int num_outputs = 0;
    ComputeFn kernel;             // kernel_of(*node)
    CommContext* comm = nullptr;  // the node's, else the graph's
  };
  std::vector<Step> steps;
  std::vector<std::vector<int>> levels;  // step indices, for concurrency
  std::vector<Value> fetch_values;       // what it was built for
  std::vector<int> fetch_slots;
  // Per fetch: whether it is a placeholder's (its feed, copied out).
  std::vector<char> fetch_fed;
  // How many times each slot is fetched (a slot fetched once is moved out).
  std::vector<int> fetch_count;
  int num_slots = 0;
  std::vector<Tensor> slots;  // reused across runs
  // What kernels read: &slots[s], or the caller's feed for a placeholder,
  // which is therefore never copied.
  std::vector<const Tensor*> views;
  // The placeholders, with the feed prepare() found for each.
  struct Fed {
    const Node* node;
    int slot;
    const Tensor* feed;
  };
  std::vector<Fed> placeholders;
  // Communicators of the plan's nodes other than the graph's.
  std::vector<CommContext*> comms;
  // Small outputs (under kMinRecycled elements) keep their buffer in their
  // slot between runs, so a repeated run allocates none of them, when all
  // of them together stay under kMaxKeptSmallBytes.
  bool keep_small = false;
  // The caller's tensor a fetched slot's kernel writes into (run_into),
  // nullptr elsewhere; set for one run.
  std::vector<Tensor*> caller;
  // Slots whose kept buffer may carry another output's shape (an in-place
  // output left its old tensor there).
  std::vector<char> foreign_shape;

  // Buffers of a few elements are cheaper to allocate than to pool.
  static constexpr int64_t kMinRecycled = 512;
  static constexpr std::size_t kMaxKeptSmallBytes = std::size_t{64} << 20;
};

}  // namespace adgraph
