// The plan-time check that every rank runs the same sequence of every-rank
// nodes (mpi_ops/sequence_check.cc), called directly on 1–4 ranks: names
// may differ, signatures may not; every rank raises the one message that
// lists each rank's entry at the first difference, or "no further
// collective" where a rank's sequence ends first.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "adgraph.h"
#include "mpi_ops/communicator.h"

namespace adgraph {
namespace {

// A descriptor: the node's name, then its signature.
std::string entry(const std::string& name, const std::string& signature) {
  return name + CommContext::kNameEnd + signature;
}

// The message check_same_sequence raises on every rank, or "passed".
std::string outcome(Communicator& comm, const std::vector<std::string>& d) {
  try {
    comm.check_same_sequence(d);
  } catch (const RunError& e) {
    return e.what();
  }
  return "passed";
}

TEST(SequenceCheck, NamesMayDifferSignaturesMayNot) {
  auto comm = Communicator::world();
  const std::string rank = std::to_string(comm->rank());
  // Node names differ from rank to rank; the signatures agree.
  EXPECT_EQ(outcome(*comm,
                    {entry("a" + rank, "mpi_allreduce [3]"),
                     entry("b" + rank, "mpi_bcast [2] root 0")}),
            "passed");
}

TEST(SequenceCheck, EveryRankReportsEachRanksEntryAtTheFirstDifference) {
  auto comm = Communicator::world();
  const int r = comm->rank(), p = comm->size();
  // Entry 1 differs on the last rank (on one rank: nothing to compare).
  const std::string second =
      r == p - 1 && p > 1 ? "mpi_bcast [3] root 0" : "mpi_bcast [2] root 0";
  const std::string got =
      outcome(*comm, {entry("s", "mpi_allreduce [3]"), entry("t", second)});
  if (p == 1) {
    EXPECT_EQ(got, "passed");
    return;
  }
  std::string want = "ranks would run different collectives: collective #1 is";
  for (int q = 0; q < p; ++q) {
    want += std::string(q == 0 ? " " : "; ") + "on rank " + std::to_string(q) +
            " t" +
            (q == p - 1 ? "mpi_bcast [3] root 0" : "mpi_bcast [2] root 0");
  }
  EXPECT_NE(got.find(want), std::string::npos) << got;
}

TEST(SequenceCheck, ASequenceThatEndsFirstIsNamed) {
  auto comm = Communicator::world();
  const int r = comm->rank(), p = comm->size();
  std::vector<std::string> d = {entry("s", "mpi_allreduce [1]")};
  if (r != 0) d.push_back(entry("u", "mpi_sum [4] root 1"));
  const std::string got = outcome(*comm, d);
  if (p == 1) {
    EXPECT_EQ(got, "passed");
    return;
  }
  std::string want = "collective #1 is on rank 0 no further collective";
  for (int q = 1; q < p; ++q)
    want += "; on rank " + std::to_string(q) + " umpi_sum [4] root 1";
  EXPECT_NE(got.find(want), std::string::npos) << got;
}

TEST(SequenceCheck, OnASubCommunicatorTheMessageNamesIt) {
  auto world = Communicator::world();
  if (world->size() < 2) {
    EXPECT_EQ(outcome(*world, {entry("x", "a"), entry("y", "b")}), "passed");
    return;
  }
  // Ranks 0 and 1 together, whose second entries differ; the others
  // (color 1) agree.
  const bool first_two = world->rank() < 2;
  auto pair = world->split(first_two ? 0 : 1, 0);
  const std::string got =
      outcome(*pair,
              {entry("x", "same"),
               entry("y", first_two && pair->rank() == 1 ? "two" : "one")});
  if (!first_two) {
    EXPECT_EQ(got, "passed");
    return;
  }
  EXPECT_NE(got.find("ranks would run different collectives on communicator "
                     "split(color 0) of world (ranks within it): collective "
                     "#1 is on rank 0 yone; on rank 1 ytwo"),
            std::string::npos)
      << got;
}

}  // namespace
}  // namespace adgraph
