// The memory loops hold beyond their outputs, for Session's estimate of a
// new plan's peak (internal to core/).
#pragma once

#include <cstddef>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/loops/loop.h"

namespace adgraph::detail {

// What loops hold, in a run's order of nodes. A loop whose tape adjoints of
// the same run read holds its snapshots from its own step to the last such
// adjoint's; each adjoint holds at most snapshots_bound() states while it
// runs, the last one in place of the tape, the others beside it (they work
// on copies, LoopCache::take_over). While a loop or adjoint runs, its
// bodies' own loops hold theirs too, and each body's runner holds one
// buffer per value its wanted outputs need (BodyRunner), kept in the loop's
// cache from then on, so counted once per body and set of wanted outputs: a
// forward loop whose step outputs are read has a runner of its own beside
// the one its adjoints recompute with.
class LoopMemory final {
 public:
  // Call for every node of the run before run(): counts the adjoints that
  // read each tape.
  void count(const Node& n);
  // Node n runs with `live` bytes held before it: returns the most held
  // while it runs, `live` included, and leaves in `live` what is held after
  // it (a tape it starts or ends). `readers`: per output of n, the nodes
  // and fetches that read it (null: all outputs are read).
  std::size_t run(const Node& n,
                  std::size_t& live,
                  const std::vector<int>* readers = nullptr);
  // The loop node whose own snapshots are the most held at once, at any
  // depth, and their bytes.
  const Node* largest() const { return largest_; }
  std::size_t largest_bytes() const { return largest_bytes_; }
  // The largest value of any body, at any depth, its bytes and the loop
  // node whose body it is in.
  const Node* largest_value() const { return largest_value_; }
  std::size_t largest_value_bytes() const { return largest_value_bytes_; }
  const Node* largest_value_loop() const { return largest_value_loop_; }

 private:
  struct Tape {
    std::size_t bytes = 0;
    int takers = 0;  // adjoints still to read it
  };
  void note(const Node* loop, std::size_t bytes);
  void note_value(const Node* value, std::size_t bytes, const Node* loop);
  // The bytes of the values a runner of `body` for outputs `wanted` keeps
  // (those they need; its placeholders are the loop's inputs), the first
  // time `loop` or another loop node runs it; 0 after.
  std::size_t body_values(const Node& loop,
                          const LoopBody& body,
                          const std::vector<int>& wanted);
  // The most a body's loops hold during one step, their runners' values
  // included (nodes in creation order, the order a body runs them).
  std::size_t body_peak(const LoopBody& body);

  std::map<const Node*, Tape> tapes_;  // forward loop -> its tape
  // (body, wanted outputs) of the runners whose values are counted
  std::set<std::pair<const Graph*, std::vector<int>>> runners_;
  const Node* largest_ = nullptr;
  std::size_t largest_bytes_ = 0;
  const Node* largest_value_ = nullptr;
  const Node* largest_value_loop_ = nullptr;
  std::size_t largest_value_bytes_ = 0;
};

}  // namespace adgraph::detail
