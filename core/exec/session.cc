#include "core/exec/session.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <map>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/comm_context.h"
#include "core/error.h"
#include "core/exec/plan_checks.h"
#include "core/exec/session_plan.h"
#include "core/interrupt.h"
#include "core/loops/loop.h"
#include "core/op.h"

namespace adgraph {

bool SessionOptions::is_valid(std::string* error) const {
  if (num_threads < 0) {
    *error = "num_threads must be >= 0 (0 = OpenMP default), got " +
             std::to_string(num_threads);
    return false;
  }
  return true;
}

Session::Session(Graph& graph, SessionOptions options)
    : graph_(graph), options_(options) {
  std::string error;
  if (!options_.is_valid(&error)) {
    throw OptionsError(error, {}, {}, "SessionOptions");
  }
}

Session::~Session() = default;

int Session::num_plans() const { return static_cast<int>(plans_.size()); }

void Session::release_buffers() {
  pool_.clear();
  if (CommContext* comm = graph_.comm()) comm->release_buffers();
  for (auto& [key, plan] : plans_) {
    for (Tensor& t : plan->slots) std::move(t).take_storage();
    for (CommContext* other : plan->comms) other->release_buffers();
  }
}

void Session::recycle(Tensor&& tensor) {
  const int64_t n = tensor.size();
  if (!tensor.borrowed() && options_.recycle_buffers &&
      n >= Plan::kMinRecycled) {
    pool_[n].push_back(std::move(tensor).take_storage());
  } else {
    std::move(tensor).take_storage();  // freed, or a view dropped
  }
}

void Session::release_slot(const Plan& plan, Tensor& t) {
  if (!t.borrowed() && t.size() < Plan::kMinRecycled) {
    // Small: kept in its slot for the next run, or freed.
    if (!plan.keep_small && t.size() > 0) std::move(t).take_storage();
  } else {
    recycle(std::move(t));
  }
}

void check_feed(Value target, const Tensor& value) {
  const Node& n = target.node();
  // The op's definition, not its name: no string compare on every run.
  static const OpDef* const placeholder =
      &OpRegistry::global().get("placeholder");
  if (n.op != placeholder) {
    throw RunError("only placeholders can be fed", n.name, n.op_name(), "feed");
  }
  if (value.shape() != target.shape()) {
    throw RunError("expected shape " + shape_string(target.shape()) + ", got " +
                       shape_string(value.shape()),
                   n.name,
                   n.op_name(),
                   "feed");
  }
}

Session::Plan& Session::prepare(std::span<const Value> fetches,
                                const FeedMap& feeds) {
  for (const auto& [value, tensor] : feeds) {
    if (!value.valid() || &value.graph() != &graph_) {
      throw RunError("feed for a value of another graph");
    }
    check_feed(value, tensor);
  }
  Plan& plan = const_cast<Plan&>(plan_for(fetches));
  for (Plan::Fed& p : plan.placeholders) {
    auto fed = feeds.find(Value(&graph_, p.node->id, 0));
    if (fed == feeds.end()) {
      throw RunError(
          "placeholder is not fed", p.node->name, "placeholder", "feed");
    }
    p.feed = &fed->second;
  }
  return plan;
}

void Session::check(const std::vector<Value>& fetches, const FeedMap& feeds) {
  for (Plan::Fed& p : prepare(fetches, feeds).placeholders) p.feed = nullptr;
}

// One run of a plan: each step's outputs get buffers (the caller's, a
// dying input's, a kept or pooled one, or new), its kernel runs, what it
// was last to read is released; the live bytes are counted on the way.
class Session::Executor {
 public:
  Executor(Session& session, Plan& plan)
      : session_(session),
        plan_(plan),
        slots_(plan.slots),
        views_(plan.views),
        caller_(plan.caller),
        stats_(session.stats_) {
    for (int s = 0; s < plan.num_slots; ++s) views_[s] = &slots_[s];
    for (const Plan::Fed& p : plan.placeholders) views_[p.slot] = p.feed;
    stats_.peak_live_bytes = 0;
    stats_.nodes_executed = 0;
    stats_.buffers_allocated = 0;
  }

  // The steps one after another; `reached` is the first that may not
  // have run (for settle_failure). An interrupt request stops the run
  // before the next step.
  void run_in_order(std::size_t& reached) {
    for (const auto& step : plan_.steps) {
      detail::check_interrupt();
      allocate(step);
      run_kernel(step);
      account(step);
      release(step);
      ++reached;
    }
  }

  // Level by level, the steps of a level on `threads` threads; an
  // interrupt request stops the run before the next level.
  void run_levels(int threads, std::size_t& reached) {
    for (const auto& level : plan_.levels) {
      reached = static_cast<std::size_t>(
          *std::min_element(level.begin(), level.end()));
      detail::check_interrupt();
      for (int s : level) allocate(plan_.steps[s]);
      std::exception_ptr failure;
      const int n = static_cast<int>(level.size());
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (n > 1)
      for (int i = 0; i < n; ++i) {
        try {
          run_kernel(plan_.steps[level[i]]);
        } catch (...) {
#pragma omp critical(adgraph_session_failure)
          if (!failure) failure = std::current_exception();
        }
      }
      if (failure) std::rethrow_exception(failure);
      for (int s : level) account(plan_.steps[s]);
      for (int s : level) release(plan_.steps[s]);
    }
  }

  // The caller's tensors get their buffers back, holding the fetched
  // values.
  void give_back() {
    for (int slot = 0; slot < plan_.num_slots; ++slot) {
      if (caller_[slot] == nullptr) continue;
      slots_[slot].swap(*caller_[slot]);
      views_[slot] = caller_[slot];
      caller_[slot] = nullptr;
    }
  }

 private:
  void allocate(const Plan::Step& step);
  // Whether output k takes over a dying input's buffer (OpDef::in_place).
  bool take_over(const Plan::Step& step, int k, Tensor& t);
  void run_kernel(const Plan::Step& step);

  // A kernel may replace an output by a larger tensor (a loop's tape).
  void account(const Plan::Step& step) {
    if (step.placeholder) return;
    for (std::size_t k = 0; k < step.counts.size(); ++k) {
      const std::size_t declared = sizeof(double) * step.counts[k];
      const std::size_t actual = slots_[step.first_slot + k].bytes();
      if (actual != declared) live_ += actual - declared;
    }
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live_);
  }

  void release(const Plan::Step& step) {
    for (int slot : step.release) {
      live_ -= slots_[slot].bytes();
      session_.release_slot(plan_, slots_[slot]);
    }
  }

  Session& session_;
  Plan& plan_;
  std::vector<Tensor>& slots_;
  std::vector<const Tensor*>& views_;
  std::vector<Tensor*>& caller_;
  RunStats& stats_;
  std::size_t live_ = 0;
};

bool Session::Executor::take_over(const Plan::Step& step, int k, Tensor& t) {
  bool taken = false;
  for (std::size_t e = 0; e < step.in_place.size(); ++e) {
    const auto [out, input] = step.in_place[e];
    if (out != k) continue;
    // The input's bytes stay live, now as the output's.
    t.swap(slots_[input]);
    plan_.foreign_shape[input] = 1;
    if (step.in_place_reshape[e]) t.set_shape(step.node->output_shapes[k]);
    views_[input] = &t;
    taken = true;
  }
  return taken;
}

// Touches the node only for a shape it must set: nodes are scattered in
// memory, the plan's arrays are not.
void Session::Executor::allocate(const Plan::Step& step) {
  if (step.placeholder) return;
  for (int k = 0; k < step.num_outputs; ++k) {
    const int slot = step.first_slot + k;
    Tensor& t = slots_[slot];
    if (caller_[slot] != nullptr) {
      // The caller's buffer, given back after the run.
      t.swap(*caller_[slot]);
      live_ += t.bytes();
      continue;
    }
    if (take_over(step, k, t)) continue;
    const int64_t count = step.counts[k];
    auto& pool = session_.pool_;
    if (t.size() == count) {
      // Kept from the previous run (a small buffer). An empty output
      // also lands here from the slot's initial [0] tensor, whose shape
      // is not its own ([1, 0] say): kernels read its extents.
      if (plan_.foreign_shape[slot] || count == 0) {
        t.set_shape(step.node->output_shapes[k]);
        plan_.foreign_shape[slot] = 0;
      }
    } else if (auto pooled =
                   count >= Plan::kMinRecycled ? pool.find(count) : pool.end();
               pooled != pool.end() && !pooled->second.empty()) {
      t = Tensor::adopt(step.node->output_shapes[k],
                        std::move(pooled->second.back()));
      pooled->second.pop_back();
      plan_.foreign_shape[slot] = 0;
    } else {
      t = Tensor(step.node->output_shapes[k]);
      plan_.foreign_shape[slot] = 0;
      ++stats_.buffers_allocated;
    }
    live_ += t.bytes();
  }
  stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live_);
}

void Session::Executor::run_kernel(const Plan::Step& step) {
  if (step.placeholder) return;
  const std::size_t n = step.input_slots.size();
  const Tensor* inline_inputs[8];
  std::vector<const Tensor*> heap_inputs;
  const Tensor** inputs = inline_inputs;
  if (n > 8) {
    heap_inputs.resize(n);
    inputs = heap_inputs.data();
  }
  for (std::size_t i = 0; i < n; ++i) inputs[i] = views_[step.input_slots[i]];
  KernelContext ctx(*step.node, inputs, &slots_[step.first_slot], step.comm);
  ctx.set_output_readers(step.readers.data());
  ctx.set_kept_outputs(caller_.data() + step.first_slot);
  Tensor* inline_consumable[8];
  std::vector<Tensor*> heap_consumable;
  if (!step.consumed.empty()) {
    Tensor** consumable = inline_consumable;
    if (n > 8) {
      heap_consumable.resize(n);
      consumable = heap_consumable.data();
    }
    std::fill_n(consumable, n, nullptr);
    for (const auto& [input, slot] : step.consumed)
      consumable[input] = &slots_[slot];
    ctx.set_consumable_inputs(consumable);
  }
  step.kernel(ctx);
}

void Session::execute(Plan& plan) {
  CommContext* comm = graph_.comm();
  Executor run(*this, plan);
  // The first step that may not have run (for settle_failure).
  std::size_t reached = 0;
  try {
    if (!options_.concurrent) {
      run.run_in_order(reached);
    } else {
      const int threads = options_.num_threads > 0 ? options_.num_threads
                                                   : omp_get_max_threads();
      run.run_levels(threads, reached);
    }
    stats_.nodes_executed = static_cast<int64_t>(plan.steps.size());
    if (comm) comm->finish_run();
    for (CommContext* other : plan.comms) other->finish_run();
  } catch (...) {
    run.give_back();
    for (Tensor& t : plan.slots) release_slot(plan, t);
    settle_failure(plan, reached, std::current_exception());
    throw;
  }
  run.give_back();
}

void Session::settle_failure(const Plan& plan,
                             std::size_t from,
                             std::exception_ptr failure) {
  for (std::size_t s = from; s < plan.steps.size(); ++s) {
    const Plan::Step& step = plan.steps[s];
    if (!step.node->communication) continue;
    CommContext* comm = step.comm != nullptr ? step.comm : graph_.comm();
    if (comm == nullptr) return;
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(failure);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    comm->agree_on_failure(what);
    return;
  }
}

void Session::clear_slots(Plan& plan) {
  for (Tensor& t : plan.slots) release_slot(plan, t);
}

std::vector<Tensor> Session::run(const std::vector<Value>& fetches,
                                 const FeedMap& feeds) {
  Plan& plan = prepare(fetches, feeds);
  execute(plan);
  std::vector<Tensor> out;
  out.reserve(plan.fetch_slots.size());
  for (int slot : plan.fetch_slots) {
    if (plan.views[slot] == &plan.slots[slot] && plan.fetch_count[slot] == 1) {
      out.push_back(std::move(plan.slots[slot]));
    } else {
      out.push_back(*plan.views[slot]);
    }
  }
  clear_slots(plan);
  return out;
}

Tensor Session::run(Value fetch, const FeedMap& feeds) {
  return std::move(run(std::vector<Value>{fetch}, feeds)[0]);
}

void Session::run_into(const std::vector<Value>& fetches,
                       const FeedMap& feeds,
                       const std::vector<Tensor*>& outputs) {
  run_into(std::span<const Value>(fetches),
           feeds,
           std::span<Tensor* const>(outputs));
}

void Session::run_into(Value fetch, const FeedMap& feeds, Tensor& output) {
  Tensor* out = &output;
  run_into(std::span<const Value>(&fetch, 1),
           feeds,
           std::span<Tensor* const>(&out, 1));
}

void Session::run_into(std::span<const Value> fetches,
                       const FeedMap& feeds,
                       std::span<Tensor* const> outputs) {
  if (outputs.size() != fetches.size()) {
    throw RunError("run_into got " + std::to_string(outputs.size()) +
                       " output tensor(s) for " +
                       std::to_string(fetches.size()) + " fetch(es)",
                   {},
                   {},
                   "outputs");
  }
  for (std::size_t k = 0; k < fetches.size(); ++k) {
    const Value& f = fetches[k];
    if (!f.valid() || &f.graph() != &graph_) {
      throw RunError("fetch is not a value of this session's graph");
    }
    const Node& n = f.node();
    // Built only for a message: a repeated run_into costs no string.
    auto which = [&] {
      return "output tensor " + std::to_string(k) + " (for fetch " +
             std::to_string(k) + ", \"" + n.name + "\" output " +
             std::to_string(f.output()) + ")";
    };
    if (outputs[k] == nullptr) {
      throw RunError(which() + " is null", n.name, n.op_name(), "outputs");
    }
    if (outputs[k]->shape() != f.shape()) {
      throw RunError(which() + " has shape " +
                         shape_string(outputs[k]->shape()) +
                         ", the fetch has shape " + shape_string(f.shape()) +
                         " (adgraph tensors hold doubles; make it with "
                         "Tensor(fetch.shape()))",
                     n.name,
                     n.op_name(),
                     "outputs");
    }
    for (std::size_t j = 0; j < k; ++j) {
      if (outputs[j] == outputs[k]) {
        throw RunError(which() + " is also output tensor " + std::to_string(j) +
                           "; give each fetch its own tensor",
                       n.name,
                       n.op_name(),
                       "outputs");
      }
    }
    for (const auto& [value, tensor] : feeds) {
      if (&tensor == outputs[k]) {
        throw RunError(which() + " is the feed of \"" + value.node().name +
                           "\"; a fetch cannot be written into a feed",
                       n.name,
                       n.op_name(),
                       "outputs");
      }
    }
  }
  Plan& plan = prepare(fetches, feeds);
  // Each fetched output's kernel writes into the first tensor given for it,
  // unless it is a placeholder (its feed is copied).
  for (std::size_t k = 0; k < fetches.size(); ++k) {
    const int slot = plan.fetch_slots[k];
    if (plan.caller[slot] == nullptr && !plan.fetch_fed[k])
      plan.caller[slot] = outputs[k];
  }
  execute(plan);
  for (std::size_t k = 0; k < fetches.size(); ++k) {
    const Tensor& value = *plan.views[plan.fetch_slots[k]];
    if (&value != outputs[k]) *outputs[k] = value;
  }
  clear_slots(plan);
}

}  // namespace adgraph
