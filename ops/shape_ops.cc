#include "ops/shape_ops.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/op.h"
#include "ops/elementwise.h"

namespace adgraph {
namespace {

int64_t checked_axis(const ShapeContext& c, const Shape& x) {
  const int64_t rank = static_cast<int64_t>(x.size());
  int64_t axis = c.attr_int("axis");
  if (axis < -rank || axis >= rank) {
    c.fail("attribute \"axis\"",
           "axis " + std::to_string(axis) + " out of range for shape " +
               shape_string(x));
  }
  return axis < 0 ? axis + rank : axis;
}

int64_t node_axis(const Node& n, const Shape& x) {
  int64_t axis = n.attr_int("axis");
  return axis < 0 ? axis + static_cast<int64_t>(x.size()) : axis;
}

// Extents outside `axis`: x is viewed as [outer, extent(axis), inner].
void split_at(const Shape& x, int64_t axis, int64_t& outer, int64_t& inner) {
  outer = inner = 1;
  for (int64_t d = 0; d < axis; ++d) outer *= x[d];
  for (std::size_t d = axis + 1; d < x.size(); ++d) inner *= x[d];
}

// Copies `count` planes along the axis from `src` (starting at plane
// `src_begin`) into `dst` (starting at `dst_begin`).
void copy_planes(const Tensor& src,
                 int64_t src_begin,
                 Tensor& dst,
                 int64_t dst_begin,
                 int64_t count,
                 int64_t axis) {
  int64_t outer, inner;
  split_at(src.shape(), axis, outer, inner);
  const int64_t src_n = src.shape()[axis];
  const int64_t dst_n = dst.shape()[axis];
  for (int64_t o = 0; o < outer; ++o) {
    const double* from = src.data() + (o * src_n + src_begin) * inner;
    double* to = dst.data() + (o * dst_n + dst_begin) * inner;
    std::copy(from, from + count * inner, to);
  }
}

// Adds `b` into the planes [begin, begin + b's extent) of `a` along the
// axis, in place.
void add_planes(const Tensor& b, Tensor& a, int64_t begin, int64_t axis) {
  int64_t outer, inner;
  split_at(b.shape(), axis, outer, inner);
  const int64_t bn = b.shape()[axis], an = a.shape()[axis];
  for (int64_t o = 0; o < outer; ++o) {
    const double* from = b.data() + o * bn * inner;
    double* to = a.data() + (o * an + begin) * inner;
    for (int64_t k = 0; k < bn * inner; ++k) to[k] += from[k];
  }
}

Shape with_extent(Shape x, int64_t axis, int64_t extent) {
  x[axis] = extent;
  return x;
}

}  // namespace

Value reshape(Value x, Shape shape) {
  register_ops_layer();
  return x.graph().add_node("reshape", {x}, {{"shape", shape}});
}
Value slice(Value x, int64_t axis, int64_t begin, int64_t end) {
  register_ops_layer();
  return x.graph().add_node(
      "slice", {x}, {{"axis", axis}, {"begin", begin}, {"end", end}});
}
Value pad(Value x, int64_t axis, int64_t before, int64_t after, double value) {
  register_ops_layer();
  return x.graph().add_node(
      "pad",
      {x},
      {{"axis", axis}, {"before", before}, {"after", after}, {"value", value}});
}
Value concat(const std::vector<Value>& xs, int64_t axis) {
  if (xs.empty()) throw GraphError("concat of no values");
  register_ops_layer();
  return xs[0].graph().add_node("concat", xs, {{"axis", axis}});
}

namespace {

void register_reshape_op() {
  // y = reshape(x);  x̄ += reshape(ȳ, shape(x))
  OpDef reshape_def(
      "reshape", "y = x with a new shape (one extent may be -1)", {"x"});
  reshape_def.attrs = {{"shape",
                        AttrType::kInts,
                        nlohmann::json(),
                        "new shape; one extent may be -1",
                        -1}};
  reshape_def.shape = [](const ShapeContext& c) {
    Shape shape = c.attr_ints("shape");
    const int64_t n = num_elements(c.input_shape(0));
    int64_t inferred = -1;
    Shape given;  // the extents other than -1
    for (std::size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == -1) {
        if (inferred >= 0) c.fail("attribute \"shape\"", "more than one -1");
        inferred = static_cast<int64_t>(d);
      } else {
        given.push_back(shape[d]);
      }
    }
    const int64_t known = checked_num_elements(given);
    if (known < 0) {
      c.fail("attribute \"shape\"",
             shape_string(c.attr_ints("shape")) +
                 " has more than 2^30 elements (the limit for one tensor)");
    }
    if (inferred >= 0 && known > 0 && n % known == 0)
      shape[inferred] = n / known;
    if (num_elements(shape) != n || (inferred >= 0 && known == 0)) {
      c.fail("attribute \"shape\"",
             "cannot reshape " + shape_string(c.input_shape(0)) + " to " +
                 shape_string(c.attr_ints("shape")));
    }
    return Shapes{shape};
  };
  // When x dies here, y takes its buffer under the new shape: no copy.
  reshape_def.in_place = {{0, 0}};
  reshape_def.compute = [](KernelContext& c) {
    if (&c.input(0) != &c.output(0)) c.output(0).array() = c.input(0).array();
  };
  reshape_def.gradient = [](const GradientContext& c) {
    return Values{reshape(c.grad(), c.input(0).shape())};
  };
  reshape_def.tangent = linear_tangent;
  register_op(std::move(reshape_def));
}

std::vector<AttrSpec> slice_def_attrs() {
  return {{"axis", AttrType::kInt, nlohmann::json(), "axis"},
          {"begin", AttrType::kInt, nlohmann::json(), "first index", 0},
          {"end", AttrType::kInt, nlohmann::json(), "one past the last", 0}};
}

void register_slice_op() {
  // y = x[begin:end] along axis;  x̄ += pad(ȳ, begin, n − end)
  OpDef slice_def("slice", "y = x[begin:end] along axis", {"x"});
  slice_def.attrs = slice_def_attrs();
  slice_def.shape = [](const ShapeContext& c) {
    const Shape& x = c.input_shape(0);
    const int64_t axis = checked_axis(c, x);
    const int64_t begin = c.attr_int("begin"), end = c.attr_int("end");
    if (begin > end || end > x[axis]) {
      c.fail("attribute \"end\"",
             "range [" + std::to_string(begin) + ", " + std::to_string(end) +
                 ") does not fit extent " + std::to_string(x[axis]) + " of " +
                 shape_string(x));
    }
    return Shapes{with_extent(x, axis, end - begin)};
  };
  slice_def.bind = [](const Node& n) {
    const int64_t axis = node_axis(n, n.inputs[0].shape());
    const int64_t begin = n.attr_int("begin");
    return ComputeFn([axis, begin](KernelContext& c) {
      Tensor& y = c.output(0);
      copy_planes(c.input(0), begin, y, 0, y.shape()[axis], axis);
    });
  };
  // With a cotangent of x summed so far (a per-step output of a loop's
  // carry), ȳ is added into its slice in place: O(slice), not a padded
  // copy of x and a pass adding it.
  slice_def.gradient = [](const GradientContext& c) {
    const Shape& x = c.input(0).shape();
    const int64_t axis = node_axis(c.node(), x);
    const int64_t begin = c.node().attr_int("begin");
    const int64_t end = c.node().attr_int("end");
    const Value so_far = c.accumulated(0);
    if (so_far.valid() && so_far.shape() == x) {
      c.absorb(0);
      return Values{so_far.graph().add_node(
          "slice_add",
          {so_far, c.grad()},
          {{"axis", axis}, {"begin", begin}, {"end", end}})};
    }
    return Values{pad(c.grad(), axis, begin, x[axis] - end)};
  };
  slice_def.tangent = linear_tangent;
  register_op(std::move(slice_def));
}

void register_slice_add_op() {
  // y = a with b added into a[begin:end] along axis; ā += ȳ, b̄ += ȳ[begin:end]
  OpDef add_def("slice_add",
                "y = a with b added into a[begin:end] along axis (slice's "
                "adjoint onto a cotangent summed so far)",
                {"a", "b"});
  add_def.attrs = slice_def_attrs();
  add_def.shape = [](const ShapeContext& c) {
    const Shape& a = c.input_shape(0);
    const int64_t axis = checked_axis(c, a);
    const int64_t begin = c.attr_int("begin"), end = c.attr_int("end");
    if (begin > end || end > a[axis] ||
        c.input_shape(1) != with_extent(a, axis, end - begin)) {
      c.fail("input \"b\"",
             "shape " + shape_string(c.input_shape(1)) + " is not a[" +
                 std::to_string(begin) + ":" + std::to_string(end) +
                 "] along axis " + std::to_string(axis) + " of " +
                 shape_string(a));
    }
    return Shapes{a};
  };
  add_def.in_place = {{0, 0}};
  add_def.bind = [](const Node& n) {
    const int64_t axis = node_axis(n, n.inputs[0].shape());
    const int64_t begin = n.attr_int("begin");
    return ComputeFn([axis, begin](KernelContext& c) {
      Tensor& y = c.output(0);
      if (y.data() != c.input(0).data()) y.array() = c.input(0).array();
      add_planes(c.input(1), y, begin, axis);
    });
  };
  add_def.gradient = [](const GradientContext& c) {
    const int64_t axis = node_axis(c.node(), c.input(0).shape());
    return Values{c.grad(),
                  slice(c.grad(),
                        axis,
                        c.node().attr_int("begin"),
                        c.node().attr_int("end"))};
  };
  add_def.tangent = linear_tangent;
  register_op(std::move(add_def));
}

void register_pad_op() {
  // y = [value…, x, value…] along axis;  x̄ += ȳ[before : before + n]
  OpDef pad_def("pad", "y = x padded with value along axis", {"x"});
  pad_def.attrs = {
      {"axis", AttrType::kInt, nlohmann::json(), "axis"},
      {"before", AttrType::kInt, 0, "entries added in front", 0, kMaxElements},
      {"after", AttrType::kInt, 0, "entries added at the end", 0, kMaxElements},
      {"value", AttrType::kFloat, 0.0, "fill value"}};
  pad_def.shape = [](const ShapeContext& c) {
    const Shape& x = c.input_shape(0);
    const int64_t axis = checked_axis(c, x);
    return Shapes{with_extent(
        x, axis, x[axis] + c.attr_int("before") + c.attr_int("after"))};
  };
  pad_def.bind = [](const Node& n) {
    const int64_t axis = node_axis(n, n.inputs[0].shape());
    const int64_t before = n.attr_int("before");
    const double value = n.attr_float("value");
    return ComputeFn([axis, before, value](KernelContext& c) {
      const Tensor& x = c.input(0);
      Tensor& y = c.output(0);
      y.array().setConstant(value);
      copy_planes(x, 0, y, before, x.shape()[axis], axis);
    });
  };
  pad_def.gradient = [](const GradientContext& c) {
    const Shape& x = c.input(0).shape();
    const int64_t axis = node_axis(c.node(), x);
    const int64_t before = c.node().attr_int("before");
    return Values{slice(c.grad(), axis, before, before + x[axis])};
  };
  // Affine, not linear, when value ≠ 0: the tangent pads with zeros.
  pad_def.tangent = [](const TangentContext& c) {
    if (!c.tangent(0).valid()) return Values{Value()};
    const Node& n = c.node();
    return Values{pad(c.tangent(0),
                      node_axis(n, n.inputs[0].shape()),
                      n.attr_int("before"),
                      n.attr_int("after"),
                      0.0)};
  };
  register_op(std::move(pad_def));
}

void register_concat_op() {
  // y = [x_0, x_1, …] along axis;  x̄_k += ȳ[offset_k : offset_k + n_k]
  OpDef concat_def("concat", "y = inputs joined along axis", {"xs"});
  concat_def.variadic = true;
  concat_def.attrs = {{"axis", AttrType::kInt, 0, "axis"}};
  concat_def.shape = [](const ShapeContext& c) {
    if (c.num_inputs() == 0)
      c.fail("inputs", "concat needs at least one input");
    Shape out = c.input_shape(0);
    const int64_t axis = checked_axis(c, out);
    for (int i = 1; i < c.num_inputs(); ++i) {
      const Shape& s = c.input_shape(i);
      if (s.size() != out.size() ||
          with_extent(s, axis, 0) != with_extent(out, axis, 0)) {
        c.fail("input " + std::to_string(i),
               "shape " + shape_string(s) + " does not concatenate with " +
                   shape_string(c.input_shape(0)) + " along axis " +
                   std::to_string(axis));
      }
      out[axis] += s[axis];
    }
    return Shapes{out};
  };
  concat_def.bind = [](const Node& node) {
    const int64_t axis = node_axis(node, node.output_shapes[0]);
    return ComputeFn([axis](KernelContext& c) {
      Tensor& y = c.output(0);
      int64_t offset = 0;
      for (int i = 0; i < c.num_inputs(); ++i) {
        const int64_t n = c.input(i).shape()[axis];
        copy_planes(c.input(i), 0, y, offset, n, axis);
        offset += n;
      }
    });
  };
  concat_def.gradient = [](const GradientContext& c) {
    const int64_t axis = node_axis(c.node(), c.output(0).shape());
    Values grads;
    int64_t offset = 0;
    for (int i = 0; i < c.num_inputs(); ++i) {
      const int64_t n = c.input(i).shape()[axis];
      grads.push_back(slice(c.grad(), axis, offset, offset + n));
      offset += n;
    }
    return grads;
  };
  concat_def.tangent = linear_tangent;
  register_op(std::move(concat_def));
}

}  // namespace

void register_shape_ops() {
  register_reshape_op();
  register_slice_op();
  register_slice_add_op();
  register_pad_op();
  register_concat_op();
}

}  // namespace adgraph
