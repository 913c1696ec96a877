// The halo swaps a Communicator has in flight (internal to mpi_ops/):
// nonblocking receives and sends with the four neighbours of a patch, each
// swap with its own copies of the strips, and finished swaps kept for their
// buffers (a time loop starts one per step).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "mpi_ops/communicator.h"
#include "mpi_ops/watchdog.h"

namespace adgraph::mpi_detail {

class HaloExchanger {
 public:
  explicit HaloExchanger(MPI_Comm comm);
  ~HaloExchanger();
  HaloExchanger(const HaloExchanger&) = delete;
  HaloExchanger& operator=(const HaloExchanger&) = delete;

  // Posts the receives and the sends (of copies of send[k]) of a swap under
  // `handle`, as Communicator::start_data_exchange.
  void start(int64_t handle,
             const HaloNeighbours& neighbours,
             const double* const send[4],
             const int64_t counts[4],
             int tag);
  // Waits for the swap `handle` (watched by `watchdog`, which learns the
  // neighbours still missing) and writes what arrived into recv[k] where
  // there is a neighbour.
  void finish(int64_t handle, double* const recv[4], Watchdog& watchdog);
  // Cancels the receives and completes the sends of the swaps not finished
  // (a run that failed part-way).
  void cancel_exchanges();
  // Drops the finished swaps kept for their buffers.
  void release_buffers();

 private:
  struct Exchange;
  // Waits for a swap's requests one batch at a time, publishing the
  // neighbours still missing to `watchdog`.
  static void wait_for_neighbours(Exchange& exchange, Watchdog& watchdog);

  MPI_Comm comm_;
  std::map<int64_t, std::unique_ptr<Exchange>> in_flight_;
  std::vector<std::unique_ptr<Exchange>> spare_;
};

}  // namespace adgraph::mpi_detail
