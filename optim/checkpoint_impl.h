// Optimizer state on disk: one file per rank, written atomically (temporary
// file, fsync, rename, fsync of the directory), so a crash during a write
// leaves the previous checkpoint in place.
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

namespace adgraph::optim::detail {

struct LbfgsState {
  // 0: L-BFGS (optim/lbfgs.h); 1: L-BFGS-B (optim/lbfgsb.h), which also
  // keeps the k × k products sy and ss and θ (in gamma).
  int32_t kind = 0;
  // Fingerprint of this rank's bounds (0 without bounds): a resumed run
  // must have the same box.
  uint64_t bounds_hash = 0;
  int iteration = 0;
  int evaluations = 0;
  double f = 0.0;
  double initial_f = 0.0;
  double gamma = 1.0;                 // H0 scaling sᵀy / yᵀy
  Eigen::VectorXd x, g;               // this rank's part
  std::vector<Eigen::VectorXd> s, y;  // history, oldest first
  std::vector<double> rho;            // 1 / sᵀy per pair
  std::vector<double> f_history;
  // ‖∇f‖∞ (projected, with bounds) after each iteration, starting at x0.
  std::vector<double> gnorm_history;
  Eigen::MatrixXd sy, ss;  // kind 1 only
};

// FNV-1a of raw bytes (checkpoint checksums and fingerprints).
uint64_t fnv1a(const char* data, std::size_t n);

// "<prefix>.rank<r>of<P>".
std::string checkpoint_file(const std::string& prefix, int rank, int size);

// Writes this rank's state. Throws adgraph::Error on an I/O failure.
void write_checkpoint(const std::string& prefix,
                      int rank,
                      int size,
                      int history,
                      const LbfgsState& state);

// Reads this rank's state and checks it against the run (rank count,
// number of local variables, history size, kind, bounds, checksum).
// Returns an empty string on success, else the reason.
std::string read_checkpoint(const std::string& prefix,
                            int rank,
                            int size,
                            int64_t n,
                            int history,
                            int32_t kind,
                            uint64_t bounds_hash,
                            LbfgsState* state);

}  // namespace adgraph::optim::detail
