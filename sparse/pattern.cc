// The pattern's collective check, the operator's life and SolverOptions.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include "core/error.h"
#include "sparse/operator_impl.h"

namespace adgraph::sparse {
namespace {

const std::vector<std::string> kKsps = {"cg", "gmres", "bcgs", "preonly"};
const std::vector<std::string> kPcs = {
    "none", "jacobi", "bjacobi", "ilu", "gamg", "hypre", "lu", "mg"};

// Every rank's `local` problem agreed on: the one with the smallest key
// (a global row, or a large number for an input), the same text on every
// rank; empty when no rank has one. Collective.
std::string agree_on_problem(CommContext& comm,
                             double key,
                             const std::string& local) {
  const double none = std::numeric_limits<double>::infinity();
  const double mine = local.empty() ? none : key * comm.size() + comm.rank();
  const double first = comm.allreduce_min(mine);
  if (first == none) return {};
  const int owner = static_cast<int>(std::fmod(first, comm.size()));
  return comm.bcast(owner == comm.rank() ? local : std::string(), owner);
}

}  // namespace

const FieldTable<SolverOptions>& SolverOptions::fields() {
  using O = SolverOptions;
  static const FieldTable<O> table = {
      field("ksp", &O::ksp, {}, "Krylov method (preonly with pc lu)", kKsps),
      field("pc", &O::pc, {}, "preconditioner", kPcs),
      field("rtol", &O::rtol, Range::open(0, 1), "relative residual tolerance"),
      field("atol",
            &O::atol,
            Range::at_least(0).finite_only(),
            "absolute residual tolerance"),
      field("max_it", &O::max_it, Range::at_least(1), "iteration limit"),
      field("symmetric",
            &O::symmetric,
            {},
            "the matrix is symmetric for every value of its inputs"),
      field("prefix",
            &O::prefix,
            {},
            "PETSc options prefix (letters, digits and '_')"),
  };
  return table;
}

bool SolverOptions::is_valid(std::string* error) const {
  auto fail = [&](const std::string& text) {
    if (error) *error = text;
    return false;
  };
  std::string why, name;
  if (!check_fields(fields(), *this, &why, &name))
    return fail(name + ": " + why);
  if (ksp == "preonly" && pc != "lu") {
    return fail(
        "ksp: \"preonly\" applies the preconditioner once; it "
        "solves only with pc \"lu\"");
  }
  if (ksp == "cg" && !symmetric) {
    return fail("ksp: \"cg\" needs a symmetric matrix: set symmetric");
  }
  for (char ch : prefix) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_')) {
      return fail("prefix: \"" + prefix +
                  "\" may hold only letters, digits and '_'");
    }
  }
  return true;
}

nlohmann::json SolverOptions::to_attrs() const {
  nlohmann::json out = nlohmann::json::object();
  for (const Field<SolverOptions>& f : fields())
    out[f.name] = field_json(f.get(*this));
  return out;
}

SolverOptions SolverOptions::from_attrs(const nlohmann::json& attrs) {
  SolverOptions o;
  std::string error;
  for (const Field<SolverOptions>& f : fields()) {
    std::optional<FieldValue> v = field_from_json(f, attrs.at(f.name), &error);
    if (!v) throw GraphError(error, {}, {}, f.name);
    f.set(o, *v);
  }
  return o;
}

std::string pattern_problem(const CsrPattern& p,
                            int64_t expected_first_row,
                            int64_t global_rows,
                            int64_t* bad_row) {
  const auto& off = p.row_offsets;
  *bad_row = p.first_row;
  if (off.empty() || off[0] != 0) {
    return "row_offsets must start with 0 (rows + 1 offsets)";
  }
  if (p.first_row != expected_first_row) {
    return "first_row is " + std::to_string(p.first_row) +
           ", but the ranks before this one own " +
           std::to_string(expected_first_row) + " rows";
  }
  if (off.back() != p.local_entries()) {
    *bad_row = p.first_row + p.local_rows() - 1;
    return "row_offsets ends at " + std::to_string(off.back()) + ", but " +
           std::to_string(p.local_entries()) + " columns are given";
  }
  // Every offset first, so that no row reads past `columns`.
  for (int64_t i = 0; i < p.local_rows(); ++i) {
    *bad_row = p.first_row + i;
    const std::string row = "row " + std::to_string(*bad_row) + ": ";
    if (off[i + 1] < off[i]) {
      return row + "row_offsets decrease (" + std::to_string(off[i]) +
             " then " + std::to_string(off[i + 1]) + ")";
    }
    if (off[i + 1] > p.local_entries()) {
      return row + "row_offsets " + std::to_string(off[i + 1]) +
             " is past the " + std::to_string(p.local_entries()) +
             " columns given";
    }
  }
  for (int64_t i = 0; i < p.local_rows(); ++i) {
    *bad_row = p.first_row + i;
    const std::string row = "row " + std::to_string(*bad_row) + ": ";
    for (int64_t k = off[i]; k < off[i + 1]; ++k) {
      const int64_t j = p.columns[k];
      if (j < 0 || j >= global_rows) {
        return row + "column " + std::to_string(j) + " is outside [0, " +
               std::to_string(global_rows) + ")";
      }
      if (k > off[i] && j <= p.columns[k - 1]) {
        return row + "columns must be strictly increasing (" +
               std::to_string(p.columns[k - 1]) + " then " + std::to_string(j) +
               ")";
      }
    }
  }
  return {};
}

SparseOperator::~SparseOperator() = default;

void SparseOperator::check_node(const ShapeContext& c,
                                const std::vector<int64_t>& sizes) {
  const Node& n = c.node();
  if (!petsc_available()) {
    c.fail("op",
           "adgraph was built without PETSc; install Debian's "
           "libpetsc-real-dev and configure with -DADGRAPH_PETSC=ON "
           "(scripts/test and scripts/demo do both)");
  }
  if (!comm_) comm_ = n.comm;
  if (n.comm != comm_) {
    c.fail("comm",
           "the matrix's nodes must all use one communicator (its first "
           "node's, or the one it was made with: " +
               std::to_string(comm_->size()) +
               " ranks), but this node's graph or CommScope has another (" +
               std::to_string(n.comm ? n.comm->size() : 0) +
               " ranks); make one SparseMatrix per communicator");
  }
  CommContext& comm = *comm_;
  std::string problem;
  double key = 0;
  if (!checked_) {
    // Every rank's row count, by a sum of one-hot vectors.
    std::vector<double> rows(comm.size(), 0.0);
    rows[comm.rank()] = static_cast<double>(std::max<int64_t>(
        static_cast<int64_t>(pattern_.row_offsets.size()) - 1, 0));
    comm.allreduce(rows.data(), rows.data(), comm.size(), ReduceOp::kSum);
    int64_t total = 0, before = 0;
    for (int r = 0; r < comm.size(); ++r) {
      if (r < comm.rank()) before += static_cast<int64_t>(rows[r]);
      total += static_cast<int64_t>(rows[r]);
    }
    int64_t bad = 0;
    problem = pattern_problem(pattern_, before, total, &bad);
    key = static_cast<double>(bad);
    global_rows_ = total;
  }
  if (!checked_) {
    // Collective: every rank checks its levels, whatever it found before.
    std::string levels = multigrid_problem(comm);
    if (problem.empty() && !levels.empty()) {
      problem = std::move(levels);
      key = 2e12;
    }
  }
  // Input sizes are ranked after every row (rows stay below 1e12).
  for (std::size_t i = 0; problem.empty() && i < sizes.size(); ++i) {
    const int64_t got = num_elements(c.input_shape(static_cast<int>(i)));
    if (got != sizes[i]) {
      problem = "input " + std::to_string(i) + " has " + std::to_string(got) +
                " elements; the matrix's rows on rank " +
                std::to_string(comm.rank()) + " need " +
                std::to_string(sizes[i]);
      key = 1e12 + static_cast<double>(i);
    }
  }
  problem = agree_on_problem(comm, key, problem);
  if (!problem.empty()) {
    c.fail(problem.rfind("input ", 0) == 0 ? "inputs" : "pattern", problem);
  }
  checked_ = true;
}

std::string SparseOperator::multigrid_problem(CommContext& comm) const {
  // The same number of levels everywhere, or no rank goes further.
  double levels[2] = {static_cast<double>(multigrid_.size()),
                      -static_cast<double>(multigrid_.size())};
  comm.allreduce(levels, levels, 2, ReduceOp::kMax);
  if (levels[0] != -levels[1]) {
    return "the ranks give different numbers of multigrid levels";
  }
  std::string first_problem;
  int64_t fine_rows = pattern_.local_rows(), fine_first = pattern_.first_row;
  for (std::size_t l = 0; l < multigrid_.size(); ++l) {
    const Prolongation& p = multigrid_[l];
    // Every rank's coarse row count, as for the pattern's rows.
    std::vector<double> rows(comm.size(), 0.0);
    rows[comm.rank()] =
        static_cast<double>(std::max<int64_t>(p.coarse_rows, 0));
    comm.allreduce(rows.data(), rows.data(), comm.size(), ReduceOp::kSum);
    int64_t total = 0, before = 0;
    for (int r = 0; r < comm.size(); ++r) {
      if (r < comm.rank()) before += static_cast<int64_t>(rows[r]);
      total += static_cast<int64_t>(rows[r]);
    }
    const std::string level = "multigrid level " + std::to_string(l + 1) + ": ";
    int64_t bad = 0;
    std::string problem;
    if (p.coarse_rows < 1) {
      problem = "coarse_rows must be >= 1 on every rank";
    } else if (p.pattern.local_rows() != fine_rows) {
      problem = "the prolongation has " +
                std::to_string(p.pattern.local_rows()) + " rows on rank " +
                std::to_string(comm.rank()) + ", the finer level " +
                std::to_string(fine_rows);
    } else if (static_cast<int64_t>(p.values.size()) !=
               p.pattern.local_entries()) {
      problem = "values has " + std::to_string(p.values.size()) +
                " entries, the pattern " +
                std::to_string(p.pattern.local_entries());
    } else {
      problem = pattern_problem(p.pattern, fine_first, total, &bad);
    }
    if (first_problem.empty() && !problem.empty()) {
      first_problem = level + problem;
    }
    fine_rows = p.coarse_rows;
    fine_first = before;
  }
  return first_problem;
}

SparseEngine& SparseOperator::engine() {
  if (!engine_) {
    engine_ = make_engine(pattern_, global_rows_, multigrid_, *comm_, stats);
  }
  return *engine_;
}

SparseMatrix::SparseMatrix(CsrPattern pattern,
                           std::shared_ptr<CommContext> comm)
    : SparseMatrix(std::move(pattern), std::move(comm), {}) {}

SparseMatrix::SparseMatrix(CsrPattern pattern,
                           std::shared_ptr<CommContext> comm,
                           std::vector<Prolongation> multigrid)
    : op_(std::make_shared<SparseOperator>(
          std::move(pattern), std::move(comm), std::move(multigrid))) {}

const CsrPattern& SparseMatrix::pattern() const { return op_->pattern(); }

SparseStats SparseMatrix::stats() const { return op_->stats; }

std::shared_ptr<NodeResource> SparseMatrix::resource() const { return op_; }

}  // namespace adgraph::sparse
