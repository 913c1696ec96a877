// Naive and ring allreduce built from the graph's send/recv nodes
// (mpi_ops/allreduce_programs.h) against MPI_Allreduce, 8 B to 64 MiB, in
// one run. Both programs write into the caller's tensor (Session::run_into),
// as MPI_Allreduce writes into its receive buffer. Medians of the per-run
// maximum over ranks, each from a barrier.
//   mpirun -n 2 build/bench/allreduce_programs_bench [segment elements]
// The optional argument sets the ring's message size (allreduce_ring's
// `segment`; default kRingSegment).
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "adgraph.h"
#include "bench/bench_timing.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  const int size = comm->size();
  const int64_t segment = argc > 1 ? std::atoll(argv[1]) : kRingSegment;
  if (comm->rank() == 0) {
    std::printf("# ring segment: %lld doubles\n",
                static_cast<long long>(segment));
    std::printf("%12s %12s %12s %12s %8s %8s %16s %16s\n",
                "bytes",
                "mpi_us",
                "naive_us",
                "ring_us",
                "naive/mpi",
                "ring/mpi",
                "naive_sent_B",
                "ring_sent_B");
  }
  std::vector<int64_t> sizes;
  for (int64_t n = 1; n < (int64_t{8} << 20); n *= 4) sizes.push_back(n);
  sizes.push_back(int64_t{8} << 20);
  for (int64_t n : sizes) {
    // One graph per program: a run also runs the point-to-point nodes
    // made before the ones it needs (every rank's calls keep one order),
    // so in a shared graph the second program's runs would include the
    // first program's messages.
    Graph g_naive, g_ring;
    Value x_naive = g_naive.placeholder("x", {n});
    Value x_ring = g_ring.placeholder("x", {n});
    Value naive = allreduce_naive(x_naive),
          ring = allreduce_ring(x_ring, kRingAllreduceTag, segment);
    Session s_naive(g_naive), s_ring(g_ring);
    const Tensor x(Shape{n}, 1.0 + comm->rank());
    FeedMap feeds_naive{{x_naive, x}}, feeds_ring{{x_ring, x}};
    std::vector<double> in(n, 1.0 + comm->rank()), out(n);
    const int reps = n <= 4096 ? 100 : n <= (1 << 20) ? 20 : 7;
    Tensor a(Shape{n}), b(Shape{n});
    const std::vector<double> t =
        bench::median_times(reps,
                            {[&] {
                               MPI_Allreduce(in.data(),
                                             out.data(),
                                             static_cast<int>(n),
                                             MPI_DOUBLE,
                                             MPI_SUM,
                                             MPI_COMM_WORLD);
                             },
                             [&] { s_naive.run_into(naive, feeds_naive, a); },
                             [&] { s_ring.run_into(ring, feeds_ring, b); }});
    const double t_mpi = t[0], t_naive = t[1], t_ring = t[2];
    const double want = size * (size + 1) / 2.0;
    if (a[n - 1] != want || b[n - 1] != want || out[n - 1] != want) {
      std::fprintf(
          stderr, "wrong sum at n = %lld\n", static_cast<long long>(n));
      return 1;
    }
    if (comm->rank() == 0) {
      std::printf("%12lld %12.1f %12.1f %12.1f %8.2f %8.2f %16.0f %16.0f\n",
                  static_cast<long long>(8 * n),
                  t_mpi * 1e6,
                  t_naive * 1e6,
                  t_ring * 1e6,
                  t_naive / t_mpi,
                  t_ring / t_mpi,
                  8.0 * (size - 1) * n,
                  8.0 * 2 * (size - 1) * n / size);
    }
  }
  return 0;
}
