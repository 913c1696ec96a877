// Allreduce algorithms written as graph programs from the graph's own
// point-to-point nodes (mpi_send / mpi_recv). They add no op: their
// adjoints are those of the messages they are made of, so they are
// differentiable and ordered like any other communication.
//
// Both return Σ_r x_r on every rank, like mpi_allreduce(x), for any shape
// and any length (including lengths not divisible by the rank count).
// Data sent per rank for N elements on P ranks:
//   naive: (P − 1)·N          (every rank sends its array to every other)
//   ring:  2·(P − 1)/P·N      (reduce-scatter, then allgather, P − 1 steps
//                              each; Patarasuk & Yuan, JPDC 69(2), 2009)
// The graph built depends on the rank (peers, chunk order) but every rank
// builds the same number of communication nodes.
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "mpi_ops/tags.h"

namespace adgraph {

// Its messages use `tag` only.
Value allreduce_naive(Value x, int tag = kNaiveAllreduceTag);
// Its messages use tags `tag` (reduce-scatter) and `tag + 1` (allgather).
// Each chunk travels in messages of at most `segment` elements (pipelined:
// a received piece is added while it is in cache; the default, 2^16
// doubles, is half a MiB). Throws OptionsError when segment < 1.
inline constexpr int64_t kRingSegment = int64_t{1} << 16;
Value allreduce_ring(Value x,
                     int tag = kRingAllreduceTag,
                     int64_t segment = kRingSegment);

}  // namespace adgraph
