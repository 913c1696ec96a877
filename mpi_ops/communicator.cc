#include "mpi_ops/communicator.h"

#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/check.h"
#include "core/error.h"
#include "core/op.h"
#include "mpi_ops/mpi_detail.h"

namespace adgraph {

std::shared_ptr<Communicator> Communicator::world() {
  static std::shared_ptr<Communicator> world = [] {
    int initialised = 0;
    MPI_Initialized(&initialised);
    if (!initialised) {
      throw Error(
          "communication nodes need MPI: create an adgraph::MpiEnvironment in "
          "main()");
    }
    return std::shared_ptr<Communicator>(new Communicator());
  }();
  return world;
}

Communicator::Communicator() {
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  deadline_seconds_ = deadline_from_environment();
  watchdog_ = std::thread([this] { watchdog_loop(); });
}

Communicator::~Communicator() {
  {
    std::lock_guard<std::mutex> lock(watch_mutex_);
    watch_stop_ = true;
  }
  watch_wakeup_.notify_all();
  if (watchdog_.joinable()) watchdog_.join();
}

void Communicator::abort(const std::string& message, int code) {
  std::fprintf(stderr, "adgraph: rank %d: %s\n", rank_, message.c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

Communicator& communicator_of(const Graph& graph) {
  auto* comm = dynamic_cast<Communicator*>(graph.comm());
  if (comm == nullptr) {
    throw GraphError(graph.comm() == nullptr
                         ? "this graph has no communicator yet (build a "
                           "communication node first, or call "
                           "bind_communicator)"
                         : "this graph's communicator is not an MPI "
                           "communicator");
  }
  return *comm;
}

Communicator& bind_communicator(Graph& graph) {
  if (graph.comm() == nullptr) graph.set_comm(Communicator::world());
  return communicator_of(graph);
}

Communicator& kernel_communicator(const KernelContext& c) {
  auto* comm = dynamic_cast<Communicator*>(c.comm());
  ADGRAPH_CHECK(comm != nullptr) << "communication node " << c.node().name
                                 << " runs without an MPI communicator";
  return *comm;
}

}  // namespace adgraph
