// A build without PETSc (-DADGRAPH_PETSC=OFF; scripts/sanitize's
// ThreadSanitizer build is one): the library builds, and a sparse node is
// refused when it is built, with a message saying how to enable it.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "core/graph.h"
#include "sparse/sparse_matrix.h"

namespace adgraph {
namespace {

TEST(NoPetsc, ASparseNodeIsRefusedWhenBuiltSayingHowToEnableIt) {
  EXPECT_FALSE(sparse::petsc_available());
  sparse::CsrPattern p;  // one row, its diagonal
  p.columns = {0};
  p.row_offsets = {0, 1};
  sparse::SparseMatrix a(p);
  Graph g;
  Value values = g.placeholder("values", {1});
  Value b = g.placeholder("b", {1});
  std::string message;
  try {
    sparse::solve(a, values, b);
  } catch (const ShapeError& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("(sparse_solve)"), std::string::npos) << message;
  EXPECT_NE(message.find("adgraph was built without PETSc; install Debian's "
                         "libpetsc-real-dev and configure with "
                         "-DADGRAPH_PETSC=ON"),
            std::string::npos)
      << message;
}

}  // namespace
}  // namespace adgraph
