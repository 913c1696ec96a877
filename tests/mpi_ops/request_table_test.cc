// The request table on its own, on a duplicate of the world: its spare
// buffers, sends that complete by the end of a run, nonblocking requests
// around a ring, and what a wait reports of a receive of the wrong length
// (the Communicator ends the job with it).
#include "mpi_ops/request_table.h"

#include <gtest/gtest.h>

#include <string>

#include "adgraph.h"

namespace adgraph {
namespace {

using mpi_detail::RequestTable;

// A duplicate of MPI_COMM_WORLD for one test: its messages meet no others.
class Duplicate {
 public:
  Duplicate() { MPI_Comm_dup(MPI_COMM_WORLD, &comm_); }
  ~Duplicate() { MPI_Comm_free(&comm_); }
  MPI_Comm comm() const { return comm_; }
  int rank() const {
    int r = 0;
    MPI_Comm_rank(comm_, &r);
    return r;
  }
  int size() const {
    int s = 0;
    MPI_Comm_size(comm_, &s);
    return s;
  }
  int next() const { return (rank() + 1) % size(); }
  int previous() const { return (rank() + size() - 1) % size(); }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

Tensor values_of(int rank, int64_t n) {
  Tensor t(Shape{n});
  for (int64_t i = 0; i < n; ++i) t[i] = 100.0 * rank + 0.5 * i;
  return t;
}

TEST(RequestTable, KeepsSpareBuffersBySizeAndGivesThemBack) {
  Duplicate d;
  RequestTable table(d.comm());
  Eigen::ArrayXd a = table.take_spare(10);
  EXPECT_EQ(a.size(), 10);
  const double* storage = a.data();
  table.keep_spare(std::move(a));
  EXPECT_EQ(table.kept_bytes(), 10 * sizeof(double));
  Eigen::ArrayXd other = table.take_spare(11);  // no spare of 11: new
  EXPECT_NE(other.data(), storage);
  EXPECT_EQ(table.kept_bytes(), 10 * sizeof(double));
  Eigen::ArrayXd again = table.take_spare(10);
  EXPECT_EQ(again.data(), storage) << "the kept buffer was not reused";
  EXPECT_EQ(table.kept_bytes(), 0u);
  table.keep_spare(Eigen::ArrayXd());  // empty: not kept
  table.keep_spare(std::move(again));
  table.keep_spare(std::move(other));
  EXPECT_EQ(table.kept_bytes(), 21 * sizeof(double));
  table.release_buffers();
  EXPECT_EQ(table.kept_bytes(), 0u);
}

TEST(RequestTable, SendsCompleteWhenAskedAndLeaveTheirBuffersAsSpares) {
  Duplicate d;
  RequestTable table(d.comm());
  constexpr int64_t n = 5;
  const Tensor mine = values_of(d.rank(), n);
  table.send(mine.data(), n, d.next(), 3);
  Tensor taken = values_of(d.rank(), n);
  table.send_buffer(taken, d.next(), 4);  // no copy: the storage goes
  EXPECT_EQ(taken.size(), n);
  EXPECT_EQ(table.copied_send_bytes(), n * sizeof(double));
  EXPECT_EQ(table.pending_sends(), 2u);
  Tensor first(Shape{n}), second(Shape{n});
  MPI_Recv(first.data(),
           n,
           MPI_DOUBLE,
           d.previous(),
           3,
           d.comm(),
           MPI_STATUS_IGNORE);
  MPI_Recv(second.data(),
           n,
           MPI_DOUBLE,
           d.previous(),
           4,
           d.comm(),
           MPI_STATUS_IGNORE);
  table.complete_sends_from(1);
  EXPECT_EQ(table.pending_sends(), 1u);
  table.complete_sends_from(0);
  EXPECT_EQ(table.pending_sends(), 0u);
  EXPECT_EQ(table.kept_bytes(), 2 * n * sizeof(double));
  const Tensor theirs = values_of(d.previous(), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(first[i], theirs[i]) << i;
    EXPECT_EQ(second[i], theirs[i]) << i;
  }
}

TEST(RequestTable, RequestsAroundARingArriveAdoptedOrCopied) {
  Duplicate d;
  RequestTable table(d.comm());
  constexpr int64_t n = 7;
  const Tensor mine = values_of(d.rank(), n);
  Tensor lent = values_of(d.rank(), n);
  const int64_t handles[4] = {table.irecv(n, d.previous(), 1),
                              table.irecv(n, d.previous(), 2),
                              table.isend(mine.data(), n, d.next(), 1),
                              table.isend_buffer(lent, d.next(), 2)};
  for (int k = 1; k < 4; ++k) EXPECT_GT(handles[k], handles[k - 1]);
  EXPECT_EQ(table.new_handle(), handles[3] + 1);
  Tensor adopted(Shape{n}), copied(Shape{n}), unused(Shape{});
  Tensor* out[4] = {&adopted, &copied, &unused, &unused};
  const double* adopted_storage = adopted.data();
  const double* copied_storage = copied.data();
  const int64_t counts[4] = {n, n, 0, 0};
  const bool adopt[4] = {true, false, false, false};
  EXPECT_EQ(table.wait(handles, out, counts, adopt, 4), "");
  EXPECT_NE(adopted.data(), adopted_storage) << "not adopted";
  EXPECT_EQ(copied.data(), copied_storage) << "not copied in place";
  const Tensor theirs = values_of(d.previous(), n);
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_EQ(adopted[i], theirs[i]) << i;
    EXPECT_EQ(copied[i], theirs[i]) << i;
  }
  EXPECT_EQ(table.copied_send_bytes(), n * sizeof(double));
}

TEST(RequestTable, AWaitReportsAReceiveOfTheWrongLength) {
  Duplicate d;
  RequestTable table(d.comm());
  const Tensor two = values_of(d.rank(), 2);
  const int64_t handles[2] = {table.irecv(3, d.previous(), 9),
                              table.isend(two.data(), 2, d.next(), 9)};
  Tensor got(Shape{3}), unused(Shape{});
  Tensor* out[2] = {&got, &unused};
  const int64_t counts[2] = {3, 0};
  const bool adopt[2] = {false, false};
  got.array().setConstant(-1.0);
  EXPECT_EQ(table.wait(handles, out, counts, adopt, 2),
            "received 2 doubles from rank " + std::to_string(d.previous()) +
                " (tag 9), expected 3");
  EXPECT_EQ(got[0], -1.0) << "a short message was written out";
  // Both requests left the table: waiting for them again is a programming
  // error, and cancelling finds nothing.
  table.cancel_requests();
  EXPECT_EQ(table.kept_bytes(), (3 + 2) * sizeof(double));
}

TEST(RequestTable, CancellingLeavesNoReceiveBehind) {
  Duplicate d;
  RequestTable table(d.comm());
  table.irecv(4, d.previous(), 11);  // never sent
  table.cancel_requests();           // returns: the receive is cancelled
  // The table is usable again, and the next handle is new.
  const Tensor one = values_of(d.rank(), 1);
  const int64_t handles[2] = {table.irecv(1, d.previous(), 12),
                              table.isend(one.data(), 1, d.next(), 12)};
  EXPECT_EQ(handles[0], 2);
  Tensor got(Shape{1}), unused(Shape{});
  Tensor* out[2] = {&got, &unused};
  const int64_t counts[2] = {1, 0};
  const bool adopt[2] = {false, false};
  EXPECT_EQ(table.wait(handles, out, counts, adopt, 2), "");
  EXPECT_EQ(got[0], 100.0 * d.previous());
}

}  // namespace
}  // namespace adgraph
