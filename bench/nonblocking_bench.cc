// A ring shift with nonblocking nodes (mpi_irecv from the previous rank,
// mpi_isend to the next, one mpi_waitall) against the same three raw calls
// (MPI_Irecv into the output, MPI_Isend of the input, MPI_Waitall) in one
// run, 8 B to 64 MiB. Three passes: the received tensor fetched into a
// caller's tensor (Session::run_into, which copies it there); then read by
// a later node (its sum fetched; the raw side sums its output with the
// same Eigen reduction); then, instead of the fed x (which mpi_isend must
// copy: the caller owns it), 2x is sent, a value that dies at the send,
// whose buffer the message takes (the raw side computes 2x into a buffer
// of its own with the same Eigen expression and sends that). Within a pass
// the two alternate in rounds; medians of the slowest rank's time, each
// from a barrier (bench/bench_timing.h).
// Run: mpirun -n 2 build/bench/nonblocking_bench [largest size in bytes]
#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "adgraph.h"
#include "bench/bench_timing.h"

using namespace adgraph;

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = Communicator::world();
  const int rank = comm->rank(), size = comm->size();
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  if (rank == 0) bench::print_header({"into", "sum", "sent2x"});
  const std::vector<int64_t> sizes = bench::message_sizes(argc, argv);
  for (int64_t n : sizes) {
    Graph g;
    Value x = g.placeholder("x", {n});
    Value received =
        mpi_waitall({mpi_irecv(g, {n}, prev), mpi_isend(x, next)})[0];
    Value total = sum(received);
    Session session(g);
    // Its own graph: a run also runs the point-to-point nodes made before
    // the ones it needs, to keep every rank's order.
    Graph g_2x;
    Value x_2x = g_2x.placeholder("x", {n});
    Value received_2x = mpi_waitall(
        {mpi_irecv(g_2x, {n}, prev), mpi_isend(2.0 * x_2x, next)})[0];
    Session session_2x(g_2x);
    FeedMap feeds{{x, Tensor(Shape{n}, 1.0 + rank)}};
    std::vector<double> in(n, 1.0 + rank), out(n);
    const int reps = n <= 4096 ? 2000 : n <= (1 << 20) ? 30 : 8;
    Tensor into(Shape{n}), total_into(Shape{});
    double raw_total = 0.0;
    // The raw ring shift: `send` goes to next, prev's arrives in out.
    auto shift = [&](const double* send, int tag) {
      MPI_Request requests[2];
      MPI_Irecv(out.data(),
                static_cast<int>(n),
                MPI_DOUBLE,
                prev,
                tag,
                MPI_COMM_WORLD,
                &requests[0]);
      MPI_Isend(send,
                static_cast<int>(n),
                MPI_DOUBLE,
                next,
                tag,
                MPI_COMM_WORLD,
                &requests[1]);
      MPI_Waitall(2, requests, MPI_STATUSES_IGNORE);
    };
    auto raw = [&] { shift(in.data(), 0); };
    auto raw_sum = [&] {
      raw();
      raw_total = Eigen::Map<const Eigen::ArrayXd>(out.data(), n).sum();
    };
    Eigen::ArrayXd twice(n);
    auto raw_2x = [&] {
      twice = 2.0 * Eigen::Map<const Eigen::ArrayXd>(in.data(), n);
      shift(twice.data(), 1);
    };
    Tensor into_2x(Shape{n});
    FeedMap feeds_2x{{x_2x, Tensor(Shape{n}, 1.0 + rank)}};
    const std::vector<double> t = bench::median_times(
        reps, {raw, [&] { session.run_into(received, feeds, into); }});
    const std::vector<double> t_sum = bench::median_times(
        reps, {raw_sum, [&] { session.run_into(total, feeds, total_into); }});
    const std::vector<double> t_2x = bench::median_times(
        reps,
        {raw_2x, [&] { session_2x.run_into(received_2x, feeds_2x, into_2x); }});
    const double expect = 1.0 + prev;
    if (out[n - 1] != 2 * expect || into[0] != expect ||
        into[n - 1] != expect || total_into.item() != expect * n ||
        raw_total != expect * n || into_2x[0] != 2 * expect ||
        into_2x[n - 1] != 2 * expect) {
      std::fprintf(
          stderr, "wrong message at n = %lld\n", static_cast<long long>(n));
      return 1;
    }
    if (rank == 0) {
      std::printf("%12lld", static_cast<long long>(8 * n));
      bench::print_pass(t);
      bench::print_pass(t_sum);
      bench::print_pass(t_2x);
      std::printf("\n");
    }
  }
  return 0;
}
