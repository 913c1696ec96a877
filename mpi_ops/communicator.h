// The communicator: adgraph's CommContext over MPI. One interface over
// classes split by concern (internal to mpi_ops/): the watchdog
// (watchdog.h: the deadline and the stop report below), the request table
// (request_table.h: sends, nonblocking requests and the buffers kept for
// them) and the halo exchanger (halo_exchanger.h: data_exchange's swaps in
// flight). communicator.cc makes, splits and aborts communicators,
// mpi_calls.cc holds the typed MPI calls, sequence_check.cc the plan-time
// check; mpi_environment.h starts MPI. Only mpi_ops/ calls MPI.
//
// Deadline. Every communication call runs under a watch: when a deadline is
// set (CommOptions::deadline_seconds, or the environment variable
// ADGRAPH_COMM_DEADLINE in seconds) and a call waits longer, the process
// prints
//   adgraph: rank R: communication deadline of S s exceeded in node "n"
//   (op, communication #k)
// to stderr and exits with status 124, which makes mpirun end the job. The
// watch runs on one helper thread per process (whatever the number of
// communicators), so blocking MPI calls cost nothing extra.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/comm_context.h"
#include "core/graph.h"
#include "core/op.h"
#include "mpi_ops/mpi_environment.h"

namespace adgraph {

namespace mpi_detail {
class Watchdog;
class RequestTable;
class HaloExchanger;
}  // namespace mpi_detail

// Neighbour ranks of a patch; -1 where there is none.
struct HaloNeighbours {
  int left = -1, right = -1, up = -1, down = -1;
};

class Communicator final : public CommContext {
 public:
  // MPI_COMM_WORLD. Throws adgraph::Error when MPI is not initialised.
  static std::shared_ptr<Communicator> world();
  // A duplicate (MPI_Comm_dup, collective over it) of the communicator
  // whose Fortran handle is `handle` (MPI_Comm_c2f; mpi4py's Comm.py2f()),
  // named `name`: adgraph's messages on it can never match the caller's
  // own calls on the original, whatever their source and tag. It keeps the
  // environment's deadline (ADGRAPH_COMM_DEADLINE). group_of() is known
  // when it spans MPI_COMM_WORLD in world order. Throws adgraph::Error when
  // MPI is not initialised or the handle is MPI_COMM_NULL.
  static std::shared_ptr<Communicator> duplicate(int64_t handle,
                                                 std::string name);
  // This process alone (a duplicate of MPI_COMM_SELF, named "self"): for a
  // graph whose communication ops (mpi_total, say) should reduce over this
  // process's data only. Local: no other rank takes part. Throws
  // adgraph::Error when MPI is not initialised.
  static std::shared_ptr<Communicator> self();
  // This communicator's Fortran handle (for mpi4py's Comm.f2py); it stays
  // valid while this object lives.
  int64_t fortran_handle() const;
  ~Communicator() override;

  // Sub-communicators, made collectively by every rank of this one
  // (MPI_Comm_split) when a graph is built: the ranks that pass the same
  // `color` (>= 0), ordered by `key`, then by their rank here. They keep
  // this communicator's deadline. Throws OptionsError for a negative color.
  std::shared_ptr<Communicator> split(int color, int key);
  // On a rows x cols patch grid (rank = i·cols + j, as data_exchange): the
  // ranks of this rank's row, ordered by column, or of its column, ordered
  // by row. Throws OptionsError unless rows·cols is this size.
  std::shared_ptr<Communicator> row_communicator(int rows, int cols);
  std::shared_ptr<Communicator> column_communicator(int rows, int cols);
  // "world", or how it was split ("split(color 1) of world"); the same on
  // every member.
  const std::string& name() const { return name_; }
  // This process's rank in MPI_COMM_WORLD (for messages).
  int world_rank() const { return world_rank_; }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const std::vector<int>* group_of(int world_rank) const override;

  // Communication deadline in seconds; 0 disables it. Range: >= 0.
  // Default: $ADGRAPH_COMM_DEADLINE, else 0.
  void set_deadline(double seconds);
  double deadline() const;

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
  // allreduce and reduce_sum work in place when in == out.
  void allreduce(const double* in,
                 double* out,
                 int64_t n,
                 ReduceOp op) override;
  void reduce_sum(const double* in, double* out, int64_t n, int root);
  void bcast(double* data, int64_t n, int root) override;
  // `out` holds size()·n values (on the root only, for gather).
  void gather(const double* in, double* out, int64_t n, int root);
  void allgather(const double* in, double* out, int64_t n);
  // `in` holds size()·n values (on the root only, for scatter).
  void scatter(const double* in, double* out, int64_t n, int root);
  void reduce_scatter(const double* in, double* out, int64_t n);
  void alltoall(const double* in, double* out, int64_t n);

  // Root's string on every rank.
  std::string bcast(const std::string& text, int root) override;

  // Point to point. send() copies the data and returns at once; the message
  // completes by the end of the run (finish_run). recv() blocks.
  void send(const double* data, int64_t n, int dest, int tag);
  // send() without the copy: takes `data`'s storage for the message and
  // leaves in `data` a buffer of the same size whose values are unspecified
  // (a spare one, or a new one that has not been touched). A borrowed
  // tensor (Tensor::borrow) keeps its memory: it is sent as send() does.
  void send_buffer(Tensor& data, int dest, int tag);
  void recv(double* data, int64_t n, int src, int tag);

  // Nonblocking point to point. isend() copies the data; both return a
  // handle that wait() completes exactly once.
  int64_t isend(const double* data, int64_t n, int dest, int tag);
  // isend() without the copy: takes `data`'s storage for the message and
  // leaves in `data` a buffer of the same size whose values are unspecified
  // (a borrowed tensor: as isend()).
  int64_t isend_buffer(Tensor& data, int dest, int tag);
  int64_t irecv(int64_t n, int src, int tag);
  // Bytes send() and isend() have copied into message buffers so far (what
  // send_buffer() and isend_buffer() save).
  std::size_t copied_send_bytes() const;

  // Scratch for a kernel, from the buffers the communicator keeps for its
  // messages: take_spare(n) returns a kept buffer of n doubles, else a new
  // one (contents unspecified); keep_spare keeps one for later (kept_bytes,
  // freed by release_buffers), so a repeated run touches no new pages.
  Eigen::ArrayXd take_spare(int64_t n);
  void keep_spare(Eigen::ArrayXd&& buffer);
  // Completes n requests at once (MPI_Waitall). A receive's counts[k]
  // doubles (as posted) go to out[k]: when adopt[k] is true and out[k]
  // owns its storage they arrive without a copy (out[k] and the receive's
  // buffer trade places), else they are copied into out[k]'s elements. A
  // send's out[k] is unused.
  void wait(const int64_t* handles,
            Tensor* const* out,
            const int64_t* counts,
            const bool* adopt,
            int n);

  // Halo swap: non-blocking receives and sends with every existing
  // neighbour, then one wait. send[k]/recv[k] are ordered left, right, up,
  // down, each of `counts[k]` doubles. Receive buffers of missing
  // neighbours are left untouched.
  void data_exchange(const HaloNeighbours& neighbours,
                     const double* const send[4],
                     double* const recv[4],
                     const int64_t counts[4],
                     int tag);

  // The same swap in two halves, so that computation can run between them:
  // start_data_exchange posts the receives and the sends (of copies of
  // send[k]) and returns a handle; finish_data_exchange waits for them and
  // writes what arrived into recv[k] (zeros for missing neighbours). Each
  // handle is finished exactly once; a run that fails in between has its
  // exchanges completed by finish_run.
  int64_t start_data_exchange(const HaloNeighbours& neighbours,
                              const double* const send[4],
                              const int64_t counts[4],
                              int tag);
  void finish_data_exchange(int64_t handle, double* const recv[4]);

  // CommContext.
  void check_same_sequence(
      const std::vector<std::string>& descriptors) override;
  void finish_run() override;
  std::size_t pending_sends() const override;
  void complete_sends_from(std::size_t first) override;
  // The spare send buffers' bytes; release_buffers() also drops the
  // finished halo exchanges kept for their (strip-sized) buffers.
  std::size_t kept_bytes() const override;
  void release_buffers() override;

  // Prints `message` (prefixed with the rank) to stderr and aborts the whole
  // job. For failures only this rank can see.
  [[noreturn]] void abort(const std::string& message, int code = 1);
  // Waits up to 3 s for every rank to call it too (an MPI_Ibarrier on a
  // duplicate of this communicator, made with it); returns when they all
  // did, and otherwise ends the job with abort(message). Without such a
  // duplicate (the world when adgraph did not start MPI) it aborts.
  void agree_on_failure(const std::string& message) override;

 private:
  struct MpiComm;
  Communicator(std::unique_ptr<MpiComm> comm, std::string name);
  const MpiComm& mpi() const { return *mpi_; }
  // Completes the sends posted after the first `first`, watched as "the
  // completion of <n><what>".
  void complete_sends_from(std::size_t first, const char* what);

  std::unique_ptr<MpiComm> mpi_;
  std::string name_;
  // group_of(): the groups, and each world rank's group; both empty when
  // not known (a split of a split).
  std::vector<std::vector<int>> groups_;
  std::vector<int> group_index_;
  int rank_ = 0;
  int size_ = 1;
  int world_rank_ = 0;
  // The concerns, each a class of its own.
  std::unique_ptr<mpi_detail::Watchdog> watchdog_;
  std::unique_ptr<mpi_detail::RequestTable> requests_;
  std::unique_ptr<mpi_detail::HaloExchanger> halo_;
};

// The MPI communicator bound to `graph`. A graph binds one when its first
// communication node is added (OpDef::communicator); throws GraphError when
// it has none or a non-MPI one.
Communicator& communicator_of(const Graph& graph);
// Binds MPI_COMM_WORLD to a graph that has no communicator yet, for code
// that needs the rank or size before it adds communication nodes.
Communicator& bind_communicator(Graph& graph);

// The one entry of a communication op's kernel: the node's communicator,
// checked, with the calls of `body(c, comm)` watched by the deadline as
// this node's.
Communicator& kernel_communicator(const KernelContext& c);
template <class Body>
ComputeFn comm_kernel(Body body) {
  return [body](KernelContext& c) {
    Communicator& comm = kernel_communicator(c);
    Communicator::Watch watch(comm, c.node());
    body(c, comm);
  };
}

// OpDef::communicator of every MPI op: the world communicator.
inline std::shared_ptr<CommContext> world_communicator() {
  return Communicator::world();
}

// The start of the OpDef of a communication op that every rank of the
// graph's communicator runs (OpDef::every_rank: it joins the cross-rank
// sequence check); the world's unless the graph has one.
inline OpDef every_rank_op(std::string name, std::string doc) {
  OpDef def(std::move(name), std::move(doc));
  def.communication = true;
  def.every_rank = true;
  def.communicator = world_communicator;
  return def;
}

}  // namespace adgraph
