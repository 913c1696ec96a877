// The loops of the broadcasting element-wise kernels (ops/elementwise.cc):
// NumPy's broadcast of shapes, and a strided loop over the output that
// hands a kernel runs of contiguous or repeated input elements.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/op.h"
#include "core/tensor.h"

namespace adgraph::detail {

// NumPy's broadcast of two shapes: trailing axes aligned, an extent of 1
// or a missing axis stretched to the other's; nullopt when two extents
// differ otherwise.
inline std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (std::size_t i = 1; i <= out.size(); ++i) {  // i-th axis from the end
    const int64_t x = i <= a.size() ? a[a.size() - i] : 1;
    const int64_t y = i <= b.size() ? b[b.size() - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - i] = x == 1 ? y : x;
  }
  return out;
}

// The loop of a broadcasting element-wise kernel over N inputs: the
// output's axes, outermost first (extents of 1 dropped; neighbours merged
// where every input steps through them as through one axis), and each
// input's stride along each (0 where it is stretched). The last axis is
// the run a kernel does at once, its strides 0 or 1.
template <std::size_t N>
struct BroadcastLoop {
  std::vector<int64_t> extent;
  std::vector<std::array<int64_t, N>> stride;
};

template <std::size_t N>
BroadcastLoop<N> broadcast_loop(const std::array<Shape, N>& in,
                                const Shape& out) {
  std::vector<std::array<int64_t, N>> full(out.size());
  for (std::size_t k = 0; k < N; ++k) {
    const std::size_t lead = out.size() - in[k].size();
    int64_t step = 1;
    for (std::size_t d = out.size(); d-- > 0;) {
      const int64_t e = d < lead ? 1 : in[k][d - lead];
      full[d][k] = e == 1 ? 0 : step;
      step *= e;
    }
  }
  BroadcastLoop<N> loop;
  for (std::size_t d = 0; d < out.size(); ++d) {
    if (out[d] == 1) continue;
    bool joins = !loop.extent.empty();
    for (std::size_t k = 0; joins && k < N; ++k) {
      joins = loop.stride.back()[k] == full[d][k] * out[d];
    }
    if (joins) {
      loop.extent.back() *= out[d];
      loop.stride.back() = full[d];
    } else {
      loop.extent.push_back(out[d]);
      loop.stride.push_back(full[d]);
    }
  }
  if (loop.extent.empty()) {
    loop.extent.push_back(1);
    loop.stride.push_back({});
  }
  for (int64_t s : loop.stride.back()) ADGRAPH_CHECK(s == 0 || s == 1);
  return loop;
}

// Assigns f(runs...) to the n elements at y, where input k's run is its n
// elements at p[k] (stride 1), or its one element there repeated (stride
// 0, an input stretched along the run).
template <std::size_t I, std::size_t N, class F, class... Runs>
void apply_runs(const std::array<const double*, N>& p,
                const std::array<int64_t, N>& stride,
                int64_t n,
                double* y,
                const F& f,
                const Runs&... runs) {
  if constexpr (I == N) {
    ArrayMap(y, n) = f(runs...);
  } else if (stride[I] == 0) {
    apply_runs<I + 1>(
        p, stride, n, y, f, runs..., Eigen::ArrayXd::Constant(n, *p[I]));
  } else {
    apply_runs<I + 1>(p, stride, n, y, f, runs..., ConstArrayMap(p[I], n));
  }
}

// The kernel of `loop`: y = f(inputs...) run by run, the runs in index
// order. The index lives on the stack for up to 8 axes: the kernel
// allocates nothing per run.
template <std::size_t N, class F>
ComputeFn broadcast_kernel(BroadcastLoop<N> loop, F f) {
  return [loop = std::move(loop), f](KernelContext& c) {
    const int outer = static_cast<int>(loop.extent.size()) - 1;
    const int64_t n = loop.extent.back();
    int64_t runs = 1;
    for (int d = 0; d < outer; ++d) runs *= loop.extent[d];
    if (n == 0 || runs == 0) return;
    int64_t inline_index[8] = {};
    std::vector<int64_t> heap_index(outer > 8 ? outer : 0, 0);
    int64_t* index = outer > 8 ? heap_index.data() : inline_index;
    std::array<const double*, N> base, p;
    for (std::size_t k = 0; k < N; ++k) base[k] = c.input(k).data();
    std::array<int64_t, N> offset{};
    double* y = c.output(0).data();
    for (int64_t r = 0; r < runs; ++r, y += n) {
      for (std::size_t k = 0; k < N; ++k) p[k] = base[k] + offset[k];
      apply_runs<0>(p, loop.stride.back(), n, y, f);
      for (int d = outer - 1; d >= 0; --d) {
        for (std::size_t k = 0; k < N; ++k) offset[k] += loop.stride[d][k];
        if (++index[d] < loop.extent[d]) break;
        for (std::size_t k = 0; k < N; ++k)
          offset[k] -= loop.stride[d][k] * loop.extent[d];
        index[d] = 0;
      }
    }
  };
}

}  // namespace adgraph::detail
