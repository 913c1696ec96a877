#include "mpi_ops/halo_exchanger.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "mpi_ops/mpi_detail.h"

namespace adgraph::mpi_detail {

// A halo swap in flight: its requests (receives first), the neighbour of
// each, and its own copies of what it sends and receives, by direction.
struct HaloExchanger::Exchange {
  MPI_Request requests[8];
  int peer_of_request[8];
  int n_requests = 0;
  bool has_peer[4] = {false, false, false, false};
  std::vector<double> sent[4], received[4];
};

static_assert(Watchdog::kPeerSlots >= 8, "a swap waits for up to 8 requests");

HaloExchanger::HaloExchanger(MPI_Comm comm) : comm_(comm) {}

HaloExchanger::~HaloExchanger() = default;

void HaloExchanger::release_buffers() { spare_.clear(); }

void HaloExchanger::start(int64_t handle,
                          const HaloNeighbours& neighbours,
                          const double* const send[4],
                          const int64_t counts[4],
                          int tag) {
  const int peer[4] = {
      neighbours.left, neighbours.right, neighbours.up, neighbours.down};
  // What I send towards direction k arrives at that neighbour from the
  // opposite direction; the tag names the receiving side's direction.
  const int opposite[4] = {1, 0, 3, 2};
  std::unique_ptr<Exchange> x;
  if (spare_.empty()) {
    x = std::make_unique<Exchange>();
  } else {
    x = std::move(spare_.back());
    spare_.pop_back();
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
                        comm_,
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
                        comm_,
                        &x->requests[x->n_requests++]),
              "MPI_Isend");
  }
  in_flight_.emplace(handle, std::move(x));
}

void HaloExchanger::wait_for_neighbours(Exchange& x, Watchdog& watchdog) {
  CallWatch watch(watchdog, "MPI_Waitsome of a halo exchange", x.n_requests);
  // Completed one batch at a time, so that a deadline message can name the
  // neighbours still missing (a lost host, say).
  for (int r = 0; r < x.n_requests; ++r)
    watchdog.set_peer(r, x.peer_of_request[r]);
  int remaining = x.n_requests;
  while (remaining > 0) {
    int done = 0, indices[8];
    check_mpi(
        MPI_Waitsome(
            x.n_requests, x.requests, &done, indices, MPI_STATUSES_IGNORE),
        "MPI_Waitsome");
    for (int d = 0; d < done; ++d) watchdog.set_peer(indices[d], -1);
    remaining -= done;
  }
}

void HaloExchanger::finish(int64_t handle,
                           double* const recv[4],
                           Watchdog& watchdog) {
  auto it = in_flight_.find(handle);
  ADGRAPH_CHECK(it != in_flight_.end())
      << "halo exchange " << handle << " is not in flight";
  std::unique_ptr<Exchange> x = std::move(it->second);
  in_flight_.erase(it);
  wait_for_neighbours(*x, watchdog);
  for (int k = 0; k < 4; ++k) {
    if (!x->has_peer[k]) continue;
    std::copy(x->received[k].begin(), x->received[k].end(), recv[k]);
  }
  spare_.push_back(std::move(x));
}

void HaloExchanger::cancel_exchanges() {
  for (auto& [handle, x] : in_flight_) {
    for (int r = 0; r < x->n_requests; ++r) {
      // Receives come first; a started send still completes.
      if (r < x->n_requests / 2) MPI_Cancel(&x->requests[r]);
      MPI_Wait(&x->requests[r], MPI_STATUS_IGNORE);
    }
  }
  in_flight_.clear();
}

}  // namespace adgraph::mpi_detail
