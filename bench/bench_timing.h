// Timing shared by the MPI benchmarks.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <string>
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

// Message sizes in doubles for the communication benchmarks: 8 B, 32 B, …,
// 32 MiB in steps of 4, then 64 MiB; none above argv[1] bytes when given.
inline std::vector<int64_t> message_sizes(int argc, char** argv) {
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n < (int64_t{8} << 20); n *= 4) sizes.push_back(n);
  sizes.push_back(int64_t{8} << 20);
  if (argc > 1) {
    const int64_t largest = std::atoll(argv[1]) / 8;
    std::erase_if(sizes, [&](int64_t n) { return n > largest; });
  }
  return sizes;
}

// The header of a table whose rows are a size in bytes and, per pass, the
// raw time, adgraph's time (named) and the overhead (print_pass).
inline void print_header(std::initializer_list<const char*> passes) {
  std::printf("%12s", "bytes");
  for (const char* name : passes) {
    std::printf(" %10s %10s %9s",
                "raw_us",
                (std::string(name) + "_us").c_str(),
                "overhead");
  }
  std::printf("\n");
}

// One pass of a row: the raw and adgraph medians (median_times of {raw,
// adgraph}) in microseconds and adgraph's overhead over the raw one.
inline void print_pass(const std::vector<double>& pass) {
  std::printf(" %10.2f %10.2f %8.1f%%",
              pass[0] * 1e6,
              pass[1] * 1e6,
              100.0 * (pass[1] - pass[0]) / pass[0]);
}

}  // namespace adgraph::bench
