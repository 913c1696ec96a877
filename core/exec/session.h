// Session: plans and executes the part of a graph that a set of fetches
// needs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "core/tensor.h"

namespace adgraph {

// Values for placeholders, keyed by the placeholder's handle.
using FeedMap = std::map<Value, Tensor>;

// The check Session::run makes of each feed: throws RunError naming the
// node (field "feed") unless `target` is a placeholder of `value`'s shape.
void check_feed(Value target, const Tensor& value);

struct SessionOptions {
  // Run nodes that do not depend on each other concurrently (OpenMP threads,
  // level by level). Results are identical to sequential execution because
  // every kernel is deterministic and communication nodes stay ordered by
  // their ghost dependencies. Default: false (sequential, lowest overhead).
  bool concurrent = false;
  // Threads used when `concurrent` is true; 0 means the OpenMP default
  // (OMP_NUM_THREADS). Range: >= 0.
  int num_threads = 0;
  // Keep the buffers of released intermediates and hand them to later
  // outputs of the same size, in this run and the following ones, instead
  // of returning them to the allocator (which, for large buffers, returns
  // them to the kernel and pays page faults on every new one). The session
  // then holds up to the peak live bytes of its largest run between runs;
  // release_buffers() gives them back. Default: true. (Outputs of fewer
  // than 512 elements are not pooled: each keeps its buffer in its plan
  // for the next run, while a plan's small outputs total at most 64 MiB.)
  bool recycle_buffers = true;

  // Returns false and describes the first bad field in `error`.
  bool is_valid(std::string* error) const;
};

// Counters of the last run, for tests and benchmarks.
struct RunStats {
  // Nodes whose kernel ran.
  int64_t nodes_executed = 0;
  // Largest number of bytes held by live intermediate tensors at once.
  std::size_t peak_live_bytes = 0;
  // True when the plan for this fetch set came from the cache.
  bool plan_cached = false;
  // Outputs that needed a new buffer (not recycled).
  int64_t buffers_allocated = 0;
};

class Session final {
 public:
  // `graph` must outlive the session; nodes added to it later are seen by
  // later runs. Throws OptionsError for invalid options.
  explicit Session(Graph& graph, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Runs the nodes `fetches` need (data and control inputs, transitively)
  // and returns the fetched tensors in order. Communication nodes run in
  // their ghost order; a ghost dependency does not pull a collective into
  // the run (every rank fetches the same values, so every rank needs the
  // same collectives), but every point-to-point node older than the newest
  // communication node the run needs does run, because in a graph that
  // differs by rank its partner may wait for it. Each intermediate tensor is
  // freed right after its last consumer; in sequential runs that consumer
  // may write its output into the input's buffer instead (OpDef::in_place:
  // element-wise ops, heat_step_adjoint's κ̄), never into a feed or a
  // fetched value. The execution plan is computed
  // once per distinct fetch list and cached.
  //
  // Throws RunError when a needed placeholder is not fed, when a feed has
  // the wrong shape or is not a placeholder, when its estimated peak memory
  // (loops' snapshots included) exceeds what the process can allocate
  // (core/exec/plan_checks.h), when its loops would run more body steps than
  // ADGRAPH_MAX_LOOP_STEPS allows (10^9 unless set; LoopSpec::body_steps),
  // and (with communication nodes) when ranks would
  // run different collective sequences or, for a graph the same on every
  // rank, unpaired messages. A kernel's own exception (a RunError, or what
  // a custom op throws) reaches the caller as it is, unless later nodes of
  // the run communicate: then the other ranks may be waiting for this one,
  // so it waits up to 3 s for every rank to fail too
  // (CommContext::agree_on_failure) and, if they do not, ends the job with
  // the error's message instead of leaving them waiting.
  std::vector<Tensor> run(const std::vector<Value>& fetches,
                          const FeedMap& feeds = {});
  Tensor run(Value fetch, const FeedMap& feeds = {});
  // Like run(), but the fetched values go into the caller's tensors,
  // outputs[k] for fetches[k], each already of its fetch's shape (make it
  // with Tensor(fetch.shape())): the node that computes a fetched value
  // writes straight into the caller's buffer, so a repeated run allocates
  // nothing for its results (a placeholder's feed, or a value fetched
  // twice, is copied). Throws RunError (field "outputs") naming the fetch
  // when the counts differ, an output is null, has another shape, is given
  // twice or is one of the feeds. adgraph tensors hold doubles, so there is
  // no element type to get wrong. If the run fails, the outputs keep their
  // buffers with unspecified contents.
  void run_into(const std::vector<Value>& fetches,
                const FeedMap& feeds,
                const std::vector<Tensor*>& outputs);
  // run_into of one fetch: no vector to build per run.
  void run_into(Value fetch, const FeedMap& feeds, Tensor& output);

  // Makes the checks a first run() of `fetches` makes (feeds, memory, loop
  // steps, message pairing; with collectives, the ranks' sequences, which
  // is collective) and keeps the plan, without running anything.
  void check(const std::vector<Value>& fetches, const FeedMap& feeds = {});

  // Gives the session `tensor`'s storage for later outputs of its size (a
  // result the caller has finished with: Python's dropped arrays), as if
  // one of its own intermediates had been released. Kept only with
  // recycle_buffers and for sizes the session pools (512 elements or
  // more), else freed; a borrowed tensor's view is dropped. `tensor` is
  // left empty either way. Not during a run.
  void recycle(Tensor&& tensor);

  const RunStats& stats() const { return stats_; }
  // Frees the buffers the session holds between runs (pooled and kept),
  // and those its communicators keep for later messages
  // (CommContext::release_buffers). Not during a run.
  void release_buffers();
  // Number of distinct plans built so far.
  int num_plans() const;

 private:
  struct Plan;
  // Throws RunError unless each request the plan starts (OpDef::request) is
  // completed exactly once within it.
  static void check_requests(const Plan& plan);
  // Throws RunError when the plan's estimated peak of live intermediate
  // bytes exceeds what this process can allocate (memory_available()).
  static void check_memory(const Plan& plan);
  // Throws RunError naming the costliest loop node when the plan's loops
  // would run more body steps than max_loop_steps() allows.
  static void check_loop_steps(const Plan& plan);
  class PlanBuilder;  // core/exec/session_plan.cc
  const Plan& plan_for(std::span<const Value> fetches);
  // The checks a new plan gets before it first runs (plan_for).
  void check_plan(
      const Plan& plan,
      const std::vector<std::pair<CommContext*, std::vector<std::string>>>&
          collectives) const;
  // Checks the feeds, finds (or builds) the plan, checks it is fed and
  // points it at the feeds (Plan::placeholders) for execute().
  Plan& prepare(std::span<const Value> fetches, const FeedMap& feeds);
  void run_into(std::span<const Value> fetches,
                const FeedMap& feeds,
                std::span<Tensor* const> outputs);
  // Runs the plan; the fetched values are left in its slots (or the
  // caller's tensors, Plan::caller).
  void execute(Plan& plan);
  class Executor;  // core/exec/session.cc
  // After a kernel threw on this rank: when a step from `from` on
  // communicates, the other ranks may wait for this one, so they must all
  // have failed too (CommContext::agree_on_failure) or the job ends with
  // the failure's message.
  void settle_failure(const Plan& plan,
                      std::size_t from,
                      std::exception_ptr failure);
  // Lets go of a slot's tensor no one reads any more: a small one stays in
  // its slot for the next run when the plan keeps small buffers
  // (Plan::keep_small), anything else goes to recycle().
  void release_slot(const Plan& plan, Tensor& t);
  // Returns the plan's buffers to the pool, keeping small ones in place
  // when the plan does (Plan::keep_small).
  void clear_slots(Plan& plan);

  Graph& graph_;
  SessionOptions options_;
  std::map<std::vector<std::pair<int, int>>, std::unique_ptr<Plan>> plans_;
  const Plan* last_plan_ = nullptr;  // the last run's
  RunStats stats_;
  // Released buffers by element count, when recycle_buffers is on.
  std::map<int64_t, std::vector<Eigen::ArrayXd>> pool_;
};

}  // namespace adgraph
