// The Loader's "grid" field: a placeholder holding this rank's patch of a
// grid field (grid/grid.h), fed with the global array.
#include "driver/loader_impl.h"
#include "grid/grid.h"
#include "mpi_ops/communicator.h"

namespace adgraph::driver::detail {

namespace {

// A list of integers at grid.<key>, each in [lo, hi].
std::vector<int64_t> ints_of(const Loader& l,
                             const json& grid,
                             const char* key,
                             int64_t lo,
                             int64_t hi,
                             const std::string& name) {
  const std::string field = std::string("grid.") + key;
  const json& v = l.require(grid, key, &json::is_array, "a list", name, "grid");
  std::vector<int64_t> out;
  for (const json& x : v) {
    if (!x.is_number_integer() && !x.is_boolean())
      l.fail(
          name, "placeholder", field, "expected integers, found " + x.dump());
    const int64_t k = x.is_boolean() ? x.get<bool>() : x.get<int64_t>();
    if (k < lo || k > hi) {
      l.fail(name,
             "placeholder",
             field,
             "entry " + std::to_string(k) + " outside [" + std::to_string(lo) +
                 ", " + std::to_string(hi) + "]");
    }
    out.push_back(k);
  }
  return out;
}

}  // namespace

void Loader::apply_grid(const json& grid,
                        const std::string& name,
                        const std::string& op,
                        json& attrs,
                        const NodeOptions& options) {
  if (op != "placeholder")
    fail(name, op, "grid", "only placeholders take a grid");
  if (!grid.is_object())
    fail(name,
         op,
         "grid",
         "expected an object {\"grid_shape\", \"procs\", \"periodic\", "
         "\"batch\"}");
  if (attrs.contains("shape"))
    fail(name, op, "grid", "give a shape or a grid, not both");
  only(grid, {"grid_shape", "procs", "periodic", "batch"}, name, "grid");
  GridPlaceholder p;
  p.layout.shape =
      ints_of(*this, grid, "grid_shape", 1, int64_t{1} << 30, name);
  for (int64_t k : ints_of(*this, grid, "procs", 1, 1 << 20, name))
    p.layout.procs.push_back(static_cast<int>(k));
  if (grid.contains("periodic")) {
    for (int64_t k : ints_of(*this, grid, "periodic", 0, 1, name))
      p.layout.periodic.push_back(k != 0);
  } else {
    p.layout.periodic.assign(p.layout.shape.size(), false);
  }
  if (grid.contains("batch"))
    p.batch = ints_of(*this, grid, "batch", 1, int64_t{1} << 30, name);
  const std::string why = p.layout.invalid_reason();
  if (!why.empty()) fail(name, op, "grid." + why.substr(0, why.find(':')), why);
  std::shared_ptr<CommContext> comm =
      options.comm ? options.comm
                   : std::shared_ptr<CommContext>(Communicator::world());
  if (p.layout.num_ranks() != comm->size()) {
    fail(name,
         op,
         "grid.procs",
         "a process grid of " + std::to_string(p.layout.num_ranks()) +
             " ranks on a communicator of " + std::to_string(comm->size()));
  }
  p.rank = comm->rank();
  Shape shape = p.batch;
  const Shape local = p.layout.local_shape(p.rank);
  shape.insert(shape.end(), local.begin(), local.end());
  attrs["shape"] = shape;
  pending_grid_ = p;
}

Tensor Loader::grid_feed(const json& v,
                         const Value& target,
                         const std::string& node,
                         const std::string& field) const {
  auto found = grid_placeholders_.find({&target.graph(), target.node_id()});
  if (found == grid_placeholders_.end())
    return value_of(v, target.shape(), node, field);
  const GridPlaceholder& p = found->second;
  Shape global = p.batch;
  global.insert(global.end(), p.layout.shape.begin(), p.layout.shape.end());
  return p.layout.patch(value_of(v, global, node, field), p.rank);
}

}  // namespace adgraph::driver::detail
