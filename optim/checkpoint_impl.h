// Optimizer state on disk: one file per rank, written atomically (temporary
// file, fsync, rename, fsync of the directory), so a crash during a write
// leaves the previous checkpoint in place. Internal to optim/.
//
// The interface of optim/checkpoint.cc: optim/run.cc saves and loads
// through it (run_impl.h's Run holds an LbfgsState), and the tests write
// and damage checkpoint files with it (tests/optim/checkpoint_test.cc, and
// tests/optim/lbfgs_mpi_test.cc through tests/mpi_ops/mpi_test_util.h).
#pragma once

#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "optim/reducer_impl.h"

namespace adgraph::optim::detail {

// Which solver wrote a state; the value is what a checkpoint file holds.
enum class SolverKind : int32_t {
  kLbfgs = 0,   // optim/lbfgs.h
  kLbfgsb = 1,  // optim/lbfgsb.h: also keeps sy, ss and θ (in gamma)
};

struct LbfgsState {
  SolverKind kind = SolverKind::kLbfgs;
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
  Eigen::MatrixXd sy, ss;  // kLbfgsb only
  // LbfgsOptions::checkpoint_problem of the run that wrote it.
  std::string problem;
};

// FNV-1a of raw bytes (checkpoint checksums and fingerprints).
uint64_t fnv1a(const char* data, std::size_t n);

// "<prefix>.rank<r>of<P>".
std::string checkpoint_file(const std::string& prefix, int rank, int size);

// Writes this rank's state to "<file>.tmp" and syncs it. Returns an empty
// string, or what went wrong (the partial file is then removed).
std::string stage_checkpoint(const std::string& prefix,
                             int rank,
                             int size,
                             int history,
                             const LbfgsState& state);

// Renames the staged file over the checkpoint. Returns "" or the reason.
std::string commit_checkpoint(const std::string& prefix, int rank, int size);

// Every rank stages its file; only when all succeeded does each replace its
// previous checkpoint, so the set on disk is always one iteration's (a full
// disk leaves the previous set usable). Throws the same Error on every rank
// (field "checkpoint") naming the file that could not be written.
void save_checkpoint(const Reducer& reduce,
                     const LbfgsOptions& options,
                     int rank,
                     int size,
                     const LbfgsState& state);

// Reads this rank's state and checks it against the run (rank count,
// number of local variables, history size, kind, bounds, the problem
// description, checksum). Returns an empty string on success, else the
// reason, naming the file. `suffix` ".tmp" reads the staged file instead.
std::string read_checkpoint(const std::string& prefix,
                            int rank,
                            int size,
                            int64_t n,
                            int history,
                            SolverKind kind,
                            uint64_t bounds_hash,
                            const std::string& problem,
                            LbfgsState* state,
                            const std::string& suffix = "");

// read_checkpoint on every rank; then every rank's file must be from the
// same iteration. A set whose newer iteration was committed on some ranks
// only (a run stopped while committing) is completed from the other ranks'
// staged files. Throws the same Error on every rank otherwise.
void load_checkpoint(const Reducer& reduce,
                     const LbfgsOptions& options,
                     int rank,
                     int size,
                     int64_t n,
                     SolverKind kind,
                     uint64_t bounds_hash,
                     LbfgsState* state);

}  // namespace adgraph::optim::detail
