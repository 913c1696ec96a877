#include <algorithm>
#include <atomic>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/comm_context.h"
#include "core/error.h"
#include "core/interrupt.h"
#include "core/loops/loop_impl.h"
#include "core/op.h"

namespace adgraph::detail {

std::vector<char> needed_nodes(const Graph& g,
                               const std::vector<int>& roots,
                               const std::vector<char>& skipped) {
  auto skip = [&](int id) { return !skipped.empty() && skipped[id]; };
  std::vector<char> needed(g.num_nodes(), 0);
  std::vector<int> stack = roots;
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (g.node(id).communication) stack.push_back(id);
  }
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (needed[id] || skip(id)) continue;
    needed[id] = 1;
    const Node& n = g.node(id);
    for (const Value& in : n.inputs) stack.push_back(in.node_id());
    for (int c : n.control_inputs) stack.push_back(c);
    int ghost = n.ghost_input;
    while (ghost >= 0 && skip(ghost)) ghost = g.node(ghost).ghost_input;
    if (ghost >= 0) stack.push_back(ghost);
  }
  return needed;
}

BodyRunner::BodyRunner(const LoopBody& body, const std::vector<int>& wanted)
    : comm_(body.graph->comm()) {
  const Graph& g = *body.graph;
  std::vector<int> roots;
  for (int k : wanted) roots.push_back(body.outputs[k].node_id());
  for (const Value& in : body.inputs) roots.push_back(in.node_id());
  const std::vector<char> needed = needed_nodes(g, roots);

  // Creation order is topological; the body is small, so demand order buys
  // nothing here.
  std::vector<int> first_slot(g.num_nodes(), -1);
  int num_slots = 0;
  std::vector<int> input_of(g.num_nodes(), -1);
  for (std::size_t i = 0; i < body.inputs.size(); ++i)
    input_of[body.inputs[i].node_id()] = static_cast<int>(i);
  std::vector<int> owner;
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (!needed[id]) continue;
    const Node& n = g.node(id);
    first_slot[id] = num_slots;
    for (int k = 0; k < n.num_outputs(); ++k) owner.push_back(id);
    num_slots += n.num_outputs();
    if (input_of[id] >= 0) continue;
    ADGRAPH_CHECK(n.op_name() != "placeholder")
        << "body placeholder " << n.name << " is not a loop input";
    Step step{&n, {}, first_slot[id], {}, {}};
    for (const Shape& shape : n.output_shapes)
      step.sizes.push_back(num_elements(shape));
    for (const Value& in : n.inputs)
      step.input_slots.push_back(first_slot[in.node_id()] + in.output());
    step.kernel = kernel_of(n);
    steps_.push_back(std::move(step));
  }
  if (comm_ != nullptr) comms_.push_back(comm_);
  for (const Step& step : steps_) {
    CommContext* on = step.node->comm.get();
    if (on != nullptr &&
        std::find(comms_.begin(), comms_.end(), on) == comms_.end())
      comms_.push_back(on);
  }
  pending_.resize(comms_.size());
  slots_.resize(num_slots, Tensor(Shape{0}));
  views_.resize(num_slots, nullptr);
  for (int s = 0; s < num_slots; ++s) views_[s] = &slots_[s];
  is_input_slot_.assign(num_slots, 0);
  for (const Value& in : body.inputs) {
    input_slot_.push_back(first_slot[in.node_id()]);
    is_input_slot_[first_slot[in.node_id()]] = 1;
  }
  for (const Value& out : body.outputs) {
    output_slot_.push_back(first_slot[out.node_id()] < 0
                               ? -1
                               : first_slot[out.node_id()] + out.output());
  }
  std::vector<int> readers(num_slots, 0);
  for (const Step& step : steps_) {
    for (std::size_t i = 0; i < step.input_slots.size(); ++i)
      if (!is_shape_only(*step.node->op, static_cast<int>(i)))
        ++readers[step.input_slots[i]];
  }
  for (int k : wanted) ++readers[output_slot_[k]];
  for (Step& step : steps_) {
    for (int k = 0; k < step.node->num_outputs(); ++k)
      step.readers.push_back(readers[step.first_slot + k]);
  }
  hand_over_buffers(readers);
}

// In place: an output takes an input's buffer when this step is the
// input's last reader (the steps run in order, so the others have read it)
// and reads it through that input alone, and the input is not a body
// output (a body input only when donated). E.g. the gather adjoint of
// heat_step writes ū over the carried ū⁺ after heat_step_adjoint_edges
// has read its edges. `readers` counts each slot's readers.
void BodyRunner::hand_over_buffers(const std::vector<int>& readers) {
  const int num_slots = static_cast<int>(slots_.size());
  std::vector<int> last_reader(num_slots, -1);
  for (std::size_t index = 0; index < steps_.size(); ++index) {
    const Step& step = steps_[index];
    for (std::size_t i = 0; i < step.input_slots.size(); ++i)
      if (!is_shape_only(*step.node->op, static_cast<int>(i)))
        last_reader[step.input_slots[i]] = static_cast<int>(index);
  }
  auto reads_once = [&](const Step& step, int slot) {
    int count = 0;
    for (std::size_t i = 0; i < step.input_slots.size(); ++i)
      if (step.input_slots[i] == slot &&
          !is_shape_only(*step.node->op, static_cast<int>(i)))
        ++count;
    return count == 1;
  };
  std::vector<char> is_output_slot(num_slots, 0), handed_over(num_slots, 0);
  for (int slot : output_slot_)
    if (slot >= 0) is_output_slot[slot] = 1;
  std::vector<int> body_input_of(num_slots, -1);
  for (std::size_t i = 0; i < input_slot_.size(); ++i)
    body_input_of[input_slot_[i]] = static_cast<int>(i);
  for (std::size_t index = 0; index < steps_.size(); ++index) {
    Step& step = steps_[index];
    // Slots of the body first: their buffers are certain. Then body inputs,
    // which are only when the run donates them: an output may have several
    // such candidates, the first one donated at the run wins (a stencil's
    // output may be written over any dying input of its shape, and the
    // loop adjoint donates the cotangents it carries, not the states).
    for (const bool donated : {false, true}) {
      for (const auto& [out, in] : in_place_pairs(*step.node)) {
        if (in >= static_cast<int>(step.input_slots.size())) continue;
        const int slot = step.input_slots[in];
        bool eligible =
            (is_input_slot_[slot] != 0) == donated &&
            last_reader[slot] == static_cast<int>(index) &&
            reads_once(step, slot) && !is_output_slot[slot] &&
            !handed_over[slot] &&
            num_elements(step.node->inputs[in].shape()) == step.sizes[out];
        for (const auto& [o, s] : step.in_place)
          eligible = eligible && o != out;
        if (!eligible) continue;
        if (donated) {
          step.in_place_donated.emplace_back(out, body_input_of[slot]);
          step.donated_to.resize(step.node->num_outputs(), 0);
        } else {
          step.in_place.emplace_back(out, slot);
        }
        handed_over[slot] = 1;
      }
    }
    // Inputs the kernel may keep, on the same terms; the slot then holds
    // the buffer it swapped in.
    for (int in : step.node->op->consumes) {
      if (in >= static_cast<int>(step.input_slots.size())) continue;
      const int slot = step.input_slots[in];
      if (readers[slot] != 1 || is_output_slot[slot] || is_input_slot_[slot] ||
          handed_over[slot])
        continue;
      step.consumable.resize(step.input_slots.size(), nullptr);
      step.consumable[in] = &slots_[slot];
    }
  }
}

void BodyRunner::run(const Tensor* const* inputs, Tensor* const* donated) {
  // Between steps (a run is one step of its loop), before this step's
  // messages: an interrupt request stops the loop here.
  detail::check_interrupt();
  for (std::size_t i = 0; i < input_slot_.size(); ++i)
    views_[input_slot_[i]] = inputs[i];
  for (std::size_t c = 0; c < comms_.size(); ++c)
    pending_[c] = comms_[c]->pending_sends();
  const Tensor* inline_inputs[8];
  std::vector<const Tensor*> heap_inputs;
  for (const Step& step : steps_) {
    const Node& n = *step.node;
    for (const auto& [out, slot] : step.in_place) {
      // The kernel reads the input where it now is: in the output.
      slots_[step.first_slot + out].swap(slots_[slot]);
      views_[slot] = &slots_[step.first_slot + out];
    }
    if (donated != nullptr) {
      std::fill(step.donated_to.begin(), step.donated_to.end(), 0);
      for (const auto& [out, i] : step.in_place_donated) {
        if (donated[i] == nullptr || donated[i] != inputs[i]) continue;
        if (step.donated_to[out]) continue;  // an earlier candidate's
        step.donated_to[out] = 1;
        slots_[step.first_slot + out].swap(*donated[i]);
        views_[input_slot_[i]] = &slots_[step.first_slot + out];
      }
    }
    for (int k = 0; k < n.num_outputs(); ++k) {
      Tensor& t = slots_[step.first_slot + k];
      if (t.size() != step.sizes[k]) {
        t = Tensor(n.output_shapes[k]);
      } else if (t.shape() != n.output_shapes[k]) {
        t.set_shape(n.output_shapes[k]);
      }
    }
    const Tensor** in = inline_inputs;
    if (step.input_slots.size() > 8) {
      heap_inputs.resize(step.input_slots.size());
      in = heap_inputs.data();
    }
    for (std::size_t i = 0; i < step.input_slots.size(); ++i)
      in[i] = views_[step.input_slots[i]];
    KernelContext ctx(
        n, in, &slots_[step.first_slot], n.comm ? n.comm.get() : comm_);
    ctx.set_output_readers(step.readers.data());
    if (!step.consumable.empty())
      ctx.set_consumable_inputs(step.consumable.data());
    step.kernel(ctx);
    for (const auto& [out, slot] : step.in_place) views_[slot] = &slots_[slot];
  }
  // A step's sends complete within the step, on every communicator: every
  // rank runs the same body, so their receives were posted in it too.
  for (std::size_t c = 0; c < comms_.size(); ++c) {
    if (comms_[c]->pending_sends() > pending_[c])
      comms_[c]->complete_sends_from(pending_[c]);
  }
}

const Tensor& BodyRunner::output(int k) const {
  return *views_[output_slot_[k]];
}

void BodyRunner::move_outputs(int first,
                              std::vector<Tensor>& into,
                              bool inputs_stay) {
  const int count = static_cast<int>(into.size());
  if (static_cast<int>(copied_.size()) != count) {
    // Outputs that are body inputs, or that an earlier output already
    // takes, are copied before anything moves.
    scratch_.resize(count);
    copied_.assign(count, 0);
    for (int k = 0; k < count; ++k) {
      const int slot = output_slot_[first + k];
      bool alias = is_input_slot_[slot] != 0;
      for (int j = 0; j < k; ++j)
        alias = alias || output_slot_[first + j] == slot;
      copied_[k] = alias;
    }
  }
  // An output that passes body input i through (a leapfrog's c_{t−1} =
  // c_t) takes into[i]'s buffer instead of a copy when the body read input
  // i from into[i] itself and into[i] is about to be replaced by output i.
  std::vector<int> stolen_from(count, -1);
  std::vector<char> taken(count, 0);
  for (int k = 0; k < count; ++k) {
    const int slot = output_slot_[first + k];
    if (!copied_[k] || first != 0 || !is_input_slot_[slot]) continue;
    for (int i = 0; i < count; ++i) {
      if (input_slot_[i] == slot && views_[slot] == &into[i] && !copied_[i] &&
          !taken[i]) {
        stolen_from[k] = i;
        taken[i] = 1;
        break;
      }
    }
  }
  // A pass-through output viewing an input that stays (inputs_stay).
  std::vector<char> viewed(count, 0);
  for (int k = 0; k < count; ++k) {
    const int slot = output_slot_[first + k];
    bool carried = false;  // one of the inputs `into` held
    for (int i = 0; i < count; ++i) carried = carried || input_slot_[i] == slot;
    viewed[k] = inputs_stay && copied_[k] && stolen_from[k] < 0 && carried &&
                !views_[slot]->borrowed();
    if (copied_[k] && stolen_from[k] < 0 && !viewed[k])
      scratch_[k] = *views_[slot];
  }
  for (int k = 0; k < count; ++k) {
    const int i = stolen_from[k];
    if (i < 0) continue;
    if (scratch_[k].size() != into[i].size())
      scratch_[k] = Tensor(into[i].shape());
    scratch_[k].swap(into[i]);
  }
  for (int k = 0; k < count; ++k) {
    if (!copied_[k]) slots_[output_slot_[first + k]].swap(into[k]);
  }
  for (int k = 0; k < count; ++k) {
    if (viewed[k]) {
      const Tensor& from = *views_[output_slot_[first + k]];
      Tensor view =
          Tensor::borrow(from.shape(), const_cast<double*>(from.data()));
      view.swap(into[k]);
      if (!view.borrowed()) scratch_[k].swap(view);  // a buffer for later
    } else if (copied_[k]) {
      scratch_[k].swap(into[k]);
    }
    // Scratch buffers are written next time: never someone else's memory.
    if (scratch_[k].borrowed()) scratch_[k] = Tensor();
  }
}

std::unique_ptr<BodyRunner> LoopCache::take_runner(
    const LoopBody& body, const std::vector<int>& wanted) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto& free = runners_[{body.graph.get(), wanted}];
    if (!free.empty()) {
      auto runner = std::move(free.back());
      free.pop_back();
      return runner;
    }
  }
  return std::make_unique<BodyRunner>(body, wanted);
}

void LoopCache::give_runner(std::unique_ptr<BodyRunner> runner,
                            const LoopBody& body,
                            const std::vector<int>& wanted) {
  std::lock_guard<std::mutex> lock(mutex_);
  runners_[{body.graph.get(), wanted}].push_back(std::move(runner));
}

LoopCache::State LoopCache::take_state(const State& like) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!states_.empty()) {
      State state = std::move(states_.back());
      states_.pop_back();
      return state;
    }
  }
  State state;
  for (const Tensor& t : like) state.emplace_back(t.shape());
  return state;
}

void LoopCache::give_state(State state) {
  if (state.empty()) return;
  // A spare state is written by whoever takes it: a view of another
  // state's memory (BodyRunner::move_outputs' inputs_stay) is dropped.
  for (Tensor& t : state) {
    if (t.borrowed()) t = Tensor();
  }
  std::lock_guard<std::mutex> lock(mutex_);
  states_.push_back(std::move(state));
}

int64_t LoopCache::hand_over(std::map<int64_t, State> snapshots, int takers) {
  static std::atomic<int64_t> next_ticket{1};
  const int64_t ticket = next_ticket++;
  std::lock_guard<std::mutex> lock(mutex_);
  handed_[ticket] = {std::move(snapshots), takers};
  return ticket;
}

std::map<int64_t, LoopCache::State> LoopCache::take_over(int64_t ticket) {
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = handed_.find(ticket);
  ADGRAPH_CHECK(it != handed_.end()) << "no snapshots under ticket " << ticket;
  if (--it->second.takers <= 0) {
    auto snapshots = std::move(it->second.snapshots);
    handed_.erase(it);
    return snapshots;
  }
  // Another adjoint of this run reads them too: this one gets copies.
  std::map<int64_t, State> copy;
  for (const auto& [t, state] : it->second.snapshots) copy[t] = state;
  return copy;
}

std::vector<Value> clone_body(const LoopBody& body,
                              Graph& dst,
                              const std::vector<Value>& inputs,
                              const std::vector<Value>& wanted,
                              const Replaced& replaced) {
  const Graph& g = *body.graph;
  std::vector<std::vector<Value>> copy(g.num_nodes());
  // Body inputs and nodes replaced whole are not copied; the latter are not
  // needed either.
  std::vector<char> given(g.num_nodes(), 0), skipped(g.num_nodes(), 0);
  for (std::size_t i = 0; i < body.inputs.size(); ++i) {
    copy[body.inputs[i].node_id()] = {inputs[i]};
    given[body.inputs[i].node_id()] = 1;
  }
  std::vector<int> replaced_outputs(g.num_nodes(), 0);
  for (const auto& entry : replaced) ++replaced_outputs[entry.first.first];
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (replaced_outputs[id] == g.node(id).num_outputs())
      given[id] = skipped[id] = 1;
  }
  std::vector<int> roots;
  for (const Value& w : wanted) roots.push_back(w.node_id());
  const std::vector<char> needed = needed_nodes(g, roots, skipped);
  auto read = [&](int node, int output) {
    auto found = replaced.find({node, output});
    return found != replaced.end() ? found->second : copy[node][output];
  };
  for (int id = 0; id < g.num_nodes(); ++id) {
    if (!needed[id] || given[id]) continue;
    const Node& n = g.node(id);
    std::vector<Value> in;
    for (const Value& v : n.inputs) in.push_back(read(v.node_id(), v.output()));
    NodeOptions options;
    // Made-up names ("add_7") are made up again: ids differ in `dst`.
    if (n.name != n.op_name() + "_" + std::to_string(id)) options.name = n.name;
    options.tensors = n.tensors;
    options.loop = n.loop;
    if (n.loop) options.body = n.loop->traits();
    options.resource = n.resource;
    // A node on a sub-communicator stays on it.
    if (n.comm && n.comm != g.shared_comm()) options.comm = n.comm;
    for (int c : n.control_inputs) options.after.push_back(read(c, 0));
    copy[id] = dst.add_node_outputs(n.op_name(), in, n.attrs, options);
  }
  std::vector<Value> out;
  for (const Value& w : wanted) out.push_back(read(w.node_id(), w.output()));
  return out;
}

std::shared_ptr<Graph> new_body_graph(const Graph& comm_source) {
  auto g = std::make_shared<Graph>();
  if (comm_source.shared_comm()) g->set_comm(comm_source.shared_comm());
  g->set_default_checkpoints(comm_source.default_checkpoints());
  return g;
}

std::vector<int64_t> tape_positions(const CheckpointSchedule& schedule,
                                    int64_t n) {
  std::vector<int64_t> out;
  if (n <= 1) return out;
  switch (schedule.kind) {
    case CheckpointSchedule::Kind::kStoreAll:
      for (int64_t t = 1; t < n; ++t) out.push_back(t);
      break;
    case CheckpointSchedule::Kind::kEvery: {
      const int64_t k = schedule.parameter;
      const int64_t last = ((n - 1) / k) * k;  // start of the last segment
      for (int64_t t = k; t < last; t += k) out.push_back(t);
      for (int64_t t = std::max<int64_t>(last, 1); t < n; ++t) out.push_back(t);
      break;
    }
    default: {
      // The chain of splits the binomial recursion stores before its first
      // taped step.
      int64_t a = 0, s = schedule.parameter;
      while (n - a > 1 && s > 1) {
        a += binomial_split(n - a, s);
        out.push_back(a);
        --s;
      }
      if (out.empty() || out.back() != n - 1) out.push_back(n - 1);
      break;
    }
  }
  return out;
}

}  // namespace adgraph::detail
