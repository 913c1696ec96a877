// Shared by the MPI examples: compares a value with its formula on every
// rank and makes the exit code reflect any rank's mismatch.
#pragma once

#include <cmath>
#include <cstdio>

#include "mpi_ops/communicator.h"

namespace adgraph::examples {

class Checker final {
 public:
  explicit Checker(Communicator& comm) : comm_(comm) {}
  // Records whether `got` equals `want` to round-off.
  void expect(const char* what, double got, double want) {
    if (std::fabs(got - want) > 1e-12 * (1 + std::fabs(want))) {
      std::fprintf(stderr,
                   "rank %d: %s = %.17g, expected %.17g\n",
                   comm_.rank(),
                   what,
                   got,
                   want);
      failures_ += 1;
    }
  }
  // 0 when every rank matched; prints the verdict on rank 0.
  int exit_code() {
    const double total = comm_.allreduce_sum(failures_);
    if (comm_.rank() == 0) {
      std::printf("%s\n",
                  total == 0 ? "check: every rank matches the formulas"
                             : "check: FAILED on some rank");
    }
    return total == 0 ? 0 : 1;
  }

 private:
  Communicator& comm_;
  double failures_ = 0;
};

}  // namespace adgraph::examples
