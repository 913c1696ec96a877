// Not a suite: a deliberate failure on the last rank only, which the MPI test
// main must turn into a non-zero exit and print from rank 0.
#include <gtest/gtest.h>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

TEST(Harness, FailsOnTheLastRankOnly) {
  EXPECT_NE(testing::world_rank(), testing::world_size() - 1)
      << "deliberate failure";
  // A collective after the failure still completes on every rank.
  EXPECT_EQ(Communicator::world()->allreduce_sum(1.0), testing::world_size());
}

}  // namespace
}  // namespace adgraph
