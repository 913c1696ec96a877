// The stencil op's kernel: halos (ghosts only), then the compiled loop nest
// over the patch in one call (grid/stencil_codegen.h).
#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/error.h"
#include "grid/box.h"
#include "grid/stencil_codegen.h"
#include "grid/stencil_impl.h"
#include "mpi_ops/communicator.h"

namespace adgraph::grid::detail {
namespace {

using Fail = std::function<void(const std::string&, const std::string&)>;

// The field a message about input i names: its number in the expression
// and the name of the node that made it (a Value the user made, or one
// the gradient made of theirs).
std::string input_field(int i, const std::vector<std::string>& names) {
  std::string f = "input in" + std::to_string(i);
  if (i < static_cast<int>(names.size()) && !names[i].empty())
    f += " (\"" + names[i] + "\")";
  return f;
}

// Every read's input exists, its offset fits the grid, scalars are read
// without an offset; returns the widths of each input's halo.
void check_reads(const StencilPlan& p,
                 const std::vector<Shape>& shapes,
                 const std::vector<std::string>& names,
                 const Fail& fail) {
  const int nd = p.layout.ndim();
  if (longest_offset(p.expr) > nd) {
    fail("attribute \"expr\"",
         "an offset of " + std::to_string(longest_offset(p.expr)) +
             " entries on a " + std::to_string(nd) + "-D grid");
  }
  for (const ReadKey& r : reads_of(p.expr, nd)) {
    if (r.input < 0 || r.input >= static_cast<int>(shapes.size())) {
      fail("attribute \"expr\"",
           "reads in" + std::to_string(r.input) + " but the node has " +
               std::to_string(shapes.size()) + " inputs");
    }
    const bool zero = std::all_of(
        r.offset.begin(), r.offset.end(), [](int64_t o) { return o == 0; });
    if (shapes[r.input].empty() && !zero)
      fail(input_field(r.input, names), "a scalar read at an offset");
  }
}

}  // namespace

std::vector<ExprPtr> parse_outputs(const std::string& text) {
  std::vector<ExprPtr> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t end = text.find(';', start);
    out.push_back(parse(text, start, end));
    if (end == std::string::npos) return out;
    start = end + 1;
  }
}

namespace {

// The per-output attributes "sum_batch" and "init", checked.
void plan_outputs(StencilPlan& p,
                  const nlohmann::json& attrs,
                  int num_inputs,
                  const Fail& fail) {
  const std::size_t n = p.outputs.size();
  std::vector<int64_t> sum = attrs.value("sum_batch", std::vector<int64_t>{});
  std::vector<int64_t> init = attrs.value("init", std::vector<int64_t>{});
  if (sum.empty()) sum.assign(n, 0);
  if (init.empty()) init.assign(n, -1);
  if (sum.size() != n)
    fail("attribute \"sum_batch\"",
         std::to_string(sum.size()) + " entries for " + std::to_string(n) +
             " outputs");
  if (init.size() != n)
    fail("attribute \"init\"",
         std::to_string(init.size()) + " entries for " + std::to_string(n) +
             " outputs");
  for (std::size_t m = 0; m < n; ++m) {
    if (init[m] < -1 || init[m] >= num_inputs)
      fail("attribute \"init\"",
           "output " + std::to_string(m) + " starts from input " +
               std::to_string(init[m]) + " of " + std::to_string(num_inputs));
    p.summed.push_back(sum[m] != 0);
    p.init.push_back(static_cast<int>(init[m]));
  }
}

// The attribute "prefetch": input indices, each a field input.
void plan_prefetch(StencilPlan& p, const nlohmann::json& attrs) {
  const std::vector<int64_t> which =
      attrs.value("prefetch", std::vector<int64_t>{});
  for (int64_t k : which) {
    if (k < 0 || k >= static_cast<int64_t>(p.inputs.size()) ||
        p.inputs[k].scalar)
      continue;  // checked by check_prefetch
    p.inputs[k].prefetch = true;
  }
}

void check_prefetch(const nlohmann::json& attrs,
                    const std::vector<Shape>& shapes,
                    const Fail& fail) {
  for (int64_t k : attrs.value("prefetch", std::vector<int64_t>{})) {
    if (k < 0 || k >= static_cast<int64_t>(shapes.size()))
      fail("attribute \"prefetch\"",
           "input " + std::to_string(k) + " of " +
               std::to_string(shapes.size()));
    else if (shapes[k].empty())
      fail("attribute \"prefetch\"",
           "input " + std::to_string(k) + " is a scalar, not a field");
  }
}

}  // namespace

StencilPlan plan_stencil(const nlohmann::json& attrs,
                         const std::vector<Shape>& shapes,
                         const std::vector<std::string>& names,
                         int comm_size,
                         int rank,
                         const Fail& fail) {
  StencilPlan p;
  nlohmann::json a = attrs;
  if (a["periodic"].empty())
    a["periodic"] = std::vector<int64_t>(a["grid_shape"].size(), 0);
  p.layout = GridLayout::from_attrs(a);
  (void)comm_size;
  try {
    p.outputs = parse_outputs(attrs.at("expr").get<std::string>());
  } catch (const Error& e) {
    fail("attribute \"expr\"", e.detail());
  }
  plan_outputs(p, attrs, static_cast<int>(shapes.size()), fail);
  p.expr = tuple_of(p.outputs, p.init);
  check_reads(p, shapes, names, fail);
  check_prefetch(attrs, shapes, fail);
  const int nd = p.layout.ndim();
  const Shape patch = p.layout.local_shape(rank);
  bool have_batch = false;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    StencilInput in;
    in.scalar = shapes[i].empty();
    in.halo.width.assign(nd, 0);
    in.halo.corners = false;  // until a read moves on two axes (below)
    if (!in.scalar) {
      const Shape& s = shapes[i];
      if (static_cast<int>(s.size()) < nd ||
          Shape(s.end() - nd, s.end()) != patch) {
        fail(input_field(static_cast<int>(i), names),
             "shape " + shape_string(s) +
                 " does not end in this rank's patch " + shape_string(patch) +
                 " of the grid " + shape_string(p.layout.shape));
      }
      const Shape batch(s.begin(), s.end() - nd);
      in.batched = !batch.empty();
      if (in.batched && have_batch && batch != p.batch) {
        fail(input_field(static_cast<int>(i), names),
             "batch axes " + shape_string(batch) +
                 " differ from another input's " + shape_string(p.batch));
      }
      if (in.batched) {
        p.batch = batch;
        have_batch = true;
      }
    }
    p.inputs.push_back(in);
  }
  // Halo widths: the largest |offset| per axis; corners when a read moves
  // on two axes at once.
  for (const ReadKey& r : reads_of(p.expr, nd)) {
    HaloSpec& h = p.inputs[r.input].halo;
    int moved = 0;
    for (int ax = 0; ax < nd; ++ax) {
      h.width[ax] = std::max<int64_t>(h.width[ax], std::abs(r.offset[ax]));
      moved += r.offset[ax] != 0;
    }
    h.corners = h.corners || moved > 1;
  }
  for (std::size_t i = 0; i < p.inputs.size(); ++i) {
    if (!p.inputs[i].exchanged()) continue;
    const std::string why = halo_problem(p.layout, p.inputs[i].halo);
    if (!why.empty()) fail(input_field(static_cast<int>(i), names), why);
  }
  plan_prefetch(p, attrs);
  return p;
}

namespace {

// The loop nest's view of one input or the output: appends its strides
// [batch, spatial…] to `strides` and returns its data at the owned origin.
const double* append_operand(const Tensor& t,
                             int nd,
                             const HaloSpec* halo,
                             std::vector<int64_t>& strides) {
  const double* data = t.data();
  if (t.rank() == 0) {
    strides.insert(strides.end(), nd + 1, 0);
    return data;
  }
  const Shape& shape = t.shape();
  const int nb = t.rank() - nd;
  const std::size_t at = strides.size();
  strides.resize(at + nd + 1);
  int64_t step = 1;
  for (int a = nd - 1; a >= 0; --a) {
    strides[at + 1 + a] = step;
    if (halo != nullptr) data += halo->width[a] * step;
    step *= shape[nb + a];
  }
  strides[at] = nb > 0 ? step : 0;  // the spatial size
  return data;
}

// The box of points where every inside[] of `expr` holds: per non-periodic
// axis, the local indices i with 0 <= g + i + o < N for every offset o.
struct Region {
  std::vector<int64_t> lo, hi;
};

Region all_inside(const StencilPlan& p,
                  const std::vector<Offset>& insides,
                  const Shape& gpos,
                  const Region& box) {
  Region r = box;
  const int nd = p.layout.ndim();
  for (const Offset& o : insides) {
    for (int a = 0; a < nd; ++a) {
      if (p.layout.periodic[a]) continue;
      r.lo[a + 1] = std::max(r.lo[a + 1], -gpos[a] - o[a]);
      r.hi[a + 1] = std::min(r.hi[a + 1], p.layout.shape[a] - gpos[a] - o[a]);
    }
  }
  for (std::size_t a = 0; a < r.lo.size(); ++a) {
    r.lo[a] = std::min(r.lo[a], box.hi[a]);
    r.hi[a] = std::clamp(r.hi[a], r.lo[a], box.hi[a]);
  }
  return r;
}

// The depth, per spatial axis, within which a point's reads may leave the
// patch (the widest halo) or an inside[] may fail (the widest offset).
std::vector<int64_t> edge_depth(const StencilPlan& p,
                                const std::vector<Offset>& insides) {
  const int nd = p.layout.ndim();
  std::vector<int64_t> w(nd, 0);
  for (const StencilInput& in : p.inputs)
    for (int a = 0; a < nd; ++a) w[a] = std::max(w[a], in.halo.width[a]);
  for (const Offset& o : insides)
    for (int a = 0; a < nd; ++a) w[a] = std::max(w[a], std::abs(o[a]));
  return w;
}

// Each input twice, as the kernel reads it: the tensor itself, and for the
// points whose reads leave the patch the ghosts of its padded copy (only
// the ghosts and what the exchange sends are written: no pass over the
// whole patch).
struct Operands {
  std::vector<const double*> direct, edge;
  std::vector<int64_t> direct_strides, padded_strides;
  std::vector<int64_t> sizes;    // of the inputs themselves
  std::vector<Tensor> padded;    // the padded copies, while the kernel runs
  std::vector<int64_t> tickets;  // their exchanges in flight (0: none)
  std::vector<double*> out;
  std::vector<int64_t> out_strides;
  void clear() {
    direct.clear();
    edge.clear();
    direct_strides.clear();
    padded_strides.clear();
    sizes.clear();
    out.clear();
    out_strides.clear();
  }
};

// A box of points and its rows' middle (KernelArgs lo, hi, mid).
struct Part {
  Region box;
  int64_t mid[2] = {0, 0};
};

// What a call needs of the rank's place on the grid, the same at every
// call: its patch and global offset, the box of points and each row's
// middle (mid). Overlapped, the box in two sets of parts: `inner`, where
// every read stays in the patch (computed while the messages travel), and
// `outer`, the rest (after they land): the slabs within the edge depth of
// each outer axis (whole rows), then the inner rows' heads and tails.
struct Frame {
  int rank = -1;
  Shape patch, gpos;
  Part whole;
  std::vector<Part> inner, outer;
  int64_t ring = 0;  // ring_doubles on the patch
};

// The inner and outer parts of `whole` (Frame): along an axis with
// messages (`messages[a]`) the inner points are those beyond the edge
// depth, along one without (its ghosts filled as the exchange starts)
// every point is inner.
void split_parts(const Part& whole,
                 const std::vector<int64_t>& depth,
                 const std::vector<bool>& messages,
                 std::vector<Part>& inner,
                 std::vector<Part>& outer) {
  const int nd = static_cast<int>(depth.size());
  std::vector<int64_t> ilo(nd, 0),
      ihi(whole.box.hi.begin() + 1, whole.box.hi.end());
  for (int a = 0; a < nd; ++a) {
    if (!messages[a]) continue;
    ilo[a] = std::min(depth[a], ihi[a]);
    ihi[a] = std::max(ilo[a], ihi[a] - depth[a]);
  }
  auto add = [](std::vector<Part>& to, Part p) {
    for (std::size_t a = 0; a < p.box.lo.size(); ++a)
      if (p.box.lo[a] >= p.box.hi[a]) return;
    to.push_back(std::move(p));
  };
  Part in = whole;
  for (int a = 0; a + 1 < nd; ++a) {
    in.box.lo[a + 1] = ilo[a];
    in.box.hi[a + 1] = ihi[a];
  }
  // Outer slabs: axis a's low or high layers, the axes before it over
  // their inner points, those after it whole.
  for (int a = 0; a + 1 < nd; ++a) {
    if (!messages[a]) continue;
    for (int side = 0; side < 2; ++side) {
      Part slab = whole;
      for (int b = 0; b < a; ++b) {
        slab.box.lo[b + 1] = ilo[b];
        slab.box.hi[b + 1] = ihi[b];
      }
      slab.box.lo[a + 1] = side == 0 ? 0 : ihi[a];
      slab.box.hi[a + 1] = side == 0 ? ilo[a] : whole.box.hi[a + 1];
      add(outer, std::move(slab));
    }
  }
  if (!messages[nd - 1]) {
    add(inner, std::move(in));
    return;
  }
  // Messages along the rows too: the inner rows' middle first, then their
  // heads [lo, m0) and tails [m1, hi), each with an empty middle at its
  // own end (checked point by point).
  const int64_t m0 = whole.mid[0], m1 = whole.mid[1];
  Part head = in, tail = in;
  in.box.lo[nd] = m0;
  in.box.hi[nd] = m1;
  head.box.hi[nd] = m0;
  head.mid[0] = head.mid[1] = m0;
  tail.box.lo[nd] = m1;
  tail.mid[0] = tail.mid[1] = m1;
  add(inner, std::move(in));
  add(outer, std::move(head));
  add(outer, std::move(tail));
}

class Runner {
 public:
  explicit Runner(StencilPlan plan)
      : p_(std::move(plan)), overlap_(p_.overlapped()) {
    StencilSource s;
    s.outputs = p_.outputs;
    s.summed = p_.summed;
    s.init = p_.init;
    s.ndim = p_.layout.ndim();
    s.num_inputs = static_cast<int>(p_.inputs.size());
    for (const StencilInput& in : p_.inputs) {
      s.scalar.push_back(in.scalar);
      s.prefetch.push_back(in.prefetch);
    }
    s.periodic = p_.layout.periodic;
    s.shared = shares_terms(s.ndim);
    kernel_ = compile_stencil(s);
    source_ = std::move(s);
    constants_ = kernel_constants(p_.outputs);
    insides_ = insides_of(p_.expr, p_.layout.ndim());
    depth_ = edge_depth(p_, insides_);
  }

  // The per-call work is the halos and the loop nest: the frame is made at
  // the first call on a rank, and the argument arrays are a thread's
  // scratch, reused (a step of a 64² heat loop spent a third of its time in
  // walking the expression and in small allocations before).
  // Overlapped (StencilPlan::overlapped), every input's exchange starts,
  // the inner parts run, the exchanges finish in the order they started,
  // and the outer parts run: each point is computed once, by the same
  // code, so the bits are those of one call over the whole box.
  void run(KernelContext& c, Communicator& comm) {
    const int nd = p_.layout.ndim();
    const int n = static_cast<int>(p_.inputs.size());
    thread_local Operands ops;
    ops.clear();
    ops.padded.resize(std::max<std::size_t>(ops.padded.size(), n));
    ops.tickets.assign(n, 0);
    for (int k = 0; k < n; ++k) {
      const StencilInput& in = p_.inputs[k];
      const Tensor& x = c.input(k);
      ops.direct.push_back(append_operand(x, nd, nullptr, ops.direct_strides));
      ops.sizes.push_back(x.size());
      if (in.exchanged()) {
        const Shape ps = padded_shape(x.shape(), in.halo);
        ops.padded[k] = Tensor::adopt(ps, comm.take_spare(num_elements(ps)));
        if (overlap_)
          ops.tickets[k] =
              start_exchange_into(comm, p_.layout, in.halo, x, ops.padded[k]);
        else
          exchange(comm, p_.layout, in.halo, x, ops.padded[k], true);
        ops.edge.push_back(
            append_operand(ops.padded[k], nd, &in.halo, ops.padded_strides));
      } else {
        ops.edge.push_back(append_operand(x, nd, nullptr, ops.padded_strides));
      }
    }
    for (std::size_t m = 0; m < p_.outputs.size(); ++m) {
      Tensor& y = c.output(static_cast<int>(m));
      ops.out.push_back(y.data());
      append_operand(y, nd, nullptr, ops.out_strides);
    }
    const Frame& f = frame(comm.rank());
    double* const scratch = ring(f.ring);
    if (overlap_) {
      for (const Part& part : f.inner) loop(ops, f, part, scratch);
      for (int k = 0; k < n; ++k)
        if (ops.tickets[k] != 0) finish_exchange_into(comm, ops.tickets[k]);
      for (const Part& part : f.outer) loop(ops, f, part, scratch);
    } else {
      loop(ops, f, f.whole, scratch);
    }
    for (int k = 0; k < n; ++k)
      if (p_.inputs[k].exchanged())
        comm.keep_spare(std::move(ops.padded[k]).take_storage());
  }

 private:
  // The rank's frame, made at its first call (a node runs on one rank of
  // its communicator; the lock is for sessions running it concurrently).
  const Frame& frame(int rank) {
    std::lock_guard<std::mutex> lock(frame_mutex_);
    if (frame_.rank == rank) return frame_;
    const int nd = p_.layout.ndim();
    Frame f;
    f.rank = rank;
    f.patch = p_.layout.local_shape(rank);
    f.gpos = p_.layout.offset(rank);
    Region& box = f.whole.box;
    box.lo.assign(nd + 1, 0);
    box.hi.push_back(std::max<int64_t>(1, num_elements(p_.batch)));
    box.hi.insert(box.hi.end(), f.patch.begin(), f.patch.end());
    const Region inner = all_inside(p_, insides_, f.gpos, box);
    const int64_t n = f.patch[nd - 1];
    f.whole.mid[0] = std::min(std::max(inner.lo[nd], depth_[nd - 1]), n);
    f.whole.mid[1] = std::clamp(
        std::min(inner.hi[nd], n - depth_[nd - 1]), f.whole.mid[0], n);
    if (overlap_) {
      std::vector<bool> messages(nd);
      for (int a = 0; a < nd; ++a)
        messages[a] = messages_along(p_.layout, rank, a);
      split_parts(f.whole, depth_, messages, f.inner, f.outer);
    }
    f.ring = ring_doubles(source_, f.patch);
    frame_ = std::move(f);
    return frame_;
  }

  // One call over the whole patch: every row's middle (mid) is where the
  // innermost reads stay in the patch and the innermost part of every
  // inside[] holds; the rest of the row is checked point by point. Batch
  // outermost, so a summed batch adds in batch order at every point.
  // The thread's ring scratch (KernelArgs::ring) of n doubles; null for
  // none.
  static double* ring(int64_t n) {
    thread_local std::vector<double> scratch;
    if (n == 0) return nullptr;
    if (static_cast<int64_t>(scratch.size()) < n) scratch.resize(n);
    return scratch.data();
  }

  void loop(const Operands& ops,
            const Frame& f,
            const Part& part,
            double* ring) {
    const KernelArgs args{ops.direct.data(),
                          ops.direct_strides.data(),
                          ops.edge.data(),
                          ops.padded_strides.data(),
                          ops.out.data(),
                          ops.out_strides.data(),
                          part.box.lo.data(),
                          part.box.hi.data(),
                          part.mid,
                          f.patch.data(),
                          f.gpos.data(),
                          p_.layout.shape.data(),
                          constants_.data(),
                          ops.sizes.data(),
                          ring};
    kernel_.run(&args);
  }

  StencilPlan p_;
  bool overlap_ = false;  // p_.overlapped(), once
  StencilSource source_;
  CompiledStencil kernel_;
  std::vector<double> constants_;
  std::vector<Offset> insides_;
  std::vector<int64_t> depth_;
  std::mutex frame_mutex_;
  Frame frame_;
};

}  // namespace

ComputeFn stencil_kernel(StencilPlan plan) {
  auto runner = std::make_shared<Runner>(std::move(plan));
  return comm_kernel(
      [runner](KernelContext& c, Communicator& comm) { runner->run(c, comm); });
}

}  // namespace adgraph::grid::detail
