#include "mpi_ops/allreduce_programs.h"

#include <algorithm>
#include <string>
#include <vector>

#include "core/core_ops.h"
#include "core/error.h"
#include "mpi_ops/communicator.h"
#include "mpi_ops/point_to_point.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

namespace adgraph {

Value allreduce_naive(Value x, int tag) {
  Communicator& comm = bind_communicator(x.graph());
  const int rank = comm.rank(), size = comm.size();
  // All sends first: they never block, so no order of receives deadlocks.
  for (int q = 0; q < size; ++q) {
    if (q != rank) mpi_send(x, q, tag);
  }
  Value total = x;
  for (int q = 0; q < size; ++q) {
    if (q != rank) total = total + mpi_recv(x, q, tag);
  }
  return size == 1 ? identity(x) : total;
}

Value allreduce_ring(Value x, int tag, int64_t segment) {
  if (segment < 1) {
    throw OptionsError(
        "allreduce_ring: segment must be at least 1 element, "
        "not " +
        std::to_string(segment));
  }
  Communicator& comm = bind_communicator(x.graph());
  const int rank = comm.rank(), size = comm.size();
  if (size == 1) return identity(x);
  const Shape shape = x.shape();
  const int64_t n = num_elements(shape);
  Value flat = shape.size() == 1 ? x : reshape(x, {n});
  // Chunk k is [k·n/P, (k+1)·n/P): sizes differ by at most one element.
  // Each travels as ⌈length / segment⌉ messages of near-equal length, cut
  // the same way on every rank, so that each received piece is added while
  // it is still in cache.
  std::vector<std::vector<Value>> chunk(size);
  for (int k = 0; k < size; ++k) {
    const int64_t begin = k * n / size, length = (k + 1) * n / size - begin;
    const int64_t pieces =
        std::max<int64_t>(1, (length + segment - 1) / segment);
    for (int64_t j = 0; j < pieces; ++j) {
      chunk[k].push_back(slice(flat,
                               0,
                               begin + j * length / pieces,
                               begin + (j + 1) * length / pieces));
    }
  }
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  auto mod = [size](int k) { return ((k % size) + size) % size; };
  // Reduce-scatter: after step s, chunk (r − s − 1) holds s + 2 ranks' sum;
  // after P − 1 steps chunk (r + 1) mod P is complete on rank r. Sends never
  // block, so each step posts all its sends before its first receive.
  for (int s = 0; s + 1 < size; ++s) {
    const int out = mod(rank - s), in = mod(rank - s - 1);
    for (const Value& piece : chunk[out]) mpi_send(piece, next, tag);
    for (Value& piece : chunk[in]) piece = piece + mpi_recv(piece, prev, tag);
  }
  // Allgather: pass the completed chunks around the ring.
  for (int s = 0; s + 1 < size; ++s) {
    const int out = mod(rank + 1 - s), in = mod(rank - s);
    for (const Value& piece : chunk[out]) mpi_send(piece, next, tag + 1);
    for (Value& piece : chunk[in]) piece = mpi_recv(piece, prev, tag + 1);
  }
  std::vector<Value> pieces;
  for (const auto& c : chunk) pieces.insert(pieces.end(), c.begin(), c.end());
  Value joined = concat(pieces, 0);
  return shape.size() == 1 ? joined : reshape(joined, shape);
}

}  // namespace adgraph
