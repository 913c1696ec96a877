// Starting and ending MPI.
#pragma once

#include <memory>
#include <string>

namespace adgraph {

class Communicator;

// Initialises MPI (MPI_THREAD_SERIALIZED: the ghost dependencies keep at most
// one MPI call in flight per process) and finalises it on destruction, if it
// initialised it. Create one in main() before any communication node runs.
// Unless OMP_NUM_THREADS is set, it also sizes OpenMP to
// min(CPUs this rank may use, cores / ranks on this node), at least 1, so
// ranks and threads never oversubscribe the cores.
// Throws adgraph::Error when MPI cannot provide the thread level.
// For a program's top-level error handler, on a rank that failed: waits up
// to `seconds` for every rank of MPI_COMM_WORLD to call it too. True when
// all did: they failed alike (the same bad input), so rank 0 alone may
// report and every rank return. False when some rank is elsewhere, most
// likely waiting in a collective for this one: the caller reports its own
// error, naming its rank, and ends the job with abort_job(). Matches on a
// communicator of its own, so it never meets the program's collectives.
// Requires a live MpiEnvironment.
bool every_rank_failed(double seconds);

// Ends every rank of the job (MPI_Abort on MPI_COMM_WORLD) with `code`.
[[noreturn]] void abort_job(int code);

// A program's handler for an error that stops it, on the ranks that met
// it. When every rank failed alike (every_rank_failed within 3 s), rank 0
// prints "<program>: <message>" and each rank returns `code`; otherwise
// each failing rank prints "<program>: rank R of P: <message>" and the job
// is aborted with `code`, so the ranks waiting for it do not hang.
int report_failure(const char* program, const std::string& message, int code);

// Runs `fn` once at the start of MPI_Finalize, whoever calls it (this
// library, mpi4py, the program), while MPI still works: for a library
// that must end before MPI does (PETSc, sparse/). Requires MPI to be
// initialised.
void at_mpi_finalize(void (*fn)());

// The communication deadline of adgraph's programs (adgraph-run, the
// examples) when ADGRAPH_COMM_DEADLINE is not set: long enough for any
// honest wait, short enough that an unmatched message or a lost peer ends
// the job instead of hanging it. The library's own default stays 0 (off).
constexpr double kProgramDeadlineSeconds = 300;

// Communicator::world() with the programs' deadline: ADGRAPH_COMM_DEADLINE
// when set (0 disables it), else kProgramDeadlineSeconds.
std::shared_ptr<Communicator> program_world();

class MpiEnvironment final {
 public:
  MpiEnvironment(int* argc, char*** argv);
  ~MpiEnvironment();
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;

 private:
  bool owns_ = false;
};

}  // namespace adgraph
