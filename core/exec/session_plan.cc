// Session's planning: which nodes a fetch list needs, in which order, which
// buffers each step reads, takes over and releases, and the checks a new
// plan gets before it first runs.
#include "core/exec/session_plan.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/comm_context.h"
#include "core/error.h"
#include "core/exec/plan_checks.h"
#include "core/loops/loop.h"
#include "core/loops/loop_impl.h"
#include "core/loops/loop_memory.h"
#include "core/op.h"

namespace adgraph {

void Session::check_requests(const Plan& plan) {
  std::map<int, int> completions;  // slot of a request -> its readers
  for (const auto& step : plan.steps) {
    if (step.node->op->request) completions[step.first_slot] = 0;
  }
  if (completions.empty()) return;
  for (const auto& step : plan.steps) {
    for (int slot : step.input_slots) {
      auto it = completions.find(slot);
      if (it != completions.end()) ++it->second;
    }
  }
  for (const auto& step : plan.steps) {
    if (!step.node->op->request) continue;
    const int readers = completions[step.first_slot];
    if (readers == 1) continue;
    const Node& n = *step.node;
    throw RunError(
        readers == 0
            ? "its request is never completed in this run: no wait of it is "
              "among the nodes the fetches need (make what you fetch run "
              "after the wait, with NodeOptions::after or "
              "Graph::add_control_input)"
            : "its request is completed " + std::to_string(readers) +
                  " times in this run; wait for a request exactly once",
        n.name,
        n.op_name(),
        "request");
  }
}

void Session::check_loop_steps(const Plan& plan) {
  double total = 0, most = 0;
  const Node* costliest = nullptr;
  for (const Plan::Step& step : plan.steps) {
    if (!step.node->loop) continue;
    const double steps = step.node->loop->body_steps();
    total += steps;
    if (steps > most) most = steps, costliest = step.node;
  }
  const double limit = max_loop_steps();
  if (total <= limit) return;
  const LoopSpec& spec = *costliest->loop;
  auto figure = [](double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", v);
    return std::string(text);
  };
  // An adjoint is named by its loop (its last input is the loop's tape).
  const Node* named = costliest;
  std::string why = "this loop node: " + figure(most) + " with its " +
                    std::to_string(spec.trips) + " trips";
  if (spec.kind == LoopSpec::Kind::kAdjoint) {
    if (spec.taped) named = &costliest->inputs.back().node();
    why = "this loop's adjoint: " + figure(most) + ", recomputing " +
          figure(spec.recomputed_steps()) +
          " forward steps under checkpoints \"" + spec.schedule.describe() +
          "\" (more snapshots recompute fewer)";
  }
  throw RunError("this run would take " + figure(total) +
                     " loop body steps, nested loops' steps included (" + why +
                     "), beyond the bound of " + figure(limit) +
                     "; set ADGRAPH_MAX_LOOP_STEPS to a larger number (or "
                     "\"inf\") to run it anyway",
                 named->name,
                 named->op_name(),
                 "trips");
}

void Session::check_memory(const Plan& plan) {
  // Live bytes in execution order: each step's new outputs, then the slots
  // it releases, and what loops hold (LoopMemory). Concurrent runs hold
  // about as much (a level at a time).
  detail::LoopMemory loops;
  for (const Plan::Step& step : plan.steps) loops.count(*step.node);
  std::size_t live = 0, peak = 0, largest = 0;
  const Node* biggest = nullptr;
  std::vector<std::size_t> bytes(plan.num_slots, 0);
  for (const Plan::Step& step : plan.steps) {
    const Node& n = *step.node;
    for (int k = 0; k < n.num_outputs() && !step.placeholder; ++k) {
      const std::size_t b = sizeof(double) * num_elements(n.output_shapes[k]);
      bool adopted = false;  // the input's bytes, live already
      for (const auto& [out, slot] : step.in_place)
        if (out == k) adopted = true, bytes[slot] = 0;
      bytes[step.first_slot + k] = b;
      if (!adopted) live += b;
      if (b > largest) largest = b, biggest = &n;
    }
    peak = std::max(peak, loops.run(n, live, &step.readers));
    for (int slot : step.release) live -= bytes[slot];
  }
  // Small plans cannot matter; skip reading /proc for them.
  constexpr std::size_t kWorthChecking = std::size_t{256} << 20;
  if (peak < kWorthChecking) return;
  const std::size_t available = memory_available();
  if (peak <= available) return;
  std::string what;
  if (loops.largest_value_bytes() > largest) {
    largest = loops.largest_value_bytes();
    what = "the largest, " + byte_string(largest) + ", is node \"" +
           loops.largest_value()->name + "\" in the body of loop node \"" +
           loops.largest_value_loop()->name + "\"";
  } else {
    what = "the largest, " + byte_string(largest) + ", is node \"" +
           biggest->name + "\"";
  }
  if (const Node* loop = loops.largest();
      loop != nullptr && loops.largest_bytes() > largest) {
    what = "the snapshots of loop node \"" + loop->name + "\" take " +
           byte_string(loops.largest_bytes()) + " (checkpoints \"" +
           loop->loop->schedule.describe() +
           "\"; a binomial or memory-budget schedule keeps fewer)";
  }
  throw RunError("this run needs an estimated " + byte_string(peak) +
                     " of intermediate tensors at its peak (" + what +
                     "), more than the " + byte_string(available) +
                     " this process can allocate (MemAvailable, or what "
                     "ulimit -v/-d leave; ADGRAPH_MEMORY_LIMIT overrides)",
                 {},
                 {},
                 "fetch");
}

namespace {

// Nodes that start communication (OpDef::request: data_exchange_start,
// mpi_isend, mpi_irecv) move up to just after their last dependency (data,
// control, or the previous communication node), so that the work between
// them and their completion overlaps the messages. The order stays
// topological and keeps every communication node's place in the chain.
void hoist_starts(const Graph& graph,
                  std::vector<int>& order,
                  const std::vector<int>& previous) {
  const int top = static_cast<int>(previous.size()) - 1;
  std::vector<int> unplaced(top + 1, 0);
  std::vector<std::vector<int>> waiting(top + 1);  // starts waiting on a node
  bool any = false;
  for (int id : order) {
    const Node& n = graph.node(id);
    if (!n.op->request) continue;
    any = true;
    std::vector<int> deps = n.control_inputs;
    for (const Value& in : n.inputs) deps.push_back(in.node_id());
    if (previous[id] >= 0) deps.push_back(previous[id]);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    unplaced[id] = static_cast<int>(deps.size());
    for (int d : deps) waiting[d].push_back(id);
  }
  if (!any) return;
  std::vector<int> hoisted;
  hoisted.reserve(order.size());
  std::vector<int> stack;
  auto place = [&](int first) {
    stack.push_back(first);
    while (!stack.empty()) {
      const int id = stack.back();
      stack.pop_back();
      hoisted.push_back(id);
      // Reversed, so that starts ready at once keep their relative order.
      for (auto it = waiting[id].rbegin(); it != waiting[id].rend(); ++it)
        if (--unplaced[*it] == 0) stack.push_back(*it);
    }
  };
  for (int id : order)
    if (graph.node(id).op->request && unplaced[id] == 0) place(id);
  for (int id : order)
    if (!graph.node(id).op->request) place(id);
  ADGRAPH_CHECK(hoisted.size() == order.size())
      << "a start node's dependencies are not all in the plan";
  order = std::move(hoisted);
}

}  // namespace

// One plan built phase by phase (Session::plan_for): what runs, in which
// order, in which steps, levels and slots, which buffers are handed over
// and released where, and what the executor needs ready. Each phase reads
// what the ones before it left.
class Session::PlanBuilder {
 public:
  PlanBuilder(const Graph& graph,
              const SessionOptions& options,
              std::vector<std::pair<int, int>> key)
      : graph_(graph), options_(options), key_(std::move(key)) {}

  std::unique_ptr<Plan> build() {
    mark_needed();
    chain_communication();
    order_by_demand();
    hoist_starts(graph_, order_, previous_);
    place_steps();
    check_requests(*plan_);
    place_fetches();
    hand_over_buffers();
    place_releases();
    count_readers();
    prepare_steps();
    return std::move(plan_);
  }

  // Every-rank nodes per communicator, in order of first appearance (the
  // same on every member of each communicator): what the ranks compare.
  std::vector<std::pair<CommContext*, std::vector<std::string>>> collectives;

 private:
  void mark(int root);
  void mark_needed();
  void chain_communication();
  void order_by_demand();
  void place_steps();
  void describe_collective(const Node& n);
  void place_fetches();
  bool gives_up(int index, int in) const;
  void hand_over_buffers();
  void place_releases();
  void count_readers();
  void prepare_steps();

  const Graph& graph_;
  const SessionOptions& options_;
  const std::vector<std::pair<int, int>> key_;
  int top_ = -1;
  std::vector<char> needed_;
  std::vector<int> roots_;
  // The needed communication node before each one (-1 for the first).
  std::vector<int> previous_;
  std::vector<int> order_;
  std::unique_ptr<Plan> plan_ = std::make_unique<Plan>();
  std::vector<int> step_of_, level_of_, slot_owner_, last_use_;
  // The reader in the highest level: where a concurrent run may release a
  // slot (a reader earlier in `order` can sit in a later level).
  std::vector<int> last_level_use_;
  std::vector<char> fetched_;
  // Outputs that take over a dying input's buffer (OpDef::in_place).
  std::vector<char> handed_over_;
};

void Session::PlanBuilder::mark(int root) {
  std::vector<int> stack{root};
  while (!stack.empty()) {
    const int id = stack.back();
    stack.pop_back();
    if (needed_[id]) continue;
    needed_[id] = 1;
    const Node& n = graph_.node(id);
    for (int c : n.control_inputs) stack.push_back(c);
    for (const Value& in : n.inputs) stack.push_back(in.node_id());
  }
}

// What runs: the nodes the fetches need through data and control edges.
// Ghost dependencies order communication, they do not pull it in: every
// rank fetches the same values, so the collectives a run needs are the
// same on every rank. Point-to-point nodes are the exception. A graph of
// sends and receives may differ by rank (one rank sends, the other
// receives), and a send is a side effect its own rank need not fetch, so
// every point-to-point node older than the newest communication node the
// run needs runs too, as its partner may be waiting for it.
void Session::PlanBuilder::mark_needed() {
  for (const auto& [id, out] : key_) top_ = std::max(top_, id);
  needed_.assign(top_ + 1, 0);
  for (const auto& [id, out] : key_) roots_.push_back(id);
  for (int r : roots_) mark(r);
  int newest = -1;
  for (int id = top_; id >= 0 && newest < 0; --id) {
    if (needed_[id] && graph_.node(id).communication) newest = id;
  }
  for (int id = newest; id >= 0; id = graph_.node(id).ghost_input) {
    const Node& n = graph_.node(id);
    if (!needed_[id] && !n.every_rank) {
      roots_.push_back(id);
      mark(id);
    }
  }
}

// Each needed communication node runs after the previous needed one.
void Session::PlanBuilder::chain_communication() {
  previous_.assign(top_ + 1, -1);
  int last = -1;
  for (int id = 0; id <= top_; ++id) {
    if (!needed_[id] || !graph_.node(id).communication) continue;
    previous_[id] = last;
    last = id;
  }
}

// Demand order: a depth-first post-order from the fetches, which runs a
// node just before its first consumer needs it. Creation order would also
// be topological, but it runs a whole chain before anything that was
// appended to the graph later and consumes the chain step by step (jvp()'s
// tangent nodes), keeping every step alive.
void Session::PlanBuilder::order_by_demand() {
  std::vector<char> seen(top_ + 1, 0);
  // (node, index of its next dependency: control inputs, the previous
  // communication node, then inputs)
  std::vector<std::pair<int, std::size_t>> stack;
  for (int root : roots_) {
    if (seen[root]) continue;
    seen[root] = 1;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      const int id = stack.back().first;
      const std::size_t k = stack.back().second++;
      const Node& n = graph_.node(id);
      const std::size_t controls = n.control_inputs.size() + 1;
      if (k == controls + n.inputs.size()) {
        order_.push_back(id);
        stack.pop_back();
        continue;
      }
      const int dep = k + 1 < controls    ? n.control_inputs[k]
                      : k + 1 == controls ? previous_[id]
                                          : n.inputs[k - controls].node_id();
      if (dep < 0) continue;
      if (!seen[dep]) {
        seen[dep] = 1;
        stack.emplace_back(dep, 0);
      }
    }
  }
}

// One step per node in order: its input slots, its level (one past its
// deepest dependency), its output slots and who last reads each slot.
void Session::PlanBuilder::place_steps() {
  step_of_.assign(top_ + 1, -1);
  Plan& plan = *plan_;
  for (int id : order_) {
    const Node& n = graph_.node(id);
    Plan::Step step;
    step.node = &n;
    step.placeholder = n.op_name() == "placeholder";
    step.first_slot = plan.num_slots;
    int level = 0;
    const int index = static_cast<int>(plan.steps.size());
    auto reads = [&n](int i) { return !is_shape_only(*n.op, i); };
    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      const Value& in = n.inputs[i];
      const int s = step_of_[in.node_id()];
      const int slot = plan.steps[s].first_slot + in.output();
      step.input_slots.push_back(slot);
      if (reads(static_cast<int>(i))) last_use_[slot] = index;
      level = std::max(level, level_of_[s] + 1);
    }
    for (std::size_t i = 0; i < step.input_slots.size(); ++i) {
      const int slot = step.input_slots[i];
      // (A slot read twice by this step already points here, and this
      // step has no level_of entry yet.)
      if (reads(static_cast<int>(i)) && last_level_use_[slot] != index &&
          level_of_[last_level_use_[slot]] <= level)
        last_level_use_[slot] = index;
    }
    for (int c : n.control_inputs)
      level = std::max(level, level_of_[step_of_[c]] + 1);
    if (previous_[id] >= 0)
      level = std::max(level, level_of_[step_of_[previous_[id]]] + 1);
    for (int k = 0; k < n.num_outputs(); ++k) {
      slot_owner_.push_back(index);
      last_use_.push_back(index);
      last_level_use_.push_back(index);
    }
    plan.num_slots += n.num_outputs();
    step_of_[id] = index;
    level_of_.push_back(level);
    if (static_cast<int>(plan.levels.size()) <= level)
      plan.levels.resize(level + 1);
    plan.levels[level].push_back(index);
    if (n.every_rank) describe_collective(n);
    if (n.comm && n.comm.get() != graph_.comm() &&
        std::find(plan.comms.begin(), plan.comms.end(), n.comm.get()) ==
            plan.comms.end()) {
      plan.comms.push_back(n.comm.get());
    }
    plan.steps.push_back(std::move(step));
  }
}

void Session::PlanBuilder::describe_collective(const Node& n) {
  std::string shapes;
  if (!detail::shapes_differ_by_rank(n)) {
    for (const Value& in : n.inputs) shapes += shape_string(in.shape());
  }
  CommContext* on = n.comm ? n.comm.get() : graph_.comm();
  auto group = std::find_if(collectives.begin(),
                            collectives.end(),
                            [on](const auto& g) { return g.first == on; });
  if (group == collectives.end())
    group = collectives.insert(collectives.end(), {on, {}});
  group->second.push_back("\"" + n.name + "\"" + CommContext::kNameEnd + " (" +
                          n.op_name() + " " + n.attrs.dump() + " " + shapes +
                          (n.loop ? " " + n.loop->signature() : "") + ")");
}

void Session::PlanBuilder::place_fetches() {
  Plan& plan = *plan_;
  fetched_.assign(plan.num_slots, 0);
  for (const auto& [id, out] : key_) {
    const int slot = plan.steps[step_of_[id]].first_slot + out;
    plan.fetch_slots.push_back(slot);
    plan.fetch_fed.push_back(plan.steps[step_of_[id]].placeholder);
    fetched_[slot] = 1;
  }
}

// Whether input `in` of step `index` dies there and the step may have its
// buffer: neither fed, fetched, handed over already, nor read by another
// input of the step.
bool Session::PlanBuilder::gives_up(int index, int in) const {
  const Plan::Step& step = plan_->steps[index];
  if (in >= static_cast<int>(step.input_slots.size())) return false;
  const int slot = step.input_slots[in];
  if (last_use_[slot] != index || fetched_[slot] || handed_over_[slot] ||
      plan_->steps[slot_owner_[slot]].placeholder)
    return false;
  for (std::size_t k = 0; k < step.input_slots.size(); ++k)
    if (static_cast<int>(k) != in && step.input_slots[k] == slot) return false;
  return true;
}

// Outputs that take over a dying input's buffer (OpDef::in_place), and
// inputs a kernel may keep (OpDef::consumes). Not in concurrent runs: a
// node of the same level may still read the input.
void Session::PlanBuilder::hand_over_buffers() {
  handed_over_.assign(plan_->num_slots, 0);
  for (int index = 0; index < static_cast<int>(plan_->steps.size()); ++index) {
    Plan::Step& step = plan_->steps[index];
    if (options_.concurrent || step.placeholder) continue;
    const Node& n = *step.node;
    for (const auto& [out, in] : in_place_pairs(n)) {
      bool eligible =
          gives_up(index, in) && num_elements(n.inputs[in].shape()) ==
                                     num_elements(n.output_shapes[out]);
      for (const auto& [o, s] : step.in_place) eligible = eligible && o != out;
      if (!eligible) continue;
      const int slot = step.input_slots[in];
      step.in_place.emplace_back(out, slot);
      step.in_place_reshape.push_back(n.inputs[in].shape() !=
                                      n.output_shapes[out]);
      handed_over_[slot] = 1;
    }
    // Inputs the kernel may keep: on the same terms, but the slot is
    // released here as usual, holding what the kernel swapped in.
    for (int in : n.op->consumes)
      if (gives_up(index, in))
        step.consumed.emplace_back(in, step.input_slots[in]);
  }
}

// Each slot is released by its last reader (in a concurrent run: by the
// reader in the highest level).
void Session::PlanBuilder::place_releases() {
  for (int slot = 0; slot < plan_->num_slots; ++slot) {
    if (fetched_[slot] || handed_over_[slot]) continue;
    const int at =
        options_.concurrent ? last_level_use_[slot] : last_use_[slot];
    plan_->steps[at].release.push_back(slot);
  }
}

void Session::PlanBuilder::count_readers() {
  Plan& plan = *plan_;
  std::vector<int> readers(plan.num_slots, 0);
  for (const Plan::Step& step : plan.steps) {
    for (std::size_t i = 0; i < step.input_slots.size(); ++i)
      if (!is_shape_only(*step.node->op, static_cast<int>(i)))
        ++readers[step.input_slots[i]];
  }
  for (int slot : plan.fetch_slots) ++readers[slot];
  for (int slot = 0; slot < plan.num_slots; ++slot)
    plan.steps[slot_owner_[slot]].readers.push_back(readers[slot]);
}

// What the executor needs ready: element counts, whether small buffers are
// kept, kernels, communicators and the slot tables.
void Session::PlanBuilder::prepare_steps() {
  Plan& plan = *plan_;
  std::size_t small_bytes = 0;
  for (Plan::Step& step : plan.steps) {
    for (const Shape& shape : step.node->output_shapes) {
      step.counts.push_back(num_elements(shape));
      if (!step.placeholder && step.counts.back() < Plan::kMinRecycled)
        small_bytes += sizeof(double) * step.counts.back();
    }
  }
  plan.keep_small = small_bytes <= Plan::kMaxKeptSmallBytes;
  for (Plan::Step& step : plan.steps) {
    const Node& n = *step.node;
    step.num_outputs = n.num_outputs();
    if (step.placeholder) {
      plan.placeholders.push_back({&n, step.first_slot, nullptr});
    } else {
      step.kernel = kernel_of(n);
    }
    step.comm = n.comm ? n.comm.get() : graph_.comm();
  }
  plan.foreign_shape.assign(plan.num_slots, 0);
  plan.caller.assign(plan.num_slots, nullptr);
  plan.slots.resize(plan.num_slots, Tensor(Shape{0}));
  plan.views.resize(plan.num_slots, nullptr);
  plan.fetch_count.assign(plan.num_slots, 0);
  for (int slot : plan.fetch_slots) ++plan.fetch_count[slot];
}

const Session::Plan& Session::plan_for(std::span<const Value> fetches) {
  for (const Value& f : fetches) {
    if (!f.valid() || &f.graph() != &graph_) {
      throw RunError("fetch is not a value of this session's graph");
    }
  }
  // The same fetches as the last run: no key to build or look up.
  if (last_plan_ != nullptr && std::equal(last_plan_->fetch_values.begin(),
                                          last_plan_->fetch_values.end(),
                                          fetches.begin(),
                                          fetches.end())) {
    stats_.plan_cached = true;
    return *last_plan_;
  }
  std::vector<std::pair<int, int>> key;
  for (const Value& f : fetches) key.emplace_back(f.node_id(), f.output());
  auto found = plans_.find(key);
  if (found != plans_.end()) {
    stats_.plan_cached = true;
    last_plan_ = found->second.get();
    return *found->second;
  }
  stats_.plan_cached = false;

  PlanBuilder builder(graph_, options_, key);
  std::unique_ptr<Plan> plan = builder.build();
  check_plan(*plan, builder.collectives);
  plan->fetch_values.assign(fetches.begin(), fetches.end());
  last_plan_ = plan.get();
  return *plans_.emplace(std::move(key), std::move(plan)).first->second;
}

// The checks a new plan gets before it first runs: its loops' steps, its
// memory, the pairing of its sends and receives, and that every rank runs
// the same collectives.
void Session::check_plan(
    const Plan& plan,
    const std::vector<std::pair<CommContext*, std::vector<std::string>>>&
        collectives) const {
  check_loop_steps(plan);
  check_memory(plan);
  if (graph_.same_on_every_rank() && graph_.comm() != nullptr) {
    std::vector<const Node*> communication;
    for (const Plan::Step& step : plan.steps)
      if (step.node->communication) communication.push_back(step.node);
    check_point_to_point_pairing(communication, *graph_.comm());
  }
  // Only plans with collectives take part in the check: a rank whose graph
  // legitimately has none (a rank-dependent graph of sends and receives)
  // must not enter it. If ranks disagree on that, the communication deadline
  // reports the rank that waits.
  for (const auto& [on, descriptors] : collectives) {
    if (on != nullptr) on->check_same_sequence(descriptors);
  }
}

}  // namespace adgraph
