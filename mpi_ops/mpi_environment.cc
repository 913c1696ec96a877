#include "mpi_ops/mpi_environment.h"

#include <mpi.h>
#include <omp.h>
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "core/error.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/mpi_detail.h"

#if defined(__SANITIZE_ADDRESS__)
#define ADGRAPH_LEAK_CHECKED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(leak_sanitizer)
#define ADGRAPH_LEAK_CHECKED 1
#endif
#endif
#ifdef ADGRAPH_LEAK_CHECKED
#include <sanitizer/lsan_interface.h>
#endif

namespace adgraph {
namespace {

// While one lives, LeakSanitizer ignores the blocks allocated: around
// MPI_Init and MPI_Finalize, whose thousands of tables Open MPI keeps until
// the process exits. Matched against tests/sanitizers/lsan.supp at exit
// instead, one stack at a time, they cost each process about 2 s.
class OpenMpiTables {
 public:
#ifdef ADGRAPH_LEAK_CHECKED
  OpenMpiTables() { __lsan_disable(); }
  ~OpenMpiTables() { __lsan_enable(); }
#else
  OpenMpiTables() {}  // NOLINT: a const object needs a user-provided one
#endif
  OpenMpiTables(const OpenMpiTables&) = delete;
  OpenMpiTables& operator=(const OpenMpiTables&) = delete;
};

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

// A duplicate of MPI_COMM_WORLD for every_rank_failed().
MPI_Comm failure_comm = MPI_COMM_NULL;

}  // namespace

MPI_Comm mpi_detail::world_failure_comm() { return failure_comm; }

bool every_rank_failed(double seconds) {
  if (failure_comm == MPI_COMM_NULL) return true;
  MPI_Request request;
  MPI_Ibarrier(failure_comm, &request);
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int done = 0;
  while (!done) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done || std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return done != 0;
}

void at_mpi_finalize(void (*fn)()) {
  // MPI_Finalize first frees MPI_COMM_SELF's attributes (MPI-3.1, 8.7.1),
  // calling their delete functions.
  auto on_delete = [](MPI_Comm, int, void* value, void*) {
    reinterpret_cast<void (*)()>(value)();
    return MPI_SUCCESS;
  };
  int key = MPI_KEYVAL_INVALID;
  MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, on_delete, &key, nullptr);
  MPI_Comm_set_attr(MPI_COMM_SELF, key, reinterpret_cast<void*>(fn));
}

void abort_job(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

int report_failure(const char* program, const std::string& message, int code) {
  constexpr double kAgreeSeconds = 3;
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (every_rank_failed(kAgreeSeconds)) {
    if (rank == 0) std::fprintf(stderr, "%s: %s\n", program, message.c_str());
    return code;
  }
  std::fprintf(
      stderr, "%s: rank %d of %d: %s\n", program, rank, size, message.c_str());
  std::fflush(stderr);
  abort_job(code);
}

std::shared_ptr<Communicator> program_world() {
  auto world = Communicator::world();
  const char* set = std::getenv("ADGRAPH_COMM_DEADLINE");
  if (set == nullptr || *set == '\0')
    world->set_deadline(kProgramDeadlineSeconds);
  return world;
}

MpiEnvironment::MpiEnvironment(int* argc, char*** argv) {
  // A program that starts MPI through adgraph has the MPI layer's ops (and
  // those below) by name too, as PetscInitialize registers its packages.
  register_mpi_ops_layer();
  int initialised = 0;
  MPI_Initialized(&initialised);
  int provided = 0;
  if (initialised) {
    // Someone else (mpi4py, the program) started MPI: it must still allow
    // the calls adgraph makes from its executor's threads, one at a time.
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_SERIALIZED) {
      throw Error(
          "MPI was initialised with a thread level below "
          "MPI_THREAD_SERIALIZED, which adgraph needs (mpi4py: do not lower "
          "mpi4py.rc.thread_level below \"serialized\")");
    }
    return;
  }
  {
    const OpenMpiTables ignored;
    MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided);
  }
  owns_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    MPI_Finalize();
    owns_ = false;
    throw Error("MPI does not provide MPI_THREAD_SERIALIZED");
  }
  size_openmp_threads();
  MPI_Comm_dup(MPI_COMM_WORLD, &failure_comm);
}

MpiEnvironment::~MpiEnvironment() {
  if (!owns_) return;
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (finalised) return;
  if (failure_comm != MPI_COMM_NULL) MPI_Comm_free(&failure_comm);
  const OpenMpiTables ignored;
  MPI_Finalize();
}

}  // namespace adgraph
