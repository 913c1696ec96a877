// Nonblocking point-to-point nodes: a start node (mpi_isend, mpi_irecv)
// posts the message and returns a request; mpi_wait (or mpi_waitall)
// completes it. Nodes that do not depend on the request may run between
// the two, so computation overlaps the message.
//
// A request is a scalar handle, meaningful only to its wait. Every plan
// that runs a start node must run exactly one wait of its request: a
// request never waited on, waited twice, or whose wait the fetches do not
// need is a RunError naming the start node when the plan is built.
//
// Adjoints follow the adjoinable-MPI rules (Utke et al., AMPI), with the
// loss the sum of the per-rank losses: the adjoint of a wait posts the
// reverse message (the wait of an isend becomes an irecv of the cotangent
// from dest; the wait of an irecv becomes an isend of ȳ to src), and the
// adjoint of the start node waits for it (x̄ = the cotangent received, for
// an isend). The cotangent of a request is that reverse request. Tangents
// travel as second messages with the same peer and tag, in the same order.
// Tags are in [0, kMaxUserTag] (mpi_ops/tags.h), shared with the blocking
// point-to-point nodes.
#pragma once

#include <vector>

#include "core/graph.h"

namespace adgraph {

// Starts sending x to rank `dest`; returns the request. When x dies at the
// send (nothing later reads it, it is neither fed nor fetched) the message
// takes x's buffer; otherwise it sends a copy, so x may be read (and its
// buffer reused) before the wait.
Value mpi_isend(Value x, int dest, int tag = 0);

// Starts receiving a tensor of like's shape from rank `src` (like's values
// are not used); returns the request.
Value mpi_irecv(Value like, int src, int tag = 0);
Value mpi_irecv(Graph& graph, Shape shape, int src, int tag = 0);

// Completes a request: the received tensor for an mpi_irecv, an empty
// tensor (shape [0]) for an mpi_isend.
Value mpi_wait(Value request);

// Completes several requests at once (MPI_Waitall); one output each, as
// mpi_wait.
std::vector<Value> mpi_waitall(const std::vector<Value>& requests);

void register_nonblocking_ops();

}  // namespace adgraph
