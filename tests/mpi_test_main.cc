// GoogleTest main for MPI suites. Only rank 0 prints GoogleTest's output;
// other ranks record their failed assertions, which rank 0 prints at the
// end, prefixed with the rank. The exit code is non-zero on every rank when
// any rank failed.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "mpi_ops/communicator.h"

namespace {

// Collects failed assertions of a non-zero rank.
class FailureRecorder final : public ::testing::EmptyTestEventListener {
 public:
  // GoogleTest holds its own lock while reporting a part result, so the
  // test's name is remembered here rather than asked for there.
  void OnTestStart(const ::testing::TestInfo& info) override {
    test_ = std::string(info.test_suite_name()) + "." + info.name();
  }
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    text_ += test_ + ": " + (result.file_name() ? result.file_name() : "?") +
             ":" + std::to_string(result.line_number()) + ": " +
             result.message() + "\n";
  }
  const std::string& text() const { return text_; }

 private:
  std::string test_;
  std::string text_;
};

}  // namespace

int main(int argc, char** argv) {
  adgraph::MpiEnvironment env(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  auto* recorder = new FailureRecorder;
  if (rank != 0) delete listeners.Release(listeners.default_result_printer());
  listeners.Append(recorder);

  int failed = RUN_ALL_TESTS() != 0 ? 1 : 0;

  // Rank 0 prints what the other ranks recorded.
  const std::string& mine = recorder->text();
  int length = static_cast<int>(mine.size());
  std::vector<int> lengths(size), offsets(size);
  MPI_Gather(
      &length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  int total = 0;
  for (int r = 0; r < size; ++r) offsets[r] = total, total += lengths[r];
  std::string all(rank == 0 ? total : 0, '\0');
  MPI_Gatherv(mine.data(),
              length,
              MPI_CHAR,
              all.data(),
              lengths.data(),
              offsets.data(),
              MPI_CHAR,
              0,
              MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 1; r < size; ++r) {
      if (lengths[r] == 0) continue;
      std::printf("[rank %d] failures:\n%s",
                  r,
                  all.substr(offsets[r], lengths[r]).c_str());
    }
  }
  int any_failed = 0;
  MPI_Allreduce(&failed, &any_failed, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0 && any_failed && !failed) {
    std::printf("FAILED on another rank\n");
  }
  return any_failed;
}
