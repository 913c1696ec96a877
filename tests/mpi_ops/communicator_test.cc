// The Communicator's own members (mpi_ops/communicator.cc) on 1–4 ranks:
// splits by color and key, the row and column communicators of a patch
// grid, the process alone (self) and a duplicate of the world, the groups
// they know, and their refusals.
#include "mpi_ops/communicator.h"

#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "adgraph.h"

namespace adgraph {
namespace {

double total_of_ranks(Communicator& comm, int world_rank) {
  double v = world_rank, total = 0;
  comm.allreduce(&v, &total, 1, ReduceOp::kSum);
  return total;
}

TEST(Communicator, SplitsByColorAndKey) {
  auto world = Communicator::world();
  const int r = world->rank(), p = world->size();
  // Even and odd ranks, each ordered from the highest rank down.
  auto half = world->split(r % 2, -r);
  EXPECT_EQ(half->size(), (p + 1 - r % 2) / 2);
  int above = 0;  // members of this color above this rank
  for (int q = r + 2; q < p; q += 2) ++above;
  EXPECT_EQ(half->rank(), above);
  EXPECT_EQ(half->name(),
            "split(color " + std::to_string(r % 2) + ") of world");
  EXPECT_EQ(half->world_rank(), r);
  double expected = 0;
  for (int q = r % 2; q < p; q += 2) expected += q;
  EXPECT_EQ(total_of_ranks(*half, r), expected);
  // The world knows each rank's group, in the split's order.
  std::vector<int> group;
  for (int q = p - 1; q >= 0; --q)
    if (q % 2 == r % 2) group.push_back(q);
  ASSERT_NE(half->group_of(r), nullptr);
  EXPECT_EQ(*half->group_of(r), group);
  EXPECT_EQ(half->group_of(p), nullptr);
}

TEST(Communicator, RowsAndColumnsOfAPatchGrid) {
  auto world = Communicator::world();
  const int r = world->rank(), p = world->size();
  // A 1 x p grid: one row of every rank; each column one rank.
  auto row = world->row_communicator(1, p);
  auto column = world->column_communicator(1, p);
  EXPECT_EQ(row->size(), p);
  EXPECT_EQ(row->rank(), r);
  EXPECT_EQ(column->size(), 1);
  EXPECT_EQ(total_of_ranks(*row, r), p * (p - 1) / 2.0);
  EXPECT_EQ(total_of_ranks(*column, r), r);
  // A p x 1 grid: the other way round.
  EXPECT_EQ(world->row_communicator(p, 1)->size(), 1);
  EXPECT_EQ(world->column_communicator(p, 1)->size(), p);
  try {
    world->row_communicator(2, p);
    ADD_FAILURE() << "a 2 x p grid on p ranks";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "a 2 x " + std::to_string(p) + " patch grid needs " +
                  std::to_string(2 * p) + " ranks, the communicator has " +
                  std::to_string(p)),
              std::string::npos)
        << e.what();
  }
}

TEST(Communicator, ANegativeColorIsRefusedBeforeAnyCall) {
  try {
    Communicator::world()->split(-1, 0);
    ADD_FAILURE();
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find("a color must be >= 0, got -1"),
              std::string::npos)
        << e.what();
  }
}

TEST(Communicator, SelfAndADuplicateOfTheWorld) {
  auto world = Communicator::world();
  const int r = world->rank(), p = world->size();
  auto self = Communicator::self();
  EXPECT_EQ(self->size(), 1);
  EXPECT_EQ(self->rank(), 0);
  EXPECT_EQ(self->name(), "self");
  EXPECT_EQ(total_of_ranks(*self, r), r);
  auto copy = Communicator::duplicate(world->fortran_handle(), "copy");
  EXPECT_EQ(copy->size(), p);
  EXPECT_EQ(copy->rank(), r);
  EXPECT_EQ(copy->name(), "copy");
  EXPECT_EQ(total_of_ranks(*copy, r), p * (p - 1) / 2.0);
  // A duplicate is a new context: not the world's handle.
  EXPECT_NE(copy->fortran_handle(), world->fortran_handle());
  ASSERT_NE(copy->group_of(0), nullptr);  // it spans the world in order
  EXPECT_EQ(copy->group_of(0)->size(), static_cast<size_t>(p));
  try {
    Communicator::duplicate(MPI_Comm_c2f(MPI_COMM_NULL), "none");
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("duplicate: MPI_COMM_NULL given"),
              std::string::npos)
        << e.what();
  }
}

TEST(Communicator, ASplitKeepsItsParentsDeadline) {
  auto world = Communicator::world();
  auto copy = Communicator::duplicate(world->fortran_handle(), "timed");
  copy->set_deadline(42.5);
  EXPECT_EQ(copy->deadline(), 42.5);
  EXPECT_EQ(copy->split(0, 0)->deadline(), 42.5);
}

}  // namespace
}  // namespace adgraph
