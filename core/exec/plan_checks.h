// Checks Session makes of a new plan before its first run: the memory it
// will need, and, for a graph that every rank builds identically, that its
// point-to-point messages pair up.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/graph.h"

namespace adgraph {

// Bytes this process may still allocate: ADGRAPH_MEMORY_LIMIT (a number of
// bytes, optionally with a K, M or G suffix for KiB, MiB, GiB) when set,
// otherwise the smaller of MemAvailable from /proc/meminfo and what the
// process's RLIMIT_AS and RLIMIT_DATA soft limits (`ulimit -v`, `ulimit -d`)
// leave beyond its current VmSize and VmData; SIZE_MAX when none is
// known. Throws OptionsError for a malformed ADGRAPH_MEMORY_LIMIT.
std::size_t memory_available();

// The most loop body runs (LoopSpec::body_steps) one plan may make:
// ADGRAPH_MAX_LOOP_STEPS when set (a number >= 1; "inf" lifts the bound),
// otherwise kDefaultMaxLoopSteps. Throws OptionsError for a malformed value.
constexpr double kDefaultMaxLoopSteps = 1e9;
double max_loop_steps();

// "1.5 GiB", "640 MiB", "12 KiB", "8 B": sizes in error messages.
std::string byte_string(std::size_t bytes);

// `comm_nodes`: the plan's communication nodes in execution order, the same
// sequence on every rank of `world` (a graph built identically everywhere,
// as adgraph-run builds its document). Simulates every rank running them:
// sends (any node with a "dest" attribute) never block, blocking receives
// (a "src" attribute, not a request) wait for the matching send, a node
// completing nonblocking receives (mpi_wait, mpi_waitall) waits for their
// matching sends, every-rank
// nodes are barriers. A loop node is a barrier, then one step of each body
// it runs (its messages must pair within the step), then a barrier. On a
// sub-communicator (CommContext::group_of) peers are ranks of each rank's
// group, messages match within it, and its every-rank nodes are barriers of
// the group; nodes on a communicator whose groups this process cannot tell
// (a split of a split) are not simulated. Throws RunError, the same on
// every rank, naming the node (and the loop whose body holds it), its rank
// and its peer, when a receive would wait forever, a message would never be
// received, a message's size differs from its receive's, or a peer is not
// a rank of some rank's group.
void check_point_to_point_pairing(const std::vector<const Node*>& comm_nodes,
                                  const CommContext& world);

}  // namespace adgraph
