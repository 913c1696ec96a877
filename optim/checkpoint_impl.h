// Optimizer state on disk: one file per rank, written atomically (temporary
// file, fsync, rename, fsync of the directory), so a crash during a write
// leaves the previous checkpoint in place.
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

namespace adgraph::optim::detail {

struct LbfgsState {
  int iteration = 0;
  int evaluations = 0;
  double f = 0.0;
  double initial_f = 0.0;
  double gamma = 1.0;                 // H0 scaling sᵀy / yᵀy
  Eigen::VectorXd x, g;               // this rank's part
  std::vector<Eigen::VectorXd> s, y;  // history, oldest first
  std::vector<double> rho;            // 1 / sᵀy per pair
  std::vector<double> f_history;
};

// "<prefix>.rank<r>of<P>".
std::string checkpoint_file(const std::string& prefix, int rank, int size);

// Writes this rank's state. Throws adgraph::Error on an I/O failure.
void write_checkpoint(const std::string& prefix,
                      int rank,
                      int size,
                      int history,
                      const LbfgsState& state);

// Reads this rank's state and checks it against the run (rank count,
// number of local variables, history size, checksum). Returns an empty
// string on success, else the reason.
std::string read_checkpoint(const std::string& prefix,
                            int rank,
                            int size,
                            int64_t n,
                            int history,
                            LbfgsState* state);

}  // namespace adgraph::optim::detail
