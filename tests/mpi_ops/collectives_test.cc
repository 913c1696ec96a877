#include "mpi_ops/collectives.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/mpi_ops/mpi_test_util.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;

TEST(MpiSum, ReducesOntoRootAndZerosElsewhere) {
  const int rank = world_rank(), size = world_size();
  for (int root : {0, size - 1}) {
    Graph g;
    Value x = g.placeholder("x", {2});
    Session s(g);
    Tensor out =
        s.run(mpi_sum(x, root), {{x, Tensor({rank + 1.0, 2.0 * (rank + 1)})}});
    const double total = size * (size + 1) / 2.0;
    EXPECT_EQ(out[0], rank == root ? total : 0.0);
    EXPECT_EQ(out[1], rank == root ? 2 * total : 0.0);
  }
}

TEST(MpiSum, AdjointBroadcastsTheRootCotangent) {
  // L_q = (q + 1) · sum(mpi_sum(x)); only the root's output depends on x, so
  // ∂(Σ_q L_q)/∂x_r = root + 1 on every rank.
  const int rank = world_rank(), size = world_size();
  const int root = size - 1;
  Graph g;
  Value x = g.placeholder("x", {3});
  Value loss = sum(mpi_sum(x, root)) * (rank + 1.0);
  Session s(g);
  Tensor grad = s.run(gradient(loss, x), {{x, Tensor({1.0, 2.0, 3.0})}});
  for (int i = 0; i < 3; ++i) EXPECT_EQ(grad[i], root + 1.0);
  expect_gradients_ok(
      rank_weighted_loss(mpi_sum(x, root)), {x}, {{x, random_tensor({3}, 5)}});
  expect_adjoint_identity([&](Value v) { return mpi_sum(v, root); }, {3});
}

TEST(MpiAllreduce, SumAdjointIsAnAllreduceOfCotangents) {
  // y = Σ_r x_r; L_q = (q + 1) · sum(y) → ∂(Σ_q L_q)/∂x_r = P(P + 1)/2.
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = mpi_allreduce(x);
  Value grad = gradient(sum(y) * (rank + 1.0), x);
  Session s(g);
  auto out = s.run({y, grad}, {{x, Tensor({1.0 * rank, 1.0})}});
  EXPECT_EQ(out[0][0], size * (size - 1) / 2.0);
  EXPECT_EQ(out[0][1], size);
  EXPECT_EQ(out[1][0], size * (size + 1) / 2.0);
  expect_gradients_ok(rank_weighted_loss(y), {x}, {{x, random_tensor({2}, 6)}});
  expect_adjoint_identity([](Value v) { return mpi_allreduce(v); }, {2, 2});
}

TEST(MpiAllreduce, RunIntoReducesIntoTheCallersBufferWithoutAllocating) {
  // 1 MiB: above glibc's mmap threshold, so a fresh output per run would be
  // a fresh mapping.
  constexpr int64_t kSize = 131072;
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {kSize});
  Value y = mpi_allreduce(x);
  Value twice = mpi_allreduce(x * 2.0);  // in place: x * 2.0 dies here
  Tensor xv(Shape{kSize});
  for (int64_t i = 0; i < kSize; ++i) xv[i] = rank + 0.5 * i;
  Session s(g);
  Tensor out(Shape{kSize}), out2(Shape{kSize});
  const double* buffer = out.data();
  for (int run = 0; run < 3; ++run) {
    s.run_into({y, twice}, {{x, xv}}, {&out, &out2});
    EXPECT_EQ(out.data(), buffer);
    if (run > 0) {
      EXPECT_EQ(s.stats().buffers_allocated, 0);
    }
    // Σ_r (r + 0.5 i) = P(P−1)/2 + 0.5 i P, exact in doubles here.
    for (int64_t i = 0; i < kSize; i += 4097) {
      const double expected = size * (size - 1) / 2.0 + 0.5 * i * size;
      EXPECT_EQ(out[i], expected) << i;
      EXPECT_EQ(out2[i], 2 * expected) << i;
    }
  }
}

TEST(MpiSumAndBcast, InPlaceGiveTheSameValues) {
  // x * 1.0 dies in the collective, which then works in the same buffer.
  const int rank = world_rank(), size = world_size();
  const int root = size - 1;
  Graph g;
  Value x = g.placeholder("x", {3});
  Value summed = mpi_sum(x * 1.0, root);
  Value sent = mpi_bcast(x * 1.0, root);
  Session s(g);
  auto out = s.run({summed, sent}, {{x, Tensor({rank + 1.0, 2.0, -1.0})}});
  const double total = size * (size + 1) / 2.0;
  EXPECT_EQ(out[0][0], rank == root ? total : 0.0);
  EXPECT_EQ(out[0][1], rank == root ? 2.0 * size : 0.0);
  EXPECT_EQ(out[0][2], rank == root ? -1.0 * size : 0.0);
  EXPECT_EQ(out[1][0], root + 1.0);
  EXPECT_EQ(out[1][1], 2.0);
}

TEST(MpiAllreduce, MaxAndMinSendTheCotangentToTheLowestExtremeRank) {
  const int rank = world_rank(), size = world_size();
  // Entries: r, −r, 5 (a tie on every rank), r mod 2.
  Tensor xv({1.0 * rank, -1.0 * rank, 5.0, 1.0 * (rank % 2)});
  Graph g;
  Value x = g.placeholder("x", {4});
  Value w = g.constant(Tensor({1.0, 2.0, 3.0, 4.0}));
  Value ymax = mpi_allreduce(x, "max"), ymin = mpi_allreduce(x, "min");
  Value gmax = gradient(dot(ymax, w), x), gmin = gradient(dot(ymin, w), x);
  Session s(g);
  auto out = s.run({ymax, ymin, gmax, gmin}, {{x, xv}});
  EXPECT_EQ(out[0].to_vector(),
            (std::vector<double>{size - 1.0, 0.0, 5.0, size > 1 ? 1.0 : 0.0}));
  EXPECT_EQ(out[1].to_vector(),
            (std::vector<double>{0.0, 1.0 - size, 5.0, 0.0}));
  // Every rank's loss is dot(y, w), so s = P·w reaches the owner.
  const int odd_owner = size > 1 ? 1 : 0;
  std::vector<double> want_max = {rank == size - 1 ? size * 1.0 : 0.0,
                                  rank == 0 ? size * 2.0 : 0.0,
                                  rank == 0 ? size * 3.0 : 0.0,
                                  rank == odd_owner ? size * 4.0 : 0.0};
  std::vector<double> want_min = {rank == 0 ? size * 1.0 : 0.0,
                                  rank == size - 1 ? size * 2.0 : 0.0,
                                  rank == 0 ? size * 3.0 : 0.0,
                                  rank == 0 ? size * 4.0 : 0.0};
  EXPECT_EQ(out[2].to_vector(), want_max);
  EXPECT_EQ(out[3].to_vector(), want_min);
  // Away from ties both are differentiable.
  FeedMap distinct{{x, random_tensor({4}, 7)}};
  expect_gradients_ok(
      rank_weighted_loss(mpi_allreduce(x, "max")), {x}, distinct);
  expect_gradients_ok(
      rank_weighted_loss(mpi_allreduce(x, "min")), {x}, distinct);
}

TEST(MpiAllreduce, ProdIsZeroSafe) {
  const int rank = world_rank(), size = world_size();
  // Entries: r + 1; 0 on rank 1 only (else 2); 0 on ranks 0 and 1 (else 3).
  Tensor xv({rank + 1.0, rank == 1 ? 0.0 : 2.0, rank < 2 ? 0.0 : 3.0});
  Graph g;
  Value x = g.placeholder("x", {3});
  Value y = mpi_allreduce(x, "prod");
  Value grad = gradient(sum(y), x);
  Session s(g);
  auto out = s.run({y, grad}, {{x, xv}});
  double factorial = 1;
  for (int q = 1; q <= size; ++q) factorial *= q;
  EXPECT_EQ(out[0][0], factorial);
  EXPECT_EQ(out[0][1], size > 1 ? 0.0 : 2.0);
  EXPECT_EQ(out[0][2], 0.0);
  // x̄_r = P · Π_{q≠r} x_q (every rank's loss is sum(y)).
  EXPECT_DOUBLE_EQ(out[1][0], size * factorial / (rank + 1));
  const double others_1 =
      size == 1 ? 1.0 : (rank == 1 ? std::pow(2.0, size - 1) : 0.0);
  EXPECT_EQ(out[1][1], size * others_1);
  const double others_2 =
      size == 1 ? 1.0 : 0.0;  // two zeros: always 0 for P > 1
  EXPECT_EQ(out[1][2], size * others_2);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isfinite(out[1][i]));
  Tensor positive = random_tensor({3}, 8);
  positive.array() = positive.array().abs() + 0.5;
  expect_gradients_ok(rank_weighted_loss(y), {x}, {{x, positive}});
}

// The prod adjoint gathers every rank's x (n · P doubles) into the
// communicator's scratch, kept for the next run: repeated gradient runs
// keep exactly that buffer (and no more), and release_buffers frees it.
// x_r = 1 + r/8 + i/n: x̄_r = P · Π_{q≠r} x_q, multiplied here by hand.
TEST(MpiAllreduce, TheProdAdjointReusesOneGatherBuffer) {
  constexpr int64_t n = 65536;
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {n});
  Value grad = gradient(sum(mpi_allreduce(x, "prod")), x);
  Session s(g);
  auto x_of = [](int r, int64_t i) {
    return 1.0 + r / 8.0 + static_cast<double>(i) / n;
  };
  Tensor xv(Shape{n});
  for (int64_t i = 0; i < n; ++i) xv[i] = x_of(rank, i);
  g.comm()->release_buffers();  // the world's, with earlier tests' spares
  for (int run = 0; run < 3; ++run) {
    const Tensor got = s.run(grad, {{x, xv}});
    EXPECT_EQ(g.comm()->kept_bytes(), sizeof(double) * n * size)
        << "run " << run;
    for (int64_t i = 0; i < n; i += 4099) {
      double others = 1;
      for (int q = 0; q < size; ++q)
        if (q != rank) others *= x_of(q, i);
      EXPECT_EQ(got[i], size * others) << "run " << run << ", i " << i;
    }
  }
  s.release_buffers();
  EXPECT_EQ(g.comm()->kept_bytes(), 0u);
}

TEST(MpiAllreduce, TangentsFollowTheOwnerAndTheProductRule) {
  // max/min: ẏ is the tangent of the lowest rank holding the extreme;
  // prod: ẏ = Σ_r ṫ_r Π_{q≠r} x_q = P!·Σ_r t_r/(r + 1) for x_r = r + 1.
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {3});
  Value t = g.placeholder("t", {3});
  Value p = g.placeholder("p", {1});
  Value tp = g.placeholder("tp", {1});
  auto tangents = jvp({mpi_allreduce(x, "max"),
                       mpi_allreduce(x, "min"),
                       mpi_allreduce(p, "prod")},
                      {x, p},
                      {t, tp});
  Session s(g);
  auto out = s.run(tangents,
                   {{x, Tensor({1.0 * rank, 5.0, -1.0 * rank})},
                    {t, Tensor(Shape{3}, 10.0 + rank)},
                    {p, Tensor({rank + 1.0})},
                    {tp, Tensor({2.0 * rank - 1.0})}});
  EXPECT_EQ(out[0].to_vector(),
            (std::vector<double>{10.0 + size - 1, 10.0, 10.0}));
  EXPECT_EQ(out[1].to_vector(),
            (std::vector<double>{10.0, 10.0, 10.0 + size - 1}));
  double factorial = 1, weighted = 0;
  for (int q = 1; q <= size; ++q) factorial *= q;
  for (int q = 0; q < size; ++q) weighted += (2.0 * q - 1.0) / (q + 1.0);
  EXPECT_NEAR(out[2][0], factorial * weighted, 1e-12 * factorial);
}

TEST(MpiAllreduce, UnknownReductionIsABuildError) {
  Graph g;
  EXPECT_THROW(mpi_allreduce(g.placeholder("x", {1}), "avg"), ShapeError);
}

// Rank r's terms: element 0 is 1, 1e16, −1e16, 1 on ranks 0–3 (exact sums
// 1, 1e16 + 1 (a tie, rounded to even), 1, 2; summed in rank order 1e16,
// 0 and 1 from three ranks on); element 1 spreads 2^50 … 2^5 over the
// ranks; element 2 mixes signs and scales.
Tensor adversarial_terms(int r) {
  const double first[] = {1.0, 1e16, -1e16, 1.0};
  return Tensor({first[r % 4],
                 std::ldexp(1.0 + 0.37 * r, 50 - 15 * r),
                 (r % 2 ? -1.0 : 1.0) * (0.1 + r) * std::ldexp(1.0, 3 * r)});
}

// The correctly rounded sums of every rank's terms: __float128 holds each
// sum exactly (magnitudes within 2^100 of each other), and converting it
// to double rounds once, to nearest even.
std::vector<double> rounded_sums(int size) {
  std::vector<double> out;
  for (int64_t i = 0; i < 3; ++i) {
    __float128 total = 0;
    for (int r = 0; r < size; ++r) total += adversarial_terms(r)[i];
    out.push_back(static_cast<double>(total));
  }
  return out;
}

TEST(MpiAllreduce, ExactSumsAreCorrectlyRoundedOnEveryRank) {
  const int rank = world_rank(), size = world_size();
  for (const char* mode : {"yes", "auto"}) {
    Graph g;
    Value x = g.constant(adversarial_terms(rank));
    Session s(g);
    EXPECT_EQ(s.run(mpi_allreduce(x, "sum", mode)).to_vector(),
              rounded_sums(size))
        << mode;
  }
}

TEST(MpiSum, ExactSumsReachTheRootCorrectlyRounded) {
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.constant(adversarial_terms(rank));
  Session s(g);
  const Tensor out = s.run(mpi_sum(x, size - 1, "yes"));
  EXPECT_EQ(out.to_vector(),
            rank == size - 1 ? rounded_sums(size) : std::vector<double>(3));
}

TEST(MpiAllreduce, TheExactModeReachesTheAdjointAndBadModesAreRefused) {
  const int size = world_size();
  Graph g;
  Value x = g.placeholder("x", {3});
  Value y = mpi_allreduce(x, "sum", "yes");
  Value grad = gradient(sum(y * y), x);
  int exact_sums = 0;
  for (int id = 0; id < g.num_nodes(); ++id) {
    const Node& n = g.node(id);
    if (n.op->name == "mpi_allreduce" && n.attr_string("exact") == "yes")
      ++exact_sums;
  }
  EXPECT_EQ(exact_sums, 2);  // y and the adjoint's Σ_q ȳ_q
  Session s(g);
  const Tensor x0({1.0, -2.0, 0.5});
  const Tensor got = s.run(grad, {{x, x0}});
  for (int64_t i = 0; i < 3; ++i) EXPECT_EQ(got[i], 2.0 * size * size * x0[i]);
  for (auto build : {+[](Value v) { return mpi_allreduce(v, "sum", "maybe"); },
                     +[](Value v) { return mpi_sum(v, 0, "maybe"); }}) {
    try {
      build(x);
      ADD_FAILURE() << "no ShapeError";
    } catch (const ShapeError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("attribute \"exact\""), std::string::npos) << what;
      EXPECT_NE(what.find("\"maybe\" is not one of yes, no, auto"),
                std::string::npos)
          << what;
    }
  }
}

TEST(MpiBcast, AdjointReducesCotangentsOntoRoot) {
  const int rank = world_rank(), size = world_size();
  const int root = size - 1;
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = mpi_bcast(x, root);
  Value grad = gradient(sum(y) * (rank + 1.0), x);
  Session s(g);
  auto out = s.run({y, grad}, {{x, Tensor({1.0 * rank, 7.0})}});
  EXPECT_EQ(out[0][0], root);
  EXPECT_EQ(out[1][0], rank == root ? size * (size + 1) / 2.0 : 0.0);
  expect_gradients_ok(rank_weighted_loss(y), {x}, {{x, random_tensor({2}, 9)}});
  expect_adjoint_identity([&](Value v) { return mpi_bcast(v, root); }, {2});
  EXPECT_THROW(mpi_bcast(x, size), ShapeError);
}

TEST(MpiBcast, AdcmeSimpleSum) {
  // θ = 2, fθ = mpi_bcast(θ), l = fθ^rank, L = sum(mpi_sum(l)):
  // L = Σ_r 2^r = 2^P − 1 and ∂L/∂θ = Σ_r r·2^(r−1) on rank 0 (15 and 17 on
  // 4 ranks, ADCME's documented output); other ranks hold L = 0, ∂L/∂θ = 0.
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value theta = g.placeholder("theta", {1});
  Value l = pow(mpi_bcast(theta), mpi_rank(g));
  Value loss = sum(mpi_sum(l));
  Value grad = gradient(loss, theta);
  Session s(g);
  auto out = s.run({loss, grad}, {{theta, Tensor({2.0})}});
  double want_l = 0, want_g = 0;
  for (int r = 0; r < size; ++r)
    want_l += std::pow(2.0, r), want_g += r * std::pow(2.0, r - 1);
  EXPECT_EQ(out[0].item(), rank == 0 ? want_l : 0.0);
  EXPECT_EQ(out[1][0], rank == 0 ? want_g : 0.0);
  if (size == 4 && rank == 0) {
    EXPECT_EQ(out[0].item(), 15.0);
    EXPECT_EQ(out[1][0], 17.0);
  }
}

TEST(MpiGather, StacksOnRootAndScatterIsItsAdjoint) {
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = mpi_gather(x, 0);
  EXPECT_EQ(y.shape(), (Shape{size, 2}));
  Session s(g);
  Tensor out = s.run(y, {{x, Tensor({1.0 * rank, 10.0 * rank})}});
  for (int q = 0; q < size; ++q) {
    EXPECT_EQ(out[2 * q], rank == 0 ? q : 0.0);
    EXPECT_EQ(out[2 * q + 1], rank == 0 ? 10.0 * q : 0.0);
  }
  expect_gradients_ok(
      rank_weighted_loss(y), {x}, {{x, random_tensor({2}, 10)}});
  expect_adjoint_identity([](Value v) { return mpi_gather(v, 0); }, {2});
}

TEST(MpiScatter, SlicesOfRootAndGatherIsItsAdjoint) {
  const int rank = world_rank(), size = world_size();
  const int root = size - 1;
  Graph g;
  Value x = g.placeholder("x", {size, 2});
  Value y = mpi_scatter(x, root);
  Tensor xv(Shape{size, 2});
  for (int64_t i = 0; i < xv.size(); ++i) xv[i] = 100.0 * rank + i;
  Session s(g);
  Tensor out = s.run(y, {{x, xv}});
  EXPECT_EQ(out.to_vector(),
            (std::vector<double>{100.0 * root + 2 * rank,
                                 100.0 * root + 2 * rank + 1}));
  expect_gradients_ok(
      rank_weighted_loss(y), {x}, {{x, random_tensor({size, 2}, 11)}});
  expect_adjoint_identity([&](Value v) { return mpi_scatter(v, root); },
                          {size, 2});
  EXPECT_THROW(mpi_scatter(g.placeholder("bad", {size + 1}), 0), ShapeError);
}

TEST(MpiAllgather, StacksEverywhereAndReduceScatterIsItsAdjoint) {
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {1});
  Value y = mpi_allgather(x);
  Session s(g);
  Tensor out = s.run(y, {{x, Tensor({rank * 3.0})}});
  for (int q = 0; q < size; ++q) EXPECT_EQ(out[q], q * 3.0);
  expect_gradients_ok(
      rank_weighted_loss(y), {x}, {{x, random_tensor({1}, 12)}});
  expect_adjoint_identity([](Value v) { return mpi_allgather(v); }, {3});
}

TEST(MpiReduceScatter, SumsSlicesAndAllgatherIsItsAdjoint) {
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {size, 2});
  Value y = mpi_reduce_scatter(x);
  Tensor xv(Shape{size, 2});
  for (int q = 0; q < size; ++q) xv[2 * q] = q + rank, xv[2 * q + 1] = 1.0;
  Session s(g);
  Tensor out = s.run(y, {{x, xv}});
  // Σ_q (rank + q) over the senders q = P·rank + P(P − 1)/2.
  EXPECT_EQ(out[0], size * rank + size * (size - 1) / 2.0);
  EXPECT_EQ(out[1], size);
  expect_gradients_ok(
      rank_weighted_loss(y), {x}, {{x, random_tensor({size, 2}, 13)}});
  expect_adjoint_identity([](Value v) { return mpi_reduce_scatter(v); },
                          {size, 2});
}

TEST(MpiAlltoall, TransposesBlocksAndIsSelfAdjoint) {
  const int rank = world_rank(), size = world_size();
  Graph g;
  Value x = g.placeholder("x", {size, 1});
  Value y = mpi_alltoall(x);
  Tensor xv(Shape{size, 1});
  for (int q = 0; q < size; ++q)
    xv[q] = 10.0 * rank + q;  // block q goes to rank q
  Session s(g);
  Tensor out = s.run(y, {{x, xv}});
  for (int q = 0; q < size; ++q) EXPECT_EQ(out[q], 10.0 * q + rank);
  expect_gradients_ok(
      rank_weighted_loss(y), {x}, {{x, random_tensor({size, 1}, 14)}});
  expect_adjoint_identity([](Value v) { return mpi_alltoall(v); }, {size, 2});
}

TEST(MpiRank, RankAndSizeNodes) {
  Graph g;
  Session s(g);
  auto out = s.run({mpi_rank(g), mpi_size(g)});
  EXPECT_EQ(out[0].item(), world_rank());
  EXPECT_EQ(out[1].item(), world_size());
}

// Throws on every rank, whatever its input.
void register_always_failing() {
  if (OpRegistry::global().find("test_always_failing")) return;
  OpDef def;
  def.name = "test_always_failing";
  def.inputs = {"x"};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    throw RunError("fails on every rank", c.node().name, c.node().op_name());
  };
  def.gradient = [](const GradientContext& c) { return Values{c.grad()}; };
  register_op(def);
}

TEST(Session, AFailureOnEveryRankBeforeAnAllreduceReachesEveryCaller) {
  // Every rank fails before the run's allreduce: they agree that all failed
  // (CommContext::agree_on_failure), so none ends the job and each caller
  // gets its own error; the session then runs the allreduce as usual.
  register_always_failing();
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = mpi_allreduce(g.add_node("test_always_failing", {x}));
  Value z = mpi_allreduce(x);
  Session s(g);
  const Tensor xv({1.0, 2.0});
  EXPECT_THROW(s.run(y, {{x, xv}}), RunError);
  Tensor out = s.run(z, {{x, xv}});
  EXPECT_EQ(out[0], world_size());
  EXPECT_EQ(out[1], 2.0 * world_size());
  EXPECT_THROW(s.run(y, {{x, xv}}), RunError);
}

}  // namespace
}  // namespace adgraph
