// Builds y = x² against the installed package and prints y and dy/dx at 3.
#include <adgraph.h>

#include <cstdio>

int main() {
  adgraph::Graph g;
  adgraph::Value x = g.placeholder("x", {});
  adgraph::Value y = square(x);
  adgraph::Value dy = adgraph::gradient(y, x);
  adgraph::Session session(g);
  auto out = session.run({y, dy}, {{x, adgraph::Tensor::scalar(3.0)}});
  std::printf("consumer: y = %g, dy/dx = %g\n", out[0].item(), out[1].item());
  return out[0].item() == 9.0 && out[1].item() == 6.0 ? 0 : 1;
}
