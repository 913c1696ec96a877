// Fused stencil kernels on a grid: a time step written as one expression
// runs as one node, one loop nest (grid/stencil_codegen.h), with its
// adjoint and tangent generated from the same expression.
//
//   grid::Grid g({nz, nx}, {2, 2}, {false, false}, world);
//   auto U = grid::field(u), Um = grid::field(u_prev), C = grid::field(c2);
//   auto lap = U.shift({-1, 0}) + U.shift({1, 0}) + U.shift({0, -1}) +
//              U.shift({0, 1}) - 4.0 * U;
//   Value u_next = grid::stencil(g, 2.0 * U - Um + C * lap);
//
// Semantics. The node computes, at every point i of this rank's patch,
// the expression with each field read at i + offset in the *global* field:
// reads that fall in a neighbour's patch come from it (the node exchanges
// halos as wide as the largest offset, with corners when a read moves on
// two axes), reads past a non-periodic edge of the grid give 0, periodic
// axes wrap. Fields are [batch…, patch…] tensors; a field without the
// batch axes is broadcast over them. Scalars are tensors of shape [].
//
// Derivatives (the loss is the sum of per-rank losses). For a field
// input u read at offsets s_k, with y = f(reads):
//   ū[j] = Σ_k inside(j − s_k) · (ȳ · ∂f/∂r_k)(j − s_k)      (gather form)
// summed in the order of the offsets. gradients() builds one stencil node
// for the whole node's adjoint: one output per field input (for the wave
// step, ū, ū⁻ and c̄ in one loop nest), over ȳ and the inputs (it exchanges
// its own, wider halos), each output starting from the cotangent already
// summed for its input by later users (no separate add pass). Every point
// of ū is written once by the rank that owns it, from the same terms in the
// same order on every decomposition, so loss and gradient are bitwise the
// same whatever the process grid. A field without batch axes sums its
// terms over the batch (in batch order); a scalar's cotangent is the exact
// sum of its terms over this rank's points. The tangent is the stencil
// Σ_k ∂f/∂r_k · ṙ_k, one node for all outputs; both are stencils again, so
// Hessian-vector products work through them.
//
// A node may have several outputs (the derivative builders make such
// nodes): the attribute "expr" holds one expression per output separated by
// ';', "sum_batch" one 0/1 per output, "init" the input each output starts
// from (-1: none).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/graph.h"
#include "grid/grid.h"
#include "grid/stencil_expr.h"

namespace adgraph::grid {

// An expression over fields and scalars of one graph: a tree and the
// values its reads refer to (by position). Build it from grid::field
// (fields and scalars) and numbers with the operators and functions below.
class StencilExpr final {
 public:
  StencilExpr(double value);  // NOLINT: numbers mix into expressions
  StencilExpr(ExprPtr tree,
              std::vector<Value> inputs,
              std::shared_ptr<const Grid> grid = nullptr)
      : tree_(std::move(tree)),
        inputs_(std::move(inputs)),
        grid_(std::move(grid)) {}

  const ExprPtr& tree() const { return tree_; }
  const std::vector<Value>& inputs() const { return inputs_; }
  // The grid its fields were read on (field(grid, v)); null when none was
  // named. Expressions of two different grids do not mix, and stencil()
  // refuses an expression of another grid than its own.
  const std::shared_ptr<const Grid>& grid() const { return grid_; }
  // Every read moved by `offset` (one entry per spatial axis, or fewer:
  // the rest 0): f.shift({0, 1}) reads f at i + (0, 1).
  StencilExpr shift(const Offset& offset) const;
  // The text form (grid/stencil_expr.h), inputs numbered by position.
  std::string text() const { return print(tree_); }

 private:
  ExprPtr tree_;
  std::vector<Value> inputs_;
  std::shared_ptr<const Grid> grid_;
};

// An operation of the language over expressions, inputs merged.
StencilExpr stencil_apply(const std::string& op,
                          const std::vector<StencilExpr>& args);

StencilExpr operator+(const StencilExpr& a, const StencilExpr& b);
StencilExpr operator-(const StencilExpr& a, const StencilExpr& b);
StencilExpr operator*(const StencilExpr& a, const StencilExpr& b);
StencilExpr operator/(const StencilExpr& a, const StencilExpr& b);
StencilExpr operator-(const StencilExpr& a);
StencilExpr pow(const StencilExpr& a, const StencilExpr& b);
StencilExpr min(const StencilExpr& a, const StencilExpr& b);
StencilExpr max(const StencilExpr& a, const StencilExpr& b);
StencilExpr exp(const StencilExpr& a);
StencilExpr log(const StencilExpr& a);
StencilExpr sin(const StencilExpr& a);
StencilExpr cos(const StencilExpr& a);
StencilExpr tanh(const StencilExpr& a);
StencilExpr abs(const StencilExpr& a);
StencilExpr sqrt(const StencilExpr& a);
StencilExpr operator<(const StencilExpr& a, const StencilExpr& b);
StencilExpr operator<=(const StencilExpr& a, const StencilExpr& b);
StencilExpr operator>(const StencilExpr& a, const StencilExpr& b);
StencilExpr operator>=(const StencilExpr& a, const StencilExpr& b);
// a where c != 0, else b.
StencilExpr where(const StencilExpr& c,
                  const StencilExpr& a,
                  const StencilExpr& b);

// A field (shape [batch…, patch…]) or a scalar (shape []) read at offset 0;
// with a grid, a field of that grid (StencilExpr::grid).
StencilExpr field(Value v);
StencilExpr field(const Grid& grid, Value v);

// The stencil node of `expr` on `grid`: output [batch…, patch…] (the batch
// of its batched fields; none if no field has one). Throws OptionsError for
// an expression without a field, ShapeError (naming the node and input)
// for a field whose shape does not end in the patch, batches that differ,
// a scalar read at an offset, or an offset wider than the smallest patch.
Value stencil(const Grid& grid,
              const StencilExpr& expr,
              const std::string& name = {});

// The same from the text form and its inputs (what JSON and Python build).
Value stencil(const Grid& grid,
              const std::string& text,
              const std::vector<Value>& inputs,
              const std::string& name = {});

void register_stencil_ops();

}  // namespace adgraph::grid
