#include "grid/grid.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/error.h"
#include "grid/box.h"
#include "mpi_ops/communicator.h"

namespace adgraph::grid {

using detail::Box;

int GridLayout::num_ranks() const {
  int n = 1;
  for (int p : procs) n *= p;
  return n;
}

std::string GridLayout::invalid_reason() const {
  if (shape.empty() || shape.size() > 3)
    return "shape: a grid has 1 to 3 axes, got " + std::to_string(shape.size());
  if (procs.size() != shape.size())
    return "procs: " + std::to_string(procs.size()) + " entries for a " +
           std::to_string(shape.size()) + "-D grid";
  if (periodic.size() != shape.size())
    return "periodic: " + std::to_string(periodic.size()) + " entries for a " +
           std::to_string(shape.size()) + "-D grid";
  for (int a = 0; a < ndim(); ++a) {
    if (shape[a] < 1)
      return "shape: axis " + std::to_string(a) + " has extent " +
             std::to_string(shape[a]) + " (at least 1)";
    if (procs[a] < 1 || procs[a] > shape[a])
      return "procs: axis " + std::to_string(a) + " has " +
             std::to_string(procs[a]) + " processes for " +
             std::to_string(shape[a]) + " points (1 to the extent)";
  }
  return {};
}

std::vector<int> GridLayout::coords_of(int rank) const {
  std::vector<int> c(ndim());
  for (int a = ndim() - 1; a >= 0; --a) {
    c[a] = rank % procs[a];
    rank /= procs[a];
  }
  return c;
}

int GridLayout::rank_at(std::vector<int> coords) const {
  int rank = 0;
  for (int a = 0; a < ndim(); ++a) {
    int c = coords[a];
    if (c < 0 || c >= procs[a]) {
      if (!periodic[a]) return -1;
      c = ((c % procs[a]) + procs[a]) % procs[a];
    }
    rank = rank * procs[a] + c;
  }
  return rank;
}

int64_t GridLayout::extent(int axis, int c) const {
  const int64_t q = shape[axis] / procs[axis], r = shape[axis] % procs[axis];
  return q + (c < r ? 1 : 0);
}

int64_t GridLayout::start(int axis, int c) const {
  const int64_t q = shape[axis] / procs[axis], r = shape[axis] % procs[axis];
  return c * q + std::min<int64_t>(c, r);
}

Shape GridLayout::local_shape(int rank) const {
  const std::vector<int> c = coords_of(rank);
  Shape s(ndim());
  for (int a = 0; a < ndim(); ++a) s[a] = extent(a, c[a]);
  return s;
}

Tensor GridLayout::patch(const Tensor& global, int rank) const {
  const int nb = global.rank() - ndim();
  if (nb < 0 ||
      !std::equal(shape.begin(), shape.end(), global.shape().begin() + nb)) {
    throw ShapeError("global array " + shape_string(global.shape()) +
                     " does not end in the grid's shape " +
                     shape_string(shape));
  }
  Shape out(global.shape().begin(), global.shape().begin() + nb);
  const Shape local = local_shape(rank), start_at = offset(rank);
  out.insert(out.end(), local.begin(), local.end());
  Tensor t{Shape(out)};
  detail::Box from = detail::whole(out);
  for (int a = 0; a < ndim(); ++a) from.origin[nb + a] = start_at[a];
  detail::copy_box(global.data(),
                   global.shape(),
                   from,
                   t.data(),
                   t.shape(),
                   detail::whole(out));
  return t;
}

Shape GridLayout::offset(int rank) const {
  const std::vector<int> c = coords_of(rank);
  Shape s(ndim());
  for (int a = 0; a < ndim(); ++a) s[a] = start(a, c[a]);
  return s;
}

Shape GridLayout::min_extent() const {
  Shape s(ndim());
  for (int a = 0; a < ndim(); ++a) s[a] = shape[a] / procs[a];
  return s;
}

int GridLayout::owner(const Shape& index) const {
  std::vector<int> c(ndim());
  for (int a = 0; a < ndim(); ++a) {
    const int64_t q = shape[a] / procs[a], r = shape[a] % procs[a];
    // The first r patches have q + 1 points.
    const int64_t big = r * (q + 1);
    c[a] = static_cast<int>(index[a] < big ? index[a] / (q + 1)
                                           : r + (index[a] - big) / q);
  }
  return rank_at(c);
}

// coords_of, moved by dir, and rank_at in one pass from the last axis (no
// vector: the halo exchange asks at every pass of every step).
int GridLayout::neighbour(int rank, const std::vector<int>& dir) const {
  int result = 0, stride = 1;
  for (int a = ndim() - 1; a >= 0; --a) {
    int c = rank % procs[a] + dir[a];
    rank /= procs[a];
    if (c < 0 || c >= procs[a]) {
      if (!periodic[a]) return -1;
      c = ((c % procs[a]) + procs[a]) % procs[a];
    }
    result += c * stride;
    stride *= procs[a];
  }
  return result;
}

nlohmann::json GridLayout::attrs() const {
  std::vector<int64_t> per(periodic.begin(), periodic.end());
  return {{"grid_shape", shape},
          {"procs", std::vector<int64_t>(procs.begin(), procs.end())},
          {"periodic", per}};
}

GridLayout GridLayout::from_attrs(const nlohmann::json& attrs) {
  GridLayout g;
  g.shape = attrs.at("grid_shape").get<Shape>();
  for (int64_t p : attrs.at("procs").get<std::vector<int64_t>>())
    g.procs.push_back(static_cast<int>(p));
  for (int64_t p : attrs.at("periodic").get<std::vector<int64_t>>())
    g.periodic.push_back(p != 0);
  return g;
}

Grid::Grid(Shape shape,
           std::vector<int> procs,
           std::vector<bool> periodic,
           std::shared_ptr<Communicator> comm)
    : comm_(std::move(comm)) {
  if (periodic.empty()) periodic.assign(shape.size(), false);
  layout_ = GridLayout{std::move(shape), std::move(procs), std::move(periodic)};
  const std::string why = layout_.invalid_reason();
  if (!why.empty()) throw OptionsError("Grid: " + why);
  if (comm_ == nullptr) throw OptionsError("Grid: comm: no communicator");
  if (layout_.num_ranks() != comm_->size()) {
    throw OptionsError("Grid: procs: a process grid of " +
                       std::to_string(layout_.num_ranks()) +
                       " ranks on a communicator of " +
                       std::to_string(comm_->size()));
  }
}

int Grid::rank() const { return comm_->rank(); }
Shape Grid::local_shape() const { return layout_.local_shape(rank()); }
Shape Grid::offset() const { return layout_.offset(rank()); }

int Grid::owner(const Shape& index) const {
  bool ok = static_cast<int>(index.size()) == ndim();
  for (int a = 0; ok && a < ndim(); ++a)
    ok = index[a] >= 0 && index[a] < layout_.shape[a];
  if (!ok) {
    throw OptionsError("Grid::owner: index " + shape_string(index) +
                       " is not a point of the grid " + shape_string(shape()));
  }
  return layout_.owner(index);
}

namespace {

// The batch axes of a [batch…, spatial…] shape.
Shape batch_of(const Shape& full, int ndim) {
  return Shape(full.begin(), full.end() - ndim);
}

Shape concat(Shape a, const Shape& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Rank r's patch inside the global [batch…, spatial…] array.
Box patch_box(const GridLayout& g, int r, const Shape& batch) {
  Box box;
  box.origin = concat(Shape(batch.size(), 0), g.offset(r));
  box.extent = concat(batch, g.local_shape(r));
  return box;
}

int64_t max_patch_size(const GridLayout& g, const Shape& batch) {
  int64_t n = num_elements(batch);
  for (int a = 0; a < g.ndim(); ++a) n *= g.extent(a, 0);
  return n;
}

// What is wrong with a scatter's or gather's arguments on any rank, the
// same text on every rank ("" if nothing): the root must be one of the
// communicator's ranks, the same on every rank, and for gather (`batch`
// given) every patch must have the same batch axes (a negative extent: a
// patch that does not end in its rank's local_shape()). One allreduce of
// the maxima and minima, so that every rank throws the same error instead
// of MPI failing, or one rank waiting, in the collective.
std::string disagreement(Communicator& comm, int root, const Shape* batch) {
  constexpr std::size_t kSlots = 8;  // root, batch rank, batch extents
  std::vector<double> v(2 * kSlots, 0.0);
  v[0] = root;
  if (batch != nullptr) {
    v[1] = batch->size() + 2 > kSlots ? -1 : static_cast<double>(batch->size());
    for (std::size_t k = 0; k < batch->size() && k + 2 < kSlots; ++k)
      v[k + 2] = static_cast<double>((*batch)[k]);
  }
  for (std::size_t k = 0; k < kSlots; ++k) v[kSlots + k] = -v[k];
  comm.allreduce(
      v.data(), v.data(), static_cast<int64_t>(v.size()), ReduceOp::kMax);
  // v[k] is now the largest value over the ranks, -v[kSlots + k] the least.
  if (v[0] != -v[kSlots]) return "root: the ranks passed different roots";
  if (v[0] < 0 || v[0] >= comm.size())
    return "root: " + std::to_string(root) +
           " is not a rank of the grid's communicator (0 to " +
           std::to_string(comm.size() - 1) + ")";
  for (std::size_t k = 1; k < kSlots; ++k)
    if (v[k] != -v[kSlots + k] || v[k] < 0)
      return "local: the patches' batch axes differ between ranks, or a "
             "patch does not end in its rank's local_shape()";
  return {};
}

}  // namespace

Tensor Grid::scatter(const Tensor& global, int root) const {
  if (const std::string p = disagreement(*comm_, root, nullptr); !p.empty())
    throw OptionsError("Grid::scatter: " + p);
  // Every rank learns the root's batch shape, or that its array does not
  // fit (-1): then every rank throws, none waits.
  const bool fits =
      global.rank() >= ndim() &&
      Shape(global.shape().end() - ndim(), global.shape().end()) == shape();
  double nb = fits ? static_cast<double>(global.rank() - ndim()) : -1;
  comm_->bcast(&nb, 1, root);
  if (nb < 0) {
    throw OptionsError(
        "Grid::scatter: global: " +
            (rank() == root
                 ? "shape " + shape_string(global.shape())
                 : "the root's (rank " + std::to_string(root) + ") array") +
            " does not end in the grid's " + shape_string(shape()),
        {},
        {},
        "global");
  }
  Shape batch(static_cast<std::size_t>(nb));
  if (rank() == root) batch = batch_of(global.shape(), ndim());
  std::vector<double> b(batch.begin(), batch.end());
  if (!b.empty()) comm_->bcast(b.data(), static_cast<int64_t>(b.size()), root);
  for (std::size_t k = 0; k < b.size(); ++k)
    batch[k] = static_cast<int64_t>(b[k]);

  const int64_t slot = max_patch_size(layout_, batch);
  std::vector<double> packed;
  if (rank() == root) {
    packed.assign(static_cast<std::size_t>(slot) * comm_->size(), 0.0);
    for (int r = 0; r < comm_->size(); ++r) {
      const Box from = patch_box(layout_, r, batch);
      const Shape local = from.extent;
      copy_box(global.data(),
               global.shape(),
               from,
               packed.data() + r * slot,
               local,
               detail::whole(local));
    }
  }
  std::vector<double> mine(static_cast<std::size_t>(slot));
  comm_->scatter(packed.data(), mine.data(), slot, root);
  Tensor out(concat(batch, local_shape()));
  std::copy_n(mine.data(), out.size(), out.data());
  return out;
}

Tensor Grid::gather(const Tensor& local, int root) const {
  const bool fits =
      local.rank() >= ndim() &&
      Shape(local.shape().end() - ndim(), local.shape().end()) == local_shape();
  const Shape batch = fits ? batch_of(local.shape(), ndim()) : Shape{-1};
  if (const std::string p = disagreement(*comm_, root, &batch); !p.empty())
    throw OptionsError(
        "Grid::gather: " + p +
        (p.rfind("local:", 0) != 0
             ? std::string()
             : " (rank " + std::to_string(rank()) + ": a patch of shape " +
                   shape_string(local.shape()) + ", local_shape() " +
                   shape_string(local_shape()) + ")"));
  const int64_t slot = max_patch_size(layout_, batch);
  std::vector<double> mine(static_cast<std::size_t>(slot), 0.0);
  std::copy_n(local.data(), local.size(), mine.data());
  std::vector<double> all;
  if (rank() == root)
    all.resize(static_cast<std::size_t>(slot) * comm_->size());
  comm_->gather(mine.data(), all.data(), slot, root);
  if (rank() != root) return Tensor(Shape{0});
  Tensor global(concat(batch, shape()));
  for (int r = 0; r < comm_->size(); ++r) {
    const Box to = patch_box(layout_, r, batch);
    copy_box(all.data() + r * slot,
             to.extent,
             detail::whole(to.extent),
             global.data(),
             global.shape(),
             to);
  }
  return global;
}

}  // namespace adgraph::grid
