// The kernels of loop and loop_adjoint (core/loops/loop.h): the forward steps,
// the tape hand-over and the reversal schedules.
#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "core/check.h"
#include "core/loops/loop_impl.h"
#include "core/op.h"

namespace adgraph::detail {

// ---------------------------------------------------------------------------
// Forward loop kernel.

namespace {

void copy_state(const std::vector<Tensor>& from, std::vector<Tensor>& to) {
  for (std::size_t k = 0; k < from.size(); ++k) to[k] = from[k];
}

}  // namespace

void run_loop(KernelContext& c) {
  const LoopSpec& spec = *c.node().loop;
  detail::LoopCache& cache = *spec.cache;
  const int nc = spec.num_carries, ni = spec.num_invariants,
            ny = spec.num_step_outputs;
  std::vector<int> wanted;
  for (int k = 0; k < nc; ++k) wanted.push_back(k);
  for (int j = 0; j < ny; ++j) {
    if (c.output_used(nc + j)) wanted.push_back(nc + j);
  }
  std::unique_ptr<BodyRunner> runner = cache.take_runner(spec.forward, wanted);
  // The carries live in the output buffers the session allocated, unless
  // an output is the caller's (run_into), which must keep its buffer: the
  // steps trade buffers with the body's runner, which outlives the run.
  std::vector<Tensor> cur(nc);
  for (int k = 0; k < nc; ++k) {
    if (c.output_replaceable(k)) cur[k].swap(c.output(k));
    cur[k] = c.input(k);
  }
  Tensor step = Tensor::scalar(0);
  std::vector<const Tensor*> inputs;
  for (int k = 0; k < nc; ++k) inputs.push_back(&cur[k]);
  for (int j = 0; j < ni; ++j) inputs.push_back(&c.input(nc + j));
  inputs.push_back(&step);

  // The tape: the states the adjoint's first sweep would store, handed
  // over under a ticket.
  const int takers = c.output_readers(nc + ny);
  const bool taping = takers > 0;
  std::vector<int64_t> positions;
  if (taping) positions = spec.tape_positions();
  std::map<int64_t, detail::LoopCache::State> snapshots;
  const std::vector<int64_t> rows = rows_of_steps(spec);
  std::size_t next = 0;
  // A kept state is moved into the snapshots, not copied: the next step
  // reads it there, and cur takes spare buffers for the step's result.
  const detail::LoopCache::State* kept = nullptr;
  for (int64_t t = 0; t < spec.trips; ++t) {
    step[0] = static_cast<double>(t);
    for (int k = 0; k < nc; ++k) inputs[k] = kept ? &(*kept)[k] : &cur[k];
    runner->run(inputs.data());
    if (rows[t] >= 0) {
      for (std::size_t w = nc; w < wanted.size(); ++w)
        copy_row(runner->output(wanted[w]), c.output(wanted[w]), rows[t]);
    }
    // Inputs read from a snapshot stay there: a carry passed through views
    // it (half the tape of a leapfrog, and no copy).
    runner->move_outputs(0, cur, kept != nullptr);
    kept = nullptr;
    if (next < positions.size() && positions[next] == t + 1) {
      detail::LoopCache::State spare = cache.take_state(cur);
      auto& slot = snapshots[t + 1];
      slot = std::move(cur);
      cur = std::move(spare);
      kept = &slot;
      ++next;
    }
  }
  if (kept) copy_state(*kept, cur);  // the last step was kept
  for (Tensor& t : cur) {
    if (t.borrowed()) t = Tensor(t);  // a view of a snapshot: a copy
  }
  cache.give_runner(std::move(runner), spec.forward, wanted);
  for (int k = 0; k < nc; ++k) {
    if (c.output_replaceable(k)) {
      c.output(k).swap(cur[k]);
    } else {
      c.output(k) = cur[k];
    }
  }
  c.output(nc + ny)[0] =
      taping
          ? static_cast<double>(cache.hand_over(std::move(snapshots), takers))
          : 0;
  spec.stats.forward_steps = spec.trips;
  spec.stats.taped_steps = 0;
}

// ---------------------------------------------------------------------------
// Adjoint loop kernel: the reversal schedules.

namespace {

class Reversal final {
 public:
  Reversal(KernelContext& c, const LoopSpec& spec)
      : c_(c),
        spec_(spec),
        nc_(spec.num_carries),
        ni_(spec.num_invariants),
        nr_(spec.num_reverse),
        ns_(spec.num_step_cotangents),
        nn_(static_cast<int>(spec.next_carries.size())),
        cache_(*spec.cache),
        forward_wanted_(first(spec.num_carries)),
        reverse_wanted_(first(spec.num_reverse)),
        forward_(cache_.take_runner(spec.forward, forward_wanted_)),
        reverse_(cache_.take_runner(spec.reverse, reverse_wanted_)),
        rows_(rows_of_steps(spec)) {
    const int first_r = nc_ + ni_;
    for (int k = 0; k < nr_; ++k) r_.push_back(c.input(first_r + k));
    for (int j = 0; j < ns_; ++j) {
      const Shape& s = spec.reverse.inputs[nc_ + ni_ + 1 + nr_ + j].shape();
      ybar_.push_back(Tensor(s, 0.0));
    }
    ybar_zero_.assign(ns_, 1);
    for (int k = 0; k < nc_; ++k) cur_.push_back(c.input(k));
    cur_t_ = 0;
    // c_{t+1} of the next carries for step t = n − 1: the inputs c_n.
    for (int j = 0; j < nn_; ++j)
      next_.push_back(c.input(first_r + nr_ + ns_ + j));
    if (spec.taped) {
      const double ticket = c.input(first_r + nr_ + ns_ + nn_)[0];
      store_ = cache_.take_over(static_cast<int64_t>(ticket));
    }
    keep(0);
  }

  ~Reversal() {
    for (auto& [t, state] : store_) cache_.give_state(std::move(state));
    cache_.give_state(std::move(viewed_));
    if (forward_)
      cache_.give_runner(std::move(forward_), spec_.forward, forward_wanted_);
    if (reverse_)
      cache_.give_runner(std::move(reverse_), spec_.reverse, reverse_wanted_);
  }

  void run() {
    const int64_t n = spec_.trips;
    if (spec_.schedule.kind == CheckpointSchedule::Kind::kStoreAll) {
      every(n, 1);
    } else if (spec_.schedule.kind == CheckpointSchedule::Kind::kEvery) {
      every(n, spec_.schedule.parameter);
    } else {
      binomial(0, n, spec_.schedule.parameter);
    }
    for (int k = 0; k < nr_; ++k) {
      if (c_.output_replaceable(k)) {
        c_.output(k) = std::move(r_[k]);
      } else {
        c_.output(k) = r_[k];  // the caller's buffer (run_into) is kept
      }
    }
    spec_.stats.forward_steps = advances_;
    spec_.stats.taped_steps = taped_;
    spec_.stats.max_snapshots = max_snapshots_;
    spec_.stats.snapshot_bytes = max_snapshots_ * spec_.state_elements() *
                                 static_cast<int64_t>(sizeof(double));
  }

 private:
  static std::vector<int> first(int count) {
    std::vector<int> out;
    for (int k = 0; k < count; ++k) out.push_back(k);
    return out;
  }

  void note_snapshots() {
    max_snapshots_ = std::max<int64_t>(max_snapshots_, store_.size());
  }

  // One body step from cur_.
  void advance() {
    step_[0] = static_cast<double>(cur_t_);
    std::vector<const Tensor*> in;
    for (Tensor& t : cur_) in.push_back(&t);
    for (int j = 0; j < ni_; ++j) in.push_back(&c_.input(nc_ + j));
    in.push_back(&step_);
    forward_->run(in.data());
    forward_->move_outputs(0, cur_);
    ++cur_t_;
    ++advances_;
  }

  // State t: cur_ or a snapshot, or recomputed from the snapshot at a <= t.
  const std::vector<Tensor>& state(int64_t t, int64_t a) {
    if (cur_t_ == t) return cur_;
    auto found = store_.find(t);
    if (found != store_.end()) return found->second;
    if (!(cur_t_ >= a && cur_t_ < t)) {
      auto from = store_.find(a);
      ADGRAPH_CHECK(from != store_.end()) << "no snapshot at step " << a;
      cur_ = from->second;
      cur_t_ = a;
    }
    while (cur_t_ < t) advance();
    return cur_;
  }

  void keep(int64_t t) {
    if (store_.count(t)) return;
    detail::LoopCache::State kept = cache_.take_state(cur_);
    copy_state(cur_, kept);
    store_[t] = std::move(kept);
    note_snapshots();
  }

  void release(int64_t t) {
    auto it = store_.find(t);
    if (it == store_.end()) return;
    cache_.give_state(std::move(it->second));
    store_.erase(it);
  }

  // The adjoint of step t from state c_t.
  void tape(int64_t t, const std::vector<Tensor>& ct) {
    step_[0] = static_cast<double>(t);
    const int64_t row = rows_[t];
    for (int j = 0; j < ns_; ++j) {
      if (row >= 0) {
        const Tensor& all = c_.input(nc_ + ni_ + nr_ + j);
        const int64_t m = ybar_[j].size();
        std::memcpy(ybar_[j].data(), all.data() + row * m, m * sizeof(double));
        ybar_zero_[j] = 0;
      } else if (!ybar_zero_[j]) {
        ybar_[j].array().setZero();
        ybar_zero_[j] = 1;
      }
    }
    std::vector<const Tensor*> in;
    for (const Tensor& x : ct) in.push_back(&x);
    for (int j = 0; j < ni_; ++j) in.push_back(&c_.input(nc_ + j));
    in.push_back(&step_);
    for (Tensor& x : r_) in.push_back(&x);
    for (Tensor& x : ybar_) in.push_back(&x);
    // Steps are taped from n − 1 down to 0, so next_ holds c_{t+1}.
    ADGRAPH_CHECK(nn_ == 0 || next_t_ == t + 1)
        << "step " << t << " taped after step " << next_t_;
    for (Tensor& x : next_) in.push_back(&x);
    // r_ is replaced by the step's results below: its buffers are given to
    // the body, so an accumulating adjoint (κ̄ += …) works in place.
    if (donated_.empty()) {
      donated_.assign(in.size(), nullptr);
      for (int k = 0; k < nr_; ++k) donated_[nc_ + ni_ + 1 + k] = &r_[k];
    }
    reverse_->run(in.data(), donated_.data());
    reverse_->move_outputs(0, r_);
    ++taped_;
    next_t_ = t;
    // c_t of the next carries, for step t − 1: views of the snapshot of t,
    // kept (out of store_) until that step is done, or copies of cur_.
    // Then no state at or after t is needed again.
    auto found = store_.find(t);
    const bool snapshot = found != store_.end() && &found->second == &ct;
    for (int j = 0; j < nn_; ++j) {
      const Tensor& from = ct[spec_.next_carries[j]];
      if (snapshot) {
        next_[j] =
            Tensor::borrow(from.shape(), const_cast<double*>(from.data()));
      } else {
        if (next_[j].borrowed()) next_[j] = Tensor();
        next_[j] = from;
      }
    }
    cache_.give_state(std::move(viewed_));
    viewed_.clear();
    if (snapshot && nn_ > 0) {
      viewed_ = std::move(found->second);
      store_.erase(found);
    }
    release(t);
    if (cur_t_ >= t) cur_t_ = -1;
  }

  void every(int64_t n, int64_t k) {
    const int64_t last = ((n - 1) / k) * k;
    for (int64_t t = k; t <= last; t += k) {
      state(t, t - k);
      keep(t);
    }
    for (int64_t a = last; a >= 0; a -= k) {
      const int64_t b = std::min(n, a + k);
      for (int64_t t = a + 1; t < b; ++t) {
        state(t, a);
        keep(t);
      }
      for (int64_t t = b - 1; t >= a; --t) tape(t, state(t, a));
    }
  }

  // Reverses steps [a, b) from the snapshot at a with s snapshots.
  void binomial(int64_t a, int64_t b, int64_t s) {
    if (b - a == 1) {
      tape(a, state(a, a));
      return;
    }
    if (s <= 1) {
      for (int64_t t = b - 1; t >= a; --t) tape(t, state(t, a));
      return;
    }
    const int64_t m = a + binomial_split(b - a, s);
    state(m, a);
    keep(m);
    binomial(m, b, s - 1);
    release(m);
    binomial(a, m, s);
  }

  KernelContext& c_;
  const LoopSpec& spec_;
  const int nc_, ni_, nr_, ns_, nn_;
  detail::LoopCache& cache_;
  const std::vector<int> forward_wanted_, reverse_wanted_;
  std::unique_ptr<BodyRunner> forward_, reverse_;
  std::vector<int64_t> rows_;
  std::map<int64_t, std::vector<Tensor>> store_;
  std::vector<Tensor> cur_;
  int64_t cur_t_ = 0;
  std::vector<Tensor> r_;
  std::vector<Tensor*> donated_;  // per reverse-body input: &r_[k] or null
  std::vector<Tensor> ybar_;
  std::vector<char> ybar_zero_;
  // c_{next_t_} of the next carries (LoopSpec::next_carries).
  std::vector<Tensor> next_;
  // The snapshot next_ views, if it does (given back after the next step).
  std::vector<Tensor> viewed_;
  int64_t next_t_ = spec_.trips;
  Tensor step_ = Tensor::scalar(0);
  int64_t advances_ = 0, taped_ = 0, max_snapshots_ = 0;
};

}  // namespace

void run_loop_adjoint(KernelContext& c) { Reversal(c, *c.node().loop).run(); }

}  // namespace adgraph::detail
