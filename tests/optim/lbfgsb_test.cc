// L-BFGS-B across ranks: the expected points and counts are SciPy's
// (bench/scipy_lbfgsb_reference.py, SciPy 1.10.1 = L-BFGS-B 3.0 Fortran),
// reached with replicated and sharded variables at every rank count.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <vector>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph::optim {
namespace {

using adgraph::testing::world_rank;
using adgraph::testing::world_size;

constexpr double kPointTolerance = 1e-6;      // |x − x_scipy|∞
constexpr double kValueTolerance = 1e-8;      // |f − f_scipy| / |f_scipy|
constexpr double kIterationAllowance = 1.10;  // at most 10 % more than SciPy
constexpr double kScipyFtol = 2.220446049250313e-09;  // factr 1e7 · ε

// SciPy's result for driver1 (m = 5, default pgtol 1e-5 and factr 1e7):
// 25 iterations, 30 evaluations, REL_REDUCTION_OF_F.
constexpr int kDriver1Iterations = 25;
constexpr double kDriver1F = 3.234032250621636e-10;
const std::vector<double> kDriver1X = {
    1.0000007110948066, 1.0000006900393534, 1.000001448645648,
    1.0000017473189082, 1.0000023446432647, 1.000003012541851,
    1.0000046275809007, 1.0000086094843645, 1.0000180848323101,
    1.0000386609535745, 1.0000806508127238, 1.000162782723251,
    1.0003247611038288, 1.0006484546794827, 1.001298859904548,
    1.0026019482434922, 1.0052115864354678, 1.0104491566003213,
    1.0210071878821343, 1.0424583807367913, 1.0867222412584667,
    1.180969293769149,  1.3946883379487947, 1.9451564224057651,
    3.7836361198485275};

// SciPy's result for the coupled problem in [−0.3, 0.4]²⁴ (m = 10, pgtol
// 1e-12, ftol 1e-15): 15 iterations, f = 4.311613061338452.
constexpr int kCoupledIterations = 15;
constexpr double kCoupledF = 4.311613061338452;
const std::vector<double> kCoupledX = {0.4,
                                       0.4,
                                       0.09909778261217889,
                                       -0.3,
                                       -0.3,
                                       -0.3,
                                       -0.3,
                                       0.10879477723595393,
                                       0.4,
                                       0.4,
                                       0.4,
                                       -0.05169287146650348,
                                       -0.3,
                                       -0.3,
                                       -0.3,
                                       -0.3,
                                       0.08281604744090604,
                                       0.4,
                                       0.4,
                                       0.4,
                                       0.06619113554297479,
                                       -0.3,
                                       -0.3,
                                       -0.3};

// f and ∇f of driver1 over the whole vector:
// f = (x₁ − 1)²/4 + 4 Σ (xᵢ − xᵢ₋₁²)².
double driver1(const Eigen::VectorXd& x, Eigen::VectorXd& g) {
  const int64_t n = x.size();
  double f = 0.25 * (x[0] - 1) * (x[0] - 1);
  g = Eigen::VectorXd::Zero(n);
  g[0] = 0.5 * (x[0] - 1);
  for (int64_t i = 1; i < n; ++i) {
    const double t = x[i] - x[i - 1] * x[i - 1];
    f += 4 * t * t;
    g[i] += 8 * t;
    g[i - 1] += -16 * x[i - 1] * t;
  }
  return f;
}

// Σ aᵢ(xᵢ − tᵢ)² + xᵢ⁴/4 + (Σ x)²/2, aᵢ = 1 + sin(i)/2, tᵢ = cos(0.7 i).
double coupled(const Eigen::VectorXd& x, Eigen::VectorXd& g) {
  const double s = x.sum();
  double f = 0.5 * s * s;
  g.resize(x.size());
  for (int64_t k = 0; k < x.size(); ++k) {
    const double i = static_cast<double>(k);
    const double a = 1.0 + 0.5 * std::sin(i), t = std::cos(0.7 * i);
    f += a * (x[k] - t) * (x[k] - t) + 0.25 * std::pow(x[k], 4);
    g[k] = 2 * a * (x[k] - t) + std::pow(x[k], 3) + s;
  }
  return f;
}

using Whole = double (*)(const Eigen::VectorXd&, Eigen::VectorXd&);

// This rank's slice [begin, end) of n entries (uneven when P ∤ n).
struct Slice {
  int64_t begin, end;
  explicit Slice(int64_t n)
      : begin(n * world_rank() / world_size()),
        end(n * (world_rank() + 1) / world_size()) {}
  int64_t size() const { return end - begin; }
};

// A sharded objective from a whole-vector one: the slices are assembled
// (exactly: an allreduce of zero-padded slices), rank 0 reports f (the
// others 0, so the sum is exact) and each rank its slice of ∇f.
Objective sharded(Whole whole, int64_t n) {
  return [whole, n](const Eigen::VectorXd& mine, Eigen::VectorXd& g) {
    const Slice slice(n);
    Eigen::VectorXd x = Eigen::VectorXd::Zero(n), full_g;
    x.segment(slice.begin, slice.size()) = mine;
    Communicator::world()->allreduce(x.data(), x.data(), n, ReduceOp::kSum);
    const double f = whole(x, full_g);
    g = full_g.segment(slice.begin, slice.size());
    return world_rank() == 0 ? f : 0.0;
  };
}

LbfgsOptions scipy_defaults(int history) {
  LbfgsOptions o;
  o.history = history;
  o.tolerance_gradient = 1e-5;
  o.tolerance_function = kScipyFtol;
  return o;
}

Bounds driver1_bounds(const Slice& s) {
  Bounds b;
  b.lower.resize(s.size());
  b.upper = Eigen::VectorXd::Constant(s.size(), 100.0);
  for (int64_t k = 0; k < s.size(); ++k)
    b.lower[k] = (s.begin + k) % 2 == 0 ? 1.0 : -100.0;  // x₁, x₃, … ≥ 1
  return b;
}

// Checks x (this rank's slice, or everything) against SciPy's point.
void expect_scipy_point(const Eigen::VectorXd& x,
                        int64_t offset,
                        const std::vector<double>& expected) {
  for (int64_t k = 0; k < x.size(); ++k)
    EXPECT_NEAR(x[k], expected[offset + k], kPointTolerance)
        << "entry " << offset + k;
}

TEST(LbfgsbMpi, Driver1ReplicatedReachesScipysPoint) {
  Slice all(25);
  all.begin = 0, all.end = 25;
  Eigen::VectorXd x = Eigen::VectorXd::Constant(25, 3.0);
  auto comm = Communicator::world();
  LbfgsSummary s = lbfgsb(driver1,
                          x,
                          driver1_bounds(all),
                          scipy_defaults(5),
                          comm.get(),
                          Layout::kReplicated);
  EXPECT_EQ(s.termination, Termination::kFunctionChange) << s.message;
  EXPECT_LE(s.iterations, kIterationAllowance * kDriver1Iterations);
  EXPECT_NEAR(s.final_f, kDriver1F, kValueTolerance * kDriver1F);
  expect_scipy_point(x, 0, kDriver1X);
  if (world_rank() == 0) std::printf("driver1: %s\n", s.message.c_str());
}

TEST(LbfgsbMpi, Driver1ShardedReachesScipysPoint) {
  const Slice slice(25);
  Eigen::VectorXd x = Eigen::VectorXd::Constant(slice.size(), 3.0);
  auto comm = Communicator::world();
  LbfgsSummary s = lbfgsb(sharded(driver1, 25),
                          x,
                          driver1_bounds(slice),
                          scipy_defaults(5),
                          comm.get(),
                          Layout::kSharded);
  EXPECT_EQ(s.termination, Termination::kFunctionChange) << s.message;
  EXPECT_LE(s.iterations, kIterationAllowance * kDriver1Iterations);
  EXPECT_NEAR(s.final_f, kDriver1F, kValueTolerance * kDriver1F);
  expect_scipy_point(x, slice.begin, kDriver1X);
}

// SciPy's result for driver1 without bounds (m = 5, SciPy defaults): 21
// iterations, REL_REDUCTION_OF_F. Unbounded L-BFGS-B skips the Cauchy
// point once it has curvature pairs (its subspace step is then −g's).
constexpr int kOpenDriver1Iterations = 21;
constexpr double kOpenDriver1F = 7.299499265388983e-09;
const std::vector<double> kOpenDriver1X = {
    0.999998761714963,  0.9999984345902513, 0.9999980877746615,
    0.999999194209839,  1.0000022950094423, 1.0000053492364016,
    1.0000108660701184, 1.0000157109565415, 1.0000223233647174,
    1.0000364557088015, 1.00007006384186,   1.0001466679729123,
    1.0003037497508875, 1.0006130308145698, 1.0012234085223366,
    1.0024439434339198, 1.0048945466171602, 1.009818482294801,
    1.0197438024740375, 1.0398897848625326, 1.0813724673377023,
    1.1693740440592164, 1.3674381496812218, 1.8698716875058308,
    3.4964483812973};

// No bounds at all (empty sides): a legitimate L-BFGS-B problem.
TEST(LbfgsbMpi, WithoutBoundsReachesScipysPoint) {
  for (Layout layout : {Layout::kReplicated, Layout::kSharded}) {
    const bool sharded_layout = layout == Layout::kSharded;
    Slice slice(25);
    if (!sharded_layout) slice.begin = 0, slice.end = 25;
    Eigen::VectorXd x = Eigen::VectorXd::Constant(slice.size(), 3.0);
    auto comm = Communicator::world();
    LbfgsSummary s = lbfgsb(sharded_layout ? sharded(driver1, 25) : driver1,
                            x,
                            Bounds{},
                            scipy_defaults(5),
                            comm.get(),
                            layout);
    EXPECT_EQ(s.termination, Termination::kFunctionChange) << s.message;
    EXPECT_LE(s.iterations, kIterationAllowance * kOpenDriver1Iterations);
    EXPECT_NEAR(s.final_f, kOpenDriver1F, 1e-6 * kOpenDriver1F);
    EXPECT_EQ(s.active_bounds, 0);
    expect_scipy_point(x, slice.begin, kOpenDriver1X);
  }
}

LbfgsOptions tight() {
  LbfgsOptions o;
  o.tolerance_gradient = 1e-12;
  o.tolerance_function = 1e-15;
  return o;
}

Bounds box(int64_t n, double lo, double hi) {
  return {Eigen::VectorXd::Constant(n, lo), Eigen::VectorXd::Constant(n, hi)};
}

// Active entries of SciPy's point sit exactly on a bound; so must ours.
void expect_active_bounds_exact(const Eigen::VectorXd& x,
                                int64_t offset,
                                const LbfgsSummary& s) {
  int64_t active = 0;
  for (double v : kCoupledX) active += v == -0.3 || v == 0.4;
  EXPECT_EQ(s.active_bounds, active);
  for (int64_t k = 0; k < x.size(); ++k) {
    const double want = kCoupledX[offset + k];
    if (want == -0.3 || want == 0.4) {
      EXPECT_EQ(x[k], want) << offset + k;
    }
  }
}

TEST(LbfgsbMpi, ActiveBoundsStayExactlyOnTheBoundReplicated) {
  Eigen::VectorXd x = Eigen::VectorXd::Constant(24, 0.1);
  auto comm = Communicator::world();
  LbfgsSummary s = lbfgsb(
      coupled, x, box(24, -0.3, 0.4), tight(), comm.get(), Layout::kReplicated);
  EXPECT_LE(s.iterations, kIterationAllowance * kCoupledIterations)
      << s.message;
  EXPECT_NEAR(s.final_f, kCoupledF, kValueTolerance * kCoupledF);
  expect_scipy_point(x, 0, kCoupledX);
  expect_active_bounds_exact(x, 0, s);
}

TEST(LbfgsbMpi, ActiveBoundsStayExactlyOnTheBoundSharded) {
  const Slice slice(24);
  Eigen::VectorXd x = Eigen::VectorXd::Constant(slice.size(), 0.1);
  auto comm = Communicator::world();
  LbfgsSummary s = lbfgsb(sharded(coupled, 24),
                          x,
                          box(slice.size(), -0.3, 0.4),
                          tight(),
                          comm.get(),
                          Layout::kSharded);
  EXPECT_LE(s.iterations, kIterationAllowance * kCoupledIterations)
      << s.message;
  EXPECT_NEAR(s.final_f, kCoupledF, kValueTolerance * kCoupledF);
  expect_scipy_point(x, slice.begin, kCoupledX);
  expect_active_bounds_exact(x, slice.begin, s);
}

TEST(LbfgsbMpi, StartOutsideTheBoxIsProjected) {
  // The objective never sees an infeasible point.
  const Slice slice(24);
  Eigen::VectorXd x = Eigen::VectorXd::Constant(slice.size(), 5.0);
  double worst = -std::numeric_limits<double>::infinity();
  Objective inner = sharded(coupled, 24);
  auto watched = [&](const Eigen::VectorXd& at, Eigen::VectorXd& g) {
    if (at.size()) worst = std::max(worst, at.maxCoeff());
    return inner(at, g);
  };
  auto comm = Communicator::world();
  LbfgsSummary s = lbfgsb(watched,
                          x,
                          box(slice.size(), -0.3, 0.4),
                          tight(),
                          comm.get(),
                          Layout::kSharded);
  EXPECT_LE(worst, 0.4);
  EXPECT_NEAR(s.final_f, kCoupledF, kValueTolerance * kCoupledF);
}

std::string bounded_prefix(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() /
             ("adgraph_lbfgsb_np" + std::to_string(world_size()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

TEST(LbfgsbMpi, ResumedBoundedRunEndsBitIdentical) {
  const Slice slice(25);
  auto comm = Communicator::world();
  const Bounds bounds = driver1_bounds(slice);
  LbfgsOptions options = scipy_defaults(5);
  Eigen::VectorXd whole = Eigen::VectorXd::Constant(slice.size(), 3.0);
  LbfgsSummary uninterrupted = lbfgsb(sharded(driver1, 25),
                                      whole,
                                      bounds,
                                      options,
                                      comm.get(),
                                      Layout::kSharded);
  ASSERT_GT(uninterrupted.iterations, 12);

  const std::string prefix = bounded_prefix("driver1");
  LbfgsOptions first = options;
  first.max_iterations = 11;
  first.checkpoint_every = 5;
  first.checkpoint_path = prefix;
  Eigen::VectorXd part = Eigen::VectorXd::Constant(slice.size(), 3.0);
  lbfgsb(sharded(driver1, 25),
         part,
         bounds,
         first,
         comm.get(),
         Layout::kSharded);  // checkpoints after 5 and 10

  LbfgsOptions second = options;
  second.resume = true;
  second.checkpoint_path = prefix;
  Eigen::VectorXd resumed = Eigen::VectorXd::Zero(slice.size());  // ignored
  LbfgsSummary after = lbfgsb(sharded(driver1, 25),
                              resumed,
                              bounds,
                              second,
                              comm.get(),
                              Layout::kSharded);
  EXPECT_EQ(after.resumed_at, 10);
  EXPECT_EQ(after.iterations, uninterrupted.iterations);
  EXPECT_EQ(after.evaluations, uninterrupted.evaluations);
  EXPECT_EQ(after.final_f, uninterrupted.final_f);
  EXPECT_EQ(after.f_history, uninterrupted.f_history);
  EXPECT_EQ(after.gradient_norm_history, uninterrupted.gradient_norm_history);
  EXPECT_EQ(resumed, whole);

  // The same files with other bounds, or read by plain L-BFGS: refused on
  // every rank with the reason.
  Bounds other = bounds;
  other.upper.setConstant(50.0);
  try {
    lbfgsb(sharded(driver1, 25),
           resumed,
           other,
           second,
           comm.get(),
           Layout::kSharded);
    ADD_FAILURE() << "resumed with other bounds";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("other bounds"), std::string::npos)
        << e.what();
  }
  try {
    lbfgs(sharded(driver1, 25), resumed, second, comm.get(), Layout::kSharded);
    ADD_FAILURE() << "L-BFGS resumed an L-BFGS-B checkpoint";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("written by an L-BFGS-B run"),
              std::string::npos)
        << e.what();
  }
}

TEST(LbfgsbMpi, BadBoundsOnOneRankFailEveryRank) {
  // Only the last rank has lower > upper; every rank throws its message.
  const Slice slice(24);
  auto comm = Communicator::world();
  Bounds b = box(slice.size(), -0.3, 0.4);
  const int last = world_size() - 1;
  if (world_rank() == last) b.lower[0] = 1.0;
  Eigen::VectorXd x = Eigen::VectorXd::Zero(slice.size());
  try {
    lbfgsb(sharded(coupled, 24), x, b, tight(), comm.get(), Layout::kSharded);
    ADD_FAILURE() << "infeasible bounds accepted";
  } catch (const OptionsError& e) {
    const std::string want = "bounds: entry 0 on rank " + std::to_string(last) +
                             " has lower 1 > upper 0.4";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
  Bounds short_bounds{Eigen::VectorXd::Zero(slice.size() + 1), {}};
  try {
    lbfgsb(sharded(coupled, 24),
           x,
           short_bounds,
           tight(),
           comm.get(),
           Layout::kSharded);
    ADD_FAILURE() << "bounds of the wrong length accepted";
  } catch (const OptionsError& e) {
    EXPECT_NE(std::string(e.what()).find("bounds.lower has"), std::string::npos)
        << e.what();
  }
}

// minimize() on a graph within bounds: Σ (a − c)² + Σ (b − d)² with
// c = [3, −1, 0.5] and a ∈ [0, 2], d = [0.25, 4] and b ≤ 1 (b's lower side
// open). By hand: a = [2, 0, 0.5], b = [0.25, 1], f = 1 + 1 + 9 = 11, three
// entries on a bound, where L-BFGS-B keeps them exactly. Replicated: every
// rank builds the same f and follows rank 0's.
TEST(LbfgsbMpi, MinimizeOnAGraphWithinBounds) {
  Graph g;
  Value a = g.placeholder("a", {3});
  Value b = g.placeholder("b", {2});
  Value loss = sum(square(a - g.constant(Tensor({3.0, -1.0, 0.5})))) +
               sum(square(b - g.constant(Tensor({0.25, 4.0}))));
  std::vector<Tensor> values = {Tensor({1.0, 1.0, 1.0}), Tensor({0.0, 0.0})};
  const double inf = std::numeric_limits<double>::infinity();
  VariableBounds bounds;
  bounds.lower = {Tensor(Shape{3}, 0.0), Tensor(Shape{2}, -inf)};
  bounds.upper = {Tensor(Shape{3}, 2.0), Tensor(Shape{2}, 1.0)};
  LbfgsOptions options;
  options.tolerance_gradient = 1e-10;
  const LbfgsSummary s = minimize(loss, {a, b}, values, bounds, {}, options);
  EXPECT_EQ(values[0][0], 2.0) << s.message;
  EXPECT_EQ(values[0][1], 0.0) << s.message;
  EXPECT_NEAR(values[0][2], 0.5, 1e-9) << s.message;
  EXPECT_NEAR(values[1][0], 0.25, 1e-9) << s.message;
  EXPECT_EQ(values[1][1], 1.0) << s.message;
  EXPECT_NEAR(s.final_f, 11.0, 1e-12) << s.message;
  EXPECT_EQ(s.active_bounds, 3) << s.message;

  // A bound tensor of the wrong shape names the variable and "bounds".
  VariableBounds wrong;
  wrong.upper = {Tensor(Shape{2}, 2.0), Tensor(Shape{2}, 1.0)};
  try {
    minimize(loss, {a, b}, values, wrong, {}, options);
    ADD_FAILURE() << "a bound of the wrong shape was accepted";
  } catch (const ShapeError& e) {
    EXPECT_STREQ(e.what(),
                 "node \"a\" (placeholder): bounds: upper bound has shape "
                 "[2], the variable [3]");
  }
  VariableBounds short_side;
  short_side.lower = {Tensor(Shape{3}, 0.0)};
  try {
    minimize(loss, {a, b}, values, short_side, {}, options);
    ADD_FAILURE() << "one lower bound for two variables was accepted";
  } catch (const GraphError& e) {
    EXPECT_STREQ(e.what(),
                 "bounds: one lower bound tensor per variable is needed, got "
                 "1 for 2");
  }
}

// Σ aᵢ(xᵢ − tᵢ)² + (Σ x)²/2 with aᵢ = 1 + 0.37·(i mod 3) and tᵢ = −0.3,
// or 0.3 + 0.05·(i mod 7) for every fourth i: entries with the same
// (aᵢ, tᵢ) share their gradient, so their breakpoints tie.
double tied(const Eigen::VectorXd& x, Eigen::VectorXd& g) {
  const double s = x.sum();
  double f = 0.5 * s * s;
  g.resize(x.size());
  for (int64_t k = 0; k < x.size(); ++k) {
    const double a = 1.0 + 0.37 * static_cast<double>(k % 3),
                 t = k % 4 ? -0.3 : 0.3 + 0.05 * static_cast<double>(k % 7);
    f += a * (x[k] - t) * (x[k] - t);
    g[k] = 2 * a * (x[k] - t) + s;
  }
  return f;
}

// Rank r of P holds entries r, r + P, r + 2P, … of n: a split no
// contiguous one resembles.
std::vector<int64_t> interleaved(int64_t n, int rank, int size) {
  std::vector<int64_t> mine;
  for (int64_t i = rank; i < n; i += size) mine.push_back(i);
  return mine;
}

// The whole vector from every rank's entries (zero-padded, so the
// allreduce is exact), on every rank of `comm`.
Eigen::VectorXd assemble(const Eigen::VectorXd& mine,
                         const std::vector<int64_t>& where,
                         int64_t n,
                         Communicator& comm) {
  Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
  for (std::size_t k = 0; k < where.size(); ++k) x[where[k]] = mine[k];
  comm.allreduce(x.data(), x.data(), n, ReduceOp::kSum);
  return x;
}

TEST(LbfgsbMpi, AnySplitGivesTheSameBits) {
  // Every rank count up to the world's, each on a sub-communicator of the
  // first ranks, against one rank: every sum is exact and ties go by
  // Bounds::global_index, so the whole run is the same bits. (Ties that
  // change the result: tests/solvers/heat_layout_test.cc's bounds case.)
  constexpr int64_t n = 24;
  auto world = Communicator::world();
  struct Run {
    LbfgsSummary summary;
    Eigen::VectorXd x;  // whole, on the members
  };
  auto run = [&](int ranks) {
    const bool member = world_rank() < ranks;
    auto comm = world->split(member ? 0 : 1, world_rank());
    Run out;
    if (!member) return out;
    const std::vector<int64_t> mine =
        interleaved(n, comm->rank(), comm->size());
    Bounds b = box(static_cast<int64_t>(mine.size()), -0.3, 0.4);
    b.global_index = mine;
    Objective f = [&](const Eigen::VectorXd& x, Eigen::VectorXd& g) {
      Eigen::VectorXd full_g;
      const double value = tied(assemble(x, mine, n, *comm), full_g);
      g.resize(x.size());
      for (std::size_t k = 0; k < mine.size(); ++k) g[k] = full_g[mine[k]];
      return comm->rank() == 0 ? value : 0.0;
    };
    Eigen::VectorXd x = Eigen::VectorXd::Constant(mine.size(), 0.1);
    out.summary = lbfgsb(f, x, b, tight(), comm.get(), Layout::kSharded);
    out.x = assemble(x, mine, n, *comm);
    return out;
  };
  const Run one = run(1);
  if (world_rank() == 0) {
    // The reference is a KKT point: the gradient points out of the box
    // where an entry sits on a bound and vanishes elsewhere.
    Eigen::VectorXd g;
    tied(one.x, g);
    int64_t held = 0;
    for (int64_t k = 0; k < n; ++k) {
      if (one.x[k] == -0.3) {
        EXPECT_GT(g[k], 0) << "entry " << k;
      } else if (one.x[k] == 0.4) {
        EXPECT_LT(g[k], 0) << "entry " << k;
      } else {
        EXPECT_LT(std::fabs(g[k]), 1e-6) << "entry " << k;
      }
      held += one.x[k] == -0.3 || one.x[k] == 0.4;
    }
    EXPECT_GT(held, 0);
    EXPECT_EQ(one.summary.active_bounds, held);
  }
  for (int ranks = 2; ranks <= world_size(); ++ranks) {
    const Run got = run(ranks);
    if (world_rank() != 0) continue;
    EXPECT_EQ(got.summary.iterations, one.summary.iterations) << ranks;
    EXPECT_EQ(got.summary.evaluations, one.summary.evaluations) << ranks;
    EXPECT_EQ(0, std::memcmp(got.x.data(), one.x.data(), n * sizeof(double)))
        << ranks << " ranks";
    ASSERT_EQ(got.summary.f_history.size(), one.summary.f_history.size());
    EXPECT_EQ(0,
              std::memcmp(got.summary.f_history.data(),
                          one.summary.f_history.data(),
                          one.summary.f_history.size() * sizeof(double)))
        << ranks << " ranks: f";
    EXPECT_EQ(
        0,
        std::memcmp(got.summary.gradient_norm_history.data(),
                    one.summary.gradient_norm_history.data(),
                    one.summary.gradient_norm_history.size() * sizeof(double)))
        << ranks << " ranks: projected gradient norms";
  }
}

TEST(LbfgsbMpi, AGlobalIndexOfTheWrongLengthFailsEveryRank) {
  auto comm = Communicator::world();
  const Slice slice(24);
  Bounds b = box(slice.size(), -0.3, 0.4);
  b.global_index.assign(world_rank() == 0 ? slice.size() + 1 : slice.size(), 0);
  Eigen::VectorXd x = Eigen::VectorXd::Zero(slice.size());
  try {
    lbfgsb(sharded(coupled, 24), x, b, tight(), comm.get(), Layout::kSharded);
    ADD_FAILURE() << "a global index of the wrong length accepted";
  } catch (const OptionsError& e) {
    const std::string want = "bounds.global_index has " +
                             std::to_string(Slice(24).size() + 1) +
                             " entries on rank 0, x has";
    if (world_rank() == 0) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace adgraph::optim
