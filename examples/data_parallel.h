// Synchronous data-parallel training on a graph: each rank holds a shard of
// a deterministic synthetic data set, computes the gradient of its share of
// the loss, and mpi_allreduce inside the graph sums loss and gradient, so
// every rank holds the full-batch values and takes the same step.
//
// Used by examples/data_parallel_train.cc and its test.
#pragma once

#include <Eigen/Dense>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "adgraph.h"

namespace adgraph::examples {

// n samples of d features in [-1, 1] and 0/1 labels of a non-linear rule
// (x0·x1 + 0.5·x2 − 0.3·x3 + 0.1 > 0 for d >= 4) with every 17th label
// flipped. The same on every rank and platform (mt19937_64 bits only).
struct DataSet {
  Eigen::MatrixXd x;  // n × d, row i is sample i
  Eigen::VectorXd y;  // n labels
};

inline DataSet synthetic_data(int64_t n, int d) {
  std::mt19937_64 rng(20261122);
  DataSet data{Eigen::MatrixXd(n, d), Eigen::VectorXd(n)};
  for (int64_t i = 0; i < n; ++i) {
    for (int j = 0; j < d; ++j) {
      data.x(i, j) = 2.0 * static_cast<double>(rng() >> 11) * 0x1p-53 - 1.0;
    }
    double score = 0.1;
    for (int j = 0; j < d; ++j) {
      const double c[] = {0.0, 0.0, 0.5, -0.3};
      score += j < 4 ? c[j] * data.x(i, j) : 0.1 * data.x(i, j);
    }
    if (d >= 2) score += data.x(i, 0) * data.x(i, 1);
    const bool label = score > 0;
    data.y(i) = (i % 17 == 16) != label ? 1.0 : 0.0;
  }
  return data;
}

// Rows [first, last) of rank `rank` of `size`: balanced, the first n % size
// ranks get one row more.
inline std::pair<int64_t, int64_t> shard_range(int64_t n, int rank, int size) {
  const int64_t base = n / size, extra = n % size;
  const int64_t first = rank * base + std::min<int64_t>(rank, extra);
  return {first, first + base + (rank < extra ? 1 : 0)};
}

enum class Model { kLogistic, kMlp };

// Parameter layout: logistic θ = (w[d], b); MLP with tanh hidden layer
// θ = (W1[d × hidden] row-major, b1[hidden], w2[hidden], b2).
inline int64_t num_parameters(Model model, int d, int hidden) {
  return model == Model::kLogistic ? d + 1 : (d + 2) * hidden + 1;
}

// Deterministic, non-symmetric start values.
inline Eigen::VectorXd initial_parameters(Model model, int d, int hidden) {
  Eigen::VectorXd theta(num_parameters(model, d, hidden));
  for (int64_t k = 0; k < theta.size(); ++k) {
    theta(k) = model == Model::kLogistic ? 0.0 : 0.5 * std::sin(1.0 + k);
  }
  return theta;
}

// The loss graph of one rank. With `distributed`, loss and grad are summed
// over the ranks of the world; without, over this process's data alone
// (the single-process reference, on Communicator::self()).
//
// Every sample has its own copy of θ (row i of each block of θ for sample
// i), so the gradient with respect to those rows keeps each sample's term
// apart
// (no sum over samples inside a matmul's adjoint); mpi_total_rows then
// sums them over the samples of every rank exactly, rounded once, as
// mpi_total sums the loss. Loss, gradient and the trained parameters are
// therefore the same bits on any number of ranks (issue #36), at the cost
// of an n × p matrix of per-sample gradients.
struct TrainingGraph {
  std::unique_ptr<Graph> graph = std::make_unique<Graph>();
  Value theta;    // placeholder [p], the same on every rank
  Value weight;   // placeholder [n_local]: sample weights (1/B in the batch)
  Value loss;     // Σ_i weight_i·ℓ_i over all ranks' samples, every rank
  Value grad;     // ∂loss/∂θ, every rank
  Value correct;  // number of correctly classified samples, all ranks
};

inline TrainingGraph build_training_graph(Model model,
                                          const DataSet& data,
                                          int hidden,
                                          bool distributed) {
  TrainingGraph t;
  Graph& g = *t.graph;
  if (!distributed) g.set_comm(Communicator::self());
  const int64_t n = data.x.rows(), d = data.x.cols();
  Tensor x(Shape{n, d});
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < d; ++j) x[i * d + j] = data.x(i, j);
  }
  Tensor y(Shape{n});
  for (int64_t i = 0; i < n; ++i) y[i] = data.y(i);
  Value xs = g.constant(std::move(x), "features");
  Value ys = g.constant(std::move(y), "labels");
  const int64_t p = num_parameters(model, static_cast<int>(d), hidden);
  t.theta = g.placeholder("theta", {p});
  t.weight = g.placeholder("weight", {n});
  // θ in blocks (w, b or W1, b1, w2, b2), each given one row per sample.
  std::vector<Value> blocks;
  auto block = [&](int64_t begin, int64_t end) {
    Value one = reshape(slice(t.theta, 0, begin, end), {1, end - begin});
    blocks.push_back(broadcast_to(one, {n, end - begin}));
    return blocks.back();
  };

  Value z;  // logits [n]
  if (model == Model::kLogistic) {
    Value w = block(0, d);  // blocks made in θ's order, as concat joins them
    Value b = reshape(block(d, d + 1), {n});
    z = sum(xs * w, {1}) + b;
  } else {
    const int64_t h = hidden;
    Value w1 = reshape(block(0, d * h), {n, d, h});
    Value b1 = block(d * h, d * h + h);
    Value w2 = block(d * h + h, d * h + 2 * h);
    Value b2 = reshape(block(d * h + 2 * h, d * h + 2 * h + 1), {n});
    Value spread = broadcast_to(reshape(xs, {n, d, 1}), {n, d, h});
    Value hidden_layer = tanh(sum(spread * w1, {1}) + b1);
    z = sum(hidden_layer * w2, {1}) + b2;
  }
  // Binary cross-entropy from logits: softplus(z) − y·z, with the stable
  // softplus(z) = (z + |z|)/2 + log(1 + exp(−|z|)).
  Value softplus = 0.5 * (z + abs(z)) + log(1.0 + exp(-abs(z)));
  Value total = mpi_total(t.weight * (softplus - ys * z));  // on rank 0
  // Prediction sign(z) ∈ {−1, 0, 1} → (1 + sign)/2; correct = 1 − |p − y|.
  Value correct = 1.0 - abs(0.5 * (1.0 + sign(z)) - ys);
  t.loss = mpi_bcast(total);
  // The per-sample gradients, block by block, side by side: [n, p].
  t.grad = mpi_bcast(mpi_total_rows(concat(gradients(total, blocks), 1)));
  t.correct = mpi_bcast(mpi_total(correct));
  return t;
}

// Sample weights of rows [first, last) for step `step` of mini-batch SGD
// with global batch size `batch` over n samples (0: the full batch). The
// batch of step k is the global rows (k·B + j) mod n, j < B, whatever the
// rank count, so the data-parallel run takes the single-process steps.
inline Tensor batch_weights(
    int64_t n, int64_t batch, int64_t step, int64_t first, int64_t last) {
  Tensor w(Shape{last - first}, 0.0);
  if (batch <= 0 || batch >= n) {
    w.array() = 1.0 / static_cast<double>(n);
    return w;
  }
  for (int64_t j = 0; j < batch; ++j) {
    const int64_t row = (step * batch + j) % n;
    if (row >= first && row < last) w[row - first] = 1.0 / batch;
  }
  return w;
}

struct TrainOptions {
  std::string optimizer = "sgd";  // "sgd" or "lbfgs"
  int steps = 200;                // SGD steps or L-BFGS iterations
  double learning_rate = 0.5;     // SGD only
  int64_t batch = 0;              // SGD global batch size; 0 = full batch
};

struct TrainResult {
  Eigen::VectorXd theta;
  std::vector<double> loss_history;  // full-batch loss (L-BFGS) or the
                                     // batch loss before each SGD step
  double final_loss = 0.0;           // full-batch loss at theta
  double accuracy = 0.0;             // on the whole data set
};

// Trains on rows [first, first + shard size) of an n-sample data set whose
// shard `t` was built from. Every rank calls it in lockstep (distributed
// graphs); comm is nullptr for the single-process reference.
inline TrainResult train(TrainingGraph& t,
                         int64_t n,
                         int64_t first,
                         Eigen::VectorXd theta,
                         const TrainOptions& options,
                         Communicator* comm) {
  const int64_t local = t.weight.shape()[0];
  Session session(*t.graph);
  TrainResult result;
  auto as_tensor = [](const Eigen::VectorXd& v) {
    return Tensor(Shape{v.size()},
                  std::vector<double>(v.data(), v.data() + v.size()));
  };
  const Tensor full = batch_weights(n, 0, 0, first, first + local);
  if (options.optimizer == "lbfgs") {
    optim::LbfgsOptions lbfgs_options;
    lbfgs_options.max_iterations = options.steps;
    lbfgs_options.tolerance_gradient = 0.0;
    auto objective = [&](const Eigen::VectorXd& x, Eigen::VectorXd& grad) {
      auto out = session.run({t.loss, t.grad},
                             {{t.theta, as_tensor(x)}, {t.weight, full}});
      grad = Eigen::Map<const Eigen::VectorXd>(out[1].data(), out[1].size());
      return out[0].item();
    };
    optim::LbfgsSummary summary = optim::lbfgs(
        objective, theta, lbfgs_options, comm, optim::Layout::kReplicated);
    result.loss_history = summary.f_history;
  } else {
    for (int step = 0; step < options.steps; ++step) {
      Tensor w = batch_weights(n, options.batch, step, first, first + local);
      auto out = session.run({t.loss, t.grad},
                             {{t.theta, as_tensor(theta)}, {t.weight, w}});
      result.loss_history.push_back(out[0].item());
      theta -= options.learning_rate *
               Eigen::Map<const Eigen::VectorXd>(out[1].data(), out[1].size());
    }
  }
  auto out = session.run({t.loss, t.correct},
                         {{t.theta, as_tensor(theta)}, {t.weight, full}});
  result.final_loss = out[0].item();
  result.accuracy = out[1].item() / static_cast<double>(n);
  result.theta = std::move(theta);
  return result;
}

}  // namespace adgraph::examples
