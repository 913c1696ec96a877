// The Loader's "stencil" field: the 5-point operator of a patch grid for
// the sparse ops and five_point_values (solvers/patch_operators.h).
#include <sstream>

#include "driver/loader_impl.h"
#include "mpi_ops/communicator.h"
#include "solvers/patch_operators.h"

namespace adgraph::driver::detail {

void Loader::apply_stencil(const json& stencil,
                           const std::string& name,
                           const std::string& op,
                           json& attrs,
                           NodeOptions& options) {
  if (!stencil.is_object()) {
    fail(name,
         op,
         "stencil",
         "expected an object {\"nx\", \"ny\", \"px\", \"py\"}");
  }
  only(stencil, {"nx", "ny", "px", "py"}, name, "stencil");
  solvers::HeatConfig grid;
  int* fields[4] = {&grid.nx, &grid.ny, &grid.px, &grid.py};
  const char* keys[4] = {"nx", "ny", "px", "py"};
  for (int k = 0; k < 4; ++k) {
    const json& v = require(stencil,
                            keys[k],
                            &json::is_number_integer,
                            "an integer",
                            name,
                            "stencil");
    if (!v.is_number_integer() || v.get<int64_t>() < 1 ||
        v.get<int64_t>() > (1 << 20)) {
      fail(name,
           op,
           std::string("stencil.") + keys[k],
           "expected an integer in [1, 2^20]");
    }
    *fields[k] = v.get<int>();
  }
  std::shared_ptr<CommContext> comm =
      options.comm ? options.comm
                   : std::shared_ptr<CommContext>(Communicator::world());
  std::string error;
  if (!grid.is_valid(comm->size(), &error)) fail(name, op, "stencil", error);
  if (op == "five_point_values" || op == "five_point_values_adjoint") {
    attrs.update(json{{"nx", grid.nx},
                      {"ny", grid.ny},
                      {"px", grid.px},
                      {"py", grid.py},
                      {"rank", comm->rank()}});
    return;
  }
  if (op.rfind("sparse_", 0) != 0) {
    fail(name,
         op,
         "stencil",
         "only the sparse ops and five_point_values take a stencil");
  }
  std::ostringstream key;
  key << stencil.dump() << "@" << comm.get();
  auto& matrix = stencils_[key.str()];
  if (!matrix) {
    matrix = sparse::SparseMatrix(
                 solvers::five_point_pattern(grid, comm->rank()), comm)
                 .resource();
  }
  options.resource = matrix;
  options.comm = comm;
}

}  // namespace adgraph::driver::detail
