// The STREAM triad a = b + s·c on arrays far larger than the caches: the
// memory bandwidth a memory-bound kernel (the 1024² heat step) can reach.
// One thread by default, as the heat benchmarks run one single-threaded
// rank per core; OMP_NUM_THREADS=2 gives the machine's. Bytes counted as
// STREAM counts them: 24 per element (two reads, one write).
// Run: build/bench/stream_triad [elements, default 2^24 (128 MiB per array)]
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const long n = argc > 1 ? std::atol(argv[1]) : 1L << 24;
  std::vector<double> a(n), b(n), c(n);
#pragma omp parallel for schedule(static)
  for (long i = 0; i < n; ++i) a[i] = 0.0, b[i] = 1.0, c[i] = 2.0;
  const double s = 3.0;
  std::vector<double> seconds;
  for (int rep = 0; rep < 10; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
#pragma omp parallel for schedule(static)
    for (long i = 0; i < n; ++i) a[i] = b[i] + s * c[i];
    seconds.push_back(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0)
            .count());
  }
  std::sort(seconds.begin(), seconds.end());
  // STREAM reports the best time; the median is printed too.
  const double bytes = 24.0 * n;
  std::printf(
      "RESULT bench=stream_triad threads=%d elements=%ld best_GBps=%.2f "
      "median_GBps=%.2f check=%g\n",
      omp_get_max_threads(),
      n,
      bytes / seconds.front() * 1e-9,
      bytes / seconds[seconds.size() / 2] * 1e-9,
      a[n / 2]);
  return a[n / 2] == 7.0 ? 0 : 1;
}
