// The sparse layer's pattern and options (sparse/pattern.cc):
// SolverOptions' checks with their messages and its round trip through
// node attributes, and a bad pattern refused when the node is built, with
// the same ShapeError on every rank naming the first bad row.
#include <gtest/gtest.h>

#include "sparse/sparse_matrix.h"
#include "tests/mpi_ops/mpi_test_util.h"
#include "tests/sparse/tridiagonal.h"

namespace adgraph {
namespace {

using namespace adgraph::testing;
using sparse::CsrPattern;
using sparse::SolverOptions;
using sparse::SparseMatrix;

std::string problem_of(const SolverOptions& o) {
  std::string error;
  return o.is_valid(&error) ? "valid" : error;
}

TEST(SolverOptions, EachFieldIsCheckedAndNamed) {
  EXPECT_EQ(problem_of(SolverOptions{}), "valid");
  SolverOptions o;
  o.ksp = "minres";
  EXPECT_EQ(problem_of(o),
            "ksp: must be cg, gmres, bcgs or preonly, got \"minres\"");
  o = {};
  o.pc = "sor";
  EXPECT_EQ(problem_of(o),
            "pc: must be none, jacobi, bjacobi, ilu, gamg, hypre, lu or mg, "
            "got \"sor\"");
  for (double rtol : {0.0, 1.0, -1e-3, std::nan("")}) {
    o = {};
    o.rtol = rtol;
    EXPECT_EQ(
        problem_of(o),
        "rtol: must be in (0, 1), got " + std::string(rtol == 0   ? "0"
                                                      : rtol == 1 ? "1"
                                                      : rtol < 0  ? "-0.001"
                                                                  : "nan"))
        << rtol;
  }
  o = {};
  o.atol = -1;
  EXPECT_EQ(problem_of(o), "atol: must be a finite number >= 0, got -1");
  o = {};
  o.max_it = 0;
  EXPECT_EQ(problem_of(o), "max_it: must be in [1, 2147483647], got 0");
  o = {};
  o.ksp = "preonly";
  EXPECT_EQ(problem_of(o),
            "ksp: \"preonly\" applies the preconditioner once; it solves "
            "only with pc \"lu\"");
  o.pc = "lu";
  EXPECT_EQ(problem_of(o), "valid");
  o = {};
  o.ksp = "cg";
  EXPECT_EQ(problem_of(o),
            "ksp: \"cg\" needs a symmetric matrix: set symmetric");
  o.symmetric = true;
  EXPECT_EQ(problem_of(o), "valid");
  o.prefix = "heat-1";
  EXPECT_EQ(problem_of(o),
            "prefix: \"heat-1\" may hold only letters, digits and '_'");
}

TEST(SolverOptions, RoundTripThroughNodeAttributes) {
  SolverOptions o;
  o.ksp = "bcgs";
  o.pc = "ilu";
  o.rtol = 1e-7;
  o.atol = 1e-30;
  o.max_it = 77;
  o.symmetric = true;
  o.prefix = "inner_2";
  const SolverOptions back = SolverOptions::from_attrs(o.to_attrs());
  EXPECT_EQ(back.ksp, "bcgs");
  EXPECT_EQ(back.pc, "ilu");
  EXPECT_EQ(back.rtol, 1e-7);
  EXPECT_EQ(back.atol, 1e-30);
  EXPECT_EQ(back.max_it, 77);
  EXPECT_TRUE(back.symmetric);
  EXPECT_EQ(back.prefix, "inner_2");
}

TEST(Pattern, ABadPatternIsTheSameShapeErrorOnEveryRank) {
  const int last = world_size() - 1;
  auto expect_shape_error = [](CsrPattern p,
                               int64_t value_count,
                               const std::vector<std::string>& parts) {
    SparseMatrix a(p);
    Graph g;
    Value values = g.placeholder("values", {value_count});
    Value b = g.placeholder("b", {kRows});
    std::string message;
    try {
      sparse::matvec(a, values, b);
    } catch (const ShapeError& e) {
      message = e.what();
    }
    ASSERT_FALSE(message.empty());
    for (const auto& part : parts)
      EXPECT_NE(message.find(part), std::string::npos) << message;
    EXPECT_EQ(Communicator::world()->bcast(message, 0), message);
  };
  // Columns out of order on the last rank's second row.
  CsrPattern swapped = tridiagonal();
  if (world_rank() == last) {
    std::swap(swapped.columns[swapped.row_offsets[1]],
              swapped.columns[swapped.row_offsets[1] + 1]);
  }
  const std::string row = "row " + std::to_string(kRows * last + 1);
  expect_shape_error(swapped,
                     swapped.local_entries(),
                     {"sparse_matvec", "pattern", row, "strictly increasing"});
  // A column past the end on rank 0's first row.
  CsrPattern outside = tridiagonal();
  if (world_rank() == 0) outside.columns[0] = kRows * world_size() + 3;
  expect_shape_error(
      outside,
      outside.local_entries(),
      {"row 0", "outside [0, " + std::to_string(kRows * world_size())});
  // Values of the wrong size on the last rank only.
  CsrPattern fine = tridiagonal();
  expect_shape_error(fine,
                     fine.local_entries() + (world_rank() == last ? 1 : 0),
                     {"inputs", "input 0 has"});
}

}  // namespace
}  // namespace adgraph
