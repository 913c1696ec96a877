// docs/CPP.md's example: the C++ API in one program, one process.
//
// L(x) = Σ (A x − b)² with A = [[1, 2, 0], [0, 1, −1]], b = (1, 2) at
// x = (1, 1, 1). By hand: A x − b = (3 − 1, 0 − 2) = (2, −2), so L = 8;
// ∇L = 2Aᵀ(2, −2) = 2·(1·2 + 0·(−2), 2·2 + 1·(−2), 0·2 − 1·(−2)) = (4, 4, 4).
// Forward mode along d = (1, 0, 0): ∇L·d = 4; the Hessian-vector product
// H d = 2AᵀA d = 2Aᵀ(1, 0) = (2, 4, 0).
// run_into writes ∇L into a buffer the caller owns (borrow): (4, 4, 4).
// The custom op y = α x with α = 2.5 at x = (1, −2): y = (2.5, −5);
// Σ y² = 6.25 + 25 = 31.25, its gradient 2α²x = (12.5, −25).
// The test examples/guides/cpp_tour compares the output with
// tests/guides/cpp_tour.expected.
#include <cstdio>
#include <vector>

#include "adgraph.h"

using namespace adgraph;

namespace {

// doc:begin custom_op
// y = alpha * x, with its adjoint and its tangent rule.
void register_scale_op() {
  OpDef def("guide_scale", "y = alpha * x", {"x"});
  def.attrs = {{"alpha", AttrType::kFloat, 1.0, "factor"}};
  def.shape = [](const ShapeContext& c) { return Shapes{c.input_shape(0)}; };
  def.compute = [](KernelContext& c) {
    c.output(0).array() = c.attr_float("alpha") * c.input(0).array();
  };
  def.gradient = [](const GradientContext& c) {
    return Values{c.grad(0) * c.node().attr_float("alpha")};
  };
  def.tangent = [](const TangentContext& c) {
    return Values{c.tangent(0) * c.node().attr_float("alpha")};
  };
  register_op(std::move(def));
}
// doc:end custom_op

void print(const char* what, const Tensor& t) {
  std::printf("%s =", what);
  for (int64_t i = 0; i < t.size(); ++i) std::printf(" %g", t[i]);
  std::printf("\n");
}

bool tour() {
  // doc:begin tour
  Graph g;
  Value x = g.placeholder("x", {3});
  Value a = g.constant(Tensor({2, 3}, {1, 2, 0, 0, 1, -1}), "A");
  Value b = g.constant(Tensor({1.0, 2.0}), "b");
  Value loss = sum(square(matvec(a, x) - b));  // shapes checked here
  Value grad = gradient(loss, x);              // adjoint nodes added to g

  Session session(g);
  FeedMap feeds{{x, Tensor({1.0, 1.0, 1.0})}};
  std::vector<Tensor> out = session.run({loss, grad}, feeds);
  // out[0] = 8, out[1] = [4, 4, 4]
  // doc:end tour
  print("L", out[0]);
  print("dL/dx", out[1]);

  // doc:begin forward
  Value d = g.placeholder("d", {3});
  Value slope = jvp(loss, x, d);            // ∇L·d, forward mode
  Value hd = jvp(gradient(loss, x), x, d);  // H d, a Hessian-vector product
  feeds.insert({d, Tensor({1.0, 0.0, 0.0})});
  std::vector<Tensor> fwd = session.run({slope, hd}, feeds);
  // doc:end forward
  print("dL/dx . d", fwd[0]);
  print("H d", fwd[1]);

  // doc:begin run_into
  std::vector<double> mine(3);  // memory the caller owns
  Tensor view = Tensor::borrow({3}, mine.data());
  session.run_into(grad, feeds, view);  // the gradient is written into mine
  session.recycle(std::move(out[1]));   // a result we are done with
  // doc:end run_into
  std::printf("borrowed = %g %g %g\n", mine[0], mine[1], mine[2]);
  return out[0].item() == 8 && fwd[0].item() == 4 && fwd[1][1] == 4 &&
         mine[2] == 4;
}

bool custom() {
  register_scale_op();
  // doc:begin use_custom_op
  Graph g;
  Value x = g.placeholder("x", {2});
  Value y = g.add_node("guide_scale", {x}, {{"alpha", 2.5}});
  Value loss = sum(square(y));
  FeedMap feeds{{x, Tensor({1.0, -2.0})}};
  GradientCheckResult check = check_gradients(loss, {x}, feeds);
  Session session(g);
  std::vector<Tensor> out = session.run({loss, gradient(loss, x)}, feeds);
  // doc:end use_custom_op
  print("custom: loss", out[0]);
  print("custom: dloss/dx", out[1]);
  std::printf("custom: gradient check %s\n", check.ok ? "passed" : "failed");
  return check.ok && out[0].item() == 31.25 && out[1][1] == -25;
}

}  // namespace

int main() {
  const bool ok = tour();
  return ok && custom() ? 0 : 1;
}
