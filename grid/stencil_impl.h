// The stencil op's parts (internal to grid/): what a node's attributes and
// input shapes say about its inputs, read once by the shape rule and by
// bind, and the kernel that runs it (grid/stencil_kernel.cc).
#pragma once

#include <string>
#include <vector>

#include "core/op.h"
#include "grid/exchange.h"
#include "grid/grid.h"
#include "grid/stencil_expr.h"

namespace adgraph::grid::detail {

struct StencilInput {
  bool scalar = false;    // shape [], read once
  bool batched = false;   // has the batch axes
  HaloSpec halo;          // widths 0 everywhere: no exchange
  bool prefetch = false;  // its rows are prefetched ("prefetch")
  bool exchanged() const {
    for (int64_t w : halo.width)
      if (w != 0) return true;
    return false;
  }
};

// A stencil node, understood. Attributes: "expr" holds one expression per
// output, separated by ';'; "sum_batch" one 0/1 per output (empty: none
// summed), "init" one input index per output (-1 or empty: none),
// "prefetch" the field inputs whose rows the kernel prefetches (empty:
// none).
struct StencilPlan {
  GridLayout layout;
  std::vector<ExprPtr> outputs;
  std::vector<bool> summed;
  std::vector<int> init;
  ExprPtr expr;  // tuple_of(outputs, init): every read and inside[]
  std::vector<StencilInput> inputs;
  Shape batch;  // of the batched inputs (empty: none)
  // Whether the kernel overlaps its halo messages with work: on more than
  // one process, with an input to exchange. Every input's exchange starts
  // (their messages travel together), the points whose reads stay in the
  // patch are computed, the exchanges finish, then the rest. No output is
  // then written over an input a shared term reads (the second part's rows
  // of terms would read points the first part wrote): stencil_in_place
  // leaves those out.
  bool overlapped() const {
    int processes = 1;
    for (int q : layout.procs) processes *= q;
    bool any = false;
    for (const StencilInput& in : inputs) any = any || in.exchanged();
    return processes > 1 && any;
  }
  // Output m's shape on a rank with this patch.
  Shape output_shape(int m, const Shape& patch) const {
    Shape out = summed[m] ? Shape{} : batch;
    out.insert(out.end(), patch.begin(), patch.end());
    return out;
  }
};

// Whether the op's kernels share terms read at several offsets
// (grid/stencil_codegen.h, "Shared terms"): in 3-D, not in 2-D. In 2-D
// the kernel without them, ū written apart from ȳ, was the faster on the
// EPYC of 2026-11-29 (session 49): the heat adjoint's kernel alone 0.82×
// the built-in row pass against 1.15–1.16× with them (stencil_kernel_ab
// --rounds 21, two runs); stencil_bench heat2d gradient 1.02–1.07× the
// built-in against 1.09–1.28×, wave2d 0.67–0.68× the hand-written against
// 0.72–0.75× (interleaved processes). diffusion3d did not separate
// (0.47–0.56 against 0.43–0.54), and session 45 had measured sharing 8 %
// faster there.
inline bool shares_terms(int ndim) { return ndim >= 3; }

// The expressions of "expr", one per output, separated by ';' (messages
// give positions in the whole text).
std::vector<ExprPtr> parse_outputs(const std::string& text);

// Reads and checks a node's attributes against its input shapes, failing
// through `fail(field, detail)`; `rank` is this process's on the grid. A
// message about an input names it by its number in the expression and
// by `input_names` (the names of the nodes that made the inputs; may be
// empty).
StencilPlan plan_stencil(
    const nlohmann::json& attrs,
    const std::vector<Shape>& input_shapes,
    const std::vector<std::string>& input_names,
    int comm_size,
    int rank,
    const std::function<void(const std::string&, const std::string&)>& fail);

// The kernel of a node with this plan (compiles its loop nest).
ComputeFn stencil_kernel(StencilPlan plan);

}  // namespace adgraph::grid::detail
