// The MPI environment and the communicator wrapper: the only code in adgraph
// that calls MPI.
//
// Deadline. Every communication call runs under a watch: when a deadline is
// set (CommOptions::deadline_seconds, or the environment variable
// ADGRAPH_COMM_DEADLINE in seconds) and a call waits longer, the process
// prints
//   adgraph: rank R: communication deadline of S s exceeded in node "n"
//   (op, communication #k)
// to stderr and exits with status 124, which makes mpirun end the job. The
// watch runs on a helper thread, so blocking MPI calls cost nothing extra.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/comm_context.h"
#include "core/graph.h"

namespace adgraph {

// Initialises MPI (MPI_THREAD_SERIALIZED: the ghost dependencies keep at most
// one MPI call in flight per process) and finalises it on destruction, if it
// initialised it. Create one in main() before any communication node runs.
// Unless OMP_NUM_THREADS is set, it also sizes OpenMP to
// min(CPUs this rank may use, cores / ranks on this node), at least 1, so
// ranks and threads never oversubscribe the cores.
// Throws adgraph::Error when MPI cannot provide the thread level.
class MpiEnvironment final {
 public:
  MpiEnvironment(int* argc, char*** argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

 private:
  bool owns_ = false;
};

enum class ReduceOp { kSum, kMax, kMin, kProd };

// Neighbour ranks of a patch; -1 where there is none.
struct HaloNeighbours {
  int left = -1, right = -1, up = -1, down = -1;
};

class Communicator final : public CommContext {
 public:
  // MPI_COMM_WORLD. Throws adgraph::Error when MPI is not initialised.
  static std::shared_ptr<Communicator> world();
  ~Communicator() override;

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  // Communication deadline in seconds; 0 disables it. Range: >= 0.
  // Default: $ADGRAPH_COMM_DEADLINE, else 0.
  void set_deadline(double seconds);
  double deadline() const { return deadline_seconds_; }

  // Marks the calls made while it lives as belonging to `node` (for the
  // deadline message). Kernels of communication ops hold one.
  class Watch final {
   public:
    Watch(Communicator& comm, const Node& node);
    ~Watch();
    Watch(const Watch&) = delete;
    Watch& operator=(const Watch&) = delete;

   private:
    Communicator& comm_;
  };

  // Collectives on n doubles; every rank calls them with the same n.
  void allreduce(const double* in, double* out, int64_t n, ReduceOp op);
  void reduce_sum(const double* in, double* out, int64_t n, int root);
  void bcast(double* data, int64_t n, int root);
  // `out` holds size()·n values (on the root only, for gather).
  void gather(const double* in, double* out, int64_t n, int root);
  void allgather(const double* in, double* out, int64_t n);
  // `in` holds size()·n values (on the root only, for scatter).
  void scatter(const double* in, double* out, int64_t n, int root);
  void reduce_scatter(const double* in, double* out, int64_t n);
  void alltoall(const double* in, double* out, int64_t n);

  // Root's string on every rank.
  std::string broadcast(const std::string& text, int root);

  // Point to point. send() copies the data and returns at once; the message
  // completes by the end of the run (finish_run). recv() blocks.
  void send(const double* data, int64_t n, int dest, int tag);
  void recv(double* data, int64_t n, int src, int tag);

  // Halo swap: non-blocking receives and sends with every existing
  // neighbour, then one wait. send[k]/recv[k] are ordered left, right, up,
  // down, each of `counts[k]` doubles. Receive buffers of missing
  // neighbours are left untouched.
  void halo_exchange(const HaloNeighbours& neighbours,
                     const double* const send[4],
                     double* const recv[4],
                     const int64_t counts[4],
                     int tag);

  // CommContext.
  double allreduce_sum(double value) override;
  double allreduce_max(double value) override;
  void check_same_sequence(
      const std::vector<std::string>& descriptors) override;
  void finish_run() override;
  std::size_t pending_sends() const override;
  void complete_sends_from(std::size_t first) override;

  // Prints `message` (prefixed with the rank) to stderr and aborts the whole
  // job. For failures only this rank can see.
  [[noreturn]] void abort(const std::string& message, int code = 1);

 private:
  Communicator();
  void watchdog_loop();
  // Watches a call described by `label`, or by the node being run.
  void start_watch(std::string label);
  void start_watch(const Node& node);
  void stop_watch();

  int rank_ = 0;
  int size_ = 1;
  double deadline_seconds_ = 0.0;

  struct PendingSend;
  std::vector<std::unique_ptr<PendingSend>> pending_;

  // Watchdog state: `watch_start_ns_` is 0 when no call is watched.
  std::atomic<int64_t> watch_start_ns_{0};
  std::mutex watch_mutex_;
  std::string watch_label_;
  std::atomic<const Node*> watch_node_{nullptr};
  std::condition_variable watch_wakeup_;
  bool watch_stop_ = false;
  std::thread watchdog_;
};

// The communicator bound to `graph`, binding MPI_COMM_WORLD on first use.
// Every communication op's shape rule calls it, so a graph knows its
// communicator as soon as it has a communication node.
Communicator& communicator_of(const Graph& graph);

}  // namespace adgraph
