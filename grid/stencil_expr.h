// The stencil language, stage 1 of 3: the expression tree and the one rule
// per operation for evaluating, printing and differentiating it. Stage 2
// (grid/stencil_codegen.h) emits loops from it; the op (grid/stencil.h)
// builds derivatives from it.
//
// An expression is evaluated at every point i of a patch. Its leaves are
//   in<k>[o0,o1,…]  input k (a grid field) read at point i + o; o may be
//                   omitted (all zero); a scalar input (shape []) is read
//                   without an offset;
//   <number>        a constant (printed with 17 significant digits);
//   inside[o…]      1 where i + o lies in the global grid on every
//                   non-periodic axis, else 0 (the adjoint's mask).
// and its operations are, each a name and its arguments:
//   add sub mul div pow min max           (a, b)
//   neg exp log sin cos tanh abs sqrt     (a)
//   lt le gt ge eq ne                     (a, b): 1 or 0
//   where(c, a, b)                        a where c != 0, else b
// The text form prints exactly this: `add(mul(2,in0),neg(in1[0,1]))`. A
// subexpression that occurs more than once (the same node: a recurrence, a
// derivative reusing its primal) is written once, labelled where it first
// occurs, and by its label after: `add($0=mul(in0,in1),$0)`. Labels are
// numbered from 0 in the order they appear, so the text grows with the
// distinct nodes, not with the tree they stand for.
// Reads past a non-periodic edge of the grid give 0; periodic axes wrap.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace adgraph::grid {

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;
using Offset = std::vector<int64_t>;

struct Expr {
  // "const", "in", "inside", or an operation of the table.
  std::string op;
  double value = 0.0;  // const
  int input = -1;      // in
  Offset offset;       // in, inside (empty: all zero)
  std::vector<ExprPtr> args;
};

// One operation of the language: everything each stage needs, in one
// place. `emit` writes C++ for arguments already written; `eval` computes
// a value (constant folding, tests); `derivative` is the forward-mode rule
// d(op(a…)) from the arguments, their derivatives and the node itself.
struct ExprOp {
  std::string name;
  int arity = 0;
  std::function<std::string(const std::vector<std::string>&)> emit;
  std::function<double(const std::vector<double>&)> eval;
  std::function<ExprPtr(const Expr& e, const std::vector<ExprPtr>& d)>
      derivative;
};

// The operation named `name`; nullptr when there is none.
const ExprOp* find_expr_op(const std::string& name);
// Every operation, in the order of the table.
const std::vector<ExprOp>& expr_ops();

// Leaves.
ExprPtr constant(double v);
ExprPtr read(int input, Offset offset = {});
ExprPtr inside(Offset offset);
// An operation of the table, simplified where it is exact to do so
// (constants folded, x+0, x·1, x·0 → 0, --x). Throws OptionsError for an
// unknown name or a wrong number of arguments.
ExprPtr apply(const std::string& op, std::vector<ExprPtr> args);

// The text form, and back. parse reads text[begin, end) and throws
// OptionsError naming the position in `text` of the first thing it cannot
// read, and quoting `text`.
std::string print(const ExprPtr& e);
ExprPtr parse(const std::string& text,
              std::size_t begin = 0,
              std::size_t end = std::string::npos);

// The expression with every read and inside moved by `by` (added to their
// offsets, missing entries taken as 0); reads of the inputs k with
// (*fixed)[k] true (scalars) stay as they are.
ExprPtr shifted(const ExprPtr& e,
                const Offset& by,
                int ndim,
                const std::vector<bool>* fixed = nullptr);
// Every input index re-numbered through `to` (to[k] is the new index).
ExprPtr renumbered(const ExprPtr& e, const std::vector<int>& to);

// A read of one input at one offset, as a key (offset padded to ndim).
struct ReadKey {
  int input;
  Offset offset;
  friend bool operator<(const ReadKey& a, const ReadKey& b) {
    return a.input != b.input ? a.input < b.input : a.offset < b.offset;
  }
};
// The distinct reads of `e`, sorted by input then offset.
std::vector<ReadKey> reads_of(const ExprPtr& e, int ndim);
// The most entries any offset of `e` has as written (0 for none).
int longest_offset(const ExprPtr& e);
// Every inside[] offset of `e`, padded to ndim.
std::vector<Offset> insides_of(const ExprPtr& e, int ndim);

// Forward mode: the derivative of `e` when each read r changes by
// seed(r) (nullptr: does not change). Used for ∂e/∂r (a seed of 1 on one
// read) and for tangents (a seed reading the tangent's input).
ExprPtr derivative(const ExprPtr& e,
                   const std::function<ExprPtr(const ReadKey&)>& seed,
                   int ndim);

// Evaluates `e` at one point: reads come from `value_of` (nullptr leaves
// are errors), inside[] from `inside_of`. For tests and folding.
double evaluate(const ExprPtr& e,
                const std::function<double(const ReadKey&)>& value_of,
                const std::function<bool(const Offset&)>& inside_of,
                int ndim);

bool is_const(const ExprPtr& e, double v);

}  // namespace adgraph::grid
