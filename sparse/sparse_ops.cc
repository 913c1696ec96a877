// The sparse ops: shape rules, kernels and derivative rules. The PETSc
// calls are in petsc_engine.cc.
#include <memory>
#include <mutex>

#include "core/core_ops.h"
#include "core/error.h"
#include "core/fields.h"
#include "mpi_ops/collectives.h"
#include "mpi_ops/communicator.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"
#include "sparse/operator_impl.h"

namespace adgraph::sparse {
namespace {

using OperatorPtr = std::shared_ptr<SparseOperator>;

OperatorPtr operator_of(const Node& n) {
  return std::dynamic_pointer_cast<SparseOperator>(n.resource);
}

// A node of `op` on the matrix: its resource and its communicator.
Value sparse_node(const OperatorPtr& a,
                  const std::string& op,
                  std::vector<Value> inputs,
                  nlohmann::json attrs = nlohmann::json::object()) {
  register_sparse_layer();
  NodeOptions options;
  options.resource = a;
  options.comm = a->node_comm();
  Graph& g = inputs[0].graph();
  return g.add_node(op, std::move(inputs), std::move(attrs), options);
}

Value solve_node(const OperatorPtr& a,
                 Value values,
                 Value b,
                 const nlohmann::json& attrs,
                 bool transpose) {
  const bool symmetric = attrs.at("symmetric").get<bool>();
  nlohmann::json node_attrs = attrs;
  node_attrs["for_transpose"] = transpose && symmetric;
  return sparse_node(
      a,
      transpose && !symmetric ? "sparse_solve_transpose" : "sparse_solve",
      {values, b},
      node_attrs);
}

// Checks the node (collectively) and returns output shapes: the shape of
// input `like`, or the matrix's entries when `like` is -1.
Shapes check(const ShapeContext& c, bool entries_in, int like) {
  auto a = operator_of(c.node());
  if (!a) {
    c.fail("pattern",
           "a " + c.node().op_name() +
               " node needs a matrix: build it with sparse::" +
               "matvec/solve/outer (C++), SparseMatrix (Python) or a JSON "
               "\"stencil\"");
  }
  const int64_t rows = a->pattern().local_rows();
  const int64_t entries = a->pattern().local_entries();
  a->check_node(c, {entries_in ? entries : rows, rows});
  if (like < 0) return {Shape{entries}};
  return {c.input_shape(like)};
}

// The kernel of a node of `a`, watched as a communication call, with
// engine errors named after the node.
template <class Body>
BindFn sparse_kernel(Body body) {
  return [body](const Node& n) -> ComputeFn {
    OperatorPtr a = operator_of(n);
    return comm_kernel([a, body](KernelContext& c, Communicator&) {
      try {
        body(c, a->engine());
      } catch (const RunError& e) {
        if (!e.node().empty()) throw;
        throw RunError(e.detail(), c.node().name, c.node().op_name());
      }
    });
  };
}

// op(ȧ, b) + op(a, ḃ) for the bilinear sparse ops. Both terms are built
// whatever is zero, so every rank builds the same communication nodes.
Values sparse_bilinear_tangent(const TangentContext& c) {
  OperatorPtr a = operator_of(c.node());
  const std::string& op = c.node().op_name();
  Value first = sparse_node(a, op, {c.tangent_or_zeros(0), c.input(1)});
  Value second = sparse_node(a, op, {c.input(0), c.tangent_or_zeros(1)});
  return Values{add(first, second)};
}

// The attributes of a solve: SolverOptions' fields, from its table (name,
// type, default, doc; the range and the choices are said in the doc and
// checked by SolverOptions::is_valid in the shape rule, so a node gets the
// table's message), then for_transpose.
std::vector<AttrSpec> solver_attrs() {
  const SolverOptions d;
  std::vector<AttrSpec> specs;
  for (const Field<SolverOptions>& f : SolverOptions::fields()) {
    AttrSpec a;
    a.name = f.name;
    switch (f.type) {
      case FieldType::kBool:
        a.type = AttrType::kBool;
        break;
      case FieldType::kInteger:
        a.type = AttrType::kInt;
        break;
      case FieldType::kReal:
        a.type = AttrType::kFloat;
        break;
      default:
        a.type = AttrType::kString;
        break;
    }
    a.default_value = field_json(f.get(d));
    a.doc = f.doc;
    if (!f.choices.empty()) a.doc += ": " + field_names(f.choices);
    if (!f.range.text().empty()) a.doc += " (" + f.range.text() + ")";
    specs.push_back(std::move(a));
  }
  specs.push_back({"for_transpose",
                   AttrType::kBool,
                   false,
                   "set for a solve with a symmetric A that stands for one "
                   "with Aᵀ (an adjoint's): A's symmetry is checked, once per "
                   "set of values"});
  return specs;
}

OpDef sparse_def(const std::string& name, const std::string& doc) {
  OpDef def = every_rank_op(name, doc);
  def.shapes_differ_by_rank = true;
  return def;
}

void register_matvec(bool transpose) {
  OpDef def = sparse_def(
      transpose ? "sparse_matvec_transpose" : "sparse_matvec",
      transpose ? "y = Aᵀ·x for a distributed sparse A given by its values"
                : "y = A·x for a distributed sparse A given by its values");
  def.inputs = {"values", "x"};
  def.input_docs = {
      "this rank's stored entries of A, one per entry of its rows' pattern "
      "in CSR order",
      "this rank's entries of x (any shape with as many elements as its "
      "rows)"};
  def.output_docs = {transpose ? "this rank's entries of A^T x (x's shape)"
                               : "this rank's entries of A x (x's shape)"};
  def.ranks_doc =
      "Every rank of the matrix's communicator runs it; the entries of x a "
      "rank's rows need from other ranks come from them (none needed: "
      "nothing is sent). Adjoint: the transpose product and sparse_outer.";
  def.shape = [](const ShapeContext& c) { return check(c, true, 1); };
  def.bind = sparse_kernel([transpose](KernelContext& c, SparseEngine& e) {
    e.multiply(c.input(0), c.input(1).data(), c.output(0).data(), transpose);
  });
  // y = A x: x̄ = Aᵀȳ, Ā = ȳ ⊗ x. y = Aᵀx: x̄ = Aȳ, Ā = x ⊗ ȳ.
  def.gradient = [transpose](const GradientContext& c) {
    OperatorPtr a = operator_of(c.node());
    Values out(2);
    if (c.needs_gradient(0)) {
      Value u = transpose ? c.input(1) : c.grad();
      Value v = transpose ? c.grad() : c.input(1);
      out[0] =
          reshape(sparse_node(a, "sparse_outer", {u, v}), c.input(0).shape());
    }
    if (c.needs_gradient(1)) {
      out[1] =
          sparse_node(a,
                      transpose ? "sparse_matvec" : "sparse_matvec_transpose",
                      {c.input(0), c.grad()});
    }
    return out;
  };
  def.tangent = sparse_bilinear_tangent;
  register_op(std::move(def));
}

void register_outer() {
  OpDef def = sparse_def("sparse_outer",
                         "w_k = u_i·v_j for each entry k = (i, j) of the "
                         "matrix's pattern (v gathered from other ranks)");
  def.inputs = {"u", "v"};
  def.input_docs = {"this rank's entries of u (its rows)",
                    "this rank's entries of v (laid out like u)"};
  def.output_docs = {
      "one value per stored entry of this rank's rows, in CSR order: u_i v_j "
      "for entry (i, j)"};
  def.ranks_doc =
      "Every rank of the matrix's communicator runs it; the v_j a rank's "
      "pattern reads from other ranks come from them.";
  def.shape = [](const ShapeContext& c) { return check(c, false, -1); };
  def.bind = sparse_kernel([](KernelContext& c, SparseEngine& e) {
    e.outer(c.input(0).data(), c.input(1).data(), c.output(0).data());
  });
  // ū = W̄·v, v̄ = W̄ᵀ·u (W̄ read as a matrix on the pattern).
  def.gradient = [](const GradientContext& c) {
    OperatorPtr a = operator_of(c.node());
    Values out(2);
    if (c.needs_gradient(0)) {
      out[0] = reshape(sparse_node(a, "sparse_matvec", {c.grad(), c.input(1)}),
                       c.input(0).shape());
    }
    if (c.needs_gradient(1)) {
      out[1] = reshape(
          sparse_node(a, "sparse_matvec_transpose", {c.grad(), c.input(0)}),
          c.input(1).shape());
    }
    return out;
  };
  def.tangent = sparse_bilinear_tangent;
  register_op(std::move(def));
}

// What help() says of sparse_solve (and of sparse_solve_transpose).
void document_solve(OpDef& def, bool transpose) {
  def.input_docs = {
      "this rank's stored entries of A, one per entry of its rows' pattern "
      "in CSR order",
      "this rank's entries of the right-hand side (any shape with as many "
      "elements as its rows)"};
  def.output_docs = {
      transpose ? "this rank's entries of the solution of A^T x = b (b's "
                  "shape)"
                : "this rank's entries of the solution of A x = b (b's "
                  "shape)"};
  def.ranks_doc =
      "Every rank of the matrix's communicator runs it (one PETSc solve "
      "over all of them); a solve that does not converge throws the same "
      "RunError on every rank. Adjoint: a transpose solve.";
}

void register_solve(bool transpose) {
  OpDef def = sparse_def(
      transpose ? "sparse_solve_transpose" : "sparse_solve",
      transpose ? "x = A⁻ᵀ·b by a PETSc Krylov solve (zero initial guess)"
                : "x = A⁻¹·b by a PETSc Krylov solve (zero initial guess)");
  def.inputs = {"values", "b"};
  document_solve(def, transpose);
  def.attrs = solver_attrs();
  def.shape = [](const ShapeContext& c) {
    std::string error;
    const SolverOptions options = SolverOptions::from_attrs(c.node().attrs);
    if (!options.is_valid(&error)) {
      const auto colon = error.find(':');
      c.fail("attribute \"" + error.substr(0, colon) + "\"",
             error.substr(colon + 2));
    }
    Shapes shapes = check(c, true, 1);
    if (options.pc == "mg" && operator_of(c.node())->multigrid().empty()) {
      c.fail("attribute \"pc\"",
             "\"mg\" needs the matrix's multigrid levels: make the "
             "SparseMatrix with prolongations (solvers::patch_prolongations "
             "for the heat problem's patch grid)");
    }
    return shapes;
  };
  def.bind = [transpose](const Node& n) {
    const SolverOptions options = SolverOptions::from_attrs(n.attrs);
    const bool for_transpose =
        n.attrs.contains("for_transpose") && n.attrs.at("for_transpose");
    return sparse_kernel(
        [transpose, options, for_transpose](KernelContext& c, SparseEngine& e) {
          e.solve(options,
                  c.input(0),
                  c.input(1).data(),
                  c.output(0).data(),
                  transpose,
                  for_transpose);
        })(n);
  };
  // x = A⁻¹b: λ = A⁻ᵀx̄, b̄ = λ, Ā = −λ ⊗ x.
  // x = A⁻ᵀb: λ = A⁻¹x̄, b̄ = λ, Ā = −x ⊗ λ.
  def.gradient = [transpose](const GradientContext& c) {
    OperatorPtr a = operator_of(c.node());
    const auto& attrs = c.node().attrs;
    Value lambda =
        reshape(solve_node(a, c.input(0), c.grad(), attrs, !transpose),
                c.input(1).shape());
    Values out(2);
    if (c.needs_gradient(0)) {
      Value u = transpose ? c.output(0) : lambda;
      Value v = transpose ? lambda : c.output(0);
      out[0] = reshape(neg(sparse_node(a, "sparse_outer", {u, v})),
                       c.input(0).shape());
    }
    out[1] = lambda;
    return out;
  };
  // ẋ = A⁻¹(ḃ − Ȧx), and with Aᵀ for the transpose.
  def.tangent = [transpose](const TangentContext& c) {
    OperatorPtr a = operator_of(c.node());
    Value rhs =
        sparse_node(a,
                    transpose ? "sparse_matvec_transpose" : "sparse_matvec",
                    {c.tangent_or_zeros(0), c.output(0)});
    rhs = sub(c.tangent_or_zeros(1), reshape(rhs, c.input(1).shape()));
    return Values{solve_node(a, c.input(0), rhs, c.node().attrs, transpose)};
  };
  register_op(std::move(def));
}

}  // namespace

Value matvec(const SparseMatrix& a, Value values, Value x) {
  return sparse_node(a.shared_operator(), "sparse_matvec", {values, x});
}

Value matvec_transpose(const SparseMatrix& a, Value values, Value y) {
  return sparse_node(
      a.shared_operator(), "sparse_matvec_transpose", {values, y});
}

Value outer(const SparseMatrix& a, Value u, Value v) {
  return sparse_node(a.shared_operator(), "sparse_outer", {u, v});
}

Value solve(const SparseMatrix& a,
            Value values,
            Value b,
            const SolverOptions& options) {
  return sparse_node(
      a.shared_operator(), "sparse_solve", {values, b}, options.to_attrs());
}

Value solve_transpose(const SparseMatrix& a,
                      Value values,
                      Value b,
                      const SolverOptions& options) {
  return sparse_node(a.shared_operator(),
                     "sparse_solve_transpose",
                     {values, b},
                     options.to_attrs());
}

void register_sparse_ops() {
  register_matvec(false);
  register_matvec(true);
  register_outer();
  register_solve(false);
  register_solve(true);
}

void register_sparse_layer() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_mpi_ops_layer();
    register_sparse_ops();
  });
}

}  // namespace adgraph::sparse
