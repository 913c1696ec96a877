// mpi_allreduce through a Session against a raw MPI_Allreduce of the same
// buffer, 8 B to 64 MiB, in one run: Session::run (a new output each run)
// and Session::run_into (the caller's output tensor, reused). Each size
// alternates raw and run_into in rounds, then raw and run (run's fresh
// mappings would otherwise slow the run_into calls next to them), and
// reports medians (max over ranks of each rank's time, measured from a
// barrier).
// Run: mpirun -n 2 build/bench/allreduce_bench [largest size in bytes]
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "adgraph.h"
#include "bench/bench_timing.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  if (comm->rank() == 0) {
    std::printf("%12s %10s %12s %10s %10s %10s\n",
                "bytes",
                "raw_us",
                "run_us",
                "overhead",
                "into_us",
                "overhead");
  }
  // 8 B, 32 B, …, 32 MiB in steps of 4, then 64 MiB.
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n < (int64_t{8} << 20); n *= 4) sizes.push_back(n);
  sizes.push_back(int64_t{8} << 20);
  if (argc > 1) {
    const int64_t largest = std::atoll(argv[1]) / 8;
    sizes.erase(
        std::remove_if(
            sizes.begin(), sizes.end(), [&](int64_t n) { return n > largest; }),
        sizes.end());
  }
  for (int64_t n : sizes) {
    Graph g;
    Value x = g.placeholder("x", {n});
    Value y = mpi_allreduce(x);
    Session session(g);
    FeedMap feeds{{x, Tensor(Shape{n}, 1.0 + comm->rank())}};
    std::vector<double> in(n, 1.0 + comm->rank()), out(n);
    const int reps = n <= 4096 ? 2000 : n <= (1 << 20) ? 30 : 8;
    Tensor result, into(Shape{n});
    auto raw = [&] {
      MPI_Allreduce(in.data(),
                    out.data(),
                    static_cast<int>(n),
                    MPI_DOUBLE,
                    MPI_SUM,
                    MPI_COMM_WORLD);
    };
    const std::vector<double> t_into = bench::median_times(
        reps, {raw, [&] { session.run_into(y, feeds, into); }});
    const std::vector<double> t_run = bench::median_times(
        reps, {raw, [&] { result = session.run(y, feeds); }});
    const std::vector<double> t = {
        std::min(t_into[0], t_run[0]), t_run[1], t_into[1]};
    const double expect = comm->size() * (comm->size() + 1) / 2.0;
    if (result[0] != expect || out[0] != expect || into[n - 1] != expect) {
      std::fprintf(
          stderr, "wrong sum at n = %lld\n", static_cast<long long>(n));
      return 1;
    }
    const double a = t[0] * 1e6, b = t[1] * 1e6, c = t[2] * 1e6;
    if (comm->rank() == 0) {
      std::printf("%12lld %10.1f %12.1f %9.1f%% %10.1f %9.1f%%\n",
                  static_cast<long long>(8 * n),
                  a,
                  b,
                  100.0 * (b - a) / a,
                  c,
                  100.0 * (c - a) / a);
    }
  }
  return 0;
}
