// The stencil op against loops written by hand on the global field, the
// gradient checker, and itself on every process grid (bitwise).
#include "grid/stencil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "grid/stencil_impl.h"
#include "tests/grid/grid_test_util.h"

namespace adgraph::grid {
namespace {

using namespace adgraph::testing;

constexpr double kForwardTolerance = 1e-13;

// One case: an expression over fields u and v, and the same formula by hand
// from the values read at each point.
struct Case {
  std::string name;
  std::function<StencilExpr(const StencilExpr& u, const StencilExpr& v)> expr;
  // f(u at +(0,1), v at −(1,0), u at the point)
  std::function<double(double ue, double vn, double u0)> by_hand;
};

std::vector<Case> cases() {
  // u, v lie in [0.5, 1.5]: log, sqrt and pow are defined everywhere.
  auto E = [](const StencilExpr& u) { return u.shift({0, 1}); };
  auto N = [](const StencilExpr& v) { return v.shift({-1, 0}); };
  return {
      {"add",
       [&](auto u, auto v) { return E(u) + N(v); },
       [](double a, double b, double) { return a + b; }},
      {"sub",
       [&](auto u, auto v) { return E(u) - N(v); },
       [](double a, double b, double) { return a - b; }},
      {"mul",
       [&](auto u, auto v) { return E(u) * N(v) * u; },
       [](double a, double b, double c) { return a * b * c; }},
      {"div",
       [&](auto u, auto v) { return u / (N(v) + 1.0); },
       [](double, double b, double c) { return c / (b + 1.0); }},
      {"neg",
       [&](auto u, auto) { return -E(u); },
       [](double a, double, double) { return -a; }},
      {"pow",
       [&](auto u, auto v) { return pow(u, N(v) + 1.0); },
       [](double, double b, double c) { return std::pow(c, b + 1.0); }},
      {"exp",
       [&](auto u, auto) { return exp(E(u)); },
       [](double a, double, double) { return std::exp(a); }},
      {"log",
       [&](auto u, auto) { return log(u + E(u)); },
       [](double a, double, double c) { return std::log(c + a); }},
      {"sin",
       [&](auto u, auto v) { return sin(E(u) * N(v)); },
       [](double a, double b, double) { return std::sin(a * b); }},
      {"cos",
       [&](auto u, auto) { return cos(E(u)); },
       [](double a, double, double) { return std::cos(a); }},
      {"tanh",
       [&](auto u, auto v) { return tanh(E(u) - N(v)); },
       [](double a, double b, double) { return std::tanh(a - b); }},
      {"abs",
       [&](auto u, auto v) { return abs(u - N(v)) * u; },
       [](double, double b, double c) { return std::fabs(c - b) * c; }},
      {"sqrt",
       [&](auto u, auto) { return sqrt(u + E(u)); },
       [](double a, double, double c) { return std::sqrt(c + a); }},
      {"min",
       [&](auto u, auto v) { return min(u, N(v)) * E(u); },
       [](double a, double b, double c) { return (b < c ? b : c) * a; }},
      {"max",
       [&](auto u, auto v) { return max(E(u), N(v)) + u; },
       [](double a, double b, double c) { return (a < b ? b : a) + c; }},
      {"where",
       [&](auto u, auto v) { return where(u > N(v), u * E(u), N(v) - u); },
       [](double a, double b, double c) { return c > b ? c * a : b - c; }},
      {"compare",
       [&](auto u, auto v) {
         return (u < N(v)) * 2.0 + (u >= E(u)) * 3.0 + (u <= N(v)) * E(u);
       },
       [](double a, double b, double c) {
         return (c < b ? 1.0 : 0.0) * 2.0 + (c >= a ? 1.0 : 0.0) * 3.0 +
                (c <= b ? 1.0 : 0.0) * a;
       }},
  };
}

const Shape kShape2 = {7, 9};  // uneven on 2, 3 and 4 ranks

// The case's value at every point of the global grid, by hand.
Tensor by_hand(const Case& k,
               const Tensor& u,
               const Tensor& v,
               const std::vector<bool>& per) {
  Tensor y{Shape(u.shape())};
  for (int64_t i = 0; i < u.shape()[0]; ++i)
    for (int64_t j = 0; j < u.shape()[1]; ++j)
      y[i * u.shape()[1] + j] = k.by_hand(read_global(u, {i, j + 1}, per),
                                          read_global(v, {i - 1, j}, per),
                                          read_global(u, {i, j}, per));
  return y;
}

TEST(Stencil, EveryFunctionMatchesALoopByHandOnEveryProcessGrid) {
  auto world = Communicator::world();
  const Tensor u = global_field(kShape2, 1, 0.5, 1.5),
               v = global_field(kShape2, 2, 0.5, 1.5);
  for (const std::vector<bool>& per :
       {std::vector<bool>{false, false}, {true, false}, {false, true}}) {
    for (const std::vector<int>& procs :
         process_grids(world->size(), kShape2)) {
      Grid grid(kShape2, procs, per, world);
      for (const Case& k : cases()) {
        Graph g;
        Value uu = g.placeholder("u", grid.local_shape()),
              vv = g.placeholder("v", grid.local_shape());
        Value y = stencil(grid, k.expr(field(uu), field(vv)));
        Session s(g);
        const Tensor got =
            s.run(y,
                  {{uu, patch_of(u, kShape2, procs, world->rank())},
                   {vv, patch_of(v, kShape2, procs, world->rank())}});
        const Tensor want =
            patch_of(by_hand(k, u, v, per), kShape2, procs, world->rank());
        ASSERT_EQ(got.shape(), want.shape());
        for (int64_t i = 0; i < got.size(); ++i)
          EXPECT_NEAR(got[i],
                      want[i],
                      kForwardTolerance * std::max(1.0, std::fabs(want[i])))
              << k.name << " at " << i << " on procs " << procs[0] << "x"
              << procs[1] << " periodic " << per[0] << per[1];
      }
    }
  }
}

// Σ w ⊙ y on every rank, w different per rank: the checker's J = Σ ranks.
Value weighted(Value y, unsigned salt) {
  return sum(y * y.graph().constant(random_tensor(y.shape(), salt)));
}

TEST(Stencil, EveryFunctionPassesTheGradientChecker) {
  auto world = Communicator::world();
  const Shape shape = {6, 5};
  const std::vector<int> procs = process_grids(world->size(), shape).back();
  Grid grid(shape, procs, {false, true}, world);
  for (const Case& k : cases()) {
    if (k.name == "compare") continue;  // piecewise constant in u, v
    Graph g;
    Value uu = g.placeholder("u", grid.local_shape()),
          vv = g.placeholder("v", grid.local_shape());
    Value loss = weighted(stencil(grid, k.expr(field(uu), field(vv))), 7);
    SCOPED_TRACE(k.name);
    expect_gradients_ok(
        loss,
        {uu, vv},
        {{uu,
          patch_of(
              global_field(shape, 3, 0.5, 1.5), shape, procs, world->rank())},
         {vv,
          patch_of(
              global_field(shape, 4, 0.5, 1.5), shape, procs, world->rank())}});
  }
}

// A 3-D 7-point diffusion step with a diagonal read (edge and corner
// ghosts), a coefficient field and a scalar, periodic on axis 1.
StencilExpr diffusion3d(const StencilExpr& u,
                        const StencilExpr& kappa,
                        const StencilExpr& dt) {
  StencilExpr lap = -6.0 * u;
  for (int a = 0; a < 3; ++a) {
    Offset lo(3, 0), hi(3, 0);
    lo[a] = -1;
    hi[a] = 1;
    lap = lap + u.shift(lo) + u.shift(hi);
  }
  return u + dt * kappa * lap + 0.25 * u.shift({1, -1, 1}) * u;
}

double diffusion3d_by_hand(const Tensor& u,
                           const Tensor& kappa,
                           double dt,
                           Shape i,
                           const std::vector<bool>& per) {
  auto at = [&](int64_t a, int64_t b, int64_t c) {
    return read_global(u, {i[0] + a, i[1] + b, i[2] + c}, per);
  };
  double lap = -6.0 * at(0, 0, 0);
  lap = lap + at(-1, 0, 0) + at(1, 0, 0);
  lap = lap + at(0, -1, 0) + at(0, 1, 0);
  lap = lap + at(0, 0, -1) + at(0, 0, 1);
  return at(0, 0, 0) + dt * read_global(kappa, i, per) * lap +
         0.25 * at(1, -1, 1) * at(0, 0, 0);
}

TEST(Stencil, ThreeDimensionsWithCornersMatchALoopByHand) {
  auto world = Communicator::world();
  const Shape shape = {5, 4, 3};
  const std::vector<bool> per = {false, true, false};
  const Tensor u = global_field(shape, 5),
               kappa = global_field(shape, 6, 0.5, 1.0);
  Tensor want_global{Shape(shape)};
  for (int64_t a = 0; a < 5; ++a)
    for (int64_t b = 0; b < 4; ++b)
      for (int64_t c = 0; c < 3; ++c)
        want_global[(a * 4 + b) * 3 + c] =
            diffusion3d_by_hand(u, kappa, 0.1, {a, b, c}, per);
  for (const std::vector<int>& procs : process_grids(world->size(), shape)) {
    Grid grid(shape, procs, per, world);
    Graph g;
    Value uu = g.placeholder("u", grid.local_shape()),
          kk = g.placeholder("k", grid.local_shape());
    Value dt = g.placeholder("dt", {});
    Value y = stencil(grid, diffusion3d(field(uu), field(kk), field(dt)));
    Session s(g);
    const FeedMap feeds = {{uu, patch_of(u, shape, procs, world->rank())},
                           {kk, patch_of(kappa, shape, procs, world->rank())},
                           {dt, Tensor::scalar(0.1)}};
    const Tensor got = s.run(y, feeds);
    const Tensor want = patch_of(want_global, shape, procs, world->rank());
    for (int64_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], kForwardTolerance)
          << "procs " << procs[0] << procs[1] << procs[2];
    expect_gradients_ok(weighted(y, 8), {uu, kk, dt}, feeds);
  }
}

TEST(Stencil, BatchedFieldsTakeCoefficientsWithoutTheBatch) {
  auto world = Communicator::world();
  const Shape shape = {6, 7};
  const std::vector<int> procs = process_grids(world->size(), shape).front();
  Grid grid(shape, procs, {}, world);
  Shape batched = grid.local_shape();
  batched.insert(batched.begin(), 3);
  Graph g;
  Value u = g.placeholder("u", batched),
        c = g.placeholder("c", grid.local_shape());
  StencilExpr U = field(u), C = field(c);
  Value y =
      stencil(grid, C * C * (U.shift({0, 1}) + U.shift({1, 0}) - 2.0 * U) + U);
  EXPECT_EQ(y.shape(), batched);
  Shape global_batched = shape;
  global_batched.insert(global_batched.begin(), 3);
  const FeedMap feeds = {
      {u,
       patch_of(global_field(global_batched, 9), shape, procs, world->rank())},
      {c, patch_of(global_field(shape, 10), shape, procs, world->rank())}};
  expect_gradients_ok(weighted(y, 11), {u, c}, feeds);
}

// `steps` leapfrog steps of the 2-D wave equation, unrolled; returns the
// loss ½Σ(u_T − d)² and its gradient with respect to c² (gathered on
// rank 0 of the grid).
struct WaveResult {
  double loss;
  Tensor gradient;
};

WaveResult wave(const Grid& grid, int steps, bool reversed_creation) {
  const Shape shape = grid.shape();
  const int rank = grid.rank();
  Graph g;
  Value c2 = g.placeholder("c2", grid.local_shape());
  Value u0 = g.constant(
      patch_of(global_field(shape, 12), shape, grid.layout().procs, rank));
  Value d = g.constant(
      patch_of(global_field(shape, 13), shape, grid.layout().procs, rank));
  Value prev = g.constant(Tensor::zeros(grid.local_shape())), u = u0;
  for (int t = 0; t < steps; ++t) {
    StencilExpr U = field(u), C = field(c2);
    StencilExpr lap = reversed_creation
                          ? U.shift({0, 1}) + U.shift({0, -1}) +
                                U.shift({1, 0}) + U.shift({-1, 0})
                          : U.shift({-1, 0}) + U.shift({1, 0}) +
                                U.shift({0, -1}) + U.shift({0, 1});
    Value next = stencil(grid, 2.0 * U - field(prev) + C * (lap - 4.0 * U));
    prev = u;
    u = next;
  }
  Value r = u - d;
  Value loss;
  {
    CommScope scope(g, grid.comm());
    loss = 0.5 * mpi_total(r * r);
  }
  Value grad = gradient(loss, c2);
  Session s(g);
  const FeedMap feeds = {{c2,
                          patch_of(global_field(shape, 14, 0.05, 0.2),
                                   shape,
                                   grid.layout().procs,
                                   rank)}};
  auto out = s.run({loss, grad}, feeds);
  return {out[0][0], grid.gather(out[1], 0)};
}

TEST(Stencil, WaveLossAndGradientAreBitwiseTheSameOnEveryProcessGrid) {
  auto world = Communicator::world();
  const Shape shape = {9, 10};
  const Grid alone(shape, {1, 1}, {}, Communicator::self());
  const WaveResult one = wave(alone, 6, false);
  for (const std::vector<int>& procs : process_grids(world->size(), shape)) {
    const WaveResult many = wave(Grid(shape, procs, {}, world), 6, false);
    if (world->rank() == 0) {
      EXPECT_EQ(many.loss, one.loss) << procs[0] << "x" << procs[1];
      EXPECT_EQ(many.gradient.to_vector(), one.gradient.to_vector())
          << procs[0] << "x" << procs[1];
    }
  }
}

// The adjoint node starts ū from the cotangent summed so far (here 2u,
// from Σu²) and writes ū over that buffer (OpDef::in_place_of): the
// values by hand, ū[i, j] = 2u[i, j] + w[i, j − 1] (j ≥ 1), on every
// process grid. Each row's first and last points, computed after the
// vector loop wrote the whole row, take 2u from values saved before it.
TEST(Stencil, TheAdjointWritesOverTheCotangentSummedSoFar) {
  auto world = Communicator::world();
  const Tensor u = global_field(kShape2, 21), w = global_field(kShape2, 22);
  for (const std::vector<int>& procs : process_grids(world->size(), kShape2)) {
    Grid grid(kShape2, procs, {}, world);
    Graph g;
    Value uu = g.placeholder("u", grid.local_shape());
    Value ww = g.constant(patch_of(w, kShape2, procs, world->rank()));
    Value loss;
    {
      CommScope scope(g, grid.comm());
      // Created first, so the sweep reaches it after the square's term.
      Value shifted = mpi_total(stencil(grid, field(uu).shift({0, 1})) * ww);
      loss = shifted + mpi_total(uu * uu);
    }
    Value grad = gradient(loss, uu);
    // (gradient() names its result with an identity node.)
    const Node& adjoint = grad.node().op_name() == "identity"
                              ? grad.node().inputs[0].node()
                              : grad.node();
    ASSERT_EQ(adjoint.op_name(), "stencil");
    const auto pairs = in_place_pairs(adjoint);
    ASSERT_EQ(pairs.size(), 1u);
    EXPECT_EQ(pairs[0].first, 0);
    // 2u, summed from the square's two terms.
    EXPECT_EQ(adjoint.inputs[pairs[0].second].node().op_name(), "accumulate");
    Tensor want{Shape(kShape2)};
    for (int64_t i = 0; i < kShape2[0]; ++i)
      for (int64_t j = 0; j < kShape2[1]; ++j)
        want[i * kShape2[1] + j] = 2.0 * u[i * kShape2[1] + j] +
                                   (j >= 1 ? w[i * kShape2[1] + j - 1] : 0.0);
    Session s(g);
    const Tensor got =
        s.run(grad, {{uu, patch_of(u, kShape2, procs, world->rank())}});
    EXPECT_EQ(got.to_vector(),
              patch_of(want, kShape2, procs, world->rank()).to_vector())
        << procs[0] << "x" << procs[1];
  }
}

// Overlapped nodes (several processes) against one process, bit for bit:
// y = u + 0.2·κ·lap(u) (+ 0.25·u[1,−1(,1)]·u with a diagonal read, so
// corners), its value and the gradients of Σ w ⊙ y for u and κ, on every
// process grid. In 3-D the heat adjoint shares c·κ·ȳ, after which ȳ is
// read at the point only: on one process the node offers ū in place over
// ȳ; on several (the rows of the term are filled again for the points
// computed after the messages land) it offers nothing a term reads. In 2-D
// the op does not share terms (detail::shares_terms): ȳ is read at
// offsets and nothing is offered.
struct OverlapCase {
  Shape shape;
  std::vector<bool> periodic;
  bool diagonal = false;
  Shape batch;  // of u (κ has none)
};

void expect_overlap_keeps_the_bits(const OverlapCase& c) {
  auto world = Communicator::world();
  const int nd = static_cast<int>(c.shape.size());
  Shape ushape = c.batch;
  ushape.insert(ushape.end(), c.shape.begin(), c.shape.end());
  const Tensor u = global_field(ushape, 31),
               kappa = global_field(c.shape, 32, 0.5, 1.5),
               w = global_field(ushape, 33);
  auto build = [&](const Grid& grid, int rank, Graph& g, Value& uu, Value& kk) {
    Shape local = c.batch;
    for (int64_t n : grid.local_shape()) local.push_back(n);
    uu = g.placeholder("u", local);
    kk = g.placeholder("k", grid.local_shape());
    const StencilExpr U = field(uu);
    StencilExpr lap = -2.0 * nd * U;
    for (int a = 0; a < nd; ++a) {
      for (int side : {-1, 1}) {
        Offset o(nd, 0);
        o[a] = side;
        lap = lap + U.shift(o);
      }
    }
    StencilExpr e = U + 0.2 * field(kk) * lap;
    if (c.diagonal) {
      Offset d(nd, 1);
      d[1] = -1;
      e = e + 0.25 * U.shift(d) * U;
    }
    CommScope scope(g, grid.comm());
    Value y = stencil(grid, e);
    Value ww = g.constant(patch_of(w, c.shape, grid.layout().procs, rank));
    return std::pair{y, mpi_total(y * ww)};
  };
  auto adjoint_of = [](const Value& grad) -> const Node& {
    return grad.node().op_name() == "identity" ? grad.node().inputs[0].node()
                                               : grad.node();
  };
  const Grid alone(
      c.shape, std::vector<int>(nd, 1), c.periodic, Communicator::self());
  Graph g1;
  Value u1, k1;
  const auto [y1, loss1] = build(alone, 0, g1, u1, k1);
  Values want_values = gradients(loss1, {u1, k1});
  const bool heat = c.batch.empty() && !c.diagonal;
  if (heat) {
    EXPECT_EQ(in_place_pairs(adjoint_of(want_values[0])).empty(),
              !detail::shares_terms(nd));
  }
  want_values.push_back(y1);
  Session s1(g1);
  const std::vector<Tensor> want = s1.run(want_values, {{u1, u}, {k1, kappa}});
  for (const std::vector<int>& procs : process_grids(world->size(), c.shape)) {
    Grid grid(c.shape, procs, c.periodic, world);
    Graph g;
    Value uu, kk;
    const auto [y, loss] = build(grid, world->rank(), g, uu, kk);
    Values values = gradients(loss, {uu, kk});
    if (heat && world->size() > 1) {
      EXPECT_TRUE(in_place_pairs(adjoint_of(values[0])).empty());
    }
    values.push_back(y);
    Session s(g);
    const std::vector<Tensor> got =
        s.run(values,
              {{uu, patch_of(u, c.shape, procs, world->rank())},
               {kk, patch_of(kappa, c.shape, procs, world->rank())}});
    std::string where;
    for (int q : procs) where += std::to_string(q) + " ";
    for (int i = 0; i < 3; ++i)
      EXPECT_EQ(got[i].to_vector(),
                patch_of(want[i], c.shape, procs, world->rank()).to_vector())
          << "result " << i << " (ū, κ̄, y) on procs " << where;
  }
}

TEST(Stencil, OverlappedHeatAdjointOffersNoInputATermReadsAndKeepsTheBits) {
  expect_overlap_keeps_the_bits({{9, 10}, {false, false}, false, {}});
}

TEST(Stencil, OverlappedNodesKeepTheBitsWithCornersBatchesAndPeriodicAxes) {
  expect_overlap_keeps_the_bits({{6, 7}, {true, false}, true, {2}});
  expect_overlap_keeps_the_bits({{5, 6, 7}, {false, true, false}, false, {}});
  expect_overlap_keeps_the_bits({{5, 6, 4}, {true, false, false}, true, {2}});
}

TEST(Stencil, HessianVectorProductMatchesDifferencesOfGradients) {
  auto world = Communicator::world();
  const Shape shape = {6, 6};
  const std::vector<int> procs = process_grids(world->size(), shape).back();
  Grid grid(shape, procs, {true, false}, world);
  auto build = [&](Value u) {
    StencilExpr U = field(u);
    Value y = stencil(
        grid, sin(U.shift({1, 0})) * U * U.shift({0, -1}) + exp(U) * 0.1);
    return weighted(y, 15);
  };
  Graph g;
  Value u = g.placeholder("u", grid.local_shape()),
        d = g.placeholder("d", grid.local_shape());
  Value grad = gradient(build(u), u);
  Value hvp = jvp(grad, u, d);
  Session s(g);
  const Tensor u0 =
      patch_of(global_field(shape, 16), shape, procs, world->rank());
  const Tensor dir =
      patch_of(global_field(shape, 17), shape, procs, world->rank());
  const Tensor h = s.run(hvp, {{u, u0}, {d, dir}});
  const double eps = 1e-5;
  Tensor up = u0, down = u0;
  up.array() += eps * dir.array();
  down.array() -= eps * dir.array();
  const Tensor gp = s.run(grad, {{u, up}}), gm = s.run(grad, {{u, down}});
  for (int64_t i = 0; i < h.size(); ++i)
    EXPECT_NEAR(h[i], (gp[i] - gm[i]) / (2 * eps), 1e-7) << i;
}

TEST(Stencil, BadInputsAreRefusedNamingTheField) {
  auto world = Communicator::world();
  Grid grid({8, 8}, process_grids(world->size(), {8, 8}).front(), {}, world);
  Graph g;
  Value u = g.placeholder("u", grid.local_shape()), s = g.placeholder("s", {});
  Value wrong = g.placeholder("w", {3, 3});
  auto expect_message = [](const std::function<void()>& f,
                           const std::string& part) {
    std::string got = "no error";
    try {
      f();
    } catch (const Error& e) {
      got = e.what();
    }
    EXPECT_NE(got.find(part), std::string::npos) << got;
  };
  expect_message(
      [&] { stencil(grid, field(wrong) + 1.0); },
      "input in0 (\"w\"): shape [3, 3] does not end in this rank's patch");
  expect_message(
      [&] {
        stencil(grid, "mul(in1[0,1], in0)", {u, s});
      },
      "input in1 (\"s\"): a scalar read at an offset");
  expect_message([&] { stencil(grid, "add(in0, foo(in0))", {u}); },
                 "unknown operation \"foo\"");
  expect_message([&] { stencil(grid, "in1", {u}); },
                 "reads in1 but the node has 1 inputs");
  expect_message([&] { stencil(grid, "in0[1,0,0]", {u}); },
                 "an offset of 3 entries on a 2-D grid");
  if (grid.layout().procs[0] > 1) {
    expect_message(
        [&] {
          stencil(grid, field(u).shift({9, 0}) + field(u));
        },
        "a halo of width 9 on axis 0 needs patches of at least 9 points");
  }
  // The gradient of u(i−1)·u(i+1) reads u at offsets ±2 (the derivative
  // at a neighbour reads that neighbour's neighbour): on a periodic axis whose
  // smallest patch has 1 point, the forward runs and the gradient is
  // refused naming the node the user made and their input.
  {
    const int p = world->size();
    Grid narrow({2 * p - 1, 4}, {p, 1}, {true, false}, world);
    Graph g2;
    Value v = g2.placeholder("v", narrow.local_shape());
    Value y = stencil(
        narrow, field(v).shift({-1, 0}) * field(v).shift({1, 0}), "product");
    expect_message(
        [&] { gradients(sum(y), {v}); },
        "node \"product\" (stencil): its gradient's node refuses input in0 "
        "(\"v\"): a halo of width 2 on axis 0 needs patches of at least 2 "
        "points there; the smallest has 1");
  }
  // A loop body reading a field of the outer graph without passing it in.
  expect_message(
      [&] {
        loop(2, {u}, {}, [&](const LoopArgs& a) {
          return LoopStep{{stencil(grid, field(a.carries[0]) * field(u))}, {}};
        });
      },
      "mul: \"carry[0]\" and \"u\" belong to two graphs (inside a loop "
      "body, a Value from outside is read through the loop's invariants");
}

}  // namespace
}  // namespace adgraph::grid
