#include "mpi_ops/communicator.h"

#include <mpi.h>
#include <omp.h>
#include <sched.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <thread>
#include <utility>

#include "core/check.h"
#include "core/error.h"
#include "core/op.h"

namespace adgraph {
namespace {

constexpr int kDeadlineExitCode = 124;

// MPI counts are int; adgraph tensors may be larger. Communication of more
// than INT_MAX doubles at once is not supported and is a programming error.
int count_of(int64_t n) {
  ADGRAPH_CHECK(n >= 0 && n <= INT_MAX) << "message of " << n << " doubles";
  return static_cast<int>(n);
}

void check_mpi(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  std::fprintf(stderr, "adgraph: %s failed: %s\n", call, text);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
      return MPI_SUM;
    case ReduceOp::kMax:
      return MPI_MAX;
    case ReduceOp::kMin:
      return MPI_MIN;
    case ReduceOp::kProd:
      return MPI_PROD;
  }
  return MPI_SUM;
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// FNV-1a: a hash that is the same in every process.
uint64_t fingerprint(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

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

struct Communicator::PendingSend {
  std::vector<double> buffer;
  MPI_Request request = MPI_REQUEST_NULL;
};

namespace {

// OpenMP threads per rank when the user did not choose (OMP_NUM_THREADS):
// no more than the CPUs this rank may run on, and no more than its share of
// the node's cores. Oversubscribed threads spin in OpenMP barriers and
// starve the ranks that must progress their messages.
void size_openmp_threads() {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  MPI_Comm node;
  MPI_Comm_split_type(
      MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_ranks = 1;
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  cpu_set_t mask;
  int allowed = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0)
    allowed = CPU_COUNT(&mask);
  const int cores =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  omp_set_num_threads(
      std::max(1, std::min(allowed, cores / std::max(1, local_ranks))));
}

}  // namespace

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) return;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  owns_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    owns_ = false;
    throw Error("MPI does not provide MPI_THREAD_SERIALIZED");
  }
  size_openmp_threads();
}

MpiEnvironment::~MpiEnvironment() {
  if (!owns_) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

std::shared_ptr<Communicator> Communicator::world() {
  static std::shared_ptr<Communicator> world = [] {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      throw Error(
          "communication nodes need MPI: create an adgraph::MpiEnvironment in "
          "main()");
    }
    return std::shared_ptr<Communicator>(new Communicator());
  }();
  return world;
}

Communicator::Communicator() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  deadline_seconds_ = deadline_from_environment();
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    watch_stop_ = true;
  }
  watch_wakeup_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
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
                                std::to_string(node->communication_index) + ")";
      std::fprintf(
          stderr,
          "adgraph: rank %d: communication deadline of %g s exceeded in %s\n",
          rank_,
          deadline_seconds_,
          label.c_str());
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

void Communicator::allreduce(const double* in,
                             double* out,
                             int64_t n,
                             ReduceOp op) {
  const void* send = in == out ? MPI_IN_PLACE : in;
  check_mpi(MPI_Allreduce(
                send, out, count_of(n), MPI_DOUBLE, mpi_op(op), MPI_COMM_WORLD),
            "MPI_Allreduce");
}

void Communicator::reduce_sum(const double* in,
                              double* out,
                              int64_t n,
                              int root) {
  check_mpi(
      MPI_Reduce(
          in, out, count_of(n), MPI_DOUBLE, MPI_SUM, root, MPI_COMM_WORLD),
      "MPI_Reduce");
}

void Communicator::bcast(double* data, int64_t n, int root) {
  check_mpi(MPI_Bcast(data, count_of(n), MPI_DOUBLE, root, MPI_COMM_WORLD),
            "MPI_Bcast");
}

std::string Communicator::broadcast(const std::string& text, int root) {
  int64_t length = static_cast<int64_t>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT64_T, root, MPI_COMM_WORLD),
            "MPI_Bcast");
  std::string out = rank_ == root ? text : std::string(length, '\0');
  check_mpi(
      MPI_Bcast(out.data(), count_of(length), MPI_CHAR, root, MPI_COMM_WORLD),
      "MPI_Bcast");
  return out;
}

void Communicator::gather(const double* in, double* out, int64_t n, int root) {
  check_mpi(MPI_Gather(in,
                       count_of(n),
                       MPI_DOUBLE,
                       out,
                       count_of(n),
                       MPI_DOUBLE,
                       root,
                       MPI_COMM_WORLD),
            "MPI_Gather");
}

void Communicator::allgather(const double* in, double* out, int64_t n) {
  check_mpi(MPI_Allgather(in,
                          count_of(n),
                          MPI_DOUBLE,
                          out,
                          count_of(n),
                          MPI_DOUBLE,
                          MPI_COMM_WORLD),
            "MPI_Allgather");
}

void Communicator::scatter(const double* in, double* out, int64_t n, int root) {
  check_mpi(MPI_Scatter(in,
                        count_of(n),
                        MPI_DOUBLE,
                        out,
                        count_of(n),
                        MPI_DOUBLE,
                        root,
                        MPI_COMM_WORLD),
            "MPI_Scatter");
}

void Communicator::reduce_scatter(const double* in, double* out, int64_t n) {
  check_mpi(MPI_Reduce_scatter_block(
                in, out, count_of(n), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD),
            "MPI_Reduce_scatter_block");
}

void Communicator::alltoall(const double* in, double* out, int64_t n) {
  check_mpi(MPI_Alltoall(in,
                         count_of(n),
                         MPI_DOUBLE,
                         out,
                         count_of(n),
                         MPI_DOUBLE,
                         MPI_COMM_WORLD),
            "MPI_Alltoall");
}

void Communicator::send(const double* data, int64_t n, int dest, int tag) {
  auto pending = std::make_unique<PendingSend>();
  pending->buffer.assign(data, data + n);
  check_mpi(MPI_Isend(pending->buffer.data(),
                      count_of(n),
                      MPI_DOUBLE,
                      dest,
                      tag,
                      MPI_COMM_WORLD,
                      &pending->request),
            "MPI_Isend");
  pending_.push_back(std::move(pending));
}

void Communicator::recv(double* data, int64_t n, int src, int tag) {
  MPI_Status status;
  check_mpi(
      MPI_Recv(
          data, count_of(n), MPI_DOUBLE, src, tag, MPI_COMM_WORLD, &status),
      "MPI_Recv");
  int received = 0;
  MPI_Get_count(&status, MPI_DOUBLE, &received);
  if (received != n) {
    abort("received " + std::to_string(received) + " doubles from rank " +
          std::to_string(src) + " (tag " + std::to_string(tag) +
          "), expected " + std::to_string(n));
  }
}

void Communicator::halo_exchange(const HaloNeighbours& neighbours,
                                 const double* const send[4],
                                 double* const recv[4],
                                 const int64_t counts[4],
                                 int tag) {
  const int peer[4] = {
      neighbours.left, neighbours.right, neighbours.up, neighbours.down};
  // What I send towards direction k arrives at that neighbour from the
  // opposite direction; the tag names the receiving side's direction.
  const int opposite[4] = {1, 0, 3, 2};
  MPI_Request requests[8];
  int n_requests = 0;
  for (int k = 0; k < 4; ++k) {
    if (peer[k] < 0) continue;
    check_mpi(MPI_Irecv(recv[k],
                        count_of(counts[k]),
                        MPI_DOUBLE,
                        peer[k],
                        tag + k,
                        MPI_COMM_WORLD,
                        &requests[n_requests++]),
              "MPI_Irecv");
  }
  for (int k = 0; k < 4; ++k) {
    if (peer[k] < 0) continue;
    check_mpi(MPI_Isend(send[k],
                        count_of(counts[k]),
                        MPI_DOUBLE,
                        peer[k],
                        tag + opposite[k],
                        MPI_COMM_WORLD,
                        &requests[n_requests++]),
              "MPI_Isend");
  }
  check_mpi(MPI_Waitall(n_requests, requests, MPI_STATUSES_IGNORE),
            "MPI_Waitall");
}

double Communicator::allreduce_sum(double value) {
  double out = 0;
  allreduce(&value, &out, 1, ReduceOp::kSum);
  return out;
}

double Communicator::allreduce_max(double value) {
  double out = 0;
  allreduce(&value, &out, 1, ReduceOp::kMax);
  return out;
}

void Communicator::check_same_sequence(
    const std::vector<std::string>& descriptors) {
  if (size_ == 1) return;
  struct Unwatch {
    Communicator* comm;
    ~Unwatch() { comm->stop_watch(); }
  } unwatch{this};
  start_watch("the cross-rank check of a new plan's " +
              std::to_string(descriptors.size()) + " collective(s), first " +
              descriptors.front());
  // [n, -n] under MAX gives the longest and shortest sequence.
  int64_t counts[2] = {static_cast<int64_t>(descriptors.size()),
                       -static_cast<int64_t>(descriptors.size())};
  check_mpi(MPI_Allreduce(
                MPI_IN_PLACE, counts, 2, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD),
            "MPI_Allreduce");
  const int64_t longest = counts[0], shortest = -counts[1];
  // [h, ~h] under MAX gives the largest and (complemented) smallest hash.
  std::vector<uint64_t> hashes(2 * shortest);
  for (int64_t i = 0; i < shortest; ++i) {
    hashes[2 * i] = fingerprint(descriptors[i]);
    hashes[2 * i + 1] = ~hashes[2 * i];
  }
  check_mpi(MPI_Allreduce(MPI_IN_PLACE,
                          hashes.data(),
                          count_of(2 * shortest),
                          MPI_UINT64_T,
                          MPI_MAX,
                          MPI_COMM_WORLD),
            "MPI_Allreduce");
  int64_t first = shortest == longest ? -1 : shortest;
  for (int64_t i = 0; i < shortest; ++i) {
    if (hashes[2 * i] != ~hashes[2 * i + 1]) {
      first = i;
      break;
    }
  }
  if (first < 0) return;

  // Every rank learns every rank's entry at `first`, so all raise one message.
  const std::string mine = first < static_cast<int64_t>(descriptors.size())
                               ? descriptors[first]
                               : std::string("no further collective");
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size_), offsets(size_);
  check_mpi(
      MPI_Allgather(
          &length, 1, MPI_INT, lengths.data(), 1, MPI_INT, MPI_COMM_WORLD),
      "MPI_Allgather");
  int total = 0;
  for (int r = 0; r < size_; ++r) offsets[r] = total, total += lengths[r];
  std::string all(total, '\0');
  check_mpi(MPI_Allgatherv(mine.data(),
                           length,
                           MPI_CHAR,
                           all.data(),
                           lengths.data(),
                           offsets.data(),
                           MPI_CHAR,
                           MPI_COMM_WORLD),
            "MPI_Allgatherv");
  std::string message = "ranks would run different collectives: collective #" +
                        std::to_string(first) + " is";
  for (int r = 0; r < size_; ++r) {
    message += std::string(r == 0 ? " " : "; ") + "on rank " +
               std::to_string(r) + " " + all.substr(offsets[r], lengths[r]);
  }
  throw RunError(message);
}

void Communicator::finish_run() {
  if (pending_.empty()) return;
  start_watch("the completion of " + std::to_string(pending_.size()) +
              " outstanding send(s) at the end of the run");
  for (auto& pending : pending_) {
    check_mpi(MPI_Wait(&pending->request, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  pending_.clear();
  stop_watch();
}

std::size_t Communicator::pending_sends() const { return pending_.size(); }

void Communicator::complete_sends_from(std::size_t first) {
  if (pending_.size() <= first) return;
  start_watch("the completion of " + std::to_string(pending_.size() - first) +
              " send(s) of a loop step");
  for (std::size_t k = first; k < pending_.size(); ++k) {
    check_mpi(MPI_Wait(&pending_[k]->request, MPI_STATUS_IGNORE), "MPI_Wait");
  }
  pending_.resize(first);
  stop_watch();
}

void Communicator::abort(const std::string& message, int code) {
  std::fprintf(stderr, "adgraph: rank %d: %s\n", rank_, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

Communicator& communicator_of(const Graph& graph) {
  if (graph.comm() == nullptr) graph.set_comm(Communicator::world());
  auto* comm = dynamic_cast<Communicator*>(graph.comm());
  if (comm == nullptr) {
    throw GraphError("this graph's communicator is not an MPI communicator");
  }
  return *comm;
}

}  // namespace adgraph
