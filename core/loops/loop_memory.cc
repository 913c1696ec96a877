#include "core/loops/loop_memory.h"

#include <algorithm>
#include <numeric>

#include "core/loops/loop_impl.h"
#include "core/op.h"

namespace adgraph::detail {

void LoopMemory::count(const Node& n) {
  const LoopSpec* spec = n.loop.get();
  if (spec && spec->kind == LoopSpec::Kind::kAdjoint && spec->taped)
    ++tapes_[&n.inputs.back().node()].takers;
}

std::size_t LoopMemory::run(const Node& n,
                            std::size_t& live,
                            const std::vector<int>* readers) {
  const LoopSpec* spec = n.loop.get();
  if (!spec) return live;
  std::size_t nested = body_peak(spec->forward);
  if (spec->kind == LoopSpec::Kind::kAdjoint)
    nested = std::max(nested, body_peak(spec->reverse));
  // The runners' values, held from this node on. A forward loop's runner
  // makes its carries and the step outputs that are read (run_loop); an
  // adjoint's recompute the carries and make the cotangents (Reversal).
  std::vector<int> wanted(spec->num_carries);
  std::iota(wanted.begin(), wanted.end(), 0);
  if (spec->kind == LoopSpec::Kind::kAdjoint) {
    live += body_values(n, spec->forward, wanted);
    wanted.resize(spec->num_reverse);
    std::iota(wanted.begin(), wanted.end(), 0);
    live += body_values(n, spec->reverse, wanted);
  } else {
    for (int j = 0; j < spec->num_step_outputs; ++j) {
      const int k = spec->num_carries + j;
      if (readers == nullptr || (*readers)[k] > 0) wanted.push_back(k);
    }
    live += body_values(n, spec->forward, wanted);
  }
  const std::size_t state = sizeof(double) * spec->state_elements();
  std::size_t held = 0, during = live + nested;
  const Node* named = &n;  // for a taped adjoint: the forward loop
  if (auto it = tapes_.find(&n); it != tapes_.end()) {
    held = it->second.bytes = state * spec->tape_positions().size();
    live += held;
    during = live + nested;
  } else if (spec->kind == LoopSpec::Kind::kAdjoint) {
    held = state * spec->snapshots_bound();
    during = live + held + nested;
    if (spec->taped) {
      named = &n.inputs.back().node();
      Tape& tape = tapes_.at(named);
      if (--tape.takers == 0) {
        during = live - tape.bytes + std::max(held, tape.bytes) + nested;
        live -= std::exchange(tape.bytes, 0);
      }
    }
  }
  note(named, held);
  return during;
}

void LoopMemory::note(const Node* loop, std::size_t bytes) {
  if (bytes > largest_bytes_) largest_bytes_ = bytes, largest_ = loop;
}
void LoopMemory::note_value(const Node* value,
                            std::size_t bytes,
                            const Node* loop) {
  if (bytes <= largest_value_bytes_) return;
  largest_value_bytes_ = bytes;
  largest_value_ = value;
  largest_value_loop_ = loop;
}

std::size_t LoopMemory::body_values(const Node& loop,
                                    const LoopBody& body,
                                    const std::vector<int>& wanted) {
  if (!body.graph || !runners_.emplace(body.graph.get(), wanted).second)
    return 0;
  const Graph& g = *body.graph;
  std::vector<int> roots;
  for (int k : wanted) roots.push_back(body.outputs[k].node_id());
  for (const Value& v : body.inputs) roots.push_back(v.node_id());
  const std::vector<char> needed = needed_nodes(g, roots);
  std::size_t bytes = 0;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (!needed[id] || n.op_name() == "placeholder") continue;
    for (const Shape& shape : n.output_shapes) {
      const std::size_t b = sizeof(double) * num_elements(shape);
      bytes += b;
      note_value(&n, b, &loop);
    }
  }
  return bytes;
}

std::size_t LoopMemory::body_peak(const LoopBody& body) {
  if (!body.graph) return 0;
  const Graph& g = *body.graph;
  LoopMemory inner;
  for (int id = 0; id < g.num_nodes(); ++id) inner.count(g.node(id));
  std::size_t live = 0, peak = 0;
  for (int id = 0; id < g.num_nodes(); ++id)
    peak = std::max(peak, inner.run(g.node(id), live));
  note(inner.largest_, inner.largest_bytes_);
  note_value(inner.largest_value_,
             inner.largest_value_bytes_,
             inner.largest_value_loop_);
  return peak;
}

}  // namespace adgraph::detail
