#include "mpi_ops/request_table.h"

#include <algorithm>
#include <iterator>
#include <string>
#include <utility>

#include "core/check.h"
#include "mpi_ops/mpi_detail.h"

namespace adgraph::mpi_detail {

// A send in flight: its own copy of the data and its request.
struct RequestTable::PendingSend {
  Eigen::ArrayXd buffer;
  MPI_Request request = MPI_REQUEST_NULL;
};

// A nonblocking request in flight: its buffer (the copy sent, or where the
// message arrives) and MPI's request.
struct RequestTable::Request {
  Eigen::ArrayXd buffer;
  MPI_Request request = MPI_REQUEST_NULL;
  bool receive = false;
};

// wait()'s arrays, grown to the most requests waited on at once.
struct RequestTable::WaitArrays {
  std::vector<MPI_Request> requests;
  std::vector<MPI_Status> statuses;
  std::vector<Request*> waited;
};

RequestTable::RequestTable(MPI_Comm comm) : comm_(comm) {}

RequestTable::~RequestTable() = default;

Eigen::ArrayXd RequestTable::take_spare(int64_t n) {
  for (auto it = spare_buffers_.rbegin(); it != spare_buffers_.rend(); ++it) {
    if (it->size() != n) continue;
    Eigen::ArrayXd buffer = std::move(*it);
    spare_buffers_.erase(std::next(it).base());
    spare_bytes_ -= sizeof(double) * n;
    return buffer;
  }
  return Eigen::ArrayXd(n);
}

void RequestTable::keep_spare(Eigen::ArrayXd&& buffer) {
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

void RequestTable::release_buffers() {
  spare_buffers_.clear();
  spare_buffers_.shrink_to_fit();
  spare_bytes_ = 0;
}

Eigen::ArrayXd RequestTable::spare_copy(const double* data, int64_t n) {
  Eigen::ArrayXd copy = take_spare(n);
  std::copy(data, data + n, copy.data());
  copied_send_bytes_ += sizeof(double) * n;
  return copy;
}

void RequestTable::send(const double* data, int64_t n, int dest, int tag) {
  post_send(spare_copy(data, n), dest, tag);
}

void RequestTable::send_buffer(Tensor& data, int dest, int tag) {
  if (data.borrowed()) return send(data.data(), data.size(), dest, tag);
  Eigen::ArrayXd buffer = take_spare(data.size());
  data.swap_storage(buffer);
  post_send(std::move(buffer), dest, tag);
}

void RequestTable::post_send(Eigen::ArrayXd&& buffer, int dest, int tag) {
  auto pending = std::make_unique<PendingSend>();
  pending->buffer = std::move(buffer);
  check_mpi(MPI_Isend(pending->buffer.data(),
                      count_of(pending->buffer.size()),
                      MPI_DOUBLE,
                      dest,
                      tag,
                      comm_,
                      &pending->request),
            "MPI_Isend");
  pending_.push_back(std::move(pending));
}

void RequestTable::complete_sends_from(std::size_t first) {
  for (std::size_t k = first; k < pending_.size(); ++k) {
    check_mpi(MPI_Wait(&pending_[k]->request, MPI_STATUS_IGNORE), "MPI_Wait");
    keep_spare(std::move(pending_[k]->buffer));
  }
  pending_.resize(std::min(first, pending_.size()));
}

RequestTable::Requests::node_type RequestTable::take_request() {
  if (!spare_requests_.empty()) {
    Requests::node_type entry = std::move(spare_requests_.back());
    spare_requests_.pop_back();
    return entry;
  }
  Requests made;
  made.emplace(0, std::make_unique<Request>());
  return made.extract(made.begin());
}

int64_t RequestTable::add_request(Requests::node_type&& entry) {
  const int64_t handle = new_handle();
  entry.key() = handle;
  requests_.insert(std::move(entry));
  return handle;
}

int64_t RequestTable::isend(const double* data, int64_t n, int dest, int tag) {
  return post_isend(spare_copy(data, n), dest, tag);
}

int64_t RequestTable::isend_buffer(Tensor& data, int dest, int tag) {
  if (data.borrowed()) return isend(data.data(), data.size(), dest, tag);
  Eigen::ArrayXd buffer = take_spare(data.size());
  data.swap_storage(buffer);
  return post_isend(std::move(buffer), dest, tag);
}

int64_t RequestTable::post_isend(Eigen::ArrayXd&& buffer, int dest, int tag) {
  Requests::node_type entry = take_request();
  Request& r = *entry.mapped();
  r.buffer = std::move(buffer);
  r.receive = false;
  check_mpi(MPI_Isend(r.buffer.data(),
                      count_of(r.buffer.size()),
                      MPI_DOUBLE,
                      dest,
                      tag,
                      comm_,
                      &r.request),
            "MPI_Isend");
  return add_request(std::move(entry));
}

int64_t RequestTable::irecv(int64_t n, int src, int tag) {
  Requests::node_type entry = take_request();
  Request& r = *entry.mapped();
  r.buffer = take_spare(n);
  r.receive = true;
  check_mpi(MPI_Irecv(r.buffer.data(),
                      count_of(n),
                      MPI_DOUBLE,
                      src,
                      tag,
                      comm_,
                      &r.request),
            "MPI_Irecv");
  return add_request(std::move(entry));
}

std::string RequestTable::wait(const int64_t* handles,
                               Tensor* const* out,
                               const int64_t* counts,
                               const bool* adopt,
                               int n) {
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
  std::string wrong;
  for (int k = 0; k < n; ++k) {
    Request& r = *a.waited[k];
    int received = 0;
    if (r.receive) MPI_Get_count(&a.statuses[k], MPI_DOUBLE, &received);
    if (r.receive && received != counts[k] && wrong.empty()) {
      wrong = "received " + std::to_string(received) + " doubles from rank " +
              std::to_string(a.statuses[k].MPI_SOURCE) + " (tag " +
              std::to_string(a.statuses[k].MPI_TAG) + "), expected " +
              std::to_string(counts[k]);
    } else if (r.receive && adopt[k] && !out[k]->borrowed() &&
               out[k]->size() == r.buffer.size()) {
      out[k]->swap_storage(r.buffer);
    } else if (r.receive) {
      std::copy(
          r.buffer.data(), r.buffer.data() + r.buffer.size(), out[k]->data());
    }
    keep_spare(std::move(r.buffer));
    r.request = MPI_REQUEST_NULL;
    spare_requests_.push_back(requests_.extract(handles[k]));
  }
  return wrong;
}

void RequestTable::cancel_requests() {
  for (auto& [handle, r] : requests_) {
    if (r->receive) MPI_Cancel(&r->request);
    MPI_Wait(&r->request, MPI_STATUS_IGNORE);
  }
  requests_.clear();
}

}  // namespace adgraph::mpi_detail
