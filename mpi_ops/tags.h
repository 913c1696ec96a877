// The MPI tags of adgraph's messages, in one place. Messages of different
// kinds never share a tag, so no receive can match another kind's send.
#pragma once

namespace adgraph {

// Point-to-point nodes (mpi_send, mpi_recv, mpi_sendrecv): the user's tag,
// in [0, kMaxUserTag].
constexpr int kMaxUserTag = 999;

// The allreduce programs (allreduce_programs.h) are built from
// point-to-point nodes, so their default tags lie in the user range: the
// naive program uses kNaiveAllreduceTag, the ring program kRingAllreduceTag
// (reduce-scatter) and kRingAllreduceTag + 1 (allgather).
constexpr int kNaiveAllreduceTag = 900;
constexpr int kRingAllreduceTag = 910;

// data_exchange (halo.h): [kHaloTag, kHaloTag + 4), one per receiving side
// (left, right, up, down); above every user tag.
constexpr int kHaloTag = kMaxUserTag + 1;

// The grid halos (grid/exchange.h): [kGridHaloTag, kGridHaloTag + 12), two
// per spatial axis and pass: forward messages 2·axis (towards the low
// neighbour) and 2·axis + 1 (towards the high one), their transposes 6 more.
constexpr int kGridHaloTag = kHaloTag + 4;

}  // namespace adgraph
