// The typed MPI calls of Communicator: collectives and point to point, each
// a thin wrapper that checks MPI's return code and runs watched; the
// messages in flight are the request table's and the halo exchanger's.
#include <mpi.h>

#include <climits>
#include <cstdio>
#include <string>
#include <utility>

#include "core/check.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/halo_exchanger.h"
#include "mpi_ops/mpi_detail.h"
#include "mpi_ops/request_table.h"
#include "mpi_ops/watchdog.h"

namespace adgraph {

namespace mpi_detail {

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

}  // namespace mpi_detail

using mpi_detail::CallWatch;
using mpi_detail::check_mpi;
using mpi_detail::count_of;
using mpi_detail::mpi_op;

void Communicator::allreduce(const double* in,
                             double* out,
                             int64_t n,
                             ReduceOp op) {
  CallWatch watch(*watchdog_, "MPI_Allreduce", n);
  const void* send = in == out ? MPI_IN_PLACE : in;
  check_mpi(
      MPI_Allreduce(send, out, count_of(n), MPI_DOUBLE, mpi_op(op), mpi().comm),
      "MPI_Allreduce");
}

void Communicator::reduce_sum(const double* in,
                              double* out,
                              int64_t n,
                              int root) {
  CallWatch watch(*watchdog_, "MPI_Reduce", n);
  // In place: the root reduces into its own buffer; elsewhere the receive
  // buffer is not used.
  const void* send = in == out && rank_ == root ? MPI_IN_PLACE : in;
  void* receive = in == out && rank_ != root ? nullptr : out;
  check_mpi(
      MPI_Reduce(
          send, receive, count_of(n), MPI_DOUBLE, MPI_SUM, root, mpi().comm),
      "MPI_Reduce");
}

void Communicator::bcast(double* data, int64_t n, int root) {
  CallWatch watch(*watchdog_, "MPI_Bcast", n);
  check_mpi(MPI_Bcast(data, count_of(n), MPI_DOUBLE, root, mpi().comm),
            "MPI_Bcast");
}

std::string Communicator::bcast(const std::string& text, int root) {
  CallWatch watch(*watchdog_, "MPI_Bcast (a string)", 1);
  int64_t length = static_cast<int64_t>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT64_T, root, mpi().comm), "MPI_Bcast");
  std::string out = rank_ == root ? text : std::string(length, '\0');
  check_mpi(MPI_Bcast(out.data(), count_of(length), MPI_CHAR, root, mpi().comm),
            "MPI_Bcast");
  return out;
}

namespace {

// MPI_Gather and MPI_Scatter (with a root) and MPI_Allgather and
// MPI_Alltoall (without one): n doubles from or to each rank.
template <class Call, class... Root>
void blocks_call(mpi_detail::Watchdog& watchdog,
                 const char* name,
                 Call call,
                 const double* in,
                 double* out,
                 int64_t n,
                 MPI_Comm comm,
                 Root... root) {
  CallWatch watch(watchdog, name, n);
  const int count = count_of(n);
  check_mpi(call(in, count, MPI_DOUBLE, out, count, MPI_DOUBLE, root..., comm),
            name);
}

}  // namespace

void Communicator::gather(const double* in, double* out, int64_t n, int root) {
  blocks_call(
      *watchdog_, "MPI_Gather", MPI_Gather, in, out, n, mpi().comm, root);
}

void Communicator::scatter(const double* in, double* out, int64_t n, int root) {
  blocks_call(
      *watchdog_, "MPI_Scatter", MPI_Scatter, in, out, n, mpi().comm, root);
}

void Communicator::allgather(const double* in, double* out, int64_t n) {
  blocks_call(
      *watchdog_, "MPI_Allgather", MPI_Allgather, in, out, n, mpi().comm);
}

void Communicator::alltoall(const double* in, double* out, int64_t n) {
  blocks_call(*watchdog_, "MPI_Alltoall", MPI_Alltoall, in, out, n, mpi().comm);
}

void Communicator::reduce_scatter(const double* in, double* out, int64_t n) {
  CallWatch watch(*watchdog_, "MPI_Reduce_scatter_block", n);
  check_mpi(MPI_Reduce_scatter_block(
                in, out, count_of(n), MPI_DOUBLE, MPI_SUM, mpi().comm),
            "MPI_Reduce_scatter_block");
}

void Communicator::recv(double* data, int64_t n, int src, int tag) {
  CallWatch watch(*watchdog_, "MPI_Recv", n);
  MPI_Status status;
  check_mpi(
      MPI_Recv(data, count_of(n), MPI_DOUBLE, src, tag, mpi().comm, &status),
      "MPI_Recv");
  int received = 0;
  MPI_Get_count(&status, MPI_DOUBLE, &received);
  if (received != n) {
    abort("received " + std::to_string(received) + " doubles from rank " +
          std::to_string(src) + " (tag " + std::to_string(tag) +
          "), expected " + std::to_string(n));
  }
}

void Communicator::send(const double* data, int64_t n, int dest, int tag) {
  requests_->send(data, n, dest, tag);
}

void Communicator::send_buffer(Tensor& data, int dest, int tag) {
  requests_->send_buffer(data, dest, tag);
}

int64_t Communicator::isend(const double* data, int64_t n, int dest, int tag) {
  return requests_->isend(data, n, dest, tag);
}

int64_t Communicator::isend_buffer(Tensor& data, int dest, int tag) {
  return requests_->isend_buffer(data, dest, tag);
}

int64_t Communicator::irecv(int64_t n, int src, int tag) {
  return requests_->irecv(n, src, tag);
}

void Communicator::wait(const int64_t* handles,
                        Tensor* const* out,
                        const int64_t* counts,
                        const bool* adopt,
                        int n) {
  CallWatch watch(*watchdog_, "MPI_Waitall", n);
  const std::string wrong = requests_->wait(handles, out, counts, adopt, n);
  if (!wrong.empty()) abort(wrong);
}

std::size_t Communicator::copied_send_bytes() const {
  return requests_->copied_send_bytes();
}

Eigen::ArrayXd Communicator::take_spare(int64_t n) {
  return requests_->take_spare(n);
}

void Communicator::keep_spare(Eigen::ArrayXd&& buffer) {
  requests_->keep_spare(std::move(buffer));
}

std::size_t Communicator::kept_bytes() const { return requests_->kept_bytes(); }

void Communicator::release_buffers() {
  requests_->release_buffers();
  halo_->release_buffers();
}

void Communicator::data_exchange(const HaloNeighbours& neighbours,
                                 const double* const send[4],
                                 double* const recv[4],
                                 const int64_t counts[4],
                                 int tag) {
  finish_data_exchange(start_data_exchange(neighbours, send, counts, tag),
                       recv);
}

int64_t Communicator::start_data_exchange(const HaloNeighbours& neighbours,
                                          const double* const send[4],
                                          const int64_t counts[4],
                                          int tag) {
  const int64_t handle = requests_->new_handle();
  halo_->start(handle, neighbours, send, counts, tag);
  return handle;
}

void Communicator::finish_data_exchange(int64_t handle, double* const recv[4]) {
  halo_->finish(handle, recv, *watchdog_);
}

void Communicator::finish_run() {
  // A run that failed part-way may leave requests behind: receives are
  // cancelled, sends completed.
  requests_->cancel_requests();
  halo_->cancel_exchanges();
  complete_sends_from(0, " outstanding send(s) at the end of the run");
}

std::size_t Communicator::pending_sends() const {
  return requests_->pending_sends();
}

void Communicator::complete_sends_from(std::size_t first) {
  complete_sends_from(first, " send(s) of a loop step");
}

void Communicator::complete_sends_from(std::size_t first, const char* what) {
  const std::size_t pending = requests_->pending_sends();
  if (pending <= first) return;
  mpi_detail::LabelWatch watch(
      *watchdog_,
      "the completion of " + std::to_string(pending - first) + what);
  requests_->complete_sends_from(first);
}

}  // namespace adgraph
