// Timing shared by the MPI benchmarks.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <functional>
#include <vector>

namespace adgraph::bench {

// Calls each function once to warm up, then runs `reps` rounds; a round
// calls every function once, in order, each started from an MPI_Barrier.
// Returns, per function, the median over rounds of the slowest rank's time
// in seconds. Interleaving keeps slow drifts of the machine from favouring
// one function. Collective.
inline std::vector<double> median_times(
    int reps, const std::vector<std::function<void()>>& fs) {
  for (const auto& f : fs) f();
  std::vector<std::vector<double>> times(fs.size());
  for (int r = 0; r < reps; ++r) {
    for (std::size_t k = 0; k < fs.size(); ++k) {
      MPI_Barrier(MPI_COMM_WORLD);
      const auto t0 = std::chrono::steady_clock::now();
      fs[k]();
      double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
              .count();
      MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      times[k].push_back(s);
    }
  }
  std::vector<double> medians;
  for (auto& t : times) {
    std::sort(t.begin(), t.end());
    medians.push_back(t[t.size() / 2]);
  }
  return medians;
}

inline double median_time(int reps, const std::function<void()>& f) {
  return median_times(reps, {f})[0];
}

}  // namespace adgraph::bench
