// The halo exchanger on its own, on a duplicate of the world arranged as a
// 1 x P row of patches: what arrives from each side, two swaps in flight
// at once finished in the other order, and the watchdog's missing peers
// cleared once a swap is done.
#include "mpi_ops/halo_exchanger.h"

#include <gtest/gtest.h>

#include <vector>

#include "adgraph.h"

namespace adgraph {
namespace {

using mpi_detail::HaloExchanger;
using mpi_detail::Watchdog;

struct Row {
  Row() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    if (rank > 0) neighbours.left = rank - 1;
    if (rank + 1 < size) neighbours.right = rank + 1;
  }
  ~Row() { MPI_Comm_free(&comm); }
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  HaloNeighbours neighbours;
};

// The strip rank r sends towards direction k (left, right, up, down) in
// swap `swap`: 3 values, distinct for every (r, k, swap).
std::vector<double> strip(int r, int k, int swap) {
  return {1000.0 * swap + 10.0 * r + k, -1.0 * r, 0.25 * k};
}

// One swap: posts it under `handle` with strips of swap `swap`.
void start(HaloExchanger& halo, const Row& row, int64_t handle, int swap) {
  std::vector<double> sent[4];
  const double* send[4];
  const int64_t counts[4] = {3, 3, 3, 3};
  for (int k = 0; k < 4; ++k) {
    sent[k] = strip(row.rank, k, swap);
    send[k] = sent[k].data();
  }
  // The exchanger sends its own copies: the strips may go at once.
  halo.start(handle, row.neighbours, send, counts, 50 + 4 * swap);
}

// What swap `swap` brings: from the left, what the left neighbour sent
// right; from the right, what the right one sent left; -7 where none is.
void expect_arrived(const std::vector<double> (&got)[4],
                    const Row& row,
                    int swap) {
  const std::vector<double> none(3, -7.0);
  EXPECT_EQ(got[0], row.rank > 0 ? strip(row.rank - 1, 1, swap) : none);
  EXPECT_EQ(got[1],
            row.rank + 1 < row.size ? strip(row.rank + 1, 0, swap) : none);
  EXPECT_EQ(got[2], none) << "no neighbour above in a single row";
  EXPECT_EQ(got[3], none) << "no neighbour below in a single row";
}

void finish(HaloExchanger& halo,
            int64_t handle,
            Watchdog& watchdog,
            std::vector<double> (&got)[4]) {
  double* recv[4];
  for (int k = 0; k < 4; ++k) {
    got[k].assign(3, -7.0);
    recv[k] = got[k].data();
  }
  halo.finish(handle, recv, watchdog);
}

TEST(HaloExchanger, EachSideGetsWhatItsNeighbourSentTowardsIt) {
  Row row;
  Watchdog watchdog("world", 0);
  HaloExchanger halo(row.comm);
  for (int swap = 0; swap < 3; ++swap) {  // later swaps reuse the buffers
    start(halo, row, 1 + swap, swap);
    std::vector<double> got[4];
    mpi_detail::LabelWatch watch(watchdog, "a swap");
    finish(halo, 1 + swap, watchdog, got);
    expect_arrived(got, row, swap);
    EXPECT_EQ(watchdog.describe(), "a swap")
        << "a finished swap left peers named as missing";
  }
  halo.release_buffers();
}

TEST(HaloExchanger, TwoSwapsInFlightFinishInEitherOrder) {
  Row row;
  Watchdog watchdog("world", 0);
  HaloExchanger halo(row.comm);
  start(halo, row, 7, 0);
  start(halo, row, 8, 1);
  std::vector<double> second[4], first[4];
  finish(halo, 8, watchdog, second);
  finish(halo, 7, watchdog, first);
  expect_arrived(first, row, 0);
  expect_arrived(second, row, 1);
}

}  // namespace
}  // namespace adgraph
