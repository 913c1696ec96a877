#include "core/exec/plan_checks.h"

#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "core/comm_context.h"
#include "core/error.h"
#include "core/loops/loop.h"
#include "core/op.h"

namespace adgraph {

namespace {

// This process's VmSize and VmData (/proc/self/status), in bytes; 0 when
// unknown.
std::pair<std::size_t, std::size_t> process_sizes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  std::size_t vm_size = 0, vm_data = 0;
  while (std::getline(status, line)) {
    std::size_t* into = line.rfind("VmSize:", 0) == 0   ? &vm_size
                        : line.rfind("VmData:", 0) == 0 ? &vm_data
                                                        : nullptr;
    if (into != nullptr)
      *into = std::strtoull(line.c_str() + 7, nullptr, 10) * 1024;
  }
  return {vm_size, vm_data};
}

// What RLIMIT_AS and RLIMIT_DATA (`ulimit -v`, `ulimit -d`) still allow
// this process to map: their soft limits less what it holds now; SIZE_MAX
// when neither is set. Allocations past them fail (bad_alloc) whatever
// MemAvailable says.
std::size_t process_limit_room() {
  std::size_t room = std::numeric_limits<std::size_t>::max();
  rlimit as{}, data{};
  const bool has_as =
      getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY;
  const bool has_data =
      getrlimit(RLIMIT_DATA, &data) == 0 && data.rlim_cur != RLIM_INFINITY;
  if (!has_as && !has_data) return room;
  const auto [vm_size, vm_data] = process_sizes();
  auto left = [](rlim_t limit, std::size_t used) -> std::size_t {
    const auto cap = static_cast<std::size_t>(limit);
    return cap > used ? cap - used : 0;
  };
  if (has_as) room = std::min(room, left(as.rlim_cur, vm_size));
  if (has_data) room = std::min(room, left(data.rlim_cur, vm_data));
  return room;
}

}  // namespace

std::size_t memory_available() {
  if (const char* text = std::getenv("ADGRAPH_MEMORY_LIMIT")) {
    char* end = nullptr;
    const double value = std::strtod(text, &end);
    double scale = 1;
    if (end != text && *end != '\0' && end[1] == '\0') {
      scale = *end == 'K'   ? 0x1p10
              : *end == 'M' ? 0x1p20
              : *end == 'G' ? 0x1p30
                            : 0;
      ++end;
    }
    if (end == text || *end != '\0' || scale == 0 || !(value >= 0) ||
        value * scale >= 0x1p63) {
      throw OptionsError(
          "ADGRAPH_MEMORY_LIMIT must be a number of bytes, optionally with a "
          "K, M or G suffix, got \"" +
          std::string(text) + "\"");
    }
    return static_cast<std::size_t>(value * scale);
  }
  std::size_t available = std::numeric_limits<std::size_t>::max();
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::size_t kib = 0;
  std::string unit;
  while (meminfo >> key >> kib >> unit) {
    if (key == "MemAvailable:") {
      available = kib * 1024;
      break;
    }
  }
  return std::min(available, process_limit_room());
}

double max_loop_steps() {
  const char* text = std::getenv("ADGRAPH_MAX_LOOP_STEPS");
  if (text == nullptr || *text == '\0') return kDefaultMaxLoopSteps;
  char* end = nullptr;
  const double value = std::strtod(text, &end);
  if (end == text || *end != '\0' || !(value >= 1)) {
    throw OptionsError(
        "ADGRAPH_MAX_LOOP_STEPS must be a number of loop body steps >= 1 (or "
        "\"inf\"), got \"" +
        std::string(text) + "\"");
  }
  return value;
}

std::string byte_string(std::size_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) value /= 1024, ++unit;
  char text[32];
  std::snprintf(
      text, sizeof text, unit == 0 ? "%.0f %s" : "%.3g %s", value, units[unit]);
  return text;
}

namespace {

struct Event {
  enum Kind { kSend, kRecv, kWait, kBarrier } kind = kBarrier;
  const Node* node = nullptr;
  const Node* loop = nullptr;  // the loop node whose body holds `node`
  // The sub-communicator the node runs on (CommContext::group_of knows its
  // groups); null for the world.
  const CommContext* comm = nullptr;
  int peer = 0;  // a rank of `comm`
  int64_t tag = 0;
  int64_t size = 0;
  bool blocking = false;
  // kWait: the nonblocking receives (request nodes) it completes.
  std::vector<const Node*> receives;
};

struct Message {
  const Node* node;
  int64_t size;
};

// One direction between two ranks for one tag: matched in posting order.
struct Channel {
  std::vector<Message> sends;
  std::vector<Message> recvs;
};

// communicator (null: the world), from, to (world ranks), tag
using ChannelKey = std::tuple<const CommContext*, int, int, int64_t>;

// The world ranks of rank r's group on e's communicator.
const std::vector<int>* group(const Event& e, int r) {
  return e.comm == nullptr ? nullptr : e.comm->group_of(r);
}

// The world rank that world rank r's event e names as its peer; -1 when
// r's group on e's communicator has no such rank.
int world_peer(const Event& e, int r) {
  const std::vector<int>* members = group(e, r);
  if (members == nullptr) return e.peer;
  return e.peer >= 0 && e.peer < static_cast<int>(members->size())
             ? (*members)[e.peer]
             : -1;
}

// World rank r in messages: "rank r", or "world rank r" where the node's
// own ranks are those of a sub-communicator.
std::string world_name(const Event& e, int r) {
  return (e.comm == nullptr ? "rank " : "world rank ") + std::to_string(r);
}

std::string label(const Node& n) { return n.op_name() + " \"" + n.name + "\""; }

// Appends the events of `nodes` (communication nodes in run order, in the
// body of `loop` when not null). A loop node is a barrier, then one step of
// each body it runs between barriers: a body's step completes its own
// sends before the next (BodyRunner), so one step pairs or none does.
void add_events(const std::vector<const Node*>& nodes,
                const CommContext& world,
                const Node* loop,
                std::vector<Event>& events) {
  for (const Node* n : nodes) {
    const CommContext* on =
        n->comm && n->comm.get() != &world ? n->comm.get() : nullptr;
    if (on != nullptr && on->group_of(0) == nullptr) continue;
    Event e;
    e.node = n;
    e.loop = loop;
    e.comm = on;
    if (n->loop) {
      events.push_back(e);
      const LoopSpec& spec = *n->loop;
      if (spec.trips == 0) continue;
      std::vector<const LoopBody*> bodies = {&spec.forward};
      if (spec.kind == LoopSpec::Kind::kAdjoint)
        bodies.push_back(&spec.reverse);
      for (const LoopBody* body : bodies) {
        if (!body->graph) continue;
        const Graph& g = *body->graph;
        std::vector<const Node*> inner;
        for (int id = 0; id < g.num_nodes(); ++id)
          if (g.node(id).communication) inner.push_back(&g.node(id));
        add_events(inner, world, n, events);
        events.push_back(e);
      }
      continue;
    }
    for (const Value& in : n->inputs) {
      const Node& request = in.node();
      if (request.op->request && request.attrs.contains("src"))
        e.receives.push_back(&request);
    }
    if (n->every_rank) {
      e.kind = Event::kBarrier;
    } else if (n->attrs.contains("dest")) {
      e.kind = Event::kSend;
      e.peer = static_cast<int>(n->attrs.at("dest").get<int64_t>());
      e.size = num_elements(n->inputs.at(0).shape());
    } else if (n->attrs.contains("src")) {
      e.kind = Event::kRecv;
      e.peer = static_cast<int>(n->attrs.at("src").get<int64_t>());
      // A request's payload is the node it completes into; a receive's is
      // its output.
      e.size = num_elements(n->op->request ? n->inputs.at(0).shape()
                                           : n->output_shapes.at(0));
      e.blocking = !n->op->request;
    } else if (!e.receives.empty()) {
      e.kind = Event::kWait;  // blocks until each receive is matched
    } else {
      continue;
    }
    if (e.kind != Event::kBarrier && n->attrs.contains("tag"))
      e.tag = n->attrs.at("tag").get<int64_t>();
    events.push_back(e);
  }
}

[[noreturn]] void fail(const Event& e, const char* field, std::string detail) {
  const std::string where =
      e.loop ? "in the body of loop node \"" + e.loop->name + "\"; " : "";
  throw RunError(
      detail + " (" + where + "every rank runs every node of this graph)",
      e.node->name,
      e.node->op_name(),
      field);
}

// Every rank runs the same events; this plays them out, rank by rank, as
// far as each can go (a blocking receive waits for its send, a wait for
// its receives' sends, a barrier for every member), then reports the
// first rank that could not finish and any message that is not matched
// or whose size differs from its partner's.
class PairingSimulation {
 public:
  PairingSimulation(std::vector<Event> events, int ranks)
      : events_(std::move(events)), ranks_(ranks), pc_(ranks, 0) {
    for (std::size_t i = 0; i < events_.size(); ++i)
      event_of_[events_[i].node] = i;
  }

  void run() {
    for (bool progress = true; progress;) {
      progress = false;
      for (int r = 0; r < ranks_; ++r) progress = advance(r) || progress;
    }
  }
  void report_stuck();
  void check_messages();

 private:
  // Runs rank r's events as far as they go; true if any ran.
  bool advance(int r);
  // Whether every rank of e's group on rank r has reached it.
  bool all_there(const Event& e, int r) const;
  // The receive a rank's wait is still blocked on (null: none).
  const Node* blocked_on(const Event& wait, int r);
  void check_message(const Event& e, const ChannelKey& key, const Channel& c);

  const std::vector<Event> events_;
  const int ranks_;
  std::vector<std::size_t> pc_;  // each rank's next event
  std::map<const Node*, std::size_t> event_of_;
  std::map<ChannelKey, Channel> channels_;
  // A nonblocking receive posted by a rank: its channel and its place
  // there.
  std::map<std::pair<int, const Node*>, std::pair<ChannelKey, std::size_t>>
      posted_;
};

const Node* PairingSimulation::blocked_on(const Event& wait, int r) {
  for (const Node* request : wait.receives) {
    auto it = posted_.find({r, request});
    if (it == posted_.end()) continue;  // not simulated (its communicator)
    if (channels_[it->second.first].sends.size() <= it->second.second)
      return request;
  }
  return nullptr;
}

bool PairingSimulation::all_there(const Event& e, int r) const {
  bool there = true;
  if (const std::vector<int>* members = group(e, r)) {
    for (int s : *members) there = there && pc_[s] >= pc_[r];
  } else {
    for (int s = 0; s < ranks_; ++s) there = there && pc_[s] >= pc_[r];
  }
  return there;
}

bool PairingSimulation::advance(int r) {
  bool progress = false;
  while (pc_[r] < events_.size()) {
    const Event& e = events_[pc_[r]];
    if (e.kind == Event::kWait) {
      if (blocked_on(e, r) != nullptr) break;
      ++pc_[r];
      progress = true;
      continue;
    }
    const int peer = world_peer(e, r);
    if (e.kind != Event::kBarrier && peer < 0) {
      fail(e,
           e.kind == Event::kSend ? "dest" : "src",
           "on world rank " + std::to_string(r) + " its peer " +
               std::to_string(e.peer) +
               " is not a rank of its communicator, which has " +
               std::to_string(group(e, r)->size()) + " rank(s) there");
    }
    if (e.kind == Event::kBarrier) {
      if (!all_there(e, r)) break;
    } else if (e.kind == Event::kSend) {
      channels_[{e.comm, r, peer, e.tag}].sends.push_back({e.node, e.size});
    } else {
      Channel& c = channels_[{e.comm, peer, r, e.tag}];
      if (e.blocking && c.sends.size() <= c.recvs.size()) break;
      if (!e.blocking)
        posted_[{r, e.node}] = {{e.comm, peer, r, e.tag}, c.recvs.size()};
      c.recvs.push_back({e.node, e.size});
    }
    ++pc_[r];
    progress = true;
  }
  return progress;
}

void PairingSimulation::report_stuck() {
  for (int r = 0; r < ranks_; ++r) {
    if (pc_[r] == events_.size()) continue;
    const Event* stuck = &events_[pc_[r]];
    std::string waited;
    // The receives on the channel before the stuck one.
    std::size_t before = 0;
    if (stuck->kind == Event::kWait) {
      waited = " (waited for by " + label(*stuck->node) + ")";
      const Node* receive = blocked_on(*stuck, r);
      before = posted_.at({r, receive}).second;
      stuck = &events_[event_of_.at(receive)];
    } else if (stuck->kind == Event::kRecv) {
      before = channels_[{stuck->comm, world_peer(*stuck, r), r, stuck->tag}]
                   .recvs.size();
    } else {
      continue;
    }
    const Event& e = *stuck;
    const int from = world_peer(e, r);
    int64_t sent = 0;
    for (const Event& f : events_) {
      sent += f.kind == Event::kSend && f.comm == e.comm && f.tag == e.tag &&
              world_peer(f, from) == r;
    }
    const std::string peer = e.comm == nullptr
                                 ? "rank " + std::to_string(from)
                                 : "rank " + std::to_string(e.peer) +
                                       " of its communicator (world rank " +
                                       std::to_string(from) + ")";
    fail(e,
         "src",
         "on " + world_name(e, r) + " it would wait forever" + waited +
             " for " + peer + " (tag " + std::to_string(e.tag) + "): " +
             (sent <= static_cast<int64_t>(before)
                  ? world_name(e, from) + " sends it only " +
                        std::to_string(sent) + " message(s) with that tag"
                  : world_name(e, from) +
                        " sends the message only after a receive of its "
                        "own that waits too (a cycle of receives)"));
  }
}

void PairingSimulation::check_message(const Event& e,
                                      const ChannelKey& key,
                                      const Channel& c) {
  const auto& [comm, from, to, tag] = key;
  const auto& own = e.kind == Event::kSend ? c.sends : c.recvs;
  const auto& other = e.kind == Event::kSend ? c.recvs : c.sends;
  for (std::size_t k = 0; k < own.size(); ++k) {
    if (own[k].node != e.node) continue;
    const std::string route = world_name(e, from) + " to " + world_name(e, to) +
                              " (tag " + std::to_string(tag) +
                              (comm ? ", on its communicator)" : ")");
    if (k >= other.size()) {
      fail(e,
           e.kind == Event::kSend ? "dest" : "src",
           "its message from " + route + " is never " +
               (e.kind == Event::kSend
                    ? "received: " + world_name(e, to) + " receives only "
                    : "sent: " + world_name(e, from) + " sends only ") +
               std::to_string(other.size()) + " such message(s)");
    }
    if (own[k].size != other[k].size) {
      const Message& send = e.kind == Event::kSend ? own[k] : other[k];
      const Message& recv = e.kind == Event::kSend ? other[k] : own[k];
      fail(e,
           e.kind == Event::kSend ? "dest" : "src",
           "the message from " + route + " carries " +
               std::to_string(send.size) + " value(s) (" + label(*send.node) +
               ") but " + label(*recv.node) + " expects " +
               std::to_string(recv.size));
    }
  }
}

void PairingSimulation::check_messages() {
  for (const Event& e : events_) {
    if (e.kind == Event::kBarrier || e.kind == Event::kWait) continue;
    for (const auto& [key, c] : channels_) {
      if (std::get<0>(key) != e.comm || std::get<3>(key) != e.tag) continue;
      check_message(e, key, c);
    }
  }
}

}  // namespace

void check_point_to_point_pairing(const std::vector<const Node*>& comm_nodes,
                                  const CommContext& world) {
  std::vector<Event> events;
  add_events(comm_nodes, world, nullptr, events);
  bool any = false;
  for (const Event& e : events) any = any || e.kind != Event::kBarrier;
  if (!any) return;
  PairingSimulation simulation(std::move(events), world.size());
  simulation.run();
  simulation.report_stuck();
  simulation.check_messages();
}

}  // namespace adgraph
