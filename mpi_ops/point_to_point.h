// Point-to-point communication nodes.
//
// Cotangent convention: the loss is the sum of the per-rank losses. A
// message carries x from one rank to another, so its cotangent travels back
// along the same pair of ranks in the opposite direction.
//
// Sends never block: the message gets its own copy of the data (or, when x
// dies at the send and nobody reads the send's value, x's buffer itself)
// and completes by the end of Session::run. Receives block until the message
// arrives (bounded by the communication deadline, see mpi_ops/communicator.h).
// Tags are in [0, kMaxUserTag] (mpi_ops/tags.h holds every tag range).
#pragma once

#include "core/graph.h"

namespace adgraph {

// Sends x to rank `dest` and returns x.
// Adjoint: x̄ = ȳ + (the cotangent received back from dest).
// gradients() builds the adjoint of every communication node of the graph,
// so rank-dependent graphs (one rank sends, another
// receives) still pair their adjoint messages.
Value mpi_send(Value x, int dest, int tag = 0);

// Returns the tensor of like's shape received from rank `src` (like's values
// are not read, so like is not kept alive for it: OpDef::shape_only). Adjoint:
// ȳ is sent back to src; like gets no cotangent.
Value mpi_recv(Value like, int src, int tag = 0);

// Every rank calls it: rank `src` sends x to rank `dest`, which returns it;
// every other rank (and src) returns its own x. src == dest returns x.
// Adjoint (mpi_sendrecv_adjoint): dest sends ȳ back to src, which adds it to
// its own ȳ; dest's x̄ is 0 (its x was replaced); others pass ȳ through.
Value mpi_sendrecv(Value x, int src, int dest, int tag = 0);

// The transpose of mpi_sendrecv (see above); its own adjoint is
// mpi_sendrecv.
Value mpi_sendrecv_adjoint(Value x, int src, int dest, int tag = 0);

void register_point_to_point_ops();

}  // namespace adgraph
