// The stencil language, stage 2 of 3: one expression becomes a C++ loop
// nest, compiled once into a shared object and loaded.
//
// Mechanism. The kernel source is written for the expression, the number
// of spatial axes and which of them are periodic, then compiled by the
// compiler that built the library with the library's rounding rules
// (-O3 -ffp-contract=off, -march=native when the library has it, never
// -ffast-math), so the same expression rounds as a hand-written loop in
// the library would. Each point's value is the expression evaluated in the
// order it is written; points are independent, so the result does not
// depend on how the loops are split or vectorised. A subexpression that
// occurs more than once (by structure: a derivative repeats its primal's
// parts, a derivative of a derivative repeats them again) is computed once
// per point into a local, so the source grows with the distinct
// subexpressions, not with the printed tree; the values are the same.
//
// Cache. The shared object is named by a 64-bit FNV-1a hash of the source
// text (which names the expression's numbers, not their values), the
// compiler, its version, its flags and, with -march=native, the
// processor's model and flags; it is kept in the kernel folder:
// $ADGRAPH_KERNEL_CACHE, else $XDG_CACHE_HOME/adgraph/kernels, else
// ~/.cache/adgraph/kernels. A process compiles a kernel at most once (an
// in-process table), and processes share the folder (a lock file per
// kernel: ranks that need the same kernel wait for the first one's
// compile, then load its object). The source stays beside the object
// (stencil_<hash>.cc beside stencil_<hash>.so and its .lock), so a kernel
// can be read. Numbers are compared by bit pattern: an expression whose
// numbers coincide differently (4 → 2 beside another 2) is another kernel.
// $ADGRAPH_CXX names another compiler. A missing compiler or a failed compile
// throws adgraph::Error with the command, the compiler's output and the
// source's path.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grid/stencil_expr.h"

namespace adgraph::grid {

// The loop nest's arguments (one struct, as the generated source declares
// it). Axis 0 of every stride and box array is the batch axis (all leading
// axes as one), then the spatial axes; the last spatial stride of every
// field is 1.
//   in[k]       input k at its point (batch 0, spatial 0…); a scalar
//               input's one value
//   st          [inputs][1 + ndim] element strides (batch stride 0 for a
//               field without batch axes)
//   pin, pst    the same for the padded copies, at their owned origin
//               (an input without a halo: in and st again); only their
//               ghosts are read
//   out[m], ost output m likewise ([outputs][1 + ndim]; batch stride 0
//               for an output summed over the batch)
//   lo, hi      the box of points to compute, [1 + ndim] each
//   mid         [2]: the innermost indices [mid[0], mid[1]) where every
//               read stays in the patch along the innermost axis and the
//               innermost part of every inside[] holds (lo ≤ mid[0] ≤
//               mid[1] ≤ hi on that axis)
//   ext         the patch's extents [ndim]
//   gpos, gext  the global index of local point 0 and the global extents
//   k           the expressions' numbers (kernel_constants): the source
//               names them k[0], k[1], …, so expressions that differ only
//               in their numbers (dt, h) share one compiled kernel
//   size[k]     the elements of input k from in[k] on (a row whose reads
//               stay within them runs its vector loop over the whole row)
// Each row (a point of the outer axes) is one pass: its middle is one
// vectorised loop over row pointers chosen once per row; then its head
// and tail (outside mid) test every read and inside[] point by point,
// reading a point outside the patch from the padded copy. Every output is
// written in the same loop nest (one pass over memory). An output summed
// over the batch is written at batch entry lo[0] and added to at the later
// ones, in batch order; an output with an initial input starts from it:
// y = init + value (then += value), and may be that input's own buffer
// (the stencil op's in_place_of): every point reads init before it is
// written; the whole-row path saves init at the row's ends before its
// vector loop writes them.
//   ring        scratch of ring_doubles(s, ext) doubles, any contents (null
//               when that is 0): rows of the shared terms below
// Shared terms (grid/stencil_shared.h). A pointwise subexpression read at
// several offsets (the gather adjoint's c·κ[o]·ȳ[o] at each neighbour o)
// is computed once per point, a row at a time ahead of the rows that read
// it, into a ring of rows, and read there: the same operations on the
// same values, so the same bits. An input then read only at the point
// itself may be the buffer of an output (out[m] == in[j]; the stencil
// op's in_place_of offers it when the input dies at the node): every
// point reads it before it is written, and rows whose ends the scalar
// code recomputes after the vector loop then run the middle and the ends
// apart. The built-in heat adjoint's design (rows of Z = κ·ȳ, ū written
// over ȳ). In stencil_bench (session 45, interleaved processes, medians
// of 5) the gradients were 2 % (heat2d), 3 % (wave2d) and 8 %
// (diffusion3d) faster than without sharing; in session 49 the 2-D ones
// were slower with it, and the stencil op shares in 3-D only
// (detail::shares_terms, grid/stencil_impl.h).
struct KernelArgs {
  const double* const* in;
  const int64_t* st;
  const double* const* pin;
  const int64_t* pst;
  double* const* out;
  const int64_t* ost;
  const int64_t* lo;
  const int64_t* hi;
  const int64_t* mid;
  const int64_t* ext;
  const int64_t* gpos;
  const int64_t* gext;
  const double* k;
  const int64_t* size;
  double* ring;
};
using KernelFn = void (*)(const KernelArgs*);

struct CompiledStencil {
  KernelFn run = nullptr;
  std::string source_path;
};

struct StencilSource {
  // One expression per output, and per output whether it is summed over
  // the batch and the input it starts from (-1: none).
  std::vector<ExprPtr> outputs;
  std::vector<bool> summed;
  std::vector<int> init;
  int ndim = 0;
  int num_inputs = 0;
  std::vector<bool> scalar;    // per input: a scalar, read once
  std::vector<bool> prefetch;  // per input: prefetch its rows (empty: none)
  std::vector<bool> periodic;  // per spatial axis
  // Whether the middle may be written with explicit vectors (where the
  // expression allows: arithmetic, and where on inside[]); false: the
  // scalar loop everywhere (the same bits; for tests).
  bool vectors = true;
  // Whether terms read at several offsets are shared (2-D and 3-D; false:
  // each read computes its own, for tests: the same bits).
  bool shared = true;
};

// The C++ source of the kernel.
std::string kernel_source(const StencilSource& s);
// The numbers of the outputs' expressions in the order the kernel reads
// them (k[i]): each distinct bit pattern once, depth first, output by
// output.
std::vector<double> kernel_constants(const std::vector<ExprPtr>& outputs);
// The outputs and their initial inputs' reads as one tree, for the
// functions of grid/stencil_expr.h that walk an expression (reads_of,
// insides_of): a node "tuple" (no operation of the language).
ExprPtr tuple_of(const std::vector<ExprPtr>& outputs,
                 const std::vector<int>& init);

// The doubles of ring scratch the kernel of `s` needs on a patch of
// extents `ext` (0: none).
int64_t ring_doubles(const StencilSource& s, const std::vector<int64_t>& ext);

// Compiles (or finds in the cache) and loads the kernels of `s`. Thread
// safe. Throws adgraph::Error as described above.
CompiledStencil compile_stencil(const StencilSource& s);

// What compile_stencil has done in this process: kernels it compiled,
// kernels it loaded into the process (those it compiled included), and the
// seconds this process spent compiling (not waiting for another process's
// compile of the same kernel).
struct KernelCacheStats {
  int64_t compiled = 0;
  int64_t loaded = 0;
  double compile_seconds = 0.0;
};
KernelCacheStats kernel_cache_stats();
// The kernel folder in use (created on first use).
std::string kernel_cache_folder();

}  // namespace adgraph::grid
