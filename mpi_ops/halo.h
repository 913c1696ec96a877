// The halo exchange of an N × M patch decomposition.
//
// Rank r owns patch (I, J) = (r / M, r % M). Its neighbours are left
// (I, J−1), right (I, J+1), up (I−1, J) and down (I+1, J); the grid is not
// periodic. N·M must equal the number of ranks.
//
// Cotangent convention: the loss is the sum of the per-rank losses. Each
// received halo's cotangent goes back to the rank that sent it, which is
// again a halo exchange: data_exchange is its own transpose.
#pragma once

#include <array>

#include "core/graph.h"

namespace adgraph {

// Sends `left` to the left neighbour, `right` to the right one, `up` and
// `down` likewise, and returns {from_left, from_right, from_up, from_down}:
// the strips the neighbours sent towards this rank (their `right`, `left`,
// `down` and `up` inputs), zeros where there is no neighbour. left and right
// must have one shape, up and down another; outputs have the same shapes.
// Non-blocking sends and receives, then one wait: no deadlock for any N, M.
// Adjoint: (x̄_left, x̄_right, x̄_up, x̄_down) = data_exchange(ȳ_left,
// ȳ_right, ȳ_up, ȳ_down).
std::array<Value, 4> data_exchange(
    Value left, Value right, Value up, Value down, int rows, int cols);

// The same swap in two halves, so that work which does not need the halos
// can run while they travel: data_exchange_start posts the messages and
// returns a request; data_exchange_finish(request) waits for them and
// returns what data_exchange would. A plan (or loop body) that runs the
// start must run exactly one finish of its request. Between the two, the
// executor runs whatever does not depend on the halos (Session and loop
// bodies run nodes in an order that keeps the start before and the finish
// after independent work created between them). Results are bitwise those
// of data_exchange. Adjoint: the finish's adjoint starts the reverse swap
// of ȳ, the start's adjoint finishes it (x̄), so the reverse swap overlaps
// the adjoint work between them too.
Value data_exchange_start(
    Value left, Value right, Value up, Value down, int rows, int cols);
std::array<Value, 4> data_exchange_finish(Value request);

void register_halo_ops();

}  // namespace adgraph
