// Terms a stencil reads at several points (grid/stencil_shared.h).
#include "grid/stencil_shared.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace adgraph::grid::detail {
namespace {

// The most operations (counted as a tree) a shared term may have: the ring
// writes a term out as a tree, three times (a derivative of a derivative
// can share subexpressions a tree repeats exponentially).
constexpr int64_t kMaxTermOps = 64;

// What a node is as a candidate term: its field reads all at `at`
// (`field`: there is one), no inside[] under it, and its operations.
struct Info {
  bool ok = true;
  bool field = false;
  Offset at;
  int64_t ops = 0;
};

class Finder {
 public:
  Finder(int ndim, const std::vector<bool>& scalar)
      : ndim_(ndim), scalar_(scalar) {}

  const Info& info(const ExprPtr& e) {
    auto it = info_.find(e.get());
    if (it != info_.end()) return it->second;
    Info in;
    if (e->op == "inside") {
      in.ok = false;
    } else if (e->op == "in" && !scalar_[e->input]) {
      in.field = true;
      in.at = e->offset;
      in.at.resize(ndim_, 0);
    } else if (e->op != "const" && e->op != "in") {
      in.ops = 1;
      for (const ExprPtr& a : e->args) {
        const Info& ai = info(a);
        in.ok = in.ok && ai.ok;
        in.ops = std::min<int64_t>(in.ops + ai.ops, kMaxTermOps + 1);
        if (!ai.field) continue;
        if (in.field && in.at != ai.at) in.ok = false;
        in.field = true;
        in.at = ai.at;
      }
      if (in.ok && in.field) candidates_.push_back(e);
    }
    return info_[e.get()] = in;
  }

  const std::vector<ExprPtr>& candidates() const { return candidates_; }

 private:
  int ndim_;
  const std::vector<bool>& scalar_;
  std::unordered_map<const Expr*, Info> info_;
  std::vector<ExprPtr> candidates_;
};

void mark_below(const ExprPtr& e, std::unordered_set<const Expr*>& covered) {
  for (const ExprPtr& a : e->args)
    if (covered.insert(a.get()).second) mark_below(a, covered);
}

ExprPtr rewrite(const ExprPtr& e,
                const std::unordered_map<const Expr*, ExprPtr>& replaced,
                std::unordered_map<const Expr*, ExprPtr>& memo) {
  if (auto it = replaced.find(e.get()); it != replaced.end()) return it->second;
  if (auto it = memo.find(e.get()); it != memo.end()) return it->second;
  ExprPtr out = e;
  std::vector<ExprPtr> args;
  bool changed = false;
  for (const ExprPtr& a : e->args) {
    args.push_back(rewrite(a, replaced, memo));
    changed = changed || args.back() != a;
  }
  if (changed) {
    auto copy = std::make_shared<Expr>(*e);
    copy->args = std::move(args);
    out = copy;
  }
  return memo[e.get()] = out;
}

std::string num(int64_t v) { return std::to_string(v); }

int64_t round8(int64_t v) { return (v + 7) / 8 * 8; }

}  // namespace

SharedTerms share_terms(const std::vector<ExprPtr>& outputs,
                        int ndim,
                        int num_inputs,
                        const std::vector<bool>& scalar) {
  SharedTerms out{outputs, {}};
  Finder finder(ndim, scalar);
  for (const ExprPtr& e : outputs) finder.info(e);
  // Candidates by the term they compute (moved to offset 0).
  struct Family {
    ExprPtr term;
    int64_t ops;
    std::vector<std::pair<ExprPtr, Offset>> members;
  };
  std::map<std::string, Family> by_term;
  for (const ExprPtr& e : finder.candidates()) {
    const Info& in = finder.info(e);
    Offset back = in.at;
    for (int64_t& o : back) o = -o;
    const ExprPtr term = shifted(e, back, ndim, &scalar);
    Family& f = by_term[print(term)];
    if (!f.term) f = Family{term, in.ops, {}};
    f.members.emplace_back(e, in.at);
  }
  std::vector<Family*> families;
  for (auto& [key, f] : by_term) families.push_back(&f);
  std::stable_sort(families.begin(), families.end(), [](auto* a, auto* b) {
    return a->ops > b->ops;
  });
  std::unordered_set<const Expr*> covered;
  std::unordered_map<const Expr*, ExprPtr> replaced;
  for (Family* f : families) {
    std::vector<Offset> anchors;
    std::vector<std::pair<ExprPtr, Offset>> kept;
    for (const auto& [e, at] : f->members) {
      if (covered.count(e.get()) || replaced.count(e.get())) continue;
      kept.emplace_back(e, at);
      if (std::find(anchors.begin(), anchors.end(), at) == anchors.end())
        anchors.push_back(at);
    }
    if (anchors.size() < 2 || f->ops > kMaxTermOps ||
        f->ops * static_cast<int64_t>(anchors.size() - 1) < 3)
      continue;
    const int index = num_inputs + static_cast<int>(out.terms.size());
    for (const auto& [e, at] : kept) {
      replaced[e.get()] = read(index, at);
      mark_below(e, covered);
    }
    out.terms.push_back({f->term, anchors, f->ops});
  }
  if (out.terms.empty()) return out;
  std::unordered_map<const Expr*, ExprPtr> memo;
  for (ExprPtr& e : out.outputs) e = rewrite(e, replaced, memo);
  return out;
}

std::vector<bool> read_at_point_only(const StencilSource& s,
                                     bool outside_terms) {
  std::vector<bool> only(s.num_inputs, false);
  if (s.ndim < 2) return only;
  const SharedTerms shared =
      s.shared ? share_terms(s.outputs, s.ndim, s.num_inputs, s.scalar)
               : SharedTerms{s.outputs, {}};
  for (int j = 0; j < s.num_inputs; ++j) only[j] = !s.scalar[j];
  for (const ReadKey& r : reads_of(tuple_of(shared.outputs, {}), s.ndim)) {
    if (r.input >= s.num_inputs) continue;
    for (int64_t o : r.offset)
      if (o != 0) only[r.input] = false;
  }
  for (int k : s.init)
    if (k >= 0) only[k] = false;
  if (outside_terms)
    for (const SharedTerm& t : shared.terms)
      for (const ReadKey& r : reads_of(t.term, s.ndim)) only[r.input] = false;
  return only;
}

// ---- The ring ---------------------------------------------------------------

TermRing::TermRing(const StencilSource& original, const SharedTerms& shared)
    : ndim_(original.ndim), constants_(kernel_constants(original.outputs)) {
  const ExprPtr all = tuple_of(original.outputs, original.init);
  int64_t depth = 1;
  for (const ReadKey& r : reads_of(all, ndim_))
    depth = std::max<int64_t>(depth, std::abs(r.offset[ndim_ - 1]));
  for (const Offset& o : insides_of(all, ndim_))
    depth = std::max<int64_t>(depth, std::abs(o[ndim_ - 1]));
  pad_ = round8(depth);
  for (const SharedTerm& st : shared.terms) {
    Term t{st, Offset(ndim_ - 1, 0), 0, {}};
    for (const Offset& a : st.anchors) {
      for (int x = 0; x + 1 < ndim_; ++x)
        t.reach[x] = std::max<int64_t>(t.reach[x], std::abs(a[x]));
      t.width = std::max<int64_t>(t.width, std::abs(a[ndim_ - 1]));
    }
    for (const ReadKey& r : reads_of(st.term, ndim_))
      if (!original.scalar[r.input]) t.inputs.push_back(r.input);
    terms_.push_back(std::move(t));
  }
}

int64_t TermRing::doubles(const std::vector<int64_t>& ext) const {
  const int64_t L = round8(ext[ndim_ - 1] + 2 * pad_);
  int64_t total = 0;
  for (const Term& t : terms_) {
    int64_t lo = 0, hi = 0;
    for (const Offset& a : t.shared.anchors) {
      int64_t delta = 0;
      for (int x = 0; x + 1 < ndim_; ++x) {
        int64_t step = a[x];
        for (int c = x + 1; c + 1 < ndim_; ++c) step *= ext[c] + 2 * t.reach[c];
        delta += step;
      }
      lo = std::min(lo, delta);
      hi = std::max(hi, delta);
    }
    total += (hi - lo + 1) * L;
  }
  return total;
}

// The extended row number of the row moved by `outer` (text), given the
// current row's index variables i<a>.
std::string TermRing::extended_index(int t) const {
  const Term& term = terms_[t];
  std::string x = "0";
  for (int a = 0; a + 1 < ndim_; ++a) {
    x += " + (i" + num(a) + " + " + num(term.reach[a]) + ")";
    for (int c = a + 1; c + 1 < ndim_; ++c)
      x += " * (ext[" + num(c) + "] + " + num(2 * term.reach[c]) + ")";
  }
  return x;
}

std::string TermRing::preamble() const {
  if (!any()) return "";
  const std::string last = "ext[" + num(ndim_ - 1) + "]";
  std::ostringstream o;
  o << "  const int64_t rL = (" << last << " + " << 2 * pad_
    << " + 7) / 8 * 8;\n"
    << "  double* tnext = A->ring;\n";
  for (std::size_t t = 0; t < terms_.size(); ++t) {
    const Term& term = terms_[t];
    const std::string T = num(static_cast<int64_t>(t));
    o << "  int64_t tlo" << T << " = 0, thi" << T << " = 0;\n";
    for (const Offset& a : term.shared.anchors) {
      o << "  { const int64_t dl = " << delta(static_cast<int>(t), a)
        << "; if (dl < tlo" << T << ") tlo" << T << " = dl; if (dl > thi" << T
        << ") thi" << T << " = dl; }\n";
    }
    o << "  const int64_t tS" << T << " = thi" << T << " - tlo" << T
      << " + 1;\n"
      << "  double* const tb" << T << " = tnext;\n"
      << "  tnext += tS" << T << " * rL;\n"
      << "  for (int64_t s = 0; s < tS" << T << "; ++s) {\n"
      << "    double* q = tb" << T << " + s * rL;\n"
      << "    for (int64_t t = 0; t < " << pad_ << "; ++t) q[t] = 0.0;\n"
      << "    for (int64_t t = " << pad_ << " + " << last
      << "; t < rL; ++t) q[t] = 0.0;\n"
      << "  }\n";
  }
  return o.str();
}

std::string TermRing::batch() const {
  std::ostringstream o;
  for (std::size_t t = 0; t < terms_.size(); ++t) {
    const Term& term = terms_[t];
    std::string x = "0";
    for (int a = 0; a + 1 < ndim_; ++a) {
      x += " + (lo[" + num(a + 1) + "] + " + num(term.reach[a]) + ")";
      for (int c = a + 1; c + 1 < ndim_; ++c)
        x += " * (ext[" + num(c) + "] + " + num(2 * term.reach[c]) + ")";
    }
    o << "    int64_t tdone" << t << " = " << x << " + tlo" << t << " - 1;\n";
  }
  return o.str();
}

// Term t's row number tdone<t>, computed into its slot: the points of the
// row from the inputs' rows (the padded copy's outside the patch), those
// beyond its ends from the padded copy's ghosts.
std::string TermRing::evaluate(int t) const {
  const Term& term = terms_[t];
  const std::string T = num(t), last = "ext[" + num(ndim_ - 1) + "]";
  std::ostringstream o;
  o << "      int64_t rr = tdone" << T << ";\n";
  for (int a = ndim_ - 2; a >= 0; --a) {
    const std::string X =
        "(ext[" + num(a) + "] + " + num(2 * term.reach[a]) + ")";
    if (a > 0) {
      o << "      const int64_t c" << a << " = rr % " << X << " - "
        << term.reach[a] << ";\n      rr /= " << X << ";\n";
    } else {
      o << "      const int64_t c0 = rr - " << term.reach[0] << ";\n";
    }
  }
  // A row of a middle axis the box's points do not read (a call over
  // part of the patch, grid/stencil_kernel.cc) is left unfilled: its slot
  // is not read before the row numbers pass it.
  for (int a = 1; a + 1 < ndim_; ++a) {
    o << "      if (c" << a << " < lo[" << a + 1 << "] - " << term.reach[a]
      << " || c" << a << " >= hi[" << a + 1 << "] + " << term.reach[a]
      << ") continue;\n";
  }
  o << "      const bool vin = true";
  for (int a = 0; a + 1 < ndim_; ++a)
    o << " && c" << a << " >= 0 && c" << a << " < ext[" << a << "]";
  o << ";\n";
  for (int j : term.inputs) {
    const std::string J = num(j);
    o << "      const double* tp" << J << " = pin[" << J << "] + b * pst[" << J
      << " * S]";
    for (int a = 0; a + 1 < ndim_; ++a)
      o << " + c" << a << " * pst[" << J << " * S + " << a + 1 << "]";
    o << ";\n      const double* td" << J << " = vin ? in[" << J
      << "] + b * st[" << J << " * S]";
    for (int a = 0; a + 1 < ndim_; ++a)
      o << " + c" << a << " * st[" << J << " * S + " << a + 1 << "]";
    o << " : tp" << J << ";\n";
  }
  o << "      double* const tq = tb" << T << " + (tdone" << T << " % tS" << T
    << ") * rL + " << pad_ << ";\n";
  o << prefetch(term);
  // The term's text with its field reads from `from` (td or tp) at tj.
  std::function<std::string(const ExprPtr&, const char*)> text =
      [&](const ExprPtr& e, const char* from) -> std::string {
    if (e->op == "const") {
      for (std::size_t i = 0; i < constants_.size(); ++i)
        if (std::memcmp(&constants_[i], &e->value, sizeof(double)) == 0)
          return "k" + num(static_cast<int64_t>(i));
      return "k?";  // every number of a term is one of the outputs'
    }
    if (e->op == "in") {
      if (std::find(term.inputs.begin(), term.inputs.end(), e->input) ==
          term.inputs.end())
        return "s" + num(e->input);
      return std::string(from) + num(e->input) + "[tj]";
    }
    std::vector<std::string> args;
    for (const ExprPtr& a : e->args) args.push_back(text(a, from));
    return find_expr_op(e->op)->emit(args);
  };
  o << fill(term, text(term.shared.term, "td"), text(term.shared.term, "tp"));
  return o.str();
}

// In 3-D, the rows `pf` ahead of the one being filled (along the last
// outer axis): each input's row and its padded copy's ghost columns. The
// fill, a plane ahead of the rows that read the term, meets these rows
// first (the ghosts are a few values every row apart in a buffer of their
// own). In the 3-D diffusion adjoint (96³) this took the gradient from
// 1.30-1.62x the hand-written one to 1.04-1.09x, with the main loop's
// prefetches below (session 47). In 2-D, where the fill runs a row ahead,
// the same made the heat adjoint's kernel slower (stencil_kernel_ab:
// 1.35-1.46x the built-in's pass against 1.18), so 2-D has none. No value
// changes.
std::string TermRing::prefetch(const Term& term) const {
  if (ndim_ < 3) return "";
  const std::string R = "c" + num(ndim_ - 2),
                    last = "ext[" + num(ndim_ - 1) + "]";
  std::ostringstream o;
  o << "      if (" << R << " >= 0 && " << R << " + pf < ext[" << ndim_ - 2
    << "]) {\n";
  for (int j : term.inputs) {
    const std::string J = num(j), step = " + pf * st[" + J + " * S + " +
                                         num(ndim_ - 1) + "]";
    o << "        if (vin) for (int64_t j = lo[" << ndim_ << "]; j < hi["
      << ndim_ << "]; j += 8) __builtin_prefetch(td" << J << step
      << " + j, 0, 3);\n";
    if (term.width > 0) {
      const std::string pstep =
          " + pf * pst[" + J + " * S + " + num(ndim_ - 1) + "]";
      o << "        __builtin_prefetch(tp" << J << pstep << " - " << term.width
        << ", 0, 3);\n"
        << "        __builtin_prefetch(tp" << J << pstep << " + " << last
        << " + " << term.width - 1 << ", 0, 3);\n";
    }
  }
  o << "      }\n";
  return o.str();
}

// The loops that fill the slot tq from the term's text over the inputs'
// rows (td) and over the padded copies' ghosts (tp): the columns the box's
// points read, [lo - W, hi + W) of the innermost axis, so that a box of a
// few columns (an overlapped call's heads and tails) fills a few. A whole
// row keeps the loops' plain bounds.
std::string TermRing::fill(const Term& term,
                           const std::string& td,
                           const std::string& tp) const {
  std::ostringstream o;
  const std::string last = "ext[" + num(ndim_ - 1) + "]";
  const std::string W = num(term.width), N = num(ndim_);
  o << "      if (lo[" << N << "] == 0 && hi[" << N << "] == " << last
    << ") {\n"
    << "      for (int64_t tj = 0; tj < " << last << "; ++tj) tq[tj] = " << td
    << ";\n";
  if (term.width > 0) {
    o << "      for (int64_t tj = -" << W << "; tj < 0; ++tj) tq[tj] = " << tp
      << ";\n"
      << "      for (int64_t tj = " << last << "; tj < " << last << " + " << W
      << "; ++tj) tq[tj] = " << tp << ";\n";
  }
  o << "      } else {\n"
    << "      const int64_t tj0 = lo[" << N << "] - " << W << ", tj1 = hi[" << N
    << "] + " << W << ";\n"
    << "      for (int64_t tj = tj0 > 0 ? tj0 : 0; tj < (tj1 < " << last
    << " ? tj1 : " << last << "); ++tj) tq[tj] = " << td << ";\n";
  if (term.width > 0) {
    o << "      for (int64_t tj = tj0; tj < 0; ++tj) tq[tj] = " << tp << ";\n"
      << "      for (int64_t tj = " << last
      << "; tj < tj1; ++tj) tq[tj] = " << tp << ";\n";
  }
  o << "      }\n";
  return o.str();
}

std::string TermRing::row() const {
  std::ostringstream o;
  for (std::size_t t = 0; t < terms_.size(); ++t) {
    const std::string T = num(static_cast<int64_t>(t));
    o << "    const int64_t x" << T << " = " << extended_index(t) << ";\n"
      << "    while (tdone" << T << " < x" << T << " + thi" << T << ") {\n"
      << "      ++tdone" << T << ";\n"
      << evaluate(static_cast<int>(t)) << "    }\n";
  }
  return o.str();
}

// Term t's extended row number of `outer` relative to the current row's,
// as text over ext[].
std::string TermRing::delta(int t, const Offset& outer) const {
  std::string d = "0";
  for (int x = 0; x + 1 < ndim_; ++x) {
    if (outer[x] == 0) continue;
    d += " + " + num(outer[x]);
    for (int c = x + 1; c + 1 < ndim_; ++c)
      d += " * (ext[" + num(c) + "] + " + num(2 * terms_[t].reach[c]) + ")";
  }
  return d;
}

std::string TermRing::row_pointer(int t, const Offset& outer) const {
  return "tb" + num(t) + " + ((x" + num(t) + " + " + delta(t, outer) +
         ") % tS" + num(t) + ") * rL + " + num(pad_);
}

}  // namespace adgraph::grid::detail

namespace adgraph::grid {

int64_t ring_doubles(const StencilSource& s, const std::vector<int64_t>& ext) {
  if (!s.shared || s.ndim < 2) return 0;
  const detail::SharedTerms shared =
      detail::share_terms(s.outputs, s.ndim, s.num_inputs, s.scalar);
  return detail::TermRing(s, shared).doubles(ext);
}

}  // namespace adgraph::grid
