// The communication deadline and mpirun's stop report, one Watchdog per
// Communicator (internal to mpi_ops/; the behaviour is documented in
// communicator.h). A Watchdog knows which call its communicator is in and
// since when; the process's one helper thread looks at every Watchdog every
// 50 ms and ends the process when a call is past the deadline, or reports
// the call when mpirun's stop signal arrived. No MPI here.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "core/graph.h"

namespace adgraph::mpi_detail {

// The coarse monotonic clock (a few ms resolution, plenty for a deadline in
// seconds) costs a fraction of the precise one on every watched call.
inline int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

class Watchdog {
 public:
  // Watches the calls of the communicator `comm_name` ("world", or how it
  // was split) from the process of MPI_COMM_WORLD rank `world_rank`, with
  // the environment's deadline (ADGRAPH_COMM_DEADLINE). Registers with the
  // process's watchdog thread, starting it for the first one.
  Watchdog(std::string comm_name, int world_rank);
  // Unregisters; the last one ends the thread.
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  // Seconds; 0 disables the deadline. Throws OptionsError for a negative or
  // NaN value.
  void set_deadline(double seconds);
  double deadline() const { return deadline_seconds_; }

  // Watches a call described by `label`, or by the node being run; stop()
  // ends either. The watched call's description is published before its
  // start time (release), which the watchdog reads first (acquire): plain
  // stores on x86, where the default order costs a locked exchange each
  // (~30 ns per watched call in all). Inline: every communication node's
  // run watches once.
  void start(std::string label);
  void start(const Node& node) {
    node_.store(&node, std::memory_order_relaxed);
    call_.store(nullptr, std::memory_order_relaxed);
    start_ns_.store(now_ns(), std::memory_order_release);
  }
  void stop() { start_ns_.store(0, std::memory_order_release); }
  // Whether a call is watched now.
  bool watching() const {
    return start_ns_.load(std::memory_order_relaxed) != 0;
  }
  // Watches MPI call `call` of `n` items, unless a call is watched already
  // (a node's watch covers it); returns whether it started a watch.
  bool start_call(const char* call, int64_t n) {
    if (watching()) return false;
    node_.store(nullptr, std::memory_order_relaxed);
    call_.store(call, std::memory_order_relaxed);
    call_count_.store(n, std::memory_order_relaxed);
    start_ns_.store(now_ns(), std::memory_order_release);
    return true;
  }

  // The peers a halo exchange still waits for, for the message: slot
  // `slot` (< kPeerSlots) holds a rank of the communicator, -1 for none.
  static constexpr int kPeerSlots = 8;
  void set_peer(int slot, int rank) { peers_[slot].store(rank); }

  // The watched call: the node (or label), its communicator and missing
  // peers.
  std::string describe() const;

  // Catches SIGTERM (unless the program handles it) so that, when mpirun
  // stops the job, each rank first reports what it was waiting for (the
  // node, and the peers a halo exchange still misses) and then dies of the
  // signal. Called once, for the world.
  static void install_stop_report();
  // Undoes it when the world's watchdog ends (a signal caught meanwhile is
  // raised again).
  static void remove_stop_report();

  // Ends the process when the watched call is past the deadline, or when
  // mpirun's stop signal was caught; called by the watchdog thread.
  void check();

 private:
  const std::string comm_name_;
  const int world_rank_;
  double deadline_seconds_ = 0.0;
  // 0 when no call is watched.
  std::atomic<int64_t> start_ns_{0};
  std::mutex mutex_;  // guards label_ (and check())
  std::string label_;
  std::atomic<const Node*> node_{nullptr};
  std::atomic<const char*> call_{nullptr};
  std::atomic<int64_t> call_count_{0};
  // Set without locking, as a message completes.
  std::atomic<int> peers_[kPeerSlots] = {-1, -1, -1, -1, -1, -1, -1, -1};
  // When the watchdog thread first saw mpirun's stop signal (0: not yet).
  int64_t stop_seen_ns_ = 0;
};

// Watches the calls made while it lives under `label`.
class LabelWatch final {
 public:
  LabelWatch(Watchdog& watchdog, std::string label) : watchdog_(watchdog) {
    watchdog_.start(std::move(label));
  }
  ~LabelWatch() { watchdog_.stop(); }
  LabelWatch(const LabelWatch&) = delete;
  LabelWatch& operator=(const LabelWatch&) = delete;

 private:
  Watchdog& watchdog_;
};

// Watches one MPI call made outside any node's watch (the optimizer's
// reductions, a program's own calls), naming the call and its size.
class CallWatch final {
 public:
  CallWatch(Watchdog& watchdog, const char* call, int64_t n)
      : watchdog_(watchdog), own_(watchdog.start_call(call, n)) {}
  ~CallWatch() {
    if (own_) watchdog_.stop();
  }
  CallWatch(const CallWatch&) = delete;
  CallWatch& operator=(const CallWatch&) = delete;

 private:
  Watchdog& watchdog_;
  bool own_;
};

}  // namespace adgraph::mpi_detail
