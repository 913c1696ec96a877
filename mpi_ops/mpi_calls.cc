// The typed MPI calls of Communicator: collectives, point to point and the
// halo swap, each a thin wrapper that checks MPI's return code.
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "core/check.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/mpi_detail.h"

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

using mpi_detail::check_mpi;
using mpi_detail::count_of;
using mpi_detail::mpi_op;

void Communicator::allreduce(const double* in,
                             double* out,
                             int64_t n,
                             ReduceOp op) {
  CallWatch watch(*this, "MPI_Allreduce", n);
  const void* send = in == out ? MPI_IN_PLACE : in;
  check_mpi(
      MPI_Allreduce(send, out, count_of(n), MPI_DOUBLE, mpi_op(op), mpi().comm),
      "MPI_Allreduce");
}

void Communicator::reduce_sum(const double* in,
                              double* out,
                              int64_t n,
                              int root) {
  CallWatch watch(*this, "MPI_Reduce", n);
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
  CallWatch watch(*this, "MPI_Bcast", n);
  check_mpi(MPI_Bcast(data, count_of(n), MPI_DOUBLE, root, mpi().comm),
            "MPI_Bcast");
}

std::string Communicator::bcast(const std::string& text, int root) {
  CallWatch watch(*this, "MPI_Bcast (a string)", 1);
  int64_t length = static_cast<int64_t>(text.size());
  check_mpi(MPI_Bcast(&length, 1, MPI_INT64_T, root, mpi().comm), "MPI_Bcast");
  std::string out = rank_ == root ? text : std::string(length, '\0');
  check_mpi(MPI_Bcast(out.data(), count_of(length), MPI_CHAR, root, mpi().comm),
            "MPI_Bcast");
  return out;
}

void Communicator::gather(const double* in, double* out, int64_t n, int root) {
  CallWatch watch(*this, "MPI_Gather", n);
  check_mpi(MPI_Gather(in,
                       count_of(n),
                       MPI_DOUBLE,
                       out,
                       count_of(n),
                       MPI_DOUBLE,
                       root,
                       mpi().comm),
            "MPI_Gather");
}

void Communicator::allgather(const double* in, double* out, int64_t n) {
  CallWatch watch(*this, "MPI_Allgather", n);
  check_mpi(MPI_Allgather(in,
                          count_of(n),
                          MPI_DOUBLE,
                          out,
                          count_of(n),
                          MPI_DOUBLE,
                          mpi().comm),
            "MPI_Allgather");
}

void Communicator::scatter(const double* in, double* out, int64_t n, int root) {
  CallWatch watch(*this, "MPI_Scatter", n);
  check_mpi(MPI_Scatter(in,
                        count_of(n),
                        MPI_DOUBLE,
                        out,
                        count_of(n),
                        MPI_DOUBLE,
                        root,
                        mpi().comm),
            "MPI_Scatter");
}

void Communicator::reduce_scatter(const double* in, double* out, int64_t n) {
  CallWatch watch(*this, "MPI_Reduce_scatter_block", n);
  check_mpi(MPI_Reduce_scatter_block(
                in, out, count_of(n), MPI_DOUBLE, MPI_SUM, mpi().comm),
            "MPI_Reduce_scatter_block");
}

void Communicator::alltoall(const double* in, double* out, int64_t n) {
  CallWatch watch(*this, "MPI_Alltoall", n);
  check_mpi(MPI_Alltoall(in,
                         count_of(n),
                         MPI_DOUBLE,
                         out,
                         count_of(n),
                         MPI_DOUBLE,
                         mpi().comm),
            "MPI_Alltoall");
}

void Communicator::send(const double* data, int64_t n, int dest, int tag) {
  post_send(spare_copy(data, n), dest, tag);
}

void Communicator::send_buffer(Tensor& data, int dest, int tag) {
  if (data.borrowed()) return send(data.data(), data.size(), dest, tag);
  Eigen::ArrayXd buffer = take_spare(data.size());
  data.swap_storage(buffer);
  post_send(std::move(buffer), dest, tag);
}

void Communicator::post_send(Eigen::ArrayXd&& buffer, int dest, int tag) {
  auto pending = std::make_unique<PendingSend>();
  pending->buffer = std::move(buffer);
  check_mpi(MPI_Isend(pending->buffer.data(),
                      count_of(pending->buffer.size()),
                      MPI_DOUBLE,
                      dest,
                      tag,
                      mpi().comm,
                      &pending->request),
            "MPI_Isend");
  pending_.push_back(std::move(pending));
}

Eigen::ArrayXd Communicator::take_spare(int64_t n) {
  for (auto it = spare_buffers_.rbegin(); it != spare_buffers_.rend(); ++it) {
    if (it->size() != n) continue;
    Eigen::ArrayXd buffer = std::move(*it);
    spare_buffers_.erase(std::next(it).base());
    spare_bytes_ -= sizeof(double) * n;
    return buffer;
  }
  return Eigen::ArrayXd(n);
}

Eigen::ArrayXd Communicator::spare_copy(const double* data, int64_t n) {
  Eigen::ArrayXd copy = take_spare(n);
  std::copy(data, data + n, copy.data());
  copied_send_bytes_ += sizeof(double) * n;
  return copy;
}

void Communicator::release_buffers() {
  spare_buffers_.clear();
  spare_buffers_.shrink_to_fit();
  spare_bytes_ = 0;
  spare_exchanges_.clear();
}

void Communicator::keep_spare(Eigen::ArrayXd&& buffer) {
  const std::size_t bytes = sizeof(double) * buffer.size();
  if (bytes == 0 || bytes > kMaxSpareBytes) return;
  spare_buffers_.push_back(std::move(buffer));
  spare_bytes_ += bytes;
  std::size_t dropped = 0;
  while (spare_bytes_ > kMaxSpareBytes) {
    spare_bytes_ -= sizeof(double) * spare_buffers_[dropped].size();
    ++dropped;
  }
  spare_buffers_.erase(spare_buffers_.begin(),
                       spare_buffers_.begin() + static_cast<long>(dropped));
}

void Communicator::recv(double* data, int64_t n, int src, int tag) {
  CallWatch watch(*this, "MPI_Recv", n);
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
  const int peer[4] = {
      neighbours.left, neighbours.right, neighbours.up, neighbours.down};
  // What I send towards direction k arrives at that neighbour from the
  // opposite direction; the tag names the receiving side's direction.
  const int opposite[4] = {1, 0, 3, 2};
  std::unique_ptr<HaloExchange> x;
  if (spare_exchanges_.empty()) {
    x = std::make_unique<HaloExchange>();
  } else {
    x = std::move(spare_exchanges_.back());
    spare_exchanges_.pop_back();
  }
  x->n_requests = 0;
  for (int k = 0; k < 4; ++k) {
    x->has_peer[k] = peer[k] >= 0;
    if (peer[k] < 0) continue;
    x->received[k].resize(counts[k]);
    x->peer_of_request[x->n_requests] = peer[k];
    check_mpi(MPI_Irecv(x->received[k].data(),
                        count_of(counts[k]),
                        MPI_DOUBLE,
                        peer[k],
                        tag + k,
                        mpi().comm,
                        &x->requests[x->n_requests++]),
              "MPI_Irecv");
  }
  for (int k = 0; k < 4; ++k) {
    if (peer[k] < 0) continue;
    x->sent[k].assign(send[k], send[k] + counts[k]);
    x->peer_of_request[x->n_requests] = peer[k];
    check_mpi(MPI_Isend(x->sent[k].data(),
                        count_of(counts[k]),
                        MPI_DOUBLE,
                        peer[k],
                        tag + opposite[k],
                        mpi().comm,
                        &x->requests[x->n_requests++]),
              "MPI_Isend");
  }
  const int64_t handle = next_request_++;
  exchanges_.emplace(handle, std::move(x));
  return handle;
}

void Communicator::wait_for_neighbours(HaloExchange& x) {
  CallWatch watch(*this, "MPI_Waitsome of a halo exchange", x.n_requests);
  // Completed one batch at a time, so that a deadline message can name the
  // neighbours still missing (a lost host, say).
  for (int r = 0; r < x.n_requests; ++r)
    watch_peers_[r].store(x.peer_of_request[r]);
  int remaining = x.n_requests;
  while (remaining > 0) {
    int done = 0, indices[8];
    check_mpi(
        MPI_Waitsome(
            x.n_requests, x.requests, &done, indices, MPI_STATUSES_IGNORE),
        "MPI_Waitsome");
    for (int d = 0; d < done; ++d) watch_peers_[indices[d]].store(-1);
    remaining -= done;
  }
}

void Communicator::finish_data_exchange(int64_t handle, double* const recv[4]) {
  auto it = exchanges_.find(handle);
  ADGRAPH_CHECK(it != exchanges_.end())
      << "halo exchange " << handle << " is not in flight";
  std::unique_ptr<HaloExchange> x = std::move(it->second);
  exchanges_.erase(it);
  wait_for_neighbours(*x);
  for (int k = 0; k < 4; ++k) {
    if (!x->has_peer[k]) continue;
    std::copy(x->received[k].begin(), x->received[k].end(), recv[k]);
  }
  spare_exchanges_.push_back(std::move(x));
}

Communicator::Requests::node_type Communicator::take_request() {
  if (!spare_requests_.empty()) {
    Requests::node_type entry = std::move(spare_requests_.back());
    spare_requests_.pop_back();
    return entry;
  }
  Requests made;
  made.emplace(0, std::make_unique<Request>());
  return made.extract(made.begin());
}

int64_t Communicator::add_request(Requests::node_type&& entry) {
  const int64_t handle = next_request_++;
  entry.key() = handle;
  requests_.insert(std::move(entry));
  return handle;
}

int64_t Communicator::isend(const double* data, int64_t n, int dest, int tag) {
  return post_isend(spare_copy(data, n), dest, tag);
}

int64_t Communicator::isend_buffer(Tensor& data, int dest, int tag) {
  if (data.borrowed()) return isend(data.data(), data.size(), dest, tag);
  Eigen::ArrayXd buffer = take_spare(data.size());
  data.swap_storage(buffer);
  return post_isend(std::move(buffer), dest, tag);
}

int64_t Communicator::post_isend(Eigen::ArrayXd&& buffer, int dest, int tag) {
  Requests::node_type entry = take_request();
  Request& r = *entry.mapped();
  r.buffer = std::move(buffer);
  r.receive = false;
  check_mpi(MPI_Isend(r.buffer.data(),
                      count_of(r.buffer.size()),
                      MPI_DOUBLE,
                      dest,
                      tag,
                      mpi().comm,
                      &r.request),
            "MPI_Isend");
  return add_request(std::move(entry));
}

int64_t Communicator::irecv(int64_t n, int src, int tag) {
  Requests::node_type entry = take_request();
  Request& r = *entry.mapped();
  r.buffer = take_spare(n);
  r.receive = true;
  check_mpi(MPI_Irecv(r.buffer.data(),
                      count_of(n),
                      MPI_DOUBLE,
                      src,
                      tag,
                      mpi().comm,
                      &r.request),
            "MPI_Irecv");
  return add_request(std::move(entry));
}

void Communicator::wait(const int64_t* handles,
                        Tensor* const* out,
                        const int64_t* counts,
                        const bool* adopt,
                        int n) {
  CallWatch watch(*this, "MPI_Waitall", n);
  if (!wait_arrays_) wait_arrays_ = std::make_unique<WaitArrays>();
  WaitArrays& a = *wait_arrays_;
  a.requests.resize(n);
  a.statuses.resize(n);
  a.waited.resize(n);
  for (int k = 0; k < n; ++k) {
    auto it = requests_.find(handles[k]);
    ADGRAPH_CHECK(it != requests_.end())
        << "request " << handles[k] << " is not in flight";
    a.waited[k] = it->second.get();
    a.requests[k] = a.waited[k]->request;
  }
  check_mpi(MPI_Waitall(n, a.requests.data(), a.statuses.data()),
            "MPI_Waitall");
  for (int k = 0; k < n; ++k) {
    Request& r = *a.waited[k];
    if (r.receive) {
      int received = 0;
      MPI_Get_count(&a.statuses[k], MPI_DOUBLE, &received);
      if (received != counts[k]) {
        abort("received " + std::to_string(received) + " doubles from rank " +
              std::to_string(a.statuses[k].MPI_SOURCE) + " (tag " +
              std::to_string(a.statuses[k].MPI_TAG) + "), expected " +
              std::to_string(counts[k]));
      }
      if (adopt[k] && !out[k]->borrowed() &&
          out[k]->size() == r.buffer.size()) {
        out[k]->swap_storage(r.buffer);
      } else {
        std::copy(
            r.buffer.data(), r.buffer.data() + r.buffer.size(), out[k]->data());
      }
    }
    keep_spare(std::move(r.buffer));
    r.request = MPI_REQUEST_NULL;
    spare_requests_.push_back(requests_.extract(handles[k]));
  }
}

void Communicator::finish_run() {
  // A run that failed part-way may leave requests behind: receives are
  // cancelled, sends completed.
  for (auto& [handle, r] : requests_) {
    if (r->receive) MPI_Cancel(&r->request);
    MPI_Wait(&r->request, MPI_STATUS_IGNORE);
  }
  requests_.clear();
  for (auto& [handle, x] : exchanges_) {
    for (int r = 0; r < x->n_requests; ++r) {
      // Receives come first; a started send still completes.
      if (r < x->n_requests / 2) MPI_Cancel(&x->requests[r]);
      MPI_Wait(&x->requests[r], MPI_STATUS_IGNORE);
    }
  }
  exchanges_.clear();
  if (pending_.empty()) return;
  start_watch("the completion of " + std::to_string(pending_.size()) +
              " outstanding send(s) at the end of the run");
  for (auto& pending : pending_) {
    check_mpi(MPI_Wait(&pending->request, MPI_STATUS_IGNORE), "MPI_Wait");
    keep_spare(std::move(pending->buffer));
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
    keep_spare(std::move(pending_[k]->buffer));
  }
  pending_.resize(first);
  stop_watch();
}

}  // namespace adgraph
