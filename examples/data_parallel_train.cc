// data_parallel_train: synchronous data-parallel training of a logistic
// regression or a one-hidden-layer network with SGD or L-BFGS.
//
//   mpirun -n 4 data_parallel_train                          # logistic, SGD
//   mpirun -n 3 data_parallel_train --model mlp --optimizer lbfgs
//
// Each rank holds a shard of a deterministic synthetic data set
// (examples/data_parallel.h); the graph sums loss and gradient over every
// rank's samples exactly (mpi_total, mpi_total_rows over per-sample
// gradients), so every rank takes the full-batch step. At the end each
// rank also trains the same model on the whole data set in one process
// (the single-process run) and the program reports the largest parameter
// difference: 0, on any number of ranks (issue #36; the test
// examples/data_parallel_test compares the bits).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "examples/command_line.h"
#include "examples/data_parallel.h"

using namespace adgraph;
using namespace adgraph::examples;

namespace {

struct Settings {
  std::string model_name = "logistic", output;
  int64_t samples = 250;
  int features = 4, hidden = 8;
  TrainOptions options;
};

void add_options(CLI::App& app, Settings& s) {
  app.add_option("--model", s.model_name, "logistic or mlp")
      ->check(CLI::IsMember({"logistic", "mlp"}))
      ->capture_default_str();
  app.add_option("--optimizer", s.options.optimizer, "sgd or lbfgs")
      ->check(CLI::IsMember({"sgd", "lbfgs"}))
      ->capture_default_str();
  app.add_option("--steps", s.options.steps, "SGD steps or L-BFGS iterations")
      ->check(CLI::Range(0, 1000000))
      ->capture_default_str();
  app.add_option("--lr", s.options.learning_rate, "SGD learning rate")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app.add_option("--batch", s.options.batch, "SGD global batch size (0: all)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 40))
      ->capture_default_str();
  app.add_option("--samples", s.samples, "data set size")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30))
      ->capture_default_str();
  app.add_option("--features", s.features, "features per sample")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  app.add_option("--hidden", s.hidden, "hidden units of the mlp")
      ->check(CLI::Range(1, 10000))
      ->capture_default_str();
  app.add_option("--output", s.output, "write a JSON result");
}

// Rank 0: the loss every tenth of the run, the result, and the JSON file.
void report(const Settings& s,
            const TrainResult& result,
            double worst,
            Communicator& comm) {
  std::printf("%s, %s, %lld samples of %d features on %d ranks\n",
              s.model_name.c_str(),
              s.options.optimizer.c_str(),
              static_cast<long long>(s.samples),
              s.features,
              comm.size());
  const std::size_t k = result.loss_history.size();
  for (std::size_t i = 0; i < k; i += std::max<std::size_t>(1, k / 10)) {
    std::printf("  step %4zu  loss %.10f\n", i, result.loss_history[i]);
  }
  std::printf("final loss %.10f, training accuracy %.4f\n",
              result.final_loss,
              result.accuracy);
  std::printf("max |theta - theta_single_process| = %.3g\n", worst);
  if (s.output.empty()) return;
  nlohmann::json doc = {
      {"model", s.model_name},
      {"optimizer", s.options.optimizer},
      {"ranks", comm.size()},
      {"samples", s.samples},
      {"loss_history", result.loss_history},
      {"final_loss", result.final_loss},
      {"accuracy", result.accuracy},
      {"theta",
       std::vector<double>(result.theta.data(),
                           result.theta.data() + result.theta.size())},
      {"max_difference_from_single_process", worst}};
  std::ofstream file(s.output);
  file << doc.dump(2) << "\n";
  if (!file) comm.abort("data_parallel_train: cannot write " + s.output, 1);
}

}  // namespace

int main(int argc, char** argv) {
  MpiEnvironment env(&argc, &argv);
  auto comm = program_world();
  const int size = comm->size();
  const bool root = comm->rank() == 0;

  CLI::App app{"Synchronous data-parallel training with mpi_allreduce"};
  Settings s;
  add_options(app, s);
  if (auto code = examples::parse_command_line(app, argc, argv, root)) {
    return *code;
  }
  if (s.samples < size) {
    if (root) {
      std::fprintf(stderr,
                   "data_parallel_train: --samples %lld is below the rank "
                   "count %d; every rank needs a sample\n",
                   static_cast<long long>(s.samples),
                   size);
    }
    return 2;
  }

  const Model model = s.model_name == "mlp" ? Model::kMlp : Model::kLogistic;
  const DataSet data = synthetic_data(s.samples, s.features);
  const auto [first, last] = shard_range(s.samples, comm->rank(), size);
  const DataSet shard{data.x.middleRows(first, last - first),
                      data.y.segment(first, last - first)};
  const Eigen::VectorXd theta0 =
      initial_parameters(model, s.features, s.hidden);

  TrainingGraph parallel = build_training_graph(model, shard, s.hidden, true);
  const TrainResult result =
      train(parallel, s.samples, first, theta0, s.options, comm.get());

  TrainingGraph single = build_training_graph(model, data, s.hidden, false);
  const TrainResult reference =
      train(single, s.samples, 0, theta0, s.options, nullptr);
  const double difference =
      (result.theta - reference.theta).lpNorm<Eigen::Infinity>();
  const double worst = comm->allreduce_max(difference);
  if (root) report(s, result, worst, *comm);
  return 0;
}
