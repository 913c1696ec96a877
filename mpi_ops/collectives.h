// Collective communication nodes.
//
// Cotangent convention: the loss is the sum of the per-rank losses,
// L = Σ_r L_r, and the gradient on rank r is ∂L/∂x_r. So the adjoint of
// "every rank gets Σ_q x_q" is again an allreduce-sum of the cotangents
// (mpi4jax chose the identity instead; adgraph does not).
//
// Every rank must build the same collectives in the same order; Session
// checks this when it builds a plan and throws the same RunError on every
// rank if they differ. The first communication node added to a graph binds
// MPI_COMM_WORLD to it (an MpiEnvironment must exist). Attributes: `root` in
// [0, size).
#pragma once

#include <string>

#include "core/graph.h"

namespace adgraph {

// Sums over ranks (mpi_sum, mpi_allreduce "sum") take an `exact` mode:
//   "yes":  each element's sum is exact and rounded once (an exact
//           accumulator, core/exact_sum.h), so it is bitwise the same
//           whatever the rank count and whichever rank holds which term;
//           up to 16 ranks it sends one double a rank and element, beyond
//           ExactSum::kWords (71) doubles an element;
//   "no":   MPI's sum, whose rounding depends on the rank count;
//   "auto" (the default): exact for at most kExactAutoElements elements
//           (losses, norms, dot products: one message either way), MPI's
//           sum above (a data-parallel gradient, where 71× the traffic
//           would show).
inline constexpr int64_t kExactAutoElements = 1024;

// A reduce to root (MPI_Reduce with MPI_SUM; ADCME calls it mpi_sum):
// y = Σ_r x_r on `root`, zeros of x's shape elsewhere.
// Adjoint: x̄_r = ȳ_root for every r (a broadcast from root).
Value mpi_sum(Value x, int root = 0, const std::string& exact = "auto");

// y = Σ_r Σ_i x_r[i], the sum of every element of x on every rank, exact
// and rounded once (core/exact_sum.h), on `root`; 0 elsewhere (a scalar).
// x may have a different shape on each rank (a patch of a decomposition):
// y is bitwise the same however the elements are split between ranks,
// which `mpi_sum(sum(x))` (two roundings) is not. The loss of a
// decomposed problem: L = mpi_total(misfit * misfit).
// Adjoint: x̄_r[i] = ȳ_root for every r and i.
Value mpi_total(Value x, int root = 0);

// y = Σ_r Σ_i a_r[i]·b_r[i] on `root` (0 elsewhere): each product rounded,
// their sum over every rank exact and rounded once, so y is bitwise the
// same however the elements are split. a and b have one shape on a rank
// (it may differ between ranks). One pass over a and b: the decomposed
// least-squares loss L = mpi_dot(misfit, misfit) without a misfit²
// tensor. Adjoint: s = ȳ_root broadcast, ā_r = s·b_r, b̄_r = s·a_r.
Value mpi_dot(Value a, Value b, int root = 0);

// y[j…] = Σ_r Σ_i x_r[i, j…]: x's rows summed over every rank, exact and
// rounded once per entry, on `root`; zeros elsewhere. Each rank may hold
// its own number of rows (its samples), with the same trailing shape
// everywhere (checked: a RunError on every rank otherwise). The
// data-parallel gradient from per-sample gradients: bitwise the same
// however the samples are split (examples/data_parallel.h).
// Adjoint: x̄_r[i, j…] = ȳ_root[j…] for every r and i.
Value mpi_total_rows(Value x, int root = 0);

// y = Σ_r x_r ("sum"), max_r x_r ("max"), min_r x_r ("min") or Π_r x_r
// ("prod"), element-wise, on every rank.
// Adjoints (s = Σ_q ȳ_q): sum: x̄_r = s. max/min: x̄_r = s where rank r holds
// the extreme, else 0; ties go to the lowest rank holding it. prod:
// x̄_r = s · Π_{q≠r} x_q, computed without division, so a zero on some rank
// gives exact gradients (no NaN).
Value mpi_allreduce(Value x,
                    const std::string& op = "sum",
                    const std::string& exact = "auto");

// y = x_root on every rank. Adjoint: x̄_root = Σ_q ȳ_q, zeros elsewhere.
// For a scalar y whose cotangent sums distributed terms (y multiplied or
// was added to each rank's array: the sum nodes of element-wise ops'
// gradients, accumulated), Σ_q ȳ_q is one mpi_total over those terms of
// every rank, rounded once, so it does not depend on how the array is
// split; mpi_allreduce ("sum", exact not "no") does the same.
Value mpi_bcast(Value x, int root = 0);

// y = [x_0; x_1; …] (shape [P, …x]) on root, zeros elsewhere.
// Adjoint: x̄_r = ȳ_root[r] (a scatter).
Value mpi_gather(Value x, int root = 0);
// x has shape [P, …]; y_r = x_root[r]. Adjoint: x̄_root = [ȳ_0; ȳ_1; …]
// (a gather), zeros elsewhere.
Value mpi_scatter(Value x, int root = 0);
// y = [x_0; x_1; …] on every rank. Adjoint: x̄_r = Σ_q ȳ_q[r]
// (a reduce-scatter).
Value mpi_allgather(Value x);
// x has shape [P, …]; y_r = Σ_q x_q[r]. Adjoint: x̄_q = [ȳ_0; ȳ_1; …]
// (an allgather).
Value mpi_reduce_scatter(Value x);
// x has shape [P, …]; y_r[q] = x_q[r]. Adjoint: x̄ = alltoall(ȳ).
Value mpi_alltoall(Value x);

// This rank and the number of ranks, as scalar nodes (no communication).
Value mpi_rank(Graph& graph);
Value mpi_size(Graph& graph);

// Register this layer's families; once only: call register_mpi_ops_layer().
void register_collective_ops();
// mpi_total, mpi_dot and mpi_total_rows (mpi_ops/exact_totals.cc).
void register_exact_total_ops();

// The mpi_ops layer's package initialiser: registers its families
// (collectives, exact totals, point-to-point, halo, nonblocking) and the
// layers below, once per process, thread-safe, returning at once after the
// first call. Every node builder of the layer calls it.
void register_mpi_ops_layer();

}  // namespace adgraph
