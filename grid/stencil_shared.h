// Terms a stencil reads at several points (internal to grid/): the same
// pointwise subexpression moved, as the gather adjoint's c·κ[o]·ȳ[o] at
// each neighbour o. The kernel (grid/stencil_codegen.cc) computes such a
// term once per point into rows of a ring and reads it there at each
// offset, instead of computing it once per offset; the same operations on
// the same values, so the same bits. Inputs then read only at the point
// itself may be overwritten by an output (the built-in heat adjoint's
// design: Z = κ·ȳ rows, ū written over ȳ).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "grid/stencil_codegen.h"

namespace adgraph::grid::detail {

struct SharedTerm {
  ExprPtr term;                 // at its anchor: every field read at 0
  std::vector<Offset> anchors;  // where the outputs read it (ndim each)
  int64_t ops = 0;              // operations in term
};

struct SharedTerms {
  // The outputs with each use of term t a read of input num_inputs + t at
  // its anchor.
  std::vector<ExprPtr> outputs;
  std::vector<SharedTerm> terms;
};

// The terms worth sharing: subexpressions with an operation whose field
// reads all lie at one offset and that read no inside[], occurring at two
// or more offsets, when (operations)·(offsets − 1) >= 3 and it has at most
// 64 operations (counted as a tree); largest first, none inside another
// one taken.
SharedTerms share_terms(const std::vector<ExprPtr>& outputs,
                        int ndim,
                        int num_inputs,
                        const std::vector<bool>& scalar);

// Per input: a field read at offset 0 only (or not at all) by the outputs
// once their terms are shared, and by no output's init; with
// `outside_terms`, read by no shared term either.
std::vector<bool> read_at_point_only(const StencilSource& s,
                                     bool outside_terms = false);

// The ring of the shared terms' rows (KernelArgs::ring). Term t's rows
// are numbered over the outer axes extended by its widest anchor h_a
// either side: x = Σ_a (i_a + h_a)·E_a, E_a the product of the extended
// extents after a. Its ring holds rows x + lo_t … x + hi_t (lo_t <= 0 <=
// hi_t, the anchors' reach) in slots x mod S_t; a slot is L doubles, the
// row's points from P on, with P either side.
class TermRing {
 public:
  TermRing(const StencilSource& original, const SharedTerms& shared);
  bool any() const { return !terms_.empty(); }
  int64_t doubles(const std::vector<int64_t>& ext) const;

  // Emitted text. preamble: rL, each term's tS<t>, tb<t> and zeroed slot
  // sides. batch: each term's rows done so far (tdone<t>), before the
  // batch entry's first row. row: the rows of every term up to the current
  // row's reach, computed. row_pointer: term t's row at outer offset
  // `outer` from the current row.
  std::string preamble() const;
  std::string batch() const;
  std::string row() const;
  std::string row_pointer(int t, const Offset& outer) const;

 private:
  std::string extended_index(int t) const;
  std::string delta(int t, const Offset& outer) const;
  std::string evaluate(int t) const;
  struct Term {
    SharedTerm shared;
    Offset reach;       // h_a per outer axis
    int64_t width = 0;  // the widest anchor along the row
    std::vector<int> inputs;
  };
  std::string prefetch(const Term& term) const;
  std::string fill(const Term& term,
                   const std::string& td,
                   const std::string& tp) const;
  int ndim_;
  int64_t pad_;
  std::vector<double> constants_;
  std::vector<Term> terms_;
};

}  // namespace adgraph::grid::detail
