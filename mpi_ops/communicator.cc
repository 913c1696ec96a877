#include "mpi_ops/communicator.h"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <tuple>
#include <typeinfo>

#include "core/check.h"
#include "core/error.h"
#include "core/op.h"
#include "mpi_ops/halo_exchanger.h"
#include "mpi_ops/mpi_detail.h"
#include "mpi_ops/request_table.h"
#include "mpi_ops/watchdog.h"

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
    mpi_detail::Watchdog::install_stop_report();
    auto world_comm = std::make_unique<MpiComm>();
    world_comm->failure = mpi_detail::world_failure_comm();
    auto made = std::shared_ptr<Communicator>(
        new Communicator(std::move(world_comm), "world"));
    made->groups_.emplace_back(made->size_);
    std::iota(made->groups_[0].begin(), made->groups_[0].end(), 0);
    made->group_index_.assign(made->size_, 0);
    return made;
  }();
  return world;
}

std::shared_ptr<Communicator> Communicator::duplicate(int64_t handle,
                                                      std::string name) {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) throw Error("duplicate: MPI is not initialised");
  MPI_Comm given = MPI_Comm_f2c(static_cast<MPI_Fint>(handle));
  if (given == MPI_COMM_NULL) throw Error("duplicate: MPI_COMM_NULL given");
  auto made = std::make_unique<MpiComm>();
  mpi_detail::check_mpi(MPI_Comm_dup(given, &made->comm), "MPI_Comm_dup");
  mpi_detail::check_mpi(MPI_Comm_dup(made->comm, &made->failure),
                        "MPI_Comm_dup");
  made->owns_failure = true;
  int same = MPI_UNEQUAL;
  MPI_Comm_compare(given, MPI_COMM_WORLD, &same);
  auto out = std::shared_ptr<Communicator>(
      new Communicator(std::move(made), std::move(name)));
  if (same == MPI_IDENT || same == MPI_CONGRUENT) {
    out->groups_.emplace_back(out->size_);
    std::iota(out->groups_[0].begin(), out->groups_[0].end(), 0);
    out->group_index_.assign(out->size_, 0);
  }
  return out;
}

std::shared_ptr<Communicator> Communicator::self() {
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) throw Error("self: MPI is not initialised");
  return duplicate(MPI_Comm_c2f(MPI_COMM_SELF), "self");
}

int64_t Communicator::fortran_handle() const {
  return MPI_Comm_c2f(mpi_->comm);
}

const std::vector<int>* Communicator::group_of(int world_rank) const {
  if (world_rank < 0 || world_rank >= static_cast<int>(group_index_.size())) {
    return nullptr;
  }
  return &groups_[group_index_[world_rank]];
}

Communicator::Communicator(std::unique_ptr<MpiComm> comm, std::string name)
    : mpi_(std::move(comm)), name_(std::move(name)) {
  MPI_Comm_rank(mpi_->comm, &rank_);
  MPI_Comm_size(mpi_->comm, &size_);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank_);
  watchdog_ = std::make_unique<mpi_detail::Watchdog>(name_, world_rank_);
  requests_ = std::make_unique<mpi_detail::RequestTable>(mpi_->comm);
  halo_ = std::make_unique<mpi_detail::HaloExchanger>(mpi_->comm);
}

Communicator::~Communicator() {
  watchdog_.reset();  // before the stop report goes
  if (name_ == "world") mpi_detail::Watchdog::remove_stop_report();
  int finalised = 0;
  MPI_Finalized(&finalised);
  if (mpi_->comm != MPI_COMM_WORLD && !finalised) MPI_Comm_free(&mpi_->comm);
  if (mpi_->owns_failure && !finalised) MPI_Comm_free(&mpi_->failure);
}

void Communicator::agree_on_failure(const std::string& message) {
  if (size_ == 1) return;
  constexpr double kAgreeSeconds = 3;
  bool every_rank = false;
  if (mpi_->failure != MPI_COMM_NULL) {
    MPI_Request request;
    MPI_Ibarrier(mpi_->failure, &request);
    const auto until = std::chrono::steady_clock::now() +
                       std::chrono::duration<double>(kAgreeSeconds);
    int done = 0;
    while (!done && std::chrono::steady_clock::now() < until) {
      MPI_Test(&request, &done, MPI_STATUS_IGNORE);
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    every_rank = done != 0;
  }
  if (!every_rank) {
    abort(message +
          " (on this rank only, while the other ranks of "
          "communicator " +
          name_ + " wait for its messages: ending the job)");
  }
}

std::shared_ptr<Communicator> Communicator::split(int color, int key) {
  if (color < 0) {
    throw OptionsError(
        "a color must be >= 0, got " + std::to_string(color), {}, {}, "color");
  }
  auto made = std::make_unique<MpiComm>();
  auto watch = std::make_optional<mpi_detail::LabelWatch>(
      *watchdog_,
      "the split of communicator " + name_ + " (color " +
          std::to_string(color) + ")");
  mpi_detail::check_mpi(MPI_Comm_split(mpi_->comm, color, key, &made->comm),
                        "MPI_Comm_split");
  mpi_detail::check_mpi(MPI_Comm_dup(made->comm, &made->failure),
                        "MPI_Comm_dup");
  made->owns_failure = true;
  // Of the world, every rank's color and key give every rank's group as
  // MPI_Comm_split forms it (by key, then by rank): for group_of().
  std::vector<int> colors_and_keys;
  if (mpi_->comm == MPI_COMM_WORLD) {
    const int mine[2] = {color, key};
    colors_and_keys.resize(2 * size_);
    mpi_detail::check_mpi(
        MPI_Allgather(
            mine, 2, MPI_INT, colors_and_keys.data(), 2, MPI_INT, mpi_->comm),
        "MPI_Allgather");
  }
  watch.reset();
  auto out = std::shared_ptr<Communicator>(new Communicator(
      std::move(made),
      "split(color " + std::to_string(color) + ") of " + name_));
  out->set_deadline(deadline());
  if (!colors_and_keys.empty()) {
    std::vector<int> order(size_);
    std::iota(order.begin(), order.end(), 0);
    auto color_of = [&](int r) { return colors_and_keys[2 * r]; };
    auto key_of = [&](int r) { return colors_and_keys[2 * r + 1]; };
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      return std::make_tuple(color_of(a), key_of(a), a) <
             std::make_tuple(color_of(b), key_of(b), b);
    });
    out->group_index_.assign(size_, 0);
    for (std::size_t k = 0; k < order.size(); ++k) {
      if (k == 0 || color_of(order[k]) != color_of(order[k - 1]))
        out->groups_.emplace_back();
      out->groups_.back().push_back(order[k]);
      out->group_index_[order[k]] = static_cast<int>(out->groups_.size()) - 1;
    }
  }
  return out;
}

namespace {
void check_grid(int rows, int cols, int size) {
  if (rows < 1 || cols < 1 || rows * cols != size) {
    throw OptionsError(
        "a " + std::to_string(rows) + " x " + std::to_string(cols) +
            " patch grid needs " + std::to_string(rows * cols) +
            " ranks, the communicator has " + std::to_string(size),
        {},
        {},
        "rows");
  }
}
}  // namespace

std::shared_ptr<Communicator> Communicator::row_communicator(int rows,
                                                             int cols) {
  check_grid(rows, cols, size_);
  return split(rank_ / cols, rank_ % cols);
}

std::shared_ptr<Communicator> Communicator::column_communicator(int rows,
                                                                int cols) {
  check_grid(rows, cols, size_);
  return split(rank_ % cols, rank_ / cols);
}

void Communicator::set_deadline(double seconds) {
  watchdog_->set_deadline(seconds);
}

double Communicator::deadline() const { return watchdog_->deadline(); }

Communicator::Watch::Watch(Communicator& comm, const Node& node) : comm_(comm) {
  comm_.watchdog_->start(node);
}

Communicator::Watch::~Watch() { comm_.watchdog_->stop(); }

void Communicator::abort(const std::string& message, int code) {
  std::fprintf(stderr, "adgraph: rank %d: %s\n", world_rank_, message.c_str());
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
  // Communicator is final: comparing the exact type is the whole check,
  // and cheaper than a dynamic_cast on every communication node's run.
  CommContext* comm = c.comm();
  ADGRAPH_CHECK(comm != nullptr && typeid(*comm) == typeid(Communicator))
      << "communication node " << c.node().name
      << " runs without an MPI communicator";
  return static_cast<Communicator&>(*comm);
}

}  // namespace adgraph
