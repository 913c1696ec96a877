#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "solvers/heat_inverse.h"
#include "tests/mpi_ops/mpi_test_util.h"
#include "tests/solvers/heat_reference.h"

namespace adgraph::solvers {
namespace {

using namespace adgraph::testing;

constexpr double kInvariance = 1e-12;

// Every patch grid px × py = P that divides nx × ny.
std::vector<std::pair<int, int>> decompositions(int nx, int ny, int size) {
  std::vector<std::pair<int, int>> out;
  for (int px = 1; px <= size; ++px) {
    if (size % px == 0 && nx % px == 0 && ny % (size / px) == 0)
      out.emplace_back(px, size / px);
  }
  return out;
}

// κ = 1 + 0.1·sin(3πx)·cos(2πy) on a patch (or the whole grid).
Tensor wavy_kappa(const HeatConfig& c, const Patch& p) {
  Tensor t(Shape{p.n, p.m});
  for (int64_t i = 0; i < p.n; ++i) {
    for (int64_t j = 0; j < p.m; ++j) {
      const double x = (p.row0 + i + 1) * c.h(), y = (p.col0 + j + 1) * c.h();
      t[i * p.m + j] = 1 + 0.1 * std::sin(3 * std::numbers::pi * x) *
                               std::cos(2 * std::numbers::pi * y);
    }
  }
  return t;
}

Patch whole_grid(const HeatConfig& c) {
  Patch p;
  p.n = c.nx, p.m = c.ny;
  return p;
}

TEST(HeatStep, DotProductTestOfTheLinearisedStep) {
  // heat_step is bilinear in (κ, u-and-halos) and affine in f, so its
  // derivative along δ is exactly (y(x + δ) − y(x − δ))/2.
  Graph g;
  const int64_t n = 5, m = 4;
  std::vector<Value> in = {g.placeholder("u", {n, m}),
                           g.placeholder("k", {n, m}),
                           g.placeholder("f", {n, m}),
                           g.placeholder("l", {n}),
                           g.placeholder("r", {n}),
                           g.placeholder("up", {m}),
                           g.placeholder("down", {m})};
  Value y =
      heat_step(in[0], in[1], in[2], {in[3], in[4], in[5], in[6]}, 0.01, 0.2).u;
  Value w = g.placeholder("w", {n, m});
  std::vector<Value> grads = gradients(dot(y, w), in);
  FeedMap at, plus, minus;
  unsigned salt = 50;
  std::vector<Tensor> delta;
  for (const Value& v : in) {
    Tensor x = random_tensor(v.shape(), salt++),
           d = random_tensor(v.shape(), salt++);
    at[v] = x;
    Tensor p = x, q = x;
    p.array() += d.array();
    q.array() -= d.array();
    plus[v] = p, minus[v] = q;
    delta.push_back(d);
  }
  Tensor wv = random_tensor({n, m}, 99);
  at[w] = plus[w] = minus[w] = wv;
  Session s(g);
  const Tensor yp = s.run(y, plus), ym = s.run(y, minus);
  const double lhs = (0.5 * (yp.array() - ym.array()) * wv.array()).sum();
  std::vector<Tensor> adj = s.run(grads, at);
  double rhs = 0;
  for (std::size_t k = 0; k < in.size(); ++k)
    rhs += (delta[k].array() * adj[k].array()).sum();
  EXPECT_LE(std::fabs(lhs - rhs), 1e-12 * std::fabs(lhs))
      << lhs << " vs " << rhs;
}

TEST(HeatStep, AdjointRejectsABadKappaGradientInput) {
  Graph g;
  const Shape patch{3, 4};
  std::vector<Value> inputs;
  for (int k = 0; k < 5; ++k) {  // ū⁺ and the four edge cotangents
    const Shape shape = k == 0 ? patch : Shape{k < 3 ? 3 : 4};
    inputs.push_back(g.constant(Tensor(shape, 1.0)));
  }
  for (int k = 0; k < 3; ++k) inputs.push_back(g.constant(Tensor(patch, 1.0)));
  for (int k = 0; k < 4; ++k)
    inputs.push_back(g.constant(Tensor(Shape{k < 2 ? 3 : 4}, 0.0)));
  const nlohmann::json attrs = {{"dt", 0.1}, {"h", 0.5}};
  auto message = [&](std::vector<Value> all) {
    try {
      g.add_node("heat_step_adjoint", all, attrs, {.name = "adj"});
    } catch (const ShapeError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::vector<Value> wrong = inputs;
  wrong.push_back(g.constant(Tensor(Shape{4, 3}, 0.0)));
  EXPECT_EQ(message(wrong),
            "node \"adj\" (heat_step_adjoint): input \"kappa_grad_in\": "
            "differs from u's shape");
  std::vector<Value> twice = inputs;
  twice.push_back(g.constant(Tensor(patch, 0.0)));
  twice.push_back(g.constant(Tensor(patch, 0.0)));
  EXPECT_EQ(message(twice),
            "node \"adj\" (heat_step_adjoint): input \"kappa_grad_in\": "
            "given more than once");
  std::vector<Value> right = inputs;
  right.push_back(g.constant(Tensor(patch, 0.0)));
  EXPECT_EQ(message(right), "no error");
}

TEST(PatchEdges, EdgesAndTheirTransposeAreAdjointAndDifferentiable) {
  Graph g;
  Value u = g.placeholder("u", {3, 4});
  Tensor uv(Shape{3, 4});
  for (int k = 0; k < 12; ++k) uv[k] = k;
  auto e = patch_edges(u);
  Session s(g);
  auto out = s.run({e[0], e[1], e[2], e[3]}, {{u, uv}});
  EXPECT_EQ(out[0].to_vector(), (std::vector<double>{0, 4, 8}));
  EXPECT_EQ(out[1].to_vector(), (std::vector<double>{3, 7, 11}));
  EXPECT_EQ(out[2].to_vector(), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(out[3].to_vector(), (std::vector<double>{8, 9, 10, 11}));
  auto packed = [](Value v) {
    auto edges = patch_edges(v);
    return concat({edges[0], edges[1], edges[2], edges[3]}, 0);
  };
  expect_adjoint_identity(packed, {3, 4});
  auto unpacked = [&](Value v) {
    return v.graph().add_node("patch_edges_adjoint",
                              {slice(v, 0, 0, 3),
                               slice(v, 0, 3, 6),
                               slice(v, 0, 6, 10),
                               slice(v, 0, 10, 14)});
  };
  expect_adjoint_identity(unpacked, {14});
  expect_gradients_ok(
      rank_weighted_loss(packed(u)), {u}, {{u, random_tensor({3, 4}, 60)}});
  Value strips = g.placeholder("strips", {14});
  expect_gradients_ok(rank_weighted_loss(unpacked(strips)),
                      {strips},
                      {{strips, random_tensor({14}, 61)}});
}

TEST(HeatSolver, EveryDecompositionMatchesTheSerialReference) {
  const int size = world_size(), rank = world_rank();
  auto comm = Communicator::world();
  HeatConfig base;
  base.nx = 12, base.ny = 8, base.nt = 20;  // patches are never square here
  const Tensor kappa_all = wavy_kappa(base, whole_grid(base));
  std::vector<double> obs(base.nx * base.ny), weight(base.nx * base.ny, 1.0);
  for (std::size_t k = 0; k < obs.size(); ++k) obs[k] = 0.3 + 0.01 * k;
  const HeatReference ref =
      heat_reference(base, kappa_all.to_vector(), obs, weight);
  const double gmax =
      Eigen::Map<const Eigen::ArrayXd>(ref.gradient.data(), ref.gradient.size())
          .abs()
          .maxCoeff();
  for (auto [px, py] : decompositions(base.nx, base.ny, size)) {
    std::vector<Tensor> store_all_result;
    for (auto schedule : {CheckpointSchedule::store_all(),
                          CheckpointSchedule::binomial(3),
                          CheckpointSchedule::every(6)}) {
      HeatConfig c = base;
      c.px = px, c.py = py;
      c.checkpoints = schedule;
      const Patch p = patch_of(c, rank);
      Graph g;
      Value kappa = g.placeholder("kappa", {p.n, p.m});
      Value u = heat_solve(g.constant(heat_initial(c, p)),
                           kappa,
                           g.constant(heat_source(c, p)),
                           c);
      Tensor obs_patch(Shape{p.n, p.m});
      for (int64_t i = 0; i < p.n; ++i) {
        for (int64_t j = 0; j < p.m; ++j)
          obs_patch[i * p.m + j] = obs[(p.row0 + i) * c.ny + p.col0 + j];
      }
      Value loss = sum(square(u - g.constant(obs_patch)));
      Value grad = gradient(loss, kappa);
      // Sequential runs accumulate κ̄ in place; concurrent ones never hand
      // buffers over (heat_step_adjoint copies the running sum instead).
      for (bool concurrent : {false, true}) {
        Session s(g, {.concurrent = concurrent, .num_threads = 2});
        auto out = s.run({loss, grad}, {{kappa, wavy_kappa(c, p)}});
        // Every schedule recomputes exactly what store_all kept.
        if (store_all_result.empty()) store_all_result = out;
        EXPECT_EQ(out[0].item(), store_all_result[0].item())
            << schedule.describe();
        EXPECT_EQ(out[1].to_vector(), store_all_result[1].to_vector())
            << schedule.describe();
        const double total = comm->allreduce_sum(out[0].item());
        EXPECT_NEAR(total, ref.loss, kInvariance * ref.loss)
            << px << " x " << py << " concurrent " << concurrent;
        for (int64_t i = 0; i < p.n; ++i) {
          for (int64_t j = 0; j < p.m; ++j) {
            EXPECT_NEAR(out[1][i * p.m + j],
                        ref.gradient[(p.row0 + i) * c.ny + p.col0 + j],
                        kInvariance * gmax)
                << px << " x " << py << " concurrent " << concurrent << " at ("
                << p.row0 + i << ", " << p.col0 + j << ")";
          }
        }
      }
    }
  }
}

// The overlapped step (data_exchange_start, heat_step_interior,
// data_exchange_finish, heat_step_boundary) against data_exchange +
// heat_step: the same final state, loss and cotangents of u0, κ and f, bit
// for bit, on every patch grid of the rank count, including patches of one
// row or column and non-square ones, under store-all and a checkpointed
// schedule, in Session's sequential and concurrent executors. Rows of 37
// and 16·P points take heat_step_adjoint's vector pass through several
// whole vectors and a scalar tail at any vector width (the split forward
// ops are plain scalar loops: a second implementation; the pair's adjoint
// is heat_step's gather form, and its scatter form is heat_step_split_test's).
TEST(HeatSolver, OverlappedStepsAreBitwiseThePlainOnes) {
  const int size = world_size(), rank = world_rank();
  for (auto [nx, ny] : std::vector<std::pair<int, int>>{{12, 8},
                                                        {2 * size, 3},
                                                        {size, 2 * size},
                                                        {2 * size, size},
                                                        {2 * size, 37},
                                                        {size, 16 * size}}) {
    for (auto [px, py] : decompositions(nx, ny, size)) {
      for (auto schedule :
           {CheckpointSchedule::store_all(), CheckpointSchedule::binomial(2)}) {
        std::vector<Tensor> results[2];
        for (bool overlap : {false, true}) {
          HeatConfig c;
          c.nx = nx, c.ny = ny, c.nt = 7, c.px = px, c.py = py;
          c.checkpoints = schedule;
          c.overlap = overlap;
          const Patch p = patch_of(c, rank);
          Graph g;
          Value u0 = g.placeholder("u0", {p.n, p.m});
          Value kappa = g.placeholder("kappa", {p.n, p.m});
          Value f = g.placeholder("f", {p.n, p.m});
          Value u = heat_solve(u0, kappa, f, c);
          Value loss = sum(square(u - 0.25)) * (rank + 1.0);
          std::vector<Value> fetches = {u, loss};
          for (Value grad : gradients(loss, {u0, kappa, f}))
            fetches.push_back(grad);
          Tensor f_value = heat_source(c, p);
          for (int64_t k = 0; k < f_value.size(); ++k) f_value[k] += 0.01 * k;
          const FeedMap feeds = {{u0, heat_initial(c, p)},
                                 {kappa, wavy_kappa(c, p)},
                                 {f, f_value}};
          Session sequential(g);
          results[overlap] = sequential.run(fetches, feeds);
          Session concurrent(g, {.concurrent = true, .num_threads = 2});
          auto again = concurrent.run(fetches, feeds);
          for (std::size_t k = 0; k < again.size(); ++k) {
            EXPECT_TRUE((again[k].array() == results[overlap][k].array()).all())
                << "concurrent, output " << k;
          }
        }
        const char* names[] = {
            "u", "loss", "u0 gradient", "kappa gradient", "f gradient"};
        for (std::size_t k = 0; k < results[0].size(); ++k) {
          const Tensor &plain = results[0][k], &overlapped = results[1][k];
          ASSERT_EQ(plain.shape(), overlapped.shape());
          int64_t differ = 0;
          for (int64_t i = 0; i < plain.size(); ++i)
            differ += plain[i] != overlapped[i];
          EXPECT_EQ(differ, 0)
              << names[k] << " differs at " << differ << " of " << plain.size()
              << " points; grid " << nx << " x " << ny << ", patches " << px
              << " x " << py << ", schedule " << schedule.describe();
        }
        // Not trivially equal: the gradient is there and not zero.
        EXPECT_GT(results[1][3].array().abs().maxCoeff(), 0.0);
      }
    }
  }
}

TEST(HeatSolver, GradientChecksAtFlatAndWavyKappa) {
  const int size = world_size(), rank = world_rank();
  HeatConfig c;
  c.nx = size == 3 ? 9 : 8, c.ny = 8, c.nt = 20;
  c.px = size == 4 ? 2 : size, c.py = size == 4 ? 2 : 1;
  const Patch p = patch_of(c, rank);
  // Plain and overlapped steps (the split ops' adjoints and tangents).
  for (bool overlap : {false, true}) {
    c.overlap = overlap;
    Graph g;
    Value kappa = g.placeholder("kappa", {p.n, p.m});
    Value u = heat_solve(g.constant(heat_initial(c, p)),
                         kappa,
                         g.constant(heat_source(c, p)),
                         c);
    Value loss = rank_weighted_loss(u - 0.5);
    expect_gradients_ok(loss, {kappa}, {{kappa, Tensor(Shape{p.n, p.m}, 1.0)}});
    expect_gradients_ok(loss, {kappa}, {{kappa, wavy_kappa(c, p)}});
  }
}

TEST(HeatInverse, ReplicatedShardedAndSensorLossesAgreeWithTheReference) {
  const int size = world_size(), rank = world_rank();
  HeatInverseOptions o;
  o.config.nx = 12, o.config.ny = 8, o.config.nt = 15;
  o.config.px = size == 4 ? 2 : size, o.config.py = size == 4 ? 2 : 1;
  const HeatConfig& c = o.config;
  // Reference: observations from κ_true, evaluated at κ = 1.
  const Tensor truth = heat_kappa_true(c, whole_grid(c));
  std::vector<double> ones(c.nx * c.ny, 1.0);
  const auto obs = heat_reference(c, truth.to_vector(), ones, ones).u_final;
  const HeatReference full = heat_reference(c, ones, obs, ones);
  std::vector<double> sensor_weight(c.nx * c.ny, 0.0);
  o.sensors = {{0, 0}, {5, 3}, {11, 7}, {6, 4}};
  for (auto [i, j] : o.sensors) sensor_weight[i * c.ny + j] = 1.0;
  const HeatReference sensed = heat_reference(c, ones, obs, sensor_weight);

  for (bool replicated : {false, true}) {
    for (bool sensors : {false, true}) {
      HeatInverseOptions oo = o;
      oo.replicated = replicated;
      if (!sensors) oo.sensors.clear();
      HeatInverse problem(oo, Communicator::world());
      auto [loss, grad] = problem.loss_and_gradient(problem.kappa_start());
      const HeatReference& ref = sensors ? sensed : full;
      EXPECT_NEAR(loss, ref.loss, kInvariance * ref.loss);
      const Patch& p = problem.patch();
      for (int64_t i = 0; i < p.n; ++i) {
        for (int64_t j = 0; j < p.m; ++j) {
          const int64_t global = (p.row0 + i) * c.ny + p.col0 + j;
          // Replicated: rank 0's κ carries the whole gradient.
          const double got =
              replicated ? (rank == 0 ? grad[global] : 0.0) : grad[i * p.m + j];
          const double want =
              replicated && rank != 0 ? 0.0 : ref.gradient[global];
          EXPECT_NEAR(got, want, 1e-12 * (1e-3 + std::fabs(want)));
        }
      }
    }
  }
}

// The problem keeps one feed map across calls: a κ of the wrong shape is
// refused naming the feed, and neither it nor the failed call changes what
// the next calls compute (the loss and gradient at κ = 1 before and after
// are the same bit for bit).
TEST(HeatInverse, AKappaOfTheWrongShapeIsRefusedAndChangesNothing) {
  const int size = world_size();
  HeatInverseOptions o;
  o.config.nx = 12, o.config.ny = 8, o.config.nt = 6;
  o.config.px = size == 4 ? 2 : size, o.config.py = size == 4 ? 2 : 1;
  HeatInverse problem(o, Communicator::world());
  const Tensor observed = problem.observations();
  const Tensor start = problem.kappa_start();
  const auto [loss, grad] = problem.loss_and_gradient(start);
  const Shape& want = start.shape();
  const Tensor wrong(Shape{want[0] + 1, want[1]}, 1.0);
  const std::string message =
      "node \"kappa\" (placeholder): feed: expected "
      "shape " +
      shape_string(want) + ", got " + shape_string(wrong.shape());
  for (int call = 0; call < 3; ++call) {
    try {
      if (call == 0) problem.loss(wrong);
      if (call == 1) problem.loss_and_gradient(wrong);
      if (call == 2) problem.terms(wrong);
      ADD_FAILURE() << "call " << call << " took a κ of the wrong shape";
    } catch (const RunError& e) {
      EXPECT_EQ(std::string(e.what()), message);
    }
  }
  EXPECT_TRUE((problem.observations().array() == observed.array()).all());
  const auto [again, grad_again] = problem.loss_and_gradient(start);
  EXPECT_EQ(again, loss);
  EXPECT_TRUE((grad_again.array() == grad.array()).all());
  EXPECT_EQ(problem.loss(start), loss);
  EXPECT_GT(loss, 0.0);
}

TEST(HeatInverse, ObservationTimesAddUpTheSingleTimeProblems) {
  // Observing u at t = 4, 9 and 15 is the sum of three problems that each
  // observe their final time (nt = 4, 9, 15): a per-step output of one loop
  // against three separate loops.
  const int size = world_size();
  HeatInverseOptions o;
  o.config.nx = 12, o.config.ny = 8, o.config.nt = 15;
  o.config.px = size == 4 ? 2 : size, o.config.py = size == 4 ? 2 : 1;
  o.config.checkpoints = CheckpointSchedule::binomial(2);
  o.sensors = {{0, 0}, {5, 3}, {11, 7}};
  HeatInverseOptions timed = o;
  timed.observe_steps = {4, 9, 15};
  HeatInverse problem(timed, Communicator::world());
  auto [loss, grad] = problem.loss_and_gradient(problem.kappa_start());
  double want_loss = 0;
  Tensor want_grad(grad.shape(), 0.0);
  for (int nt : {4, 9, 15}) {
    HeatInverseOptions single = o;
    single.config.nt = nt;
    // Same time step as the 15-step problem (dt does not depend on nt).
    HeatInverse part(single, Communicator::world());
    auto [l, g] = part.loss_and_gradient(part.kappa_start());
    want_loss += l;
    want_grad.array() += g.array();
  }
  EXPECT_NEAR(loss, want_loss, 1e-13 * want_loss);
  for (int64_t k = 0; k < grad.size(); ++k)
    EXPECT_NEAR(
        grad[k], want_grad[k], 1e-13 * (1e-3 + std::fabs(want_grad[k])));
  // Out of range or unsorted times are refused, naming the field.
  timed.observe_steps = {4, 16};
  try {
    HeatInverse bad(timed, Communicator::world());
    ADD_FAILURE();
  } catch (const OptionsError& e) {
    EXPECT_EQ(std::string(e.what()),
              "observe_steps: observation times must increase strictly "
              "within [1, 15]; entry 1 is 16");
  }
}

TEST(HeatInverse, MemoryOfGradientAndForwardRuns) {
  const int size = world_size();
  for (int64_t snapshots : {0, 4}) {  // 0: store_all
    HeatInverseOptions o;
    o.config.nx = 48, o.config.ny = 48, o.config.nt = 60;
    o.config.px = size == 4 ? 2 : size, o.config.py = size == 4 ? 2 : 1;
    o.config.checkpoints = snapshots == 0
                               ? CheckpointSchedule::store_all()
                               : CheckpointSchedule::binomial(snapshots);
    HeatInverse problem(o, Communicator::world());
    const int64_t n = problem.patch().n, m = problem.patch().m;
    const double patch_bytes = sizeof(double) * n * m;
    // A state of the time loop: u and its four edges.
    const double state_bytes = sizeof(double) * (n * m + 2 * n + 2 * m);
    problem.loss_and_gradient(problem.kappa_start());
    const double gradient_peak = problem.last_run().peak_live_bytes;
    const LoopStats adjoint = problem.loop_adjoint_stats();
    problem.loss(problem.kappa_start());
    const double forward_peak = problem.last_run().peak_live_bytes;
    if (snapshots == 0) {
      // Every state 0 … NT−1 is kept, and nothing more.
      EXPECT_EQ(adjoint.max_snapshots, o.config.nt);
      EXPECT_EQ(adjoint.snapshot_bytes, o.config.nt * state_bytes);
    } else {
      // s snapshots, plus c_{NT−1} from the forward run's tape.
      EXPECT_LE(adjoint.max_snapshots, snapshots + 1);
      EXPECT_LE(adjoint.snapshot_bytes, (snapshots + 1) * state_bytes);
    }
    // The snapshots live with the loop; the session holds a few patches.
    EXPECT_LE(gradient_peak, 12 * patch_bytes);
    EXPECT_LE(forward_peak, 4 * patch_bytes);
  }
}

TEST(HeatInverse, ConfigurationErrorsAreClearOnEveryRank) {
  const int size = world_size();
  HeatInverseOptions o;
  o.config.nx = 12, o.config.ny = 12;
  o.config.px = size + 1;
  try {
    HeatInverse problem(o, Communicator::world());
    ADD_FAILURE();
  } catch (const OptionsError& e) {
    EXPECT_EQ(std::string(e.what()),
              "HeatConfig: px x py = " + std::to_string(size + 1) +
                  " x 1 = " + std::to_string(size + 1) +
                  " patches need as many ranks, but there are " +
                  std::to_string(size));
  }
  // Any grid splits into patches (13 rows on 2 → 7, 6), but every patch
  // needs a row.
  o.config.nx = size - 1, o.config.px = size, o.config.py = 1;
  if (size > 1) {
    try {
      HeatInverse problem(o, Communicator::world());
      ADD_FAILURE();
    } catch (const OptionsError& e) {
      EXPECT_EQ(std::string(e.what()),
                "HeatConfig: a " + std::to_string(size - 1) + " x " +
                    std::to_string(o.config.ny) +
                    " grid has too few rows or columns for " +
                    std::to_string(size) +
                    " x 1 patches of at least one point");
    }
  }
  o.config.nx = 12;
  o.sensors = {{12, 0}};
  EXPECT_THROW(HeatInverse(o, Communicator::world()), OptionsError);
}

}  // namespace
}  // namespace adgraph::solvers
