// The stencil kernels' source (grid/stencil_codegen.h): one loop nest per
// expression. Its compile and cache are in stencil_compile.cc.
#include "grid/stencil_codegen.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/lanes.h"
#include "grid/stencil_shared.h"

namespace adgraph::grid {
namespace {

constexpr int64_t kLanes = lanes::kWidest;

// Names of the loop variables and strides in the emitted code.
// (Appending, not "x" + std::to_string(…): GCC 12 warns falsely on that
// at -O3, bug 105329.)
std::string named(const char* prefix, int64_t k) {
  std::string s = prefix;
  s += std::to_string(k);
  return s;
}
std::string ivar(int axis) { return named("i", axis); }

// `x` moved by `off` in the emitted code: "x + 2", "x - 1", "x + 0".
std::string moved(const std::string& x, int64_t off) {
  std::string t = x;  // (appending: GCC bug 105329)
  t += off < 0 ? " - " : " + ";
  t += std::to_string(off < 0 ? -off : off);
  return t;
}

// Each distinct number of `e` once (by bit pattern), depth first; a shared
// subexpression is walked once (`seen`), not once per use.
void collect_constants(const ExprPtr& e,
                       std::vector<double>& out,
                       std::unordered_set<const Expr*>& seen) {
  if (!seen.insert(e.get()).second) return;
  if (e->op == "const") {
    for (double v : out)
      if (std::memcmp(&v, &e->value, sizeof v) == 0) return;
    out.push_back(e->value);
    return;
  }
  for (const ExprPtr& a : e->args) collect_constants(a, out, seen);
}

int constant_index(const std::vector<double>& table, double v) {
  for (std::size_t i = 0; i < table.size(); ++i)
    if (std::memcmp(&table[i], &v, sizeof v) == 0) return static_cast<int>(i);
  return -1;
}

// The expression's text with k<i> for its numbers: what the source's
// comment shows, cut after `cap` characters (a derivative of a derivative
// prints as a tree many times larger than the code, which shares it).
void structure(const ExprPtr& e,
               const std::vector<double>& table,
               std::size_t cap,
               std::string& t) {
  if (t.size() > cap) return;
  if (e->op == "const") {
    t += named("k", constant_index(table, e->value));
  } else if (e->op == "in" || e->op == "inside") {
    t += print(e);
  } else {
    t += e->op;
    t += '(';
    for (std::size_t i = 0; i < e->args.size(); ++i) {
      if (i) t += ',';
      structure(e->args[i], table, cap, t);
    }
    t += ')';
  }
}

// How a stretch of a row reads: the edges (head and tail) test each read's
// innermost index and each inside[] at every point; the middle reads row
// pointers chosen once per row, and its inside[] are row constants (or 1
// when all of them hold on the row).
enum class Stretch { kEdge, kMiddleChecked, kMiddleAllInside };

class Emitter {
 public:
  explicit Emitter(const StencilSource& s)
      : shared_(
            s.shared && s.ndim >= 2
                ? detail::share_terms(s.outputs, s.ndim, s.num_inputs, s.scalar)
                : detail::SharedTerms{s.outputs, {}}),
        s_(with_terms(s, shared_)),
        real_inputs_(s.num_inputs),
        all_(tuple_of(s_.outputs, s_.init)),
        terms_(s, shared_) {
    reads_ = reads_of(all_, s.ndim);
    insides_ = insides_of(all_, s.ndim);
    constants_ = kernel_constants(s.outputs);  // the caller's table
    const std::vector<bool> only = detail::read_at_point_only(s);
    for (int j = 0; j < real_inputs_; ++j)
      if (only[j]) overwritable_.push_back(j);
    for (const ReadKey& r : reads_) {
      depth_ = std::max<int64_t>(depth_, std::abs(r.offset[s.ndim - 1]));
      if (s_.scalar[r.input]) {
        group_of_.push_back(-1);
        continue;
      }
      RowKey key{r.input, Offset(r.offset.begin(), r.offset.end() - 1)};
      auto g = std::find(groups_.begin(), groups_.end(), key);
      group_of_.push_back(static_cast<int>(g - groups_.begin()));
      if (g == groups_.end()) groups_.push_back(std::move(key));
    }
    for (const Offset& o : insides_)
      depth_ = std::max<int64_t>(depth_, std::abs(o[s.ndim - 1]));
    std::unordered_map<const Expr*, int> seen;
    for (const ExprPtr& e : s_.outputs) roots_.push_back(intern(e, seen));
    for (const DagNode& n : dag_)
      for (int a : n.args) ++dag_[a].uses;
    for (int r : roots_) ++dag_[r].uses;
    vector_ = s.vectors && vectorisable();
  }

  std::string function() {
    std::ostringstream o;
    o << "extern \"C\" void adgraph_stencil(const adgraph_stencil_args* A) "
         "{\n"
      << "  const double* const* in = A->in; const int64_t* st = A->st;\n"
      << "  const double* const* pin = A->pin; const int64_t* pst = A->pst;\n"
      << "  double* const* out = A->out; const int64_t* ost = A->ost;\n"
      << "  const int64_t* lo = A->lo; const int64_t* hi = A->hi;\n"
      << "  const int64_t* ext = A->ext; const int64_t* gpos = A->gpos;\n"
      << "  const int64_t* gext = A->gext; const double* k = A->k;\n"
      << "  const int64_t* size = A->size; (void)size;\n"
      << "  (void)in; (void)st; (void)pin; (void)pst; (void)ext; (void)gpos;"
         " (void)gext; (void)k;\n";
    for (std::size_t i = 0; i < constants_.size(); ++i)
      o << "  const double k" << i << " = k[" << i << "];\n";
    o << "  const int S = " << s_.ndim + 1 << ";\n";
    o << terms_.preamble();
    o << "  const bool alias = false";
    for (int j : overwritable_)
      for (std::size_t m = 0; m < s_.outputs.size(); ++m)
        o << " || out[" << m << "] == in[" << j << "]";
    o << ";\n  (void)alias;\n";
    for (int k = 0; k < s_.num_inputs; ++k)
      if (s_.scalar[k])
        o << "  const double s" << k << " = in[" << k << "][0];\n";
    const int d = s_.ndim;
    o << "  const int64_t m0 = A->mid[0], m1 = A->mid[1];\n";
    if (d >= 2) {
      // Rows ahead of the one being computed that the row loop and the
      // shared terms' rows prefetch: at least 8 KiB.
      o << "  const int64_t pf = ext[" << d - 1
        << "] >= 1024 ? 1 : 1024 / (ext[" << d - 1 << "] > 0 ? ext[" << d - 1
        << "] : 1);\n"
        << "  (void)pf;\n";
    }
    o << "  for (int64_t b = lo[0]; b < hi[0]; ++b) {\n" << terms_.batch();
    for (int a = 0; a + 1 < d; ++a) {
      o << "    for (int64_t " << ivar(a) << " = lo[" << a + 1 << "]; "
        << ivar(a) << " < hi[" << a + 1 << "]; ++" << ivar(a) << ") {\n";
    }
    o << terms_.row();
    row_setup(o);
    bool any_summed = false;
    for (std::size_t m = 0; m < s_.outputs.size(); ++m) {
      any_summed = any_summed || s_.summed[m];
      o << "    double* " << restricted(-1) << "o" << m << " = out[" << m
        << "] + b * ost[" << m << " * S]";
      for (int a = 0; a + 1 < d; ++a)
        o << " + " << ivar(a) << " * ost[" << m << " * S + " << a + 1 << "]";
      o << ";\n";
    }
    prefetch(o);
    if (any_summed) {
      o << "    if (b > lo[0]) {\n"
        << row(true) << "    } else {\n"
        << row(false) << "    }\n";
    } else {
      o << row(false);
    }
    for (int a = 0; a + 1 < d; ++a) o << "    }\n";
    o << "  }\n}\n";
    return helpers_.str() + o.str();
  }

 private:
  // One row: the middle [m0, m1) as one vectorisable loop, then the head
  // [lo, m0) and tail [m1, hi) point by point (one loop for both). A first
  // write of a row whose row pointers stay inside their inputs' memory over
  // all of [lo, hi) (`whole`, and ends no wider than the reads reach: `wr`)
  // runs the vector loop over the whole row instead, whose trip count then
  // has no remainder when the row is a multiple of the vector width; the
  // head and tail then overwrite its values there (which read the
  // neighbouring rows' ends). An output may share its initial input's
  // buffer (OpDef::in_place_of), and that input is read only at the point
  // written: its values at the head and tail are saved into h<m> and t<m>
  // before the vector loop writes them. Not for a later batch entry of a
  // summed output (+= must run once). The edges come after the middle: run
  // first, their scalar code met each row's cache lines first and stalled
  // on them (a third of the 3-D adjoint's time on a Zen 3, session 42).
  // Each loop body is written once per kind of read (the compile time
  // grows with the copies).
  std::string row(bool later) {
    const int d = s_.ndim;
    const std::string lo = "lo[" + std::to_string(d) + "]",
                      hi = "hi[" + std::to_string(d) + "]";
    const std::string w = std::to_string(depth_);
    const std::string i = ivar(d - 1);
    std::ostringstream o;
    o << "      {\n";
    if (later) {
      o << "      const bool wr = false;\n";
      if (vector_) o << "      const bool ends = false;\n";
    } else {
      // Written over an input read at the point (alias), a row whose ends
      // the scalar code would recompute after the vector loop wrote them
      // runs the middle and the ends apart instead.
      o << "      const bool wr0 = whole && m0 - " << lo << " <= " << w
        << " && " << hi << " - m1 <= " << w << ";\n";
      if (vector_) {
        o << "      const bool ends = " << ends_condition("wr0") << ";\n"
          << "      const bool wr = wr0 && (!alias || ends);\n";
      } else {
        o << "      const bool wr = wr0 && !alias;\n";
      }
      for (std::size_t m = 0; m < s_.outputs.size(); ++m) {
        if (s_.init[m] < 0) continue;
        const std::string init = leaf(*read(s_.init[m]), Stretch::kEdge);
        o << "      double h" << m << "[" << w << "], t" << m << "[" << w
          << "];\n"
          << "      if (wr" << (vector_ ? " && !ends" : "") << ") {\n"
          << "      for (int64_t " << i << " = " << lo << "; " << i
          << " < m0; ++" << i << ") h" << m << "[" << i << " - " << lo
          << "] = " << init << ";\n"
          << "      for (int64_t " << i << " = m1; " << i << " < " << hi
          << "; ++" << i << ") t" << m << "[" << i << " - m1] = " << init
          << ";\n      }\n";
      }
    }
    o << "      const int64_t mlo = wr ? " << lo << " : m0, mhi = wr ? " << hi
      << " : m1;\n"
      << "      if (mlo < mhi) {\n"
      << middle("mlo", "mhi", later) << "      }\n";
    if (vector_) o << "      if (!ends)\n";
    o << "      for (int part = 0; part < 2; ++part) {\n"
      << "      const int64_t from = part ? m1 : " << lo << ", to = part ? "
      << hi << " : m0;\n"
      << loop("from", "to", later, Stretch::kEdge) << "      }\n";
    o << "      }\n";
    return o.str();
  }

  // The vector loop over [from, to): inside[] are 1 on a row where all of
  // their outer parts hold. Each variant of the loop is a function of its
  // own (middle_function), called once a row.
  std::string middle(const std::string& from,
                     const std::string& to,
                     bool later) {
    if (insides_.empty())
      return call(from, to, later, Stretch::kMiddleAllInside);
    std::ostringstream o;
    o << "      if (true";
    for (std::size_t m = 0; m < insides_.size(); ++m) o << " && q" << m;
    o << ") {\n"
      << call(from, to, later, Stretch::kMiddleAllInside) << "      } else {\n"
      << call(from, to, later, Stretch::kMiddleChecked) << "      }\n";
    return o.str();
  }

  // A call of the middle's loop variant, written on first use. The loop is
  // a function of its own, given the row pointers, outputs, numbers and
  // inside[] flags it reads as __restrict parameters: inlined into the row
  // loop, it shared the registers with the head and tail's pointers, and
  // GCC kept its row pointers and numbers on the stack, reloading them at
  // every vector (the 2-D heat adjoint's pass took 11 % longer, session
  // 44).
  std::string call(const std::string& from,
                   const std::string& to,
                   bool later,
                   Stretch how) {
    const std::string name =
        std::string("adgraph_middle_") + (later ? "later_" : "first_") +
        (how == Stretch::kMiddleChecked ? "checked" : "inside");
    std::vector<std::string> params, args;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      params.push_back("const double* " + restricted(groups_[g].input) +
                       named("r", static_cast<int64_t>(g)));
      args.push_back(named("r", static_cast<int64_t>(g)));
    }
    for (std::size_t m = 0; m < s_.outputs.size(); ++m) {
      params.push_back("double* " + restricted(-1) +
                       named("o", static_cast<int64_t>(m)));
      args.push_back(named("o", static_cast<int64_t>(m)));
    }
    for (std::size_t i = 0; i < constants_.size(); ++i) {
      params.push_back("const double " + named("k", static_cast<int64_t>(i)));
      args.push_back(named("k", static_cast<int64_t>(i)));
    }
    for (int k = 0; k < s_.num_inputs; ++k) {
      if (!s_.scalar[k]) continue;
      params.push_back("const double " + named("s", k));
      args.push_back(named("s", k));
    }
    if (how == Stretch::kMiddleChecked) {
      for (std::size_t m = 0; m < insides_.size(); ++m) {
        params.push_back("const bool " + named("q", static_cast<int64_t>(m)));
        args.push_back(named("q", static_cast<int64_t>(m)));
      }
    }
    if (vector_) {
      // The row's ends (vector_body): the padded copy's rows, and the
      // innermost axis's global offset and extent.
      const std::string D = std::to_string(s_.ndim - 1);
      params.push_back("const bool ends");
      args.push_back("ends");
      for (int g : rolled_groups()) {
        params.push_back("const double* __restrict " + named("p", g));
        args.push_back(named("p", g));
      }
      params.push_back("const int64_t gin");
      args.push_back("gpos[" + D + "]");
      params.push_back("const int64_t gxt");
      args.push_back("gext[" + D + "]");
    }
    if (std::find(written_.begin(), written_.end(), name) == written_.end()) {
      written_.push_back(name);
      helpers_ << "static __attribute__((noinline)) void " << name
               << "(const int64_t from, const int64_t to";
      for (const std::string& p : params) helpers_ << ",\n    " << p;
      helpers_ << ") {\n"
               << (vector_ ? vector_body(later, how)
                           : loop("from", "to", later, how))
               << "}\n\n";
    }
    std::string c = "      " + name + "(" + from + ", " + to;
    for (const std::string& a : args) c += ", " + a;
    return c + ");\n";
  }

  // ---- The middle with explicit vectors -----------------------------------

  // Whether the middle can be written with vectors (vector_body): every
  // operation is arithmetic (add, sub, mul, div, neg) or a where whose
  // condition is row-constant there (an inside[], or arithmetic of
  // numbers, scalars and inside[]). Others (the math functions,
  // comparisons, min, max, a where on field values) keep the scalar loop,
  // which GCC vectorises where it can.
  bool vectorisable() const {
    std::vector<char> field(dag_.size(), 0);
    for (std::size_t n = 0; n < dag_.size(); ++n) {
      const Expr& e = *dag_[n].e;
      if (e.op == "const" || e.op == "inside") continue;
      if (e.op == "in") {
        field[n] = !s_.scalar[e.input];
        continue;
      }
      const bool arithmetic = e.op == "add" || e.op == "sub" || e.op == "mul" ||
                              e.op == "div" || e.op == "neg";
      if (!arithmetic && e.op != "where") return false;
      if (e.op == "where" && field[dag_[n].args[0]]) return false;
      for (int a : dag_[n].args) field[n] = field[n] || field[a];
    }
    return true;
  }

  // Reads of a row group at an innermost offset other than 0 and within a
  // vector's width come from the vectors at i − L, i and i + L of the row
  // (each loaded once as the loop rolls along it) by shuffles: the built-in
  // heat adjoint's way (solvers/heat_adjoint_row_impl.h). Written point by
  // point, each such read is an unaligned load, half of them across a cache
  // line. The vectors hold the lanes the scalar code computes, in its
  // order: the same bits.
  bool rolled(const ReadKey& k) const {
    const int64_t off = k.offset[s_.ndim - 1];
    return !s_.scalar[k.input] && off != 0 && std::abs(off) <= kLanes;
  }

  std::string shuffle(std::size_t r) const {
    const int64_t off = reads_[r].offset[s_.ndim - 1];
    const std::string G = std::to_string(group_of_[r]);
    std::string t = "__builtin_shufflevector(";
    // At a positive offset: the vector at v + off out of those at v and
    // v + L; at a negative one, the vector at v + L + off (the next
    // position's) out of the same two.
    t += "vc" + G + ", vn" + G;
    const int64_t first = off > 0 ? off : kLanes + off;
    for (int64_t l = 0; l < kLanes; ++l) t += ", " + std::to_string(first + l);
    return t + ")";
  }

  // ---- A row's ends in the vector loop ------------------------------------
  //
  // A whole row (`wr`) of a multiple of L points, at least two vectors, whose
  // head [lo, m0) and tail [m1, hi) fit in its first and last vectors, and
  // with reads no farther along the row than L: the vector loop computes its
  // ends too (`ends`), and the points are not computed again one by one
  // (their scalar code, which tests every read and inside[] at every point,
  // took about 7 % of the 2-D heat adjoint's pass). In the first vector a
  // read at a negative offset takes the lanes left of the row from the
  // padded copy's row (p<g>), in the last one a read at a positive offset
  // those right of it; inside[] are lane masks there (hm<k>, tm<k>), made
  // from the row's outer part (q<k>) and each lane's place on the global
  // innermost axis. The lanes compute what the scalar code does, in its
  // order: the same bits.

  std::vector<int> rolled_groups() const {
    std::vector<int> out;
    for (std::size_t r = 0; r < reads_.size(); ++r)
      if (rolled(reads_[r]) &&
          std::find(out.begin(), out.end(), group_of_[r]) == out.end())
        out.push_back(group_of_[r]);
    return out;
  }

  std::string ends_condition(const std::string& wr) const {
    const std::string D = std::to_string(s_.ndim), L = std::to_string(kLanes);
    if (depth_ > kLanes) return "false";
    return wr + " && lo[" + D + "] == 0 && hi[" + D + "] == ext[" +
           std::to_string(s_.ndim - 1) + "] && hi[" + D + "] % " + L +
           " == 0 && hi[" + D + "] >= 2 * " + L;
  }

  // Read r's vector at v with the lanes outside the row (left at the head,
  // right at the tail) from the padded copy: a shuffle of two loads.
  std::string blend(std::size_t r, bool head) const {
    const int64_t off = reads_[r].offset[s_.ndim - 1];
    const std::string G = std::to_string(group_of_[r]);
    std::string t = "__builtin_shufflevector(adgraph_ld(" +
                    moved("r" + G + " + v", off) + "), adgraph_ld(" +
                    moved("p" + G + " + v", off) + ")";
    for (int64_t l = 0; l < kLanes; ++l) {
      const bool ghost = head ? l < -off : l >= kLanes - off;
      t += ", " + std::to_string(ghost ? kLanes + l : l);
    }
    return t + ")";
  }

  // The masks of inside[] lane by lane (`name`<k>) in the vector at
  // column `at`, made just before its call (kept live across the vector
  // loop, the tail's masks had it spill its vectors to the stack).
  std::string ends_masks(Stretch how,
                         const std::string& name,
                         const std::string& at) const {
    if (insides_.empty()) return "";
    const int d = s_.ndim;
    std::ostringstream o;
    o << "    const adgraph_m lanes_" << name << " = {";
    for (int64_t l = 0; l < kLanes; ++l) o << (l ? ", " : "") << l;
    o << "};\n    (void)lanes_" << name << ";\n";
    for (std::size_t k = 0; k < insides_.size(); ++k) {
      const int64_t o_in = insides_[k][d - 1];
      const std::string outer = how == Stretch::kMiddleChecked
                                    ? named("q", static_cast<int64_t>(k))
                                    : std::string("true");
      o << "    const adgraph_m " << name << k << " = (" << outer
        << " ? ~adgraph_m{} : adgraph_m{})";
      if (!s_.periodic[d - 1] && o_in != 0) {
        const std::string j = "(lanes_" + name + " + (gin + " + at + " + " +
                              std::to_string(o_in) + "))";
        o << " & (adgraph_m)(" << j << " >= 0) & (adgraph_m)(" << j
          << " < gxt)";
      }
      o << ";\n";
    }
    return o.str();
  }

  // A field read in `points`: its shifted vector a<r>, or a load.
  std::string vector_read(const Expr& e) const {
    const int d = s_.ndim;
    Offset off = e.offset;
    off.resize(d, 0);
    std::size_t r = 0;
    while (reads_[r].input != e.input || reads_[r].offset != off) ++r;
    if (rolled(reads_[r])) return named("a", static_cast<int64_t>(r));
    return "adgraph_ld(" +
           moved("r" + std::to_string(group_of_[r]) + " + i", off[d - 1]) + ")";
  }

  // The lambda `points`: the outputs at the vector of points from i, given
  // the vectors of the shifted reads (a<r>). A value stays a double while
  // it depends on no field (numbers, scalars, inside[]), else it is a
  // vector; a where's branches are made vectors when either is.
  std::string vector_points(bool later,
                            Stretch how,
                            const std::vector<std::size_t>& shifted,
                            bool ends) {
    const int d = s_.ndim;
    std::ostringstream o;
    o << "  auto " << (ends ? "points_at_ends" : "points")
      << " = [&](const int64_t i";
    for (std::size_t r : shifted) o << ", const adgraph_v a" << r;
    if (ends)
      for (std::size_t k = 0; k < insides_.size(); ++k)
        o << ", const adgraph_m im" << k;
    o << ") __attribute__((always_inline)) {\n";
    std::vector<std::string> text(dag_.size());
    std::vector<char> vec(dag_.size(), 0);
    auto as_vector = [&](std::size_t n) {
      return vec[n] ? text[n] : "(adgraph_v{} + " + text[n] + ")";
    };
    for (std::size_t n = 0; n < dag_.size(); ++n) {
      const DagNode& dn = dag_[n];
      const Expr& e = *dn.e;
      std::string t;
      if (e.op == "in" && !s_.scalar[e.input]) {
        t = vector_read(e);
        vec[n] = 1;
      } else if (ends && e.op == "inside") {
        // At a row's ends inside[] differs lane by lane: a mask.
        Offset at = e.offset;
        at.resize(d, 0);
        const std::size_t k =
            std::find(insides_.begin(), insides_.end(), at) - insides_.begin();
        t = "adgraph_mv(im" + std::to_string(k) + ")";
        vec[n] = 1;
      } else if (e.op == "const" || e.op == "in" || e.op == "inside") {
        t = leaf(e, how);
      } else if (e.op == "where" && vec[dn.args[0]]) {
        const int c = dn.args[0], a = dn.args[1], b = dn.args[2];
        vec[n] = 1;
        t = "adgraph_sel(" + text[c] + ", " + as_vector(a) + ", " +
            as_vector(b) + ")";
      } else if (e.op == "where") {
        const int c = dn.args[0], a = dn.args[1], b = dn.args[2];
        vec[n] = vec[a] || vec[b];
        t = "(" + text[c] + " != 0.0 ? " + (vec[n] ? as_vector(a) : text[a]) +
            " : " + (vec[n] ? as_vector(b) : text[b]) + ")";
      } else {
        std::vector<std::string> args;
        for (int a : dn.args) {
          args.push_back(text[a]);
          vec[n] = vec[n] || vec[a];
        }
        t = find_expr_op(e.op)->emit(args);
      }
      const bool leafy = e.op == "const" || e.op == "in" || e.op == "inside";
      if (dn.uses < 2 || leafy) {
        text[n] = std::move(t);
        continue;
      }
      text[n] = named("c", static_cast<int64_t>(n));
      o << "    const " << (vec[n] ? "adgraph_v " : "double ") << text[n]
        << " = " << t << ";\n";
    }
    for (std::size_t m = 0; m < s_.outputs.size(); ++m) {
      std::string value = as_vector(roots_[m]);
      if (s_.init[m] >= 0 && !(later && s_.summed[m])) {
        std::size_t r = 0;
        const Offset zero(d, 0);
        while (reads_[r].input != s_.init[m] || reads_[r].offset != zero) ++r;
        value = "(adgraph_ld(r" + std::to_string(group_of_[r]) + " + i) + " +
                value + ")";
      }
      if (later && s_.summed[m])
        value = "(adgraph_ld(o" + std::to_string(m) + " + i) + " + value + ")";
      o << "    const adgraph_v y" << m << " = " << value << ";\n";
    }
    for (std::size_t m = 0; m < s_.outputs.size(); ++m)
      o << "    adgraph_st(o" << m << " + i, y" << m << ");\n";
    o << "  };\n";
    return o.str();
  }

  // The vector loop over [from, to) with its scalar remainder: the first
  // vector with direct loads, then the rolling vectors while a whole vector
  // lies beyond the current one, then any last vector directly, then point
  // by point.
  std::string vector_body(bool later, Stretch how) {
    const int d = s_.ndim;
    const std::string L = std::to_string(kLanes);
    std::vector<std::size_t> shifted;  // reads taken by shuffles
    std::vector<int> groups;           // their groups
    for (std::size_t r = 0; r < reads_.size(); ++r) {
      if (!rolled(reads_[r])) continue;
      shifted.push_back(r);
      if (std::find(groups.begin(), groups.end(), group_of_[r]) == groups.end())
        groups.push_back(group_of_[r]);
    }
    std::ostringstream o;
    o << "  const adgraph_v one_v = adgraph_v{} + 1.0;\n  (void)one_v;\n";
    o << "  int64_t v = from;\n";
    o << vector_points(later, how, shifted, false);
    o << vector_points(later, how, shifted, true);
    // Per rolled group: vc<g>, its vector at v; per read at a negative
    // offset: a<r>, its vector at v (loaded at the first, then shuffled out
    // of the vectors at v − L and v). Reads at positive offsets come from
    // the vectors at v and v + L; the last vector loads them.
    auto load = [&](std::size_t r) {
      return "adgraph_ld(" +
             moved("r" + std::to_string(group_of_[r]) + " + v",
                   reads_[r].offset[d - 1]) +
             ")";
    };
    auto negative = [&](std::size_t r) { return reads_[r].offset[d - 1] < 0; };
    // The head: reads left of the row from the padded copy's ghosts.
    o << "  if (ends) {\n"
      << ends_masks(how, "hm", "v") << "    points_at_ends(v";
    for (std::size_t r : shifted)
      o << ", " << (negative(r) ? blend(r, true) : load(r));
    for (std::size_t k = 0; k < insides_.size(); ++k) o << ", hm" << k;
    o << ");\n    v += " << L << ";\n  }\n";
    o << "  if (to - v >= " << L << ") {\n";
    for (int g : groups) {
      o << "    adgraph_v vc" << g << " = adgraph_ld(r" << g << " + v);\n"
        << "    (void)vc" << g << ";\n";
    }
    for (std::size_t r : shifted)
      if (negative(r)) o << "    adgraph_v a" << r << " = " << load(r) << ";\n";
    o << "    for (; v + 2 * " << L << " <= to; v += " << L << ") {\n";
    for (int g : groups)
      o << "      const adgraph_v vn" << g << " = adgraph_ld(r" << g
        << " + v + " << L << ");\n";
    o << "      points(v";
    for (std::size_t r : shifted)
      o << ", "
        << (negative(r) ? named("a", static_cast<int64_t>(r)) : shuffle(r));
    o << ");\n";
    for (std::size_t r : shifted)
      if (negative(r)) o << "      a" << r << " = " << shuffle(r) << ";\n";
    for (int g : groups) o << "      vc" << g << " = vn" << g << ";\n";
    // The last vector; with `ends`, the row's tail: reads right of the row
    // from the ghosts.
    o << "    }\n    if (ends) {\n"
      << ends_masks(how, "tm", "v") << "      points_at_ends(v";
    for (std::size_t r : shifted)
      o << ", "
        << (negative(r) ? named("a", static_cast<int64_t>(r))
                        : blend(r, false));
    for (std::size_t k = 0; k < insides_.size(); ++k) o << ", tm" << k;
    o << ");\n    } else {\n      points(v";
    for (std::size_t r : shifted)
      o << ", "
        << (negative(r) ? named("a", static_cast<int64_t>(r)) : load(r));
    o << ");\n    }\n    v += " << L << ";\n  }\n";
    o << loop("v", "to", later, how);
    return o.str();
  }

  // The points [from, to) of a row, writing every output: at the first
  // batch entry (or for an output not summed) y = [init +] value, at later
  // ones y += value.
  // At the edges of a first write, an initial input's value comes from
  // h<m> or t<m> when the vector loop ran over the whole row (`wr`).
  std::string loop(const std::string& from,
                   const std::string& to,
                   bool later,
                   Stretch how) {
    const std::string in = ivar(s_.ndim - 1);
    std::ostringstream o;
    if (how != Stretch::kEdge) {
      // Outputs are buffers of their own (the op is not in place), but GCC
      // does not apply __restrict to pointers declared in a loop body: with
      // two outputs or more it needs more run-time alias checks than it
      // allows and leaves the loop scalar (2.6x slower, session 36).
      // Hence the promise that iterations are independent.
      o << "#if defined(__clang__)\n"
           "#pragma clang loop vectorize(assume_safety)\n"
           "#else\n#pragma GCC ivdep\n#endif\n";
    }
    o << "      for (int64_t " << in << " = " << from << "; " << in << " < "
      << to << "; ++" << in << ") {\n";
    // Each subexpression used twice or more is computed once into c<n>;
    // then every output's value into y<m>, then the stores (so a store
    // never comes before a read of the point it writes).
    std::vector<std::string> text(dag_.size());
    for (std::size_t n = 0; n < dag_.size(); ++n) {
      const DagNode& d = dag_[n];
      const std::string& op = d.e->op;
      const bool is_leaf = op == "const" || op == "in" || op == "inside";
      std::string t;
      if (is_leaf) {
        t = leaf(*d.e, how);
      } else {
        std::vector<std::string> args;
        for (int a : d.args) args.push_back(text[a]);
        t = find_expr_op(op)->emit(args);
      }
      const bool cheap = op == "const" || (is_leaf && how != Stretch::kEdge);
      if (d.uses < 2 || cheap) {
        text[n] = std::move(t);
        continue;
      }
      text[n] = named("c", static_cast<int64_t>(n));
      o << "        const double " << text[n] << " = " << t << ";\n";
    }
    for (std::size_t m = 0; m < s_.outputs.size(); ++m) {
      std::string value = text[roots_[m]];
      if (s_.init[m] >= 0 && !(later && s_.summed[m])) {
        std::string with_init(1, '(');  // (appending: GCC bug 105329)
        std::string init = leaf(*read(s_.init[m]), how);
        if (how == Stretch::kEdge && !later) {
          const std::string M = std::to_string(m),
                            lo = "lo[" + std::to_string(s_.ndim) + "]";
          init = "(wr ? (part ? t" + M + "[" + in + " - m1] : h" + M + "[" +
                 in + " - " + lo + "]) : " + init + ")";
        }
        with_init += init;
        with_init += " + ";
        with_init += value;
        with_init += ')';
        value = with_init;
      }
      o << "        const double y" << m << " = " << value << ";\n";
    }
    for (std::size_t m = 0; m < s_.outputs.size(); ++m) {
      o << "        o" << m << "[" << in << "] "
        << (later && s_.summed[m] ? "+= y" : "= y") << m << ";\n";
    }
    o << "      }\n";
    return o.str();
  }

  // Software prefetch, `pf` rows ahead of the one being computed (rows of
  // the last outer axis: a 2-D patch's rows, a plane's rows in 3-D), of
  // what the row loop meets there first. No value changes.
  //  - An input marked so: its row at its farthest outer offset
  //    (lexicographically: in 3-D the next plane's row, where the rows are
  //    first read), over [lo, hi). For a state an adjoint reads back from
  //    its loop's tape, out of DRAM: each row starts a stream the hardware
  //    prefetchers pick up late (the built-in heat_step's adjoint
  //    prefetches its tape the same way). Only inputs marked so:
  //    prefetching inputs that are already in cache, or the outputs, made
  //    the heat step slower (docs/PERFORMANCE.md). Until session 47 the
  //    row was the current plane's in 3-D, read a plane before.
  //  - Every input read along the row: the padded copy's ghost columns
  //    that row's ends read. The padded copy is a buffer of its own, its
  //    ghosts a few values every row apart, so each row's ends met a cold
  //    line (a third of the 3-D adjoint's middle, session 47).
  void prefetch(std::ostringstream& o) {
    const int d = s_.ndim;
    if (d < 2) return;
    for (int k = 0; k < real_inputs_; ++k) {
      if (s_.scalar[k]) continue;
      std::optional<Offset> first, ends;  // of every read, of moved ones
      int64_t left = 0, right = 0;
      for (const ReadKey& r : reads_) {
        if (r.input != k) continue;
        const Offset outer(r.offset.begin(), r.offset.end() - 1);
        if (!first || *first < outer) first = outer;
        const int64_t off = r.offset[d - 1];
        if (off == 0) continue;
        left = std::max(left, -off);
        right = std::max(right, off);
        if (!ends || *ends < outer) ends = outer;
      }
      if (first && k < static_cast<int>(s_.prefetch.size()) && s_.prefetch[k])
        prefetch_row(o, k, *first);
      if (ends) prefetch_ghosts(o, k, *ends, left, right);
    }
  }

  // Input k's row at outer offset `at` + pf rows, when it lies within the
  // input's elements (past a plane's last row: the next plane's first).
  void prefetch_row(std::ostringstream& o, int k, const Offset& at) {
    const int d = s_.ndim;
    const std::string K = std::to_string(k);
    o << "    {\n      const int64_t at = b * st[" << K << " * S]";
    for (int a = 0; a + 1 < d; ++a)
      o << " + (" << ivar(a) << " + " << at[a] << (a + 2 == d ? " + pf" : "")
        << ") * st[" << K << " * S + " << a + 1 << "]";
    o << ";\n      if (at + lo[" << d << "] >= 0 && at + hi[" << d
      << "] <= size[" << K << "])\n"
      << "        for (int64_t j = lo[" << d << "]; j < hi[" << d
      << "]; j += 8) __builtin_prefetch(in[" << K << "] + at + j, 0, 3);\n"
      << "    }\n";
  }

  // The padded copy's columns [lo - left, lo) and [hi, hi + right) of
  // input k's row at outer offset `at` + pf rows (the last outer axis's
  // index kept within its extent: no pointer leaves the copy).
  void prefetch_ghosts(std::ostringstream& o,
                       int k,
                       const Offset& at,
                       int64_t left,
                       int64_t right) {
    const int d = s_.ndim;
    const std::string K = std::to_string(k);
    o << "    if (true";
    for (int a = 0; a + 1 < d; ++a) {
      if (at[a] == 0 && a + 2 < d) continue;
      const std::string x =
          ivar(a) + " + " + std::to_string(at[a]) + (a + 2 == d ? " + pf" : "");
      o << " && " << x << " >= 0 && " << x << " < ext[" << a << "]";
    }
    o << ") {\n      const double* q = pin[" << K << "] + b * pst[" << K
      << " * S]";
    for (int a = 0; a + 1 < d; ++a)
      o << " + (" << ivar(a) << " + " << at[a] << (a + 2 == d ? " + pf" : "")
        << ") * pst[" << K << " * S + " << a + 1 << "]";
    o << ";\n";
    if (left > 0)
      o << "      __builtin_prefetch(q + lo[" << d << "] - " << left
        << ", 0, 3);\n";
    if (right > 0)
      o << "      __builtin_prefetch(q + hi[" << d << "] + " << right - 1
        << ", 0, 3);\n";
    o << "    }\n";
  }

  // Per row group g (the reads of one input whose outer offsets agree:
  // one row of it): v<g>, whether that row (the outer indices moved by the
  // offsets) is in the patch; d<g>, that row of the input itself (valid
  // when v<g>); p<g>, that row of the padded copy; r<g>, the middle's
  // pointer (the input's row when v<g>, else the padded copy's). A read is
  // its group's row at the read's innermost offset: one pointer a row, not
  // one a read (a pointer a read spilled the 2-D heat adjoint's 16 to the
  // stack, 17 % of its pass, session 44). And q<m>, the outer axes' part of
  // each inside[].
  void row_setup(std::ostringstream& o) {
    const int d = s_.ndim;
    for (std::size_t g = 0; g < groups_.size(); ++g) {
      const RowKey& k = groups_[g];
      const std::string K = std::to_string(k.input);
      if (term(k.input)) {  // a shared term's row: always in the ring
        o << "    const bool v" << g << " = true;\n"
          << "    const double* d" << g << " = "
          << terms_.row_pointer(k.input - real_inputs_, k.outer) << ";\n"
          << "    const double* p" << g << " = d" << g << ";\n"
          << "    const double* __restrict r" << g << " = d" << g << ";\n"
          << "    (void)v" << g << "; (void)p" << g << "; (void)r" << g
          << ";\n";
        continue;
      }
      o << "    const bool v" << g << " = true";
      for (int a = 0; a + 1 < d; ++a) {
        if (k.outer[a] == 0) continue;
        const std::string at = ivar(a) + " + " + std::to_string(k.outer[a]);
        o << " && " << at << " >= 0 && " << at << " < ext[" << a << "]";
      }
      o << ";\n    const double* d" << g << " = in[" << K << "] + b * st[" << K
        << " * S] + (v" << g << " ? 0";
      for (int a = 0; a + 1 < d; ++a) {
        o << " + (" << ivar(a) << " + " << k.outer[a] << ") * st[" << K
          << " * S + " << a + 1 << "]";
      }
      o << " : 0);\n    const double* p" << g << " = pin[" << K
        << "] + b * pst[" << K << " * S]";
      for (int a = 0; a + 1 < d; ++a) {
        o << " + (" << ivar(a) << " + " << k.outer[a] << ") * pst[" << K
          << " * S + " << a + 1 << "]";
      }
      o << ";\n";
      o << "    const double* " << restricted(k.input) << "r" << g << " = v"
        << g << " ? d" << g << " : p" << g << ";\n";
      o << "    (void)d" << g << "; (void)p" << g << "; (void)r" << g << ";\n";
    }
    // whole: every middle pointer stays inside its input over [lo, hi)
    // (a padded copy's always does: its ghosts are as wide as the offset).
    o << "    const bool whole = true";
    for (std::size_t r = 0; r < reads_.size(); ++r) {
      const ReadKey& k = reads_[r];
      const int64_t off = k.offset[d - 1];
      if (s_.scalar[k.input] || off == 0 || term(k.input)) continue;
      const std::string G = std::to_string(group_of_[r]);
      const std::string at = "(d" + G + " - in[" + std::to_string(k.input) +
                             "]) + " + std::to_string(off);
      o << " && (!v" << G << " || (" << at << " + lo[" << d << "] >= 0 && "
        << at << " + hi[" << d << "] <= size[" << k.input << "]))";
    }
    o << ";\n    (void)whole;\n";
    for (std::size_t m = 0; m < insides_.size(); ++m) {
      o << "    const bool q" << m << " = true";
      for (int a = 0; a + 1 < d; ++a) {
        if (s_.periodic[a] || insides_[m][a] == 0) continue;
        o << " && gpos[" << a << "] + " << ivar(a) << " + " << insides_[m][a]
          << " >= 0 && gpos[" << a << "] + " << ivar(a) << " + "
          << insides_[m][a] << " < gext[" << a << "]";
      }
      o << ";\n";
    }
  }

  std::string leaf(const Expr& e, Stretch how) {
    const int d = s_.ndim;
    const std::string i = ivar(d - 1);
    if (e.op == "const") return named("k", constant_index(constants_, e.value));
    Offset o = e.offset;
    o.resize(d, 0);
    if (e.op == "in") {
      if (s_.scalar[e.input]) return named("s", e.input);
      std::size_t r = 0;
      while (reads_[r].input != e.input || reads_[r].offset != o) ++r;
      const std::string G = std::to_string(group_of_[r]);
      const int64_t off = o[d - 1];
      const std::string at = off == 0 ? i : moved(i, off);
      if (how != Stretch::kEdge || off == 0) return "r" + G + "[" + at + "]";
      return "((v" + G + " && " + at + " >= 0 && " + at + " < ext[" +
             std::to_string(d - 1) + "]) ? d" + G + "[" + at + "] : p" + G +
             "[" + at + "])";
    }
    // inside[]
    if (how == Stretch::kMiddleAllInside) return "1.0";
    std::size_t m = 0;
    while (insides_[m] != o) ++m;
    std::string t = named("(q", static_cast<int64_t>(m));
    const int a = d - 1;
    if (how == Stretch::kEdge && !s_.periodic[a] && o[a] != 0) {
      const std::string g = "gpos[" + std::to_string(a) + "] + " + i + " + " +
                            std::to_string(o[a]);
      t += " && " + g + " >= 0 && " + g + " < gext[" + std::to_string(a) + "]";
    }
    return t + " ? 1.0 : 0.0)";
  }

  // The outputs as a DAG: each distinct subexpression (by structure, as a
  // derivative repeats its primal's) once, arguments before their users.
  struct DagNode {
    ExprPtr e;
    std::vector<int> args;
    int uses = 0;  // references from other nodes and from the outputs
  };

  int intern(const ExprPtr& e, std::unordered_map<const Expr*, int>& seen) {
    if (auto it = seen.find(e.get()); it != seen.end()) return it->second;
    std::vector<int> args;
    for (const ExprPtr& a : e->args) args.push_back(intern(a, seen));
    std::string key = e->op;
    key += '|';
    if (e->op == "const") {
      uint64_t bits = 0;
      std::memcpy(&bits, &e->value, sizeof bits);
      key += std::to_string(bits);
    } else if (e->op == "in" || e->op == "inside") {
      key += std::to_string(e->input);
      Offset o = e->offset;
      o.resize(s_.ndim, 0);
      for (int64_t v : o) {
        key += ',';
        key += std::to_string(v);
      }
    }
    for (int a : args) {
      key += ' ';
      key += std::to_string(a);
    }
    const auto [it, fresh] =
        by_key_.try_emplace(key, static_cast<int>(dag_.size()));
    if (fresh) dag_.push_back({e, std::move(args)});
    seen[e.get()] = it->second;
    return it->second;
  }

  // The source with its shared terms as inputs num_inputs + t (read from
  // the ring), and the caller's number of inputs.
  static StencilSource with_terms(const StencilSource& s,
                                  const detail::SharedTerms& shared) {
    StencilSource out = s;
    out.outputs = shared.outputs;
    const auto terms = static_cast<int>(shared.terms.size());
    out.num_inputs += terms;
    out.scalar.resize(out.num_inputs, false);
    if (!out.prefetch.empty()) out.prefetch.resize(out.num_inputs, false);
    return out;
  }
  bool term(int input) const { return input >= real_inputs_; }
  // "__restrict " for a pointer into input `input` (-1: an output), or ""
  // when an output may be that input's buffer (an init, an input read at
  // the point only: a read and the write of its point alias; promised
  // apart, GCC moved a read of ȳ after ū's store over it).
  std::string restricted(int input) const {
    const auto over = [&](int j) {
      return std::find(s_.init.begin(), s_.init.end(), j) != s_.init.end() ||
             std::find(overwritable_.begin(), overwritable_.end(), j) !=
                 overwritable_.end();
    };
    if (input >= 0) return over(input) ? "" : "__restrict ";
    for (int j = 0; j < real_inputs_; ++j)
      if (over(j)) return "";
    return "__restrict ";
  }

  detail::SharedTerms shared_;
  StencilSource s_;
  int real_inputs_;
  ExprPtr all_;
  detail::TermRing terms_;
  std::vector<int> overwritable_;  // inputs an output may be written over
  std::vector<ReadKey> reads_;
  // The rows the reads fall in: an input and the outer axes' offsets.
  struct RowKey {
    int input;
    Offset outer;
    bool operator==(const RowKey& o) const {
      return input == o.input && outer == o.outer;
    }
  };
  std::vector<RowKey> groups_;
  std::vector<int> group_of_;  // per read: its row group (-1: a scalar)
  std::vector<Offset> insides_;
  std::vector<double> constants_;
  int64_t depth_ = 1;  // the widest read or inside[] along the inner axis
  std::vector<DagNode> dag_;
  std::map<std::string, int> by_key_;
  std::vector<int> roots_;  // output m is dag_[roots_[m]]
  bool vector_ = false;     // the middle written with vectors (vectorisable)
  std::ostringstream helpers_;        // the middle's loop functions
  std::vector<std::string> written_;  // their names
};

}  // namespace

std::vector<double> kernel_constants(const std::vector<ExprPtr>& outputs) {
  std::vector<double> table;
  std::unordered_set<const Expr*> seen;
  for (const ExprPtr& e : outputs) collect_constants(e, table, seen);
  return table;
}

ExprPtr tuple_of(const std::vector<ExprPtr>& outputs,
                 const std::vector<int>& init) {
  auto t = std::make_shared<Expr>();
  t->op = "tuple";
  t->args = outputs;
  for (int k : init)
    if (k >= 0) t->args.push_back(read(k));
  return t;
}

std::string kernel_source(const StencilSource& s) {
  std::ostringstream o;
  const std::vector<double> table = kernel_constants(s.outputs);
  o << "// adgraph stencil kernel (grid/stencil_codegen.h)\n";
  for (std::size_t m = 0; m < s.outputs.size(); ++m) {
    o << "// output " << m << (s.summed[m] ? " (summed over the batch)" : "");
    if (s.init[m] >= 0) o << " = in" << s.init[m] << " +";
    std::string text;
    structure(s.outputs[m], table, 2000, text);
    if (text.size() > 2000) text = text.substr(0, 2000) + "...";
    o << " " << text << "\n";
  }
  o << "// ndim " << s.ndim << ", periodic";
  for (bool p : s.periodic) o << " " << p;
  // No header: the math is the compilers' builtins (the calls <cmath>
  // makes) and int64_t the type they predefine. Parsing <cmath> and
  // <cstdint> took 0.17 s of a 2-D adjoint's 0.41 s compile (g++ 12).
  o << "\ntypedef __INT64_TYPE__ int64_t;\n\n";
  o << "struct adgraph_stencil_args {\n"
       "  const double* const* in; const int64_t* st;\n"
       "  const double* const* pin; const int64_t* pst;\n"
       "  double* const* out; const int64_t* ost;\n"
       "  const int64_t* lo; const int64_t* hi; const int64_t* mid;\n"
       "  const int64_t* ext; const int64_t* gpos; const int64_t* gext;\n"
       "  const double* k; const int64_t* size;\n"
       "  double* ring;\n};\n\n";
  // The middle's vectors (core/lanes.h's width), moved at any alignment.
  o << "typedef double adgraph_v __attribute__((vector_size(" << kLanes * 8
    << ")));\n"
    << "static inline adgraph_v adgraph_ld(const double* p) {\n"
       "  adgraph_v v; __builtin_memcpy(&v, p, sizeof v); return v;\n}\n"
       "static inline void adgraph_st(double* p, adgraph_v v) {\n"
       "  __builtin_memcpy(p, &v, sizeof v);\n}\n";
  // Lane masks (all bits of a lane set or clear) at a row's ends: a
  // selection by bits, and a mask as the numbers 1 and 0.
  o << "typedef long long adgraph_m __attribute__((vector_size(" << kLanes * 8
    << ")));\n"
    << "static inline adgraph_v adgraph_sel(adgraph_v c, adgraph_v a, "
       "adgraph_v b) {\n"
       "  const adgraph_m m = (adgraph_m)(c != adgraph_v{});\n"
       "  return (adgraph_v)(((adgraph_m)a & m) | ((adgraph_m)b & ~m));\n}\n"
       "static inline adgraph_v adgraph_mv(adgraph_m m) {\n"
       "  return (adgraph_v)(m & (adgraph_m)(adgraph_v{} + 1.0));\n}\n\n";
  o << Emitter(s).function();
  return o.str();
}

}  // namespace adgraph::grid
