// What mpi_ops/mpi_environment.cc gives a program, on 1–4 ranks: every
// rank failing alike is agreed on (repeatedly), report_failure then
// prints once, on rank 0, and returns the code on every rank; the
// programs' deadline applies unless ADGRAPH_COMM_DEADLINE is set.
#include "mpi_ops/mpi_environment.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "mpi_ops/communicator.h"

namespace adgraph {
namespace {

TEST(MpiEnvironment, EveryRankFailingAlikeIsAgreedOn) {
  // Twice: each agreement matches its own calls only.
  EXPECT_TRUE(every_rank_failed(30));
  EXPECT_TRUE(every_rank_failed(30));
}

TEST(MpiEnvironment, AFailureOfEveryRankIsReportedOnceByRankZero) {
  const int rank = Communicator::world()->rank();
  ::testing::internal::CaptureStderr();
  const int code = report_failure("prog", "bad input in t.json", 7);
  const std::string printed = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(code, 7);
  EXPECT_EQ(printed, rank == 0 ? "prog: bad input in t.json\n" : "");
}

TEST(MpiEnvironment, TheProgramsDeadlineUnlessTheEnvironmentSetsOne) {
  auto world = Communicator::world();
  const double before = world->deadline();
  const char* set = std::getenv("ADGRAPH_COMM_DEADLINE");
  const std::string saved = set ? set : "";
  unsetenv("ADGRAPH_COMM_DEADLINE");
  EXPECT_EQ(program_world()->deadline(), kProgramDeadlineSeconds);
  EXPECT_EQ(kProgramDeadlineSeconds, 300);
  // With the variable set, program_world leaves the deadline as it is.
  world->set_deadline(12.5);
  setenv("ADGRAPH_COMM_DEADLINE", "12.5", 1);
  EXPECT_EQ(program_world()->deadline(), 12.5);
  EXPECT_EQ(program_world(), world);
  if (set) {
    setenv("ADGRAPH_COMM_DEADLINE", saved.c_str(), 1);
  } else {
    unsetenv("ADGRAPH_COMM_DEADLINE");
  }
  world->set_deadline(before);
}

}  // namespace
}  // namespace adgraph
