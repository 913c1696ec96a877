#include "ops/reductions.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "core/core_ops.h"
#include "core/exact_sum.h"
#include "core/op.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace adgraph {
namespace {

// True when `small` broadcasts to `big` under NumPy rules.
bool broadcasts(const Shape& small, const Shape& big) {
  if (small.size() > big.size()) return false;
  const std::size_t lead = big.size() - small.size();
  for (std::size_t i = 0; i < small.size(); ++i) {
    if (small[i] != 1 && small[i] != big[lead + i]) return false;
  }
  return true;
}

// Calls f(big_index, small_index) for every element of `big`, where
// small_index is the broadcast source element in `small`.
template <class F>
void for_each_broadcast(const Shape& small, const Shape& big, F f) {
  const int rank = static_cast<int>(big.size());
  const std::size_t lead = big.size() - small.size();
  // Strides and the running index, on the stack for up to 8 dimensions: a
  // kernel allocates nothing per run.
  constexpr int kInline = 8;
  int64_t inline_buffer[2 * kInline] = {};
  std::vector<int64_t> heap_buffer;
  int64_t* stride = inline_buffer;
  if (rank > kInline) {
    heap_buffer.assign(2 * rank, 0);
    stride = heap_buffer.data();
  }
  int64_t* index = stride + rank;
  int64_t s = 1;
  for (int d = rank - 1; d >= static_cast<int>(lead); --d) {
    const int64_t extent = small[d - lead];
    stride[d] = extent == 1 ? 0 : s;
    s *= extent;
  }
  const int64_t n = num_elements(big);
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    f(i, offset);
    for (int d = rank - 1; d >= 0; --d) {
      offset += stride[d];
      if (++index[d] < big[d]) break;
      offset -= stride[d] * big[d];
      index[d] = 0;
    }
  }
}

// Normalised, sorted axes or a ShapeError.
std::vector<int64_t> normalise_axes(const ShapeContext& c, const Shape& x) {
  std::vector<int64_t> axes = c.attr_ints("axes");
  const int64_t rank = static_cast<int64_t>(x.size());
  std::vector<char> seen(rank, 0);
  for (int64_t& a : axes) {
    if (a < -rank || a >= rank) {
      c.fail("attribute \"axes\"",
             "axis " + std::to_string(a) + " out of range for shape " +
                 shape_string(x));
    }
    if (a < 0) a += rank;
    if (seen[a]++) c.fail("attribute \"axes\"", "repeated axis");
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// x's shape with reduced axes kept as extent 1 (all axes when empty).
Shape keepdims_shape(const Shape& x, const std::vector<int64_t>& axes) {
  Shape out = x;
  if (axes.empty()) {
    for (auto& d : out) d = 1;
  }
  for (int64_t a : axes) out[a] = 1;
  return out;
}

Shape removed_shape(const Shape& x, const std::vector<int64_t>& axes) {
  if (axes.empty()) return {};
  Shape out;
  for (std::size_t d = 0; d < x.size(); ++d) {
    if (!std::binary_search(
            axes.begin(), axes.end(), static_cast<int64_t>(d))) {
      out.push_back(x[d]);
    }
  }
  return out;
}

std::vector<int64_t> node_axes(const Node& n, const Shape& x) {
  std::vector<int64_t> axes = n.attr_ints("axes");
  for (auto& a : axes) {
    if (a < 0) a += static_cast<int64_t>(x.size());
  }
  std::sort(axes.begin(), axes.end());
  return axes;
}

// Sums `big` into out[0, num_elements(small)), the elements of a tensor of
// shape `small` that broadcasts to big's shape, in index order.
void sum_into(const Tensor& big, const Shape& small, double* out) {
  std::fill(out, out + num_elements(small), 0.0);
  const double* in = big.data();
  for_each_broadcast(
      small, big.shape(), [&](int64_t i, int64_t j) { out[j] += in[i]; });
}

void sum_into(const Tensor& big, Tensor& small) {
  sum_into(big, small.shape(), small.data());
}

OpDef reduction(std::string name, std::string doc, bool mean) {
  OpDef def(std::move(name), std::move(doc), {"x"});
  def.attrs = {{"axes",
                AttrType::kInts,
                nlohmann::json::array(),
                "axes to reduce; empty reduces all"},
               {"exact",
                AttrType::kString,
                "no",
                "sums along axes: yes (each exact, rounded once) or no (in "
                "index order); the sum of all elements is always exact"}};
  def.shape = [](const ShapeContext& c) {
    const std::string exact = c.node().attr_string("exact");
    if (exact != "yes" && exact != "no")
      c.fail("attribute \"exact\"", "\"" + exact + "\" is not one of yes, no");
    const Shape& x = c.input_shape(0);
    return Shapes{removed_shape(x, normalise_axes(c, x))};
  };
  // The axes and the kept shape are the node's: read once (OpDef::bind).
  def.bind = [mean](const Node& n) {
    const Shape& x = n.inputs[0].shape();
    const std::vector<int64_t> axes = node_axes(n, x);
    const Shape kept = keepdims_shape(x, axes);
    const double count = axes.empty()
                             ? static_cast<double>(num_elements(x))
                             : static_cast<double>(num_elements(x)) /
                                   std::max<int64_t>(1, num_elements(kept));
    const bool all = axes.empty(), exact = n.attr_string("exact") == "yes";
    return ComputeFn([mean, all, exact, kept, count](KernelContext& c) {
      const Tensor& x = c.input(0);
      Tensor& y = c.output(0);
      if (all) {
        y[0] = exact_sum(x.data(), x.size());
      } else if (exact) {
        // Each output's terms side by side, then summed exactly: the
        // error-free form for a few, the array form for many.
        const int64_t outputs = y.size();
        const int64_t terms = outputs == 0 ? 0 : x.size() / outputs;
        std::vector<double> grouped(static_cast<std::size_t>(x.size()));
        std::vector<int64_t> filled(static_cast<std::size_t>(outputs), 0);
        const double* in = x.data();
        for_each_broadcast(kept, x.shape(), [&](int64_t i, int64_t j) {
          grouped[j * terms + filled[j]++] = in[i];
        });
        for (int64_t j = 0; j < outputs; ++j) {
          const double* t = grouped.data() + j * terms;
          y[j] = terms <= 64 ? exact_sum_of_few(t, static_cast<int>(terms))
                             : exact_sum(t, terms);
        }
      } else {
        // y holds the kept shape's elements in the same order; each sum in
        // index order (exact sums of a few terms each cost a data-parallel
        // model 60 % of its training time, PERFORMANCE.md).
        sum_into(x, kept, y.data());
      }
      if (mean) y.array() /= count;
    });
  };
  // y = Σ_axes x;  x̄ += broadcast(ȳ)   (divided by the count for the mean)
  def.gradient = [mean](const GradientContext& c) {
    const Shape& x = c.input(0).shape();
    const std::vector<int64_t> axes = node_axes(c.node(), x);
    const Shape kept = keepdims_shape(x, axes);
    Value g = broadcast_to(reshape(c.grad(), kept), x);
    if (mean) {
      g = g * (static_cast<double>(num_elements(kept)) /
               static_cast<double>(std::max<int64_t>(1, num_elements(x))));
    }
    return Values{g};
  };
  def.tangent = linear_tangent;
  return def;
}

}  // namespace

Value sum(Value x) { return sum(x, {}); }
Value sum(Value x, std::vector<int64_t> axes, bool exact) {
  register_ops_layer();
  return x.graph().add_node(
      "sum", {x}, {{"axes", axes}, {"exact", exact ? "yes" : "no"}});
}
Value mean(Value x) { return mean(x, {}); }
Value mean(Value x, std::vector<int64_t> axes, bool exact) {
  register_ops_layer();
  return x.graph().add_node(
      "mean", {x}, {{"axes", axes}, {"exact", exact ? "yes" : "no"}});
}
Value dot(Value a, Value b) {
  register_ops_layer();
  return a.graph().add_node("dot", {a, b});
}
Value broadcast_to(Value x, Shape shape) {
  if (x.shape() == shape) return x;
  register_ops_layer();
  return x.graph().add_node("broadcast_to", {x}, {{"shape", shape}});
}
Value sum_to(Value x, Shape shape) {
  if (x.shape() == shape) return x;
  register_ops_layer();
  return x.graph().add_node("sum_to", {x}, {{"shape", shape}});
}

namespace {

void register_dot_op() {
  // y = Σ a·b;  ā += ȳ·b,  b̄ += ȳ·a
  OpDef dot_def(
      "dot",
      "y = sum(a * b), a scalar; the products rounded, their sum exact",
      {"a", "b"});
  dot_def.shape = [](const ShapeContext& c) {
    equal_input_shapes(c, "input \"b\"");
    return Shapes{Shape{}};
  };
  dot_def.compute = [](KernelContext& c) {
    ExactSum sum;
    sum.add_products(c.input(0).data(), c.input(1).data(), c.input(0).size());
    c.output(0)[0] = sum.round();
  };
  dot_def.gradient = [](const GradientContext& c) {
    return Values{c.grad() * c.input(1), c.grad() * c.input(0)};
  };
  dot_def.tangent = bilinear_tangent;
  register_op(std::move(dot_def));
}

// broadcast_to (x up to the shape attribute) and its adjoint sum_to (x
// down to it, `down`): the attribute, and the check that the smaller
// shape broadcasts to the larger.
OpDef broadcast_def(const char* name, const char* doc, bool down) {
  OpDef def(name, doc, {"x"});
  def.attrs = {{"shape", AttrType::kInts, nlohmann::json(), "target shape", 0}};
  def.shape = [down](const ShapeContext& c) {
    const Shape target = c.attr_ints("shape");
    const Shape& from = down ? target : c.input_shape(0);
    const Shape& to = down ? c.input_shape(0) : target;
    if (!broadcasts(from, to)) {
      c.fail("attribute \"shape\"",
             "shape " + shape_string(from) + " does not broadcast to " +
                 shape_string(to));
    }
    return Shapes{target};
  };
  def.tangent = linear_tangent;
  return def;
}

void register_broadcast_ops() {
  // y = broadcast(x);  x̄ += sum_to(ȳ, shape(x))
  OpDef bcast = broadcast_def(
      "broadcast_to", "y = x broadcast to shape (NumPy rules)", false);
  bcast.compute = [](KernelContext& c) {
    const double* in = c.input(0).data();
    double* out = c.output(0).data();
    for_each_broadcast(c.input(0).shape(),
                       c.output(0).shape(),
                       [&](int64_t i, int64_t j) { out[i] = in[j]; });
  };
  bcast.gradient = [](const GradientContext& c) {
    return Values{sum_to(c.grad(), c.input(0).shape())};
  };
  register_op(std::move(bcast));

  // y = sum_to(x, shape);  x̄ += broadcast_to(ȳ, shape(x))
  OpDef sum_to_def = broadcast_def(
      "sum_to", "y = x summed down to shape (adjoint of broadcast_to)", true);
  sum_to_def.compute = [](KernelContext& c) {
    sum_into(c.input(0), c.output(0));
  };
  sum_to_def.gradient = [](const GradientContext& c) {
    return Values{broadcast_to(c.grad(), c.input(0).shape())};
  };
  register_op(std::move(sum_to_def));
}

}  // namespace

void register_reduction_ops() {
  register_op(
      reduction("sum",
                "y = sum of x over axes (all when empty): of all, exact and "
                "rounded once; along axes, in index order or (exact: yes) "
                "each exact",
                false));
  register_op(reduction("mean",
                        "y = mean of x over axes (all when empty): sum's "
                        "sum divided by the count",
                        true));
  register_dot_op();
  register_broadcast_ops();
}

}  // namespace adgraph
