// The Communicator's MPI calls (mpi_ops/mpi_calls.cc) called directly, on
// 1–4 ranks, with rank-dependent values whose results are worked out by
// hand: every collective, point-to-point ring messages blocking and not,
// and the sizes of what arrives.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "adgraph.h"
#include "mpi_ops/communicator.h"

namespace adgraph {
namespace {

std::shared_ptr<Communicator> world() { return Communicator::world(); }

TEST(MpiCalls, AllreduceSumMaxMinProd) {
  auto comm = world();
  const int r = comm->rank(), p = comm->size();
  // Rank r holds (r + 1, −r).
  const double in[2] = {r + 1.0, -1.0 * r};
  double out[2];
  comm->allreduce(in, out, 2, ReduceOp::kSum);
  EXPECT_EQ(out[0], p * (p + 1) / 2.0);
  EXPECT_EQ(out[1], -p * (p - 1) / 2.0);
  comm->allreduce(in, out, 2, ReduceOp::kMax);
  EXPECT_EQ(out[0], p);
  EXPECT_EQ(out[1], 0.0);
  comm->allreduce(in, out, 2, ReduceOp::kMin);
  EXPECT_EQ(out[0], 1.0);
  EXPECT_EQ(out[1], 1.0 - p);
  comm->allreduce(in, out, 2, ReduceOp::kProd);
  double factorial = 1;
  for (int q = 2; q <= p; ++q) factorial *= q;
  EXPECT_EQ(out[0], factorial);
  // In place.
  double v[2] = {r + 1.0, 2.0};
  comm->allreduce(v, v, 2, ReduceOp::kSum);
  EXPECT_EQ(v[0], p * (p + 1) / 2.0);
  EXPECT_EQ(v[1], 2.0 * p);
}

TEST(MpiCalls, ReduceSumAndBroadcastsToAndFromTheLastRank) {
  auto comm = world();
  const int r = comm->rank(), p = comm->size(), root = p - 1;
  const double in[1] = {r + 1.0};
  double out[1] = {-7.0};
  comm->reduce_sum(in, out, 1, root);
  if (r == root) {
    EXPECT_EQ(out[0], p * (p + 1) / 2.0);
  }
  double data[3] = {0, 0, 0};
  if (r == root) data[0] = 1.5, data[1] = -2.0, data[2] = 8.0;
  comm->bcast(data, 3, root);
  EXPECT_EQ(std::vector<double>(data, data + 3),
            (std::vector<double>{1.5, -2.0, 8.0}));
  const std::string text = comm->bcast(
      r == root ? std::string("from the last rank") : std::string(), root);
  EXPECT_EQ(text, "from the last rank");
}

TEST(MpiCalls, GatherScatterAllgatherOfBlocks) {
  auto comm = world();
  const int r = comm->rank(), p = comm->size();
  // Rank r's block: (r, 10r).
  const double mine[2] = {1.0 * r, 10.0 * r};
  std::vector<double> all(2 * p, -1.0), expected(2 * p);
  for (int q = 0; q < p; ++q) expected[2 * q] = q, expected[2 * q + 1] = 10 * q;
  comm->gather(mine, all.data(), 2, 0);
  if (r == 0) {
    EXPECT_EQ(all, expected);
  }
  std::vector<double> everywhere(2 * p, -1.0);
  comm->allgather(mine, everywhere.data(), 2);
  EXPECT_EQ(everywhere, expected);
  // Scatter from rank 0 of 0, 1, …, 2p − 1: rank r gets (2r, 2r + 1).
  std::vector<double> source(2 * p);
  std::iota(source.begin(), source.end(), 0.0);
  double part[2] = {-1, -1};
  comm->scatter(r == 0 ? source.data() : nullptr, part, 2, 0);
  EXPECT_EQ(part[0], 2.0 * r);
  EXPECT_EQ(part[1], 2.0 * r + 1);
}

TEST(MpiCalls, AlltoallTransposesAndReduceScatterSumsBlocks) {
  auto comm = world();
  const int r = comm->rank(), p = comm->size();
  // Block j of rank r: 100r + j; after alltoall block j is 100j + r.
  std::vector<double> in(p), out(p, -1.0);
  for (int j = 0; j < p; ++j) in[j] = 100.0 * r + j;
  comm->alltoall(in.data(), out.data(), 1);
  for (int j = 0; j < p; ++j) EXPECT_EQ(out[j], 100.0 * j + r) << j;
  // Block j of rank r: (r + 1)(j + 1); rank j gets (j + 1)·p(p + 1)/2.
  for (int j = 0; j < p; ++j) in[j] = (r + 1.0) * (j + 1.0);
  double sum = -1;
  comm->reduce_scatter(in.data(), &sum, 1);
  EXPECT_EQ(sum, (r + 1.0) * p * (p + 1) / 2.0);
}

TEST(MpiCalls, RingMessagesBlockingAndNonblocking) {
  auto comm = world();
  const int r = comm->rank(), p = comm->size();
  const int next = (r + 1) % p, previous = (r + p - 1) % p;
  // send() copies and returns at once, so a ring (and a rank sending to
  // itself on one rank) cannot deadlock.
  const double out[3] = {1.0 * r, 2.0 * r, 3.0 * r};
  comm->send(out, 3, next, 7);
  double in[3] = {-1, -1, -1};
  comm->recv(in, 3, previous, 7);
  EXPECT_EQ(
      std::vector<double>(in, in + 3),
      (std::vector<double>{1.0 * previous, 2.0 * previous, 3.0 * previous}));
  comm->finish_run();
  EXPECT_EQ(comm->pending_sends(), 0u);

  // The other way round, nonblocking: receive posted first.
  const int64_t receive = comm->irecv(2, next, 8);
  const double back[2] = {-0.5 * r, 0.25 * r};
  const int64_t send = comm->isend(back, 2, previous, 8);
  Tensor arrived(Shape{2});
  Tensor* slots[2] = {&arrived, nullptr};
  const int64_t handles[2] = {receive, send};
  const int64_t counts[2] = {2, 2};
  const bool adopt[2] = {true, false};
  comm->wait(handles, slots, counts, adopt, 2);
  EXPECT_EQ(arrived.to_vector(),
            (std::vector<double>{-0.5 * next, 0.25 * next}));
  comm->finish_run();
}

}  // namespace
}  // namespace adgraph
