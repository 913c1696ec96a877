#include "core/session.h"

#include <omp.h>

#include <algorithm>
#include <exception>
#include <map>
#include <string>
#include <utility>

#include "core/check.h"
#include "core/comm_context.h"
#include "core/error.h"
#include "core/loop.h"
#include "core/op.h"
#include "core/plan_checks.h"
#include "core/session_plan.h"

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

void Session::release_buffers() { pool_.clear(); }

std::size_t Session::recycled_bytes() const {
  std::size_t bytes = 0;
  for (const auto& [n, buffers] : pool_)
    bytes += sizeof(double) * n * buffers.size();
  return bytes;
}

void check_feed(Value target, const Tensor& value) {
  const Node& n = target.node();
  if (n.op_name() != "placeholder") {
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

std::vector<Tensor> Session::run(const std::vector<Value>& fetches,
                                 const FeedMap& feeds) {
  for (const auto& [value, tensor] : feeds) {
    if (!value.valid() || &value.graph() != &graph_) {
      throw RunError("feed for a value of another graph");
    }
    check_feed(value, tensor);
  }
  Plan& plan = const_cast<Plan&>(plan_for(fetches));
  for (const auto& step : plan.steps) {
    if (step.placeholder && !feeds.count(Value(&graph_, step.node->id, 0))) {
      throw RunError(
          "placeholder is not fed", step.node->name, "placeholder", "feed");
    }
  }

  CommContext* comm = graph_.comm();
  std::vector<Tensor>& slots = plan.slots;
  std::vector<const Tensor*>& views = plan.views;
  for (int s = 0; s < plan.num_slots; ++s) views[s] = &slots[s];
  for (const auto& step : plan.steps) {
    if (step.placeholder) {
      views[step.first_slot] =
          &feeds.find(Value(&graph_, step.node->id, 0))->second;
    }
  }
  std::size_t live = 0;
  stats_.peak_live_bytes = 0;
  stats_.nodes_executed = 0;
  stats_.buffers_allocated = 0;

  // Buffers of a few elements are cheaper to allocate than to pool.
  constexpr int64_t kMinRecycled = 512;
  auto allocate = [&](const Plan::Step& step) {
    if (step.placeholder) return;
    const Node& n = *step.node;
    for (const auto& [out, slot] : step.in_place) {
      // The input's bytes stay live, now as the output's.
      slots[step.first_slot + out] = Tensor::adopt(
          n.output_shapes[out], std::move(slots[slot]).take_storage());
      views[slot] = &slots[step.first_slot + out];
    }
    for (int k = 0; k < n.num_outputs(); ++k) {
      Tensor& t = slots[step.first_slot + k];
      const Shape& shape = n.output_shapes[k];
      bool taken = false;
      for (const auto& [out, slot] : step.in_place) taken = taken || out == k;
      if (taken) continue;
      const int64_t count = num_elements(shape);
      auto pooled = count >= kMinRecycled ? pool_.find(count) : pool_.end();
      if (pooled != pool_.end() && !pooled->second.empty()) {
        t = Tensor::adopt(shape, std::move(pooled->second.back()));
        pooled->second.pop_back();
      } else {
        t = Tensor(shape);
        ++stats_.buffers_allocated;
      }
      live += t.bytes();
    }
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live);
  };
  auto execute = [&](const Plan::Step& step) {
    const Node& n = *step.node;
    if (step.placeholder) return;
    const Tensor* inline_inputs[8];
    std::vector<const Tensor*> heap_inputs;
    const Tensor** inputs = inline_inputs;
    if (step.input_slots.size() > 8) {
      heap_inputs.resize(step.input_slots.size());
      inputs = heap_inputs.data();
    }
    for (std::size_t i = 0; i < step.input_slots.size(); ++i) {
      inputs[i] = views[step.input_slots[i]];
    }
    KernelContext ctx(
        n, inputs, &slots[step.first_slot], n.comm ? n.comm.get() : comm);
    ctx.set_output_readers(step.readers.data());
    n.op->compute(ctx);
  };
  // A kernel may replace an output by a larger tensor (a loop's tape).
  auto account = [&](const Plan::Step& step) {
    if (step.placeholder) return;
    const Node& n = *step.node;
    for (int k = 0; k < n.num_outputs(); ++k) {
      const std::size_t declared =
          sizeof(double) * num_elements(n.output_shapes[k]);
      const std::size_t actual = slots[step.first_slot + k].bytes();
      if (actual != declared) live += actual - declared;
    }
    stats_.peak_live_bytes = std::max(stats_.peak_live_bytes, live);
  };
  auto recycle = [&](Tensor& t) {
    if (options_.recycle_buffers && t.size() >= kMinRecycled) {
      const int64_t n = t.size();
      pool_[n].push_back(std::move(t).take_storage());
    } else {
      t = Tensor(Shape{0});
    }
  };
  auto release = [&](const Plan::Step& step) {
    for (int slot : step.release) {
      live -= slots[slot].bytes();
      recycle(slots[slot]);
    }
  };

  auto clear_all = [&] {
    for (Tensor& t : slots) recycle(t);
  };
  try {
    if (!options_.concurrent) {
      for (const auto& step : plan.steps) {
        allocate(step);
        execute(step);
        account(step);
        release(step);
      }
    } else {
      const int threads = options_.num_threads > 0 ? options_.num_threads
                                                   : omp_get_max_threads();
      for (const auto& level : plan.levels) {
        for (int s : level) allocate(plan.steps[s]);
        std::exception_ptr failure;
        const int n = static_cast<int>(level.size());
#pragma omp parallel for schedule(dynamic) num_threads(threads) if (n > 1)
        for (int i = 0; i < n; ++i) {
          try {
            execute(plan.steps[level[i]]);
          } catch (...) {
#pragma omp critical(adgraph_session_failure)
            if (!failure) failure = std::current_exception();
          }
        }
        if (failure) std::rethrow_exception(failure);
        for (int s : level) account(plan.steps[s]);
        for (int s : level) release(plan.steps[s]);
      }
    }
    stats_.nodes_executed = static_cast<int64_t>(plan.steps.size());
    if (comm) comm->finish_run();
    for (CommContext* other : plan.comms) other->finish_run();
  } catch (...) {
    clear_all();
    throw;
  }

  std::vector<Tensor> out;
  out.reserve(plan.fetch_slots.size());
  for (int slot : plan.fetch_slots) {
    if (views[slot] == &slots[slot] && plan.fetch_count[slot] == 1) {
      out.push_back(std::move(slots[slot]));
    } else {
      out.push_back(*views[slot]);
    }
  }
  clear_all();
  return out;
}

Tensor Session::run(Value fetch, const FeedMap& feeds) {
  return std::move(run(std::vector<Value>{fetch}, feeds)[0]);
}

}  // namespace adgraph
