// Data-parallel training (examples/data_parallel.h) against single-process
// full-batch training written out by hand: the loss gradients below are
// derived on paper, not taken from the graph.
#include "examples/data_parallel.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::examples;
using namespace adgraph::testing;

constexpr int64_t kSamples = 250;  // uneven shards at 3 and 4 ranks
constexpr int kFeatures = 4, kHidden = 6;

double sigmoid(double z) { return 1.0 / (1.0 + std::exp(-z)); }
double softplus(double z) {
  return std::max(z, 0.0) + std::log1p(std::exp(-std::fabs(z)));
}

// L = Σ_i w_i (softplus(z_i) − y_i z_i); dL/dz_i = w_i (σ(z_i) − y_i).
double hand_loss(Model model,
                 const DataSet& data,
                 const Eigen::VectorXd& w,
                 const Eigen::VectorXd& theta,
                 Eigen::VectorXd& grad) {
  const int64_t d = data.x.cols(), h = kHidden;
  grad.setZero(theta.size());
  Eigen::VectorXd z;
  Eigen::MatrixXd hidden;
  if (model == Model::kLogistic) {
    z = (data.x * theta.head(d)).array() + theta(d);
  } else {
    Eigen::MatrixXd w1(d, h);
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < h; ++j) w1(i, j) = theta(i * h + j);
    }
    hidden = ((data.x * w1).rowwise() + theta.segment(d * h, h).transpose())
                 .array()
                 .tanh();
    z = (hidden * theta.segment(d * h + h, h)).array() + theta(d * h + 2 * h);
  }
  double loss = 0.0;
  Eigen::VectorXd gz(z.size());
  for (int64_t i = 0; i < z.size(); ++i) {
    loss += w(i) * (softplus(z(i)) - data.y(i) * z(i));
    gz(i) = w(i) * (sigmoid(z(i)) - data.y(i));
  }
  if (model == Model::kLogistic) {
    grad.head(d) = data.x.transpose() * gz;
    grad(d) = gz.sum();
  } else {
    const Eigen::VectorXd w2 = theta.segment(d * h + h, h);
    grad.segment(d * h + h, h) = hidden.transpose() * gz;
    grad(d * h + 2 * h) = gz.sum();
    // ∂L/∂(pre-activation) = gz w2ᵀ ⊙ (1 − tanh²)
    const Eigen::MatrixXd gpre =
        ((gz * w2.transpose()).array() * (1.0 - hidden.array().square()))
            .matrix();
    const Eigen::MatrixXd gw1 = data.x.transpose() * gpre;
    for (int64_t i = 0; i < d; ++i) {
      for (int64_t j = 0; j < h; ++j) grad(i * h + j) = gw1(i, j);
    }
    grad.segment(d * h, h) = gpre.colwise().sum().transpose();
  }
  return loss;
}

// Single-process full-batch (or mini-batch) training by hand.
Eigen::VectorXd hand_train(Model model,
                           const DataSet& data,
                           const TrainOptions& options) {
  Eigen::VectorXd theta = initial_parameters(model, kFeatures, kHidden);
  auto weights = [&](int64_t batch, int64_t step) {
    Tensor t = batch_weights(kSamples, batch, step, 0, kSamples);
    return Eigen::VectorXd(
        Eigen::Map<const Eigen::VectorXd>(t.data(), t.size()));
  };
  if (options.optimizer == "lbfgs") {
    const Eigen::VectorXd w = weights(0, 0);
    optim::LbfgsOptions o;
    o.max_iterations = options.steps;
    o.tolerance_gradient = 0.0;
    optim::lbfgs(
        [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
          return hand_loss(model, data, w, x, g);
        },
        theta,
        o);
    return theta;
  }
  Eigen::VectorXd grad;
  for (int step = 0; step < options.steps; ++step) {
    hand_loss(model, data, weights(options.batch, step), theta, grad);
    theta -= options.learning_rate * grad;
  }
  return theta;
}

// This rank's shard of `data` (shard_range) and the index of its first
// sample.
struct Shard {
  int64_t first;
  DataSet data;
};
Shard my_shard(const DataSet& data) {
  const int64_t n = data.x.rows();
  const auto [first, last] = shard_range(n, world_rank(), world_size());
  return {first,
          {data.x.middleRows(first, last - first),
           data.y.segment(first, last - first)}};
}

struct Case {
  Model model;
  TrainOptions options;
  const char* name;
};

TEST(DataParallel, EveryRankCountMatchesSingleProcessTraining) {
  const DataSet data = synthetic_data(kSamples, kFeatures);
  const auto [first, shard] = my_shard(data);
  const Case cases[] = {
      {Model::kLogistic, {"sgd", 100, 0.5, 0}, "logistic, full-batch SGD"},
      {Model::kLogistic, {"sgd", 100, 0.5, 32}, "logistic, SGD batch 32"},
      {Model::kLogistic, {"lbfgs", 25, 0.0, 0}, "logistic, L-BFGS"},
      {Model::kMlp, {"sgd", 100, 0.5, 0}, "mlp, full-batch SGD"},
      {Model::kMlp, {"sgd", 100, 0.5, 32}, "mlp, SGD batch 32"},
      {Model::kMlp, {"lbfgs", 25, 0.0, 0}, "mlp, L-BFGS"},
  };
  for (const Case& c : cases) {
    TrainingGraph t = build_training_graph(c.model, shard, kHidden, true);
    const TrainResult got =
        train(t,
              kSamples,
              first,
              initial_parameters(c.model, kFeatures, kHidden),
              c.options,
              Communicator::world().get());
    const Eigen::VectorXd want = hand_train(c.model, data, c.options);
    const double scale = std::max(1.0, want.lpNorm<Eigen::Infinity>());
    EXPECT_LE((got.theta - want).lpNorm<Eigen::Infinity>(), 1e-12 * scale)
        << c.name;
    // Training did something: the parameters moved and the loss fell.
    EXPECT_GT((want - initial_parameters(c.model, kFeatures, kHidden))
                  .lpNorm<Eigen::Infinity>(),
              0.1)
        << c.name;
    EXPECT_LT(got.final_loss, got.loss_history.front()) << c.name;
  }
}

TEST(DataParallel, EveryRankCountGivesTheSingleProcessBits) {
  // The same training on this world's ranks and in one process (the whole
  // data set on Communicator::self()): the loss history and the trained
  // parameters equal bit for bit, with uneven shards (250 samples on 3 or
  // 4 ranks), mini-batches that fall unevenly on the shards, and L-BFGS.
  // Registered at 1 to 4 ranks, so every rank count meets the one-process
  // run.
  const DataSet data = synthetic_data(kSamples, kFeatures);
  const auto [first, shard] = my_shard(data);
  const Case cases[] = {
      {Model::kLogistic, {"sgd", 40, 0.5, 32}, "logistic, SGD batch 32"},
      {Model::kLogistic, {"lbfgs", 15, 0.0, 0}, "logistic, L-BFGS"},
      {Model::kMlp, {"sgd", 40, 0.5, 0}, "mlp, full-batch SGD"},
      {Model::kMlp, {"lbfgs", 15, 0.0, 0}, "mlp, L-BFGS"},
  };
  for (const Case& c : cases) {
    const Eigen::VectorXd start =
        initial_parameters(c.model, kFeatures, kHidden);
    TrainingGraph parallel =
        build_training_graph(c.model, shard, kHidden, true);
    const TrainResult got = train(parallel,
                                  kSamples,
                                  first,
                                  start,
                                  c.options,
                                  Communicator::world().get());
    TrainingGraph single = build_training_graph(c.model, data, kHidden, false);
    const TrainResult want =
        train(single, kSamples, 0, start, c.options, nullptr);
    ASSERT_EQ(got.theta.size(), want.theta.size());
    EXPECT_EQ(0,
              std::memcmp(got.theta.data(),
                          want.theta.data(),
                          sizeof(double) * want.theta.size()))
        << c.name << ": max difference "
        << (got.theta - want.theta).lpNorm<Eigen::Infinity>();
    EXPECT_EQ(got.loss_history, want.loss_history) << c.name;
    EXPECT_EQ(got.final_loss, want.final_loss) << c.name;
    EXPECT_EQ(got.accuracy, want.accuracy) << c.name;
  }
}

TEST(DataParallel, ShardsCoverTheDataOnce) {
  const int size = world_size();
  int64_t expected_first = 0;
  for (int r = 0; r < size; ++r) {
    const auto [first, last] = shard_range(kSamples, r, size);
    EXPECT_EQ(first, expected_first);
    EXPECT_GE(last - first, kSamples / size);
    EXPECT_LE(last - first, kSamples / size + 1);
    expected_first = last;
  }
  EXPECT_EQ(expected_first, kSamples);
}

TEST(DataParallel, GraphGradientPassesTheChecker) {
  const int size = world_size();
  const DataSet data = synthetic_data(40, 3);
  const auto [first, shard] = my_shard(data);
  const int64_t last = first + shard.x.rows();
  for (Model model : {Model::kLogistic, Model::kMlp}) {
    TrainingGraph t = build_training_graph(model, shard, 3, true);
    Tensor theta = random_tensor(t.theta.shape(), 5);
    Tensor w = batch_weights(40, 0, 0, first, last);
    // The allreduced loss is the same on every rank; the checker sums over
    // ranks, so check the local share (rank 0's copy would count P times).
    Value share = t.loss * (1.0 / size);
    expect_gradients_ok(share, {t.theta}, {{t.theta, theta}, {t.weight, w}});
  }
}

}  // namespace
}  // namespace adgraph
