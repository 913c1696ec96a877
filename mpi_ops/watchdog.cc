// The communication deadline: a helper thread that ends the process with a
// message naming the node when one communication call waits too long, or
// reports the call when mpirun stops the job.
#include "mpi_ops/watchdog.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "core/error.h"

namespace adgraph::mpi_detail {
namespace {

constexpr int kDeadlineExitCode = 124;

// The peers a point-to-point node (or the requests a wait completes) talks
// to, for the deadline message: ", peer rank 3" or "" for a collective.
std::string peers_of(const Node& node) {
  std::vector<const Node*> ends = {&node};
  if (node.op_name() == "mpi_wait" || node.op_name() == "mpi_waitall") {
    ends.clear();
    for (const Value& request : node.inputs) ends.push_back(&request.node());
  }
  std::string out;
  for (const Node* n : ends) {
    for (const char* key : {"src", "dest"}) {
      if (!n->attrs.contains(key)) continue;
      out += (out.empty() ? ", peer rank " : ", ") +
             std::to_string(n->attrs.at(key).get<int64_t>()) + " (" + key +
             " of \"" + n->name + "\")";
    }
  }
  return out;
}

// The environment's deadline: $ADGRAPH_COMM_DEADLINE, else 0.
double deadline_from_environment() {
  const char* text = std::getenv("ADGRAPH_COMM_DEADLINE");
  if (text == nullptr || *text == '\0') return 0.0;
  char* end = nullptr;
  const double seconds = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(seconds >= 0)) {
    throw OptionsError(
        "ADGRAPH_COMM_DEADLINE must be a number of seconds >= 0, got \"" +
        std::string(text) + "\"");
  }
  return seconds;
}

}  // namespace

void Watchdog::set_deadline(double seconds) {
  if (!(seconds >= 0)) {
    throw OptionsError("deadline must be >= 0 seconds (0 disables it)",
                       {},
                       {},
                       "deadline_seconds");
  }
  deadline_seconds_ = seconds;
}

namespace {

// The signal mpirun stops a job with (SIGTERM), once caught; see
// Watchdog::install_stop_report.
std::atomic<int> stop_signal{0};

extern "C" void remember_stop_signal(int signal) { stop_signal.store(signal); }

}  // namespace

void Watchdog::remove_stop_report() {
  // Without the world's watchdog nobody would act on a caught signal.
  struct sigaction current {};
  if (sigaction(SIGTERM, nullptr, &current) != 0) return;
  if (current.sa_handler != remember_stop_signal) return;
  std::signal(SIGTERM, SIG_DFL);
  if (const int signal = stop_signal.load(); signal != 0) std::raise(signal);
}

void Watchdog::install_stop_report() {
  struct sigaction current {};
  if (sigaction(SIGTERM, nullptr, &current) != 0) return;
  if (current.sa_handler != SIG_DFL) return;  // the program has its own
  struct sigaction report {};
  report.sa_handler = remember_stop_signal;
  sigemptyset(&report.sa_mask);
  sigaction(SIGTERM, &report, nullptr);
}

std::string Watchdog::describe() const {
  // Composed only when needed: watching a node costs two stores.
  const Node* node = node_.load();
  const char* call = call_.load();
  std::string label = label_;
  if (node != nullptr) {
    label = "node \"" + node->name + "\" (" + node->op_name() +
            ", communication #" + std::to_string(node->communication_index) +
            peers_of(*node) + ")";
  } else if (call != nullptr) {
    label = std::string(call) + " (n = " + std::to_string(call_count_.load()) +
            ") outside any graph node (the optimizer's or the program's own "
            "call)";
  }
  std::string out =
      label + (comm_name_ == "world" ? "" : " on communicator " + comm_name_);
  std::vector<int> peers;
  for (const auto& peer : peers_) {
    const int p = peer.load();
    if (p >= 0 && std::find(peers.begin(), peers.end(), p) == peers.end())
      peers.push_back(p);
  }
  std::string missing;
  for (int p : peers)
    missing += (missing.empty() ? "" : ", ") + std::to_string(p);
  if (!missing.empty()) {
    out += "; no message yet from or to rank " + missing +
           " (unreachable, or stopped)";
  }
  return out;
}

namespace {

// The process's one watchdog thread and the communicators it watches. A
// thread per communicator would put thousands of threads on a rank that
// splits thousands of communicators; one thread looks at all of them every
// 50 ms. Never destroyed: communicators in static storage (the world)
// unregister during exit, after any other static could have gone.
struct WatchRegistry {
  std::mutex mutex;
  std::condition_variable wakeup;
  std::vector<Watchdog*> watched;
  std::thread thread;
  // Bumped whenever the thread is told to end, so that a thread started
  // later is not told the same.
  int64_t generation = 0;
};

WatchRegistry& watch_registry() {
  static auto* registry = new WatchRegistry;
  return *registry;
}

}  // namespace

Watchdog::Watchdog(std::string comm_name, int world_rank)
    : comm_name_(std::move(comm_name)),
      world_rank_(world_rank),
      deadline_seconds_(deadline_from_environment()) {
  WatchRegistry& r = watch_registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  r.watched.push_back(this);
  if (r.thread.joinable()) return;
  r.thread = std::thread([&r, mine = r.generation] {
    std::unique_lock<std::mutex> held(r.mutex);
    while (r.generation == mine) {
      r.wakeup.wait_for(held, std::chrono::milliseconds(50));
      if (r.generation != mine) break;
      for (Watchdog* w : r.watched) w->check();
    }
  });
}

Watchdog::~Watchdog() {
  WatchRegistry& r = watch_registry();
  std::thread ending;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    r.watched.erase(std::remove(r.watched.begin(), r.watched.end(), this),
                    r.watched.end());
    if (r.watched.empty() && r.thread.joinable()) {
      ++r.generation;
      ending = std::move(r.thread);
    }
  }
  r.wakeup.notify_all();
  if (ending.joinable()) ending.join();
}

void Watchdog::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  const int64_t start = start_ns_.load(std::memory_order_acquire);
  if (const int signal = stop_signal.load(); signal != 0) {
    // mpirun stops the job (another rank failed, or a host was lost): say
    // what this rank was waiting for, then die of the signal. The world's
    // watch also ends a rank that was not communicating, after giving the
    // others a moment to report.
    if (stop_seen_ns_ == 0) stop_seen_ns_ = now_ns();
    const bool late = now_ns() - stop_seen_ns_ > 200'000'000;
    if (start == 0 && !(comm_name_ == "world" && late)) return;
    if (start != 0) {
      std::fprintf(
          stderr,
          "adgraph: rank %d: stopped by signal %d after %.1f s in %s\n",
          world_rank_,
          signal,
          (now_ns() - start) * 1e-9,
          describe().c_str());
      std::fflush(stderr);
    }
    std::signal(signal, SIG_DFL);
    std::raise(signal);
    return;
  }
  if (start == 0 || deadline_seconds_ <= 0) return;
  if (now_ns() - start > static_cast<int64_t>(deadline_seconds_ * 1e9)) {
    std::fprintf(
        stderr,
        "adgraph: rank %d: communication deadline of %g s exceeded in %s\n",
        world_rank_,
        deadline_seconds_,
        describe().c_str());
    std::fflush(stderr);
    std::_Exit(kDeadlineExitCode);
  }
}

void Watchdog::start(std::string label) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    label_ = std::move(label);
  }
  node_.store(nullptr, std::memory_order_relaxed);
  call_.store(nullptr, std::memory_order_relaxed);
  start_ns_.store(now_ns(), std::memory_order_release);
}

}  // namespace adgraph::mpi_detail
