// The communication deadline: a helper thread that ends the process with a
// message naming the node when one communication call waits too long.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "mpi_ops/communicator.h"

namespace adgraph {
namespace {

constexpr int kDeadlineExitCode = 124;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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

}  // namespace

double Communicator::deadline_from_environment() {
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

void Communicator::set_deadline(double seconds) {
  if (!(seconds >= 0)) {
    throw OptionsError("deadline must be >= 0 seconds (0 disables it)",
                       {},
                       {},
                       "deadline_seconds");
  }
  deadline_seconds_ = seconds;
}

void Communicator::watchdog_loop() {
  std::unique_lock<std::mutex> lock(watch_mutex_);
  while (!watch_stop_) {
    watch_wakeup_.wait_for(lock, std::chrono::milliseconds(50));
    const int64_t start = watch_start_ns_.load();
    if (start == 0 || deadline_seconds_ <= 0) continue;
    if (now_ns() - start > static_cast<int64_t>(deadline_seconds_ * 1e9)) {
      // The label is composed only now: watching a node costs two stores.
      const Node* node = watch_node_.load();
      const std::string label =
          node == nullptr ? watch_label_
                          : "node \"" + node->name + "\" (" + node->op_name() +
                                ", communication #" +
                                std::to_string(node->communication_index) +
                                peers_of(*node) + ")";
      const std::string on =
          name_ == "world" ? "" : " on communicator " + name_;
      std::fprintf(
          stderr,
          "adgraph: rank %d: communication deadline of %g s exceeded in %s%s\n",
          world_rank_,
          deadline_seconds_,
          label.c_str(),
          on.c_str());
      std::fflush(stderr);
      std::_Exit(kDeadlineExitCode);
    }
  }
}

void Communicator::start_watch(std::string label) {
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    watch_label_ = std::move(label);
  }
  watch_node_.store(nullptr);
  watch_start_ns_.store(now_ns());
}

void Communicator::start_watch(const Node& node) {
  watch_node_.store(&node);
  watch_start_ns_.store(now_ns());
}

void Communicator::stop_watch() { watch_start_ns_.store(0); }

Communicator::Watch::Watch(Communicator& comm, const Node& node) : comm_(comm) {
  comm_.start_watch(node);
}

Communicator::Watch::~Watch() { comm_.stop_watch(); }

}  // namespace adgraph
