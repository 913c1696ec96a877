// Load: 10 000 small graphs with collectives, point-to-point messages and a
// halo exchange, built and run back to back in one process on every rank.
// Each result is checked against its formula; resident memory must stay
// flat after warm-up (within 1 %) and no file descriptor may leak.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>

#include "core/ad/gradients.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/halo.h"
#include "mpi_ops/point_to_point.h"
#include "ops/elementwise.h"
#include "ops/reductions.h"
#include "tests/mpi_ops/mpi_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define ADGRAPH_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ADGRAPH_UNDER_ASAN 1
#endif
#endif

namespace adgraph {
namespace {

using namespace adgraph::testing;

std::size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

int open_descriptors() {
  int n = 0;
  DIR* dir = opendir("/proc/self/fd");
  while (readdir(dir) != nullptr) ++n;
  closedir(dir);
  return n;
}

// x[i] = rank + i + k on every rank.
Tensor values(int rank, int k, int64_t n) {
  Tensor t{Shape{n}};
  for (int64_t i = 0; i < n; ++i) t[i] = rank + i + k;
  return t;
}

TEST(Soak, TenThousandGraphsKeepMemoryAndDescriptorsFlat) {
  const int rank = world_rank(), size = world_size();
  // ADGRAPH_SOAK_GRAPHS shortens the run where each graph is costly
  // (scripts/sanitize: under AddressSanitizer, which checks for leaks
  // instead of resident memory); 10 000 otherwise.
  const char* given = std::getenv("ADGRAPH_SOAK_GRAPHS");
  const int kGraphs =
      given != nullptr ? std::max(500, std::atoi(given)) : 10000;
  const int kWarmUp = std::min(1000, kGraphs / 2);
  constexpr int64_t n = 8;
  const int rows = size % 2 == 0 ? 2 : 1, cols = size / rows;
  std::size_t rss_warm = 0;
  int fds_warm = 0;
  for (int k = 0; k < kGraphs; ++k) {
    const int root = k % size, src = k % size, dest = (k + 1) % size;
    Graph g;
    Value x = g.placeholder("x", {n});
    Value all = mpi_allreduce(x);
    Value b = mpi_bcast(x, root);
    Value moved = mpi_sendrecv(x, src, dest, k % 7);
    auto halo = data_exchange(x, x, x, x, rows, cols);
    Value loss = sum(all) + sum(b) + sum(moved) + sum(halo[0]) + sum(halo[3]);
    std::vector<Value> fetch = {all, b, moved, halo[0], halo[3]};
    if (k % 10 == 0) fetch.push_back(gradients(loss, {x})[0]);
    Session session(g);
    const std::vector<Tensor> out =
        session.run(fetch, {{x, values(rank, k, n)}});
    const int left = cols > 1 && rank % cols > 0 ? rank - 1 : -1;
    const int down = rows > 1 && rank / cols < rows - 1 ? rank + cols : -1;
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(out[0][i], size * (size - 1) / 2.0 + size * double(i + k));
      ASSERT_EQ(out[1][i], root + i + k);
      ASSERT_EQ(out[2][i],
                rank == dest && src != dest ? src + i + k : rank + i + k);
      if (left >= 0) {
        ASSERT_EQ(out[3][i], left + i + k);
      }
      if (down >= 0) {
        ASSERT_EQ(out[4][i], down + i + k);
      }
    }
    if (k + 1 == kWarmUp) {
      rss_warm = resident_bytes();
      fds_warm = open_descriptors();
    }
  }
  const std::size_t rss_end = resident_bytes();
  EXPECT_EQ(open_descriptors(), fds_warm);
#ifndef ADGRAPH_UNDER_ASAN
  // (Under AddressSanitizer freed memory sits in its quarantine, so RSS
  // grows by design; LeakSanitizer checks leaks in that build instead.)
  EXPECT_LE(static_cast<double>(rss_end), 1.01 * static_cast<double>(rss_warm))
      << "resident memory grew from " << rss_warm << " to " << rss_end
      << " bytes after warm-up";
#endif
  if (rank == 0) {
    std::printf(
        "soak: %d graphs; resident %zu KiB after warm-up, %zu KiB at "
        "the end; %d descriptors\n",
        kGraphs,
        rss_warm / 1024,
        rss_end / 1024,
        fds_warm);
  }
}

}  // namespace
}  // namespace adgraph
