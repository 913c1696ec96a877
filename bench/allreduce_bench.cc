// mpi_allreduce through a Session against a raw MPI_Allreduce of the same
// buffer, 8 B to 64 MiB, in one run: Session::run (a new output each run)
// and Session::run_into (the caller's output tensor, reused). Each size
// alternates raw and run_into in rounds, then raw and run (run's fresh
// mappings would otherwise slow the run_into calls next to them), and
// reports medians (max over ranks of each rank's time, measured from a
// barrier). Each adgraph column is compared with the raw median of its own
// pass: what runs between two raw calls changes their time (at 8 KiB, P =
// 2, a raw call next to `run`, or next to any 8 KiB malloc and free, took
// 0.2 µs less than one next to `run_into` or on its own; docs/PERFORMANCE.md),
// so a raw median from the other pass is not a like-for-like baseline.
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
  if (comm->rank() == 0) bench::print_header({"into", "run"});
  const std::vector<int64_t> sizes = bench::message_sizes(argc, argv);
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
    const double expect = comm->size() * (comm->size() + 1) / 2.0;
    if (result[0] != expect || out[0] != expect || into[n - 1] != expect) {
      std::fprintf(
          stderr, "wrong sum at n = %lld\n", static_cast<long long>(n));
      return 1;
    }
    if (comm->rank() == 0) {
      std::printf("%12lld", static_cast<long long>(8 * n));
      bench::print_pass(t_into);
      bench::print_pass(t_run);
      std::printf("\n");
    }
  }
  return 0;
}
