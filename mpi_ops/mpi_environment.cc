#include "mpi_ops/mpi_environment.h"

#include <mpi.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "core/error.h"

namespace adgraph {
namespace {

// OpenMP threads per rank when the user did not choose (OMP_NUM_THREADS):
// no more than the CPUs this rank may run on, and no more than its share of
// the node's cores. Oversubscribed threads spin in OpenMP barriers and
// starve the ranks that must progress their messages.
void size_openmp_threads() {
  if (std::getenv("OMP_NUM_THREADS") != nullptr) return;
  MPI_Comm node;
  MPI_Comm_split_type(
      MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int local_ranks = 1;
  MPI_Comm_size(node, &local_ranks);
  MPI_Comm_free(&node);
  cpu_set_t mask;
  int allowed = static_cast<int>(std::thread::hardware_concurrency());
  if (sched_getaffinity(0, sizeof(mask), &mask) == 0)
    allowed = CPU_COUNT(&mask);
  const int cores =
      std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  omp_set_num_threads(
      std::max(1, std::min(allowed, cores / std::max(1, local_ranks))));
}

}  // namespace

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (initialised) return;
  int provided = 0;
  MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  owns_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    owns_ = false;
    throw Error("MPI does not provide MPI_THREAD_SERIALIZED");
  }
  size_openmp_threads();
}

MpiEnvironment::~MpiEnvironment() {
  if (!owns_) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (!finalised) MPI_Finalize();
}

}  // namespace adgraph
