// The exact sums of issue #36 against MPI's own sum, in one run:
//   1. a scalar allreduce: MPI_Allreduce of one double against
//      CommContext::allreduce_exact (one value a rank: up to 16 ranks the
//      values are gathered and each rank sums them exactly) and
//      CommContext::allreduce_exact_sum (any number of values a rank: up
//      to 16 ranks its exact sum as four doubles in slots, else its
//      ExactSum words, 71 doubles, summed by MPI), and allreduce_exact_sums
//      of a dot product's accumulated share, 2000 calls a sample;
//   2. a vector allreduce, 1 KiB to 64 MiB: MPI_Allreduce (MPI_SUM)
//      against CommContext::allreduce_exact (exact per element), in ns per
//      element;
//   3. the local accumulator: ExactSum::add against a plain loop sum, ns
//      per element (2^16 normal deviates).
// Medians of interleaved rounds (bench/bench_timing.h), slowest rank.
// Run: mpirun -n 2 build/bench/exact_sum_bench [largest vector in bytes]
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "adgraph.h"
#include "bench/bench_timing.h"
#include "core/exact_sum.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  const bool root = comm->rank() == 0;
  std::mt19937_64 rng(17 + comm->rank());
  std::normal_distribution<double> normal;

  // 1. One double.
  constexpr int kCalls = 2000;
  double x = normal(rng), sink = 0;
  // A rank's share of a dot product: 1000 products of deviates, already
  // accumulated (their exact sum needs two or three terms).
  ExactSum dot;
  for (int i = 0; i < 1000; ++i) dot.add(normal(rng) * normal(rng));
  const auto scalar = bench::median_times(
      21,
      {[&] {
         for (int i = 0; i < kCalls; ++i) {
           double y = 0;
           MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
           sink += y;
         }
       },
       [&] {
         for (int i = 0; i < kCalls; ++i) {
           double y = 0;
           comm->allreduce_exact(&x, &y, 1);
           sink += y;
         }
       },
       [&] {
         for (int i = 0; i < kCalls; ++i)
           sink += comm->allreduce_exact_sum(&x, 1);
       },
       [&] {
         for (int i = 0; i < kCalls; ++i) {
           double y = 0;
           comm->allreduce_exact_sums(&dot, &y, 1);
           sink += y;
         }
       }});
  if (root) {
    std::printf(
        "scalar allreduce, %d ranks: MPI_Allreduce %.2f us, "
        "allreduce_exact %.2f us (ratio %.2f), allreduce_exact_sum %.2f us "
        "(ratio %.2f), allreduce_exact_sums of a dot's ExactSum %.2f us "
        "(ratio %.2f)\n",
        comm->size(),
        scalar[0] / kCalls * 1e6,
        scalar[1] / kCalls * 1e6,
        scalar[1] / scalar[0],
        scalar[2] / kCalls * 1e6,
        scalar[2] / scalar[0],
        scalar[3] / kCalls * 1e6,
        scalar[3] / scalar[0]);
    std::printf("\n%12s %14s %14s %8s\n",
                "bytes",
                "mpi_ns/elem",
                "exact_ns/elem",
                "ratio");
  }

  // 2. Vectors, 1 KiB to 64 MiB (or argv[1] bytes).
  int64_t largest = int64_t{64} << 20;
  if (argc > 1) largest = std::atoll(argv[1]);
  for (int64_t bytes = 1024; bytes <= largest; bytes *= 4) {
    const int64_t n = bytes / 8;
    std::vector<double> in(n), out(n);
    for (double& v : in) v = normal(rng);
    const int reps = n >= (int64_t{1} << 20) ? 3 : 11;
    const auto t = bench::median_times(
        reps,
        {[&] {
           MPI_Allreduce(in.data(),
                         out.data(),
                         static_cast<int>(n),
                         MPI_DOUBLE,
                         MPI_SUM,
                         MPI_COMM_WORLD);
         },
         [&] { comm->allreduce_exact(in.data(), out.data(), n); }});
    if (root) {
      std::printf("%12lld %14.2f %14.2f %8.1f\n",
                  static_cast<long long>(bytes),
                  t[0] / n * 1e9,
                  t[1] / n * 1e9,
                  t[1] / t[0]);
    }
    if (bytes * 4 > largest && bytes < largest) bytes = largest / 4;
  }

  // 3. The local accumulator.
  std::vector<double> v(1 << 16);
  for (double& e : v) e = normal(rng);
  const auto local = bench::median_times(
      21,
      {[&] {
         double s = 0;
         for (double e : v) s += e;
         sink += s;
       },
       [&] { sink += exact_sum(v.data(), static_cast<int64_t>(v.size())); }});
  if (root) {
    std::printf(
        "\nlocal sum of 2^16 doubles: plain %.2f ns/elem, ExactSum %.2f "
        "ns/elem (%.0f)\n",
        local[0] / v.size() * 1e9,
        local[1] / v.size() * 1e9,
        sink > 0 ? 1.0 : 0.0);
  }
}
