// quickstart: least squares with adgraph's C++ API.
//
// Builds L(x) = Σ (A x − b)², asks for ∇L and a Hessian-vector product, runs
// them, and checks ∇L against the closed form 2Aᵀ(Ax − b).
#include <cstdio>

#include "adgraph.h"

using namespace adgraph;

int main() {
  Graph g;
  Value x = g.placeholder("x", {3});
  Value a = g.constant(Tensor({2, 3}, {1, 2, 0, 0, 1, -1}), "A");
  Value b = g.constant(Tensor({1.0, 2.0}), "b");
  Value loss = sum(square(matvec(a, x) - b));  // a scalar
  Value grad = gradient(loss, x);              // ∂L/∂x, shape [3]
  Value v = g.placeholder("v", {3});
  Value hv = gradient(dot(grad, v), x);  // H v = 2AᵀA v

  Session session(g);
  FeedMap feeds{{x, Tensor({1.0, 1.0, 1.0})}, {v, Tensor({1.0, 0.0, 0.0})}};
  std::vector<Tensor> out = session.run({loss, grad, hv}, feeds);

  // By hand: Ax − b = (3 − 1, 0 − 2) = (2, −2); L = 8;
  // ∇L = 2Aᵀ(2, −2) = (4, 4, 4);  H e₁ = 2AᵀA e₁ = (2, 4, 0).
  std::printf("L(x)  = %g   (by hand: 8)\n", out[0].item());
  std::printf("dL/dx = [%g, %g, %g]   (by hand: [4, 4, 4])\n",
              out[1][0],
              out[1][1],
              out[1][2]);
  std::printf("H e1  = [%g, %g, %g]   (by hand: [2, 4, 0])\n",
              out[2][0],
              out[2][1],
              out[2][2]);

  GradientCheckResult check = check_gradients(loss, {x}, feeds);
  std::printf("gradient check: %s (max finite-difference error %.1e)\n",
              check.ok ? "passed" : check.message.c_str(),
              check.max_fd_error);
  const bool right = out[0].item() == 8 && out[1][0] == 4 && out[2][1] == 4;
  return right && check.ok ? 0 : 1;
}
