// Starting and ending MPI.
#pragma once

namespace adgraph {

// Initialises MPI (MPI_THREAD_SERIALIZED: the ghost dependencies keep at most
// one MPI call in flight per process) and finalises it on destruction, if it
// initialised it. Create one in main() before any communication node runs.
// Unless OMP_NUM_THREADS is set, it also sizes OpenMP to
// min(CPUs this rank may use, cores / ranks on this node), at least 1, so
// ranks and threads never oversubscribe the cores.
// Throws adgraph::Error when MPI cannot provide the thread level.
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
