// The messages a Communicator has in flight and the buffers it keeps for
// them (internal to mpi_ops/): sends that complete by the end of the run,
// nonblocking requests by handle, and spare buffers that a repeated run
// reuses instead of touching new pages. The calls are MPI's; what to watch
// and how to fail stay with the Communicator.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace adgraph::mpi_detail {

class RequestTable {
 public:
  explicit RequestTable(MPI_Comm comm);
  ~RequestTable();
  RequestTable(const RequestTable&) = delete;
  RequestTable& operator=(const RequestTable&) = delete;

  // A new handle, for a request here or another kind of message in flight
  // (a halo exchange): handles never repeat on one communicator.
  int64_t new_handle() { return next_handle_++; }

  // Buffers: take_spare(n) returns a kept buffer of n doubles, else a new
  // one (contents unspecified); keep_spare keeps one for later, dropping
  // the oldest beyond kMaxSpareBytes.
  Eigen::ArrayXd take_spare(int64_t n);
  void keep_spare(Eigen::ArrayXd&& buffer);
  std::size_t kept_bytes() const { return spare_bytes_; }
  void release_buffers();
  // Bytes copied into message buffers so far (by send() and isend()).
  std::size_t copied_send_bytes() const { return copied_send_bytes_; }

  // Sends that complete by the end of the run: of a copy of data[0, n), or
  // of `data`'s own storage (leaving a spare buffer of its size in it;
  // a borrowed tensor is copied).
  void send(const double* data, int64_t n, int dest, int tag);
  void send_buffer(Tensor& data, int dest, int tag);
  std::size_t pending_sends() const { return pending_.size(); }
  // Completes the sends posted after the first `first` (MPI_Wait each).
  void complete_sends_from(std::size_t first);

  // Nonblocking requests, as Communicator::isend, isend_buffer and irecv.
  int64_t isend(const double* data, int64_t n, int dest, int tag);
  int64_t isend_buffer(Tensor& data, int dest, int tag);
  int64_t irecv(int64_t n, int src, int tag);
  // Completes n requests at once, as Communicator::wait. Returns "" or,
  // when a receive got another number of doubles than counts[k], what
  // arrived (the first such receive; out[k] is left as it was for each).
  // The n requests leave the table either way.
  std::string wait(const int64_t* handles,
                   Tensor* const* out,
                   const int64_t* counts,
                   const bool* adopt,
                   int n);
  // Cancels the receives and completes the sends of the requests not
  // waited on (a run that failed part-way).
  void cancel_requests();

 private:
  struct PendingSend;
  struct Request;
  using Requests = std::map<int64_t, std::unique_ptr<Request>>;
  struct WaitArrays;

  // take_spare(n) holding a copy of data[0, n).
  Eigen::ArrayXd spare_copy(const double* data, int64_t n);
  // Starts the send of `buffer`, which the message owns until it completes.
  void post_send(Eigen::ArrayXd&& buffer, int dest, int tag);
  // An entry for a new request (a spare one, else a new one); the request
  // is posted into it, then add_request() files it under a new handle.
  Requests::node_type take_request();
  int64_t add_request(Requests::node_type&& entry);
  // Posts an MPI_Isend of `buffer` under a new request handle.
  int64_t post_isend(Eigen::ArrayXd&& buffer, int dest, int tag);

  MPI_Comm comm_;
  int64_t next_handle_ = 1;
  std::vector<std::unique_ptr<PendingSend>> pending_;
  // The buffers of completed sends and nonblocking requests, kept for the
  // next ones of the same size, so that a repeated run copies into pages it
  // has touched before instead of faulting in new ones. At most
  // kMaxSpareBytes are kept; the oldest go first.
  static constexpr std::size_t kMaxSpareBytes = std::size_t{512} << 20;
  std::vector<Eigen::ArrayXd> spare_buffers_;
  std::size_t spare_bytes_ = 0;
  std::size_t copied_send_bytes_ = 0;
  Requests requests_;
  // The map entries of completed requests, reused by the next ones, and
  // wait()'s arrays: a repeated run's requests allocate nothing.
  std::vector<Requests::node_type> spare_requests_;
  std::unique_ptr<WaitArrays> wait_arrays_;
};

}  // namespace adgraph::mpi_detail
