// async_parameter_server: asynchronous data-parallel SGD with parameter
// servers.
//
//   mpirun -n 4 async_parameter_server              # 2 masters, 2 workers
//   mpirun -n 6 async_parameter_server --masters 2  # 2 masters, 4 workers
//
// Ranks 0 … M−1 are masters: master m owns a contiguous slice of the
// parameters θ. The other ranks are workers: each holds a shard of the
// synthetic data set (examples/data_parallel.h) and a Session on the loss
// graph of its shard. A worker waits for the newest slices from every
// master, computes the gradient of the mean loss over its shard (or over a
// mini-batch of it), sends each master its slice of the gradient and waits
// for the reply. Masters wait on all workers at once (MPI_Waitany) and
// apply a gradient as soon as it arrives, θ_m ← θ_m − lr·g_m, then send
// the updated slice back to that worker only. Nobody waits for the slowest
// worker, and a gradient is applied to parameters that other workers have
// moved since it was computed: its staleness, which the masters count.
// --max-lead L (default 1) bounds the asynchrony: a worker more than L
// gradients ahead of the slowest waits for its reply; -1 removes the bound.
//
// At the end rank 0 compares the final loss with the optimum (L-BFGS on
// the whole data set), with the same updates applied in turn without
// staleness, and with synchronous SGD over the same samples (one
// full-batch step per round of worker gradients), and reports the
// staleness. With
// --tolerance it exits 1 when the final loss is further than that from the
// optimum.
#include <mpi.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "examples/command_line.h"
#include "examples/data_parallel.h"

using namespace adgraph;
using namespace adgraph::examples;

namespace {

constexpr int kGradientTag = 101;
constexpr int kParameterTag = 102;

struct Slice {
  int64_t first, last;
  int count() const { return static_cast<int>(last - first); }
};

Tensor as_tensor(const Eigen::VectorXd& v) {
  return Tensor(Shape{v.size()},
                std::vector<double>(v.data(), v.data() + v.size()));
}

struct MasterStats {
  int64_t updates = 0;
  int64_t staleness_sum = 0;
  int64_t staleness_max = 0;
};

// Applies every worker's gradients as they arrive until each worker has
// sent `steps` of them; answers each with the updated slice. With
// max_lead >= 0 a worker that is more than max_lead gradients ahead of the
// slowest one waits for its reply (bounded asynchrony); the slowest worker
// is always answered at once, so nobody waits forever.
MasterStats run_master(Eigen::VectorXd& theta,
                       const Slice& mine,
                       int masters,
                       int workers,
                       int steps,
                       double lr,
                       int max_lead) {
  MasterStats stats;
  Eigen::VectorXd slice = theta.segment(mine.first, mine.count());
  std::vector<Eigen::VectorXd> incoming(workers, Eigen::VectorXd(mine.count()));
  std::vector<Eigen::VectorXd> outgoing(workers, slice);
  std::vector<MPI_Request> recv(workers, MPI_REQUEST_NULL);
  std::vector<MPI_Request> send(workers, MPI_REQUEST_NULL);
  std::vector<int> received(workers, 0);
  std::vector<char> owed(workers, 0);  // a reply waits for the slowest
  std::vector<int64_t> sent_version(workers, 0);
  int64_t version = 0;
  auto reply = [&](int w) {
    // The previous reply to this worker has been received (it computed
    // the gradient just applied from it), so its buffer is free again.
    MPI_Wait(&send[w], MPI_STATUS_IGNORE);
    outgoing[w] = slice;
    sent_version[w] = version;
    MPI_Isend(outgoing[w].data(),
              mine.count(),
              MPI_DOUBLE,
              masters + w,
              kParameterTag,
              MPI_COMM_WORLD,
              &send[w]);
  };
  auto post_receive = [&](int w) {
    MPI_Irecv(incoming[w].data(),
              mine.count(),
              MPI_DOUBLE,
              masters + w,
              kGradientTag,
              MPI_COMM_WORLD,
              &recv[w]);
  };
  for (int w = 0; w < workers; ++w) {
    reply(w);
    if (steps > 0) post_receive(w);
  }
  int64_t pending = static_cast<int64_t>(workers) * steps;
  while (pending > 0) {
    int w = MPI_UNDEFINED;
    MPI_Waitany(workers, recv.data(), &w, MPI_STATUS_IGNORE);
    const int64_t staleness = version - sent_version[w];
    stats.staleness_sum += staleness;
    stats.staleness_max = std::max(stats.staleness_max, staleness);
    slice -= lr * incoming[w];
    ++version;
    ++stats.updates;
    --pending;
    owed[w] = 1;
    if (++received[w] < steps) post_receive(w);
    const int slowest = *std::min_element(received.begin(), received.end());
    for (int v = 0; v < workers; ++v) {
      if (owed[v] && (max_lead < 0 || received[v] - slowest <= max_lead)) {
        owed[v] = 0;
        reply(v);
      }
    }
  }
  MPI_Waitall(workers, send.data(), MPI_STATUSES_IGNORE);
  theta.segment(mine.first, mine.count()) = slice;
  return stats;
}

// Receives the slices of every master into theta.
void receive_parameters(Eigen::VectorXd& theta,
                        const std::vector<Slice>& slices) {
  std::vector<MPI_Request> requests(slices.size());
  for (std::size_t m = 0; m < slices.size(); ++m) {
    MPI_Irecv(theta.data() + slices[m].first,
              slices[m].count(),
              MPI_DOUBLE,
              static_cast<int>(m),
              kParameterTag,
              MPI_COMM_WORLD,
              &requests[m]);
  }
  MPI_Waitall(
      static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

// `steps` rounds of: newest parameters in, gradient of this shard out.
void run_worker(Eigen::VectorXd& theta,
                const std::vector<Slice>& slices,
                TrainingGraph& t,
                int64_t shard_size,
                int64_t batch,
                int steps) {
  Session session(*t.graph);
  Eigen::VectorXd grad(theta.size());
  std::vector<MPI_Request> requests(slices.size(), MPI_REQUEST_NULL);
  for (int step = 0; step < steps; ++step) {
    receive_parameters(theta, slices);
    const Tensor w = batch_weights(shard_size, batch, step, 0, shard_size);
    Tensor g =
        session.run(t.grad, {{t.theta, as_tensor(theta)}, {t.weight, w}});
    // The previous gradient's sends completed before the masters answered.
    MPI_Waitall(static_cast<int>(requests.size()),
                requests.data(),
                MPI_STATUSES_IGNORE);
    grad = Eigen::Map<const Eigen::VectorXd>(g.data(), g.size());
    for (std::size_t m = 0; m < slices.size(); ++m) {
      MPI_Isend(grad.data() + slices[m].first,
                slices[m].count(),
                MPI_DOUBLE,
                static_cast<int>(m),
                kGradientTag,
                MPI_COMM_WORLD,
                &requests[m]);
    }
  }
  receive_parameters(theta, slices);  // the answer to the last gradient
  MPI_Waitall(
      static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE);
}

// The workers' shard gradients applied in turn, each at the current
// parameters: the asynchronous updates without staleness.
Eigen::VectorXd updates_in_turn(Model model,
                                const DataSet& data,
                                int hidden,
                                int features,
                                int workers,
                                int steps,
                                int64_t batch,
                                double lr) {
  const int64_t samples = data.y.size();
  Eigen::VectorXd in_turn = initial_parameters(model, features, hidden);
  std::vector<TrainingGraph> shards;
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<int64_t> shard_sizes;
  for (int w = 0; w < workers; ++w) {
    const auto [first, last] = shard_range(samples, w, workers);
    shards.push_back(
        build_training_graph(model,
                             {data.x.middleRows(first, last - first),
                              data.y.segment(first, last - first)},
                             hidden,
                             false));
    sessions.push_back(std::make_unique<Session>(*shards.back().graph));
    shard_sizes.push_back(last - first);
  }
  for (int64_t u = 0; u < static_cast<int64_t>(workers) * steps; ++u) {
    const int w = static_cast<int>(u % workers);
    const Tensor weights =
        batch_weights(shard_sizes[w], batch, u / workers, 0, shard_sizes[w]);
    const Tensor g = sessions[w]->run(
        shards[w].grad,
        {{shards[w].theta, as_tensor(in_turn)}, {shards[w].weight, weights}});
    in_turn -= lr * Eigen::Map<const Eigen::VectorXd>(g.data(), g.size());
  }
  return in_turn;
}

// Every rank ends with the masters' final θ (workers hold it already).
Eigen::VectorXd gather_parameters(const Eigen::VectorXd& theta,
                                  const std::vector<Slice>& slices,
                                  int rank,
                                  int size) {
  const int masters = static_cast<int>(slices.size());
  std::vector<int> counts(size, 0), displs(size, 0);
  for (int m = 0; m < masters; ++m) {
    counts[m] = slices[m].count();
    displs[m] = static_cast<int>(slices[m].first);
  }
  Eigen::VectorXd final_theta(theta.size());
  MPI_Allgatherv(rank < masters ? theta.data() + slices[rank].first : nullptr,
                 counts[rank],
                 MPI_DOUBLE,
                 final_theta.data(),
                 counts.data(),
                 displs.data(),
                 MPI_DOUBLE,
                 MPI_COMM_WORLD);
  return final_theta;
}

// The command line's settings.
struct Settings {
  std::string model_name = "logistic", output;
  int masters = 2, steps = 300, features = 4, hidden = 8, max_lead = 1;
  int64_t samples = 400, batch = 0;
  double lr = 0.5, tolerance = -1;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--masters", s.masters, "ranks 0 .. M-1 hold the parameters")
      ->check(CLI::Range(1, 1 << 20))
      ->capture_default_str();
  app.add_option("--model", s.model_name, "logistic or mlp")
      ->check(CLI::IsMember({"logistic", "mlp"}))
      ->capture_default_str();
  app.add_option("--steps", s.steps, "gradients each worker sends")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--lr", s.lr, "learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", s.batch, "mini-batch per worker (0: its shard)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--samples", s.samples, "data set size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--max-lead",
                 s.max_lead,
                 "a worker more gradients ahead of the slowest waits "
                 "(-1: no bound)")
      ->check(CLI::Range(-1, 1 << 30))
      ->capture_default_str();
  app.add_option("--tolerance",
                 s.tolerance,
                 "exit 1 when final loss - optimum exceeds this");
  app.add_option("--output", s.output, "write a JSON result");
}

// What the asynchronous run left, on rank 0.
struct Measured {
  Eigen::VectorXd final_theta;
  int64_t updates = 0, staleness_sum = 0, staleness_max = 0;
  double seconds = 0;
};

// The losses on the whole data set that the asynchronous run is judged
// by: its own, the optimum by L-BFGS, synchronous SGD and the same
// updates without staleness.
struct Losses {
  double final_loss, optimum, sync, in_turn;
};

// On rank 0 alone.
Losses losses_of(const Settings& set,
                 Model model,
                 const DataSet& data,
                 int workers,
                 const Eigen::VectorXd& final_theta) {
  TrainingGraph whole = build_training_graph(model, data, set.hidden, false);
  Session session(*whole.graph);
  const Tensor all = batch_weights(set.samples, 0, 0, 0, set.samples);
  auto loss_at = [&](const Eigen::VectorXd& x) {
    return session
        .run(whole.loss, {{whole.theta, as_tensor(x)}, {whole.weight, all}})
        .item();
  };
  const Eigen::VectorXd theta0 =
      initial_parameters(model, set.features, set.hidden);
  TrainOptions optimum_options{"lbfgs", 500, 0.0, 0};
  const TrainResult optimum =
      train(whole, set.samples, 0, theta0, optimum_options, nullptr);
  // Synchronous SGD with the same gradient evaluations: each step averages
  // the workers' shard gradients (here: one full-batch gradient, which is
  // their average weighted by shard size).
  TrainOptions sync_options{"sgd", set.steps, set.lr, 0};
  const TrainResult sync =
      train(whole, set.samples, 0, theta0, sync_options, nullptr);
  const Eigen::VectorXd in_turn = updates_in_turn(model,
                                                  data,
                                                  set.hidden,
                                                  set.features,
                                                  workers,
                                                  set.steps,
                                                  set.batch,
                                                  set.lr);
  return {loss_at(final_theta),
          optimum.final_loss,
          sync.final_loss,
          loss_at(in_turn)};
}

// Rank 0: the final loss against the three references, printed and
// written to --output; the exit code.
int report(const Settings& set,
           Model model,
           const DataSet& data,
           int workers,
           const Measured& measured) {
  const Losses l = losses_of(set, model, data, workers, measured.final_theta);
  const int64_t updates = measured.updates;
  const double gap = l.final_loss - l.optimum;
  const double mean_staleness =
      updates > 0 ? static_cast<double>(measured.staleness_sum) / updates : 0.0;
  std::printf("%s, %d masters, %d workers, %d gradients per worker, lr %g\n",
              set.model_name.c_str(),
              set.masters,
              workers,
              set.steps,
              set.lr);
  std::printf(
      "gradients applied per master: %lld, staleness mean %.2f "
      "max %lld\n",
      static_cast<long long>(updates / set.masters),
      mean_staleness,
      static_cast<long long>(measured.staleness_max));
  std::printf("final loss (async)        %.10f\n", l.final_loss);
  std::printf("same updates, no staleness %.10f\n", l.in_turn);
  std::printf("synchronous SGD, %d steps %.10f\n", set.steps, l.sync);
  std::printf("optimum (L-BFGS)          %.10f\n", l.optimum);
  std::printf("async - optimum = %.3g, sync - optimum = %.3g, %.3f s\n",
              gap,
              l.sync - l.optimum,
              measured.seconds);
  const bool converged = set.tolerance < 0 || gap <= set.tolerance;
  if (set.tolerance >= 0) {
    std::printf(
        "converged within %g: %s\n", set.tolerance, converged ? "yes" : "no");
  }
  if (set.output.empty()) return converged ? 0 : 1;
  nlohmann::json doc = {{"model", set.model_name},
                        {"masters", set.masters},
                        {"workers", workers},
                        {"steps", set.steps},
                        {"updates_per_master", updates / set.masters},
                        {"staleness_mean", mean_staleness},
                        {"staleness_max", measured.staleness_max},
                        {"final_loss", l.final_loss},
                        {"sync_sgd_loss", l.sync},
                        {"no_staleness_loss", l.in_turn},
                        {"optimum_loss", l.optimum},
                        {"seconds", measured.seconds}};
  std::ofstream file(set.output);
  file << doc.dump(2) << "\n";
  if (!file) {
    std::fprintf(stderr,
                 "async_parameter_server: cannot write %s\n",
                 set.output.c_str());
    return 1;
  }
  return converged ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const int rank = comm->rank(), size = comm->size();
  const bool root = rank == 0;

  CLI::App app{"Asynchronous SGD with parameter servers (masters) and workers"};
  Settings set;
  add_options(app, set);
  if (auto code = examples::parse_command_line(app, argc, argv, root)) {
    return *code;
  }
  const int workers = size - set.masters;
  const Model model = set.model_name == "mlp" ? Model::kMlp : Model::kLogistic;
  const int64_t p = num_parameters(model, set.features, set.hidden);
  std::string error;
  if (workers < 1) {
    error = "needs at least one worker: " + std::to_string(size) +
            " ranks for --masters " + std::to_string(set.masters);
  } else if (set.masters > p) {
    error = "--masters " + std::to_string(set.masters) + " exceeds the " +
            std::to_string(p) + " parameters";
  } else if (set.samples < workers) {
    error = "--samples " + std::to_string(set.samples) + " is below the " +
            std::to_string(workers) + " workers";
  }
  if (!error.empty()) {
    if (root)
      std::fprintf(stderr, "async_parameter_server: %s\n", error.c_str());
    return 2;
  }

  const DataSet data = synthetic_data(set.samples, set.features);
  std::vector<Slice> slices;
  for (int m = 0; m < set.masters; ++m) {
    auto [first, last] = shard_range(p, m, set.masters);
    slices.push_back({first, last});
  }
  Eigen::VectorXd theta = initial_parameters(model, set.features, set.hidden);

  const double start = MPI_Wtime();
  MasterStats stats;
  if (rank < set.masters) {
    stats = run_master(theta,
                       slices[rank],
                       set.masters,
                       workers,
                       set.steps,
                       set.lr,
                       set.max_lead);
  } else {
    const auto [first, last] =
        shard_range(set.samples, rank - set.masters, workers);
    const DataSet shard{data.x.middleRows(first, last - first),
                        data.y.segment(first, last - first)};
    TrainingGraph t = build_training_graph(model, shard, set.hidden, false);
    run_worker(theta, slices, t, last - first, set.batch, set.steps);
  }
  const double seconds = MPI_Wtime() - start;

  const Eigen::VectorXd final_theta =
      gather_parameters(theta, slices, rank, size);
  int64_t totals[3] = {stats.updates, stats.staleness_sum, stats.staleness_max};
  int64_t summed[2], worst = 0;
  MPI_Allreduce(totals, summed, 2, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
  MPI_Allreduce(&totals[2], &worst, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);

  if (!root) return 0;
  const Measured measured{final_theta, summed[0], summed[1], worst, seconds};
  return report(set, model, data, workers, measured);
}
