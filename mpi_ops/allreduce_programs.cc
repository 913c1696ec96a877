#include "mpi_ops/allreduce_programs.h"

#include <vector>

#include "core/core_ops.h"
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

Value allreduce_ring(Value x, int tag) {
  Communicator& comm = bind_communicator(x.graph());
  const int rank = comm.rank(), size = comm.size();
  if (size == 1) return identity(x);
  const Shape shape = x.shape();
  const int64_t n = num_elements(shape);
  Value flat = reshape(x, {n});
  // Chunk k is [k·n/P, (k+1)·n/P): sizes differ by at most one element.
  std::vector<Value> chunk(size);
  for (int k = 0; k < size; ++k)
    chunk[k] = slice(flat, 0, k * n / size, (k + 1) * n / size);
  const int next = (rank + 1) % size, prev = (rank + size - 1) % size;
  auto mod = [size](int k) { return ((k % size) + size) % size; };
  // Reduce-scatter: after step s, chunk (r − s − 1) holds s + 2 ranks' sum;
  // after P − 1 steps chunk (r + 1) mod P is complete on rank r.
  for (int s = 0; s + 1 < size; ++s) {
    const int out = mod(rank - s), in = mod(rank - s - 1);
    mpi_send(chunk[out], next, tag);
    chunk[in] = chunk[in] + mpi_recv(chunk[in], prev, tag);
  }
  // Allgather: pass the completed chunks around the ring.
  for (int s = 0; s + 1 < size; ++s) {
    const int out = mod(rank + 1 - s), in = mod(rank - s);
    mpi_send(chunk[out], next, tag + 1);
    chunk[in] = mpi_recv(chunk[in], prev, tag + 1);
  }
  return reshape(concat(chunk, 0), shape);
}

}  // namespace adgraph
