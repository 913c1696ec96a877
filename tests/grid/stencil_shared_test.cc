// Shared terms (grid/stencil_shared.h): a pointwise term read at several
// offsets is computed once per point into the kernel's ring, and an output
// may be written over an input then read at the point only. Kernels with
// and without sharing, with vectors and with the scalar loop, written over
// the input and apart, give the same bits, and the expression evaluated
// here (grid/stencil_expr.h's evaluate) at every point.
#include "grid/stencil_shared.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "grid/stencil_codegen.h"

namespace adgraph::grid {
namespace {

// A patch `ext` at `gpos` of a global grid `gext`, `batch` entries of it;
// input k's value at global point g of entry b (any g: the ghosts past the
// global grid's edge hold it too; a periodic axis wraps first); a scalar
// input's value.
struct Patch {
  std::vector<int64_t> ext, gpos, gext;
  std::vector<bool> periodic;
  int width = 1;  // ghosts on every axis
  int64_t batch = 1;

  int nd() const { return static_cast<int>(ext.size()); }
  int64_t points() const {
    int64_t n = 1;
    for (int64_t e : ext) n *= e;
    return n;
  }
  static double scalar(int k) { return 1.75 + 0.25 * k; }
  double value(int k, std::vector<int64_t> g, int64_t b = 0) const {
    for (int a = 0; a < nd(); ++a)
      if (periodic[a]) g[a] = ((g[a] % gext[a]) + gext[a]) % gext[a];
    int64_t h = 17 + 5 * k + 29 * b;
    for (int a = 0; a < nd(); ++a) h = h * 131 + (g[a] + 7) * (a + 3);
    return 0.25 + static_cast<double>(h % 997) / 997.0;
  }
};

// Row-major strides of `shape`.
std::vector<int64_t> strides_of(const std::vector<int64_t>& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (int a = static_cast<int>(shape.size()) - 2; a >= 0; --a)
    s[a] = s[a + 1] * shape[a + 1];
  return s;
}

// The local point of flat index `flat`.
std::vector<int64_t> point_of(int64_t flat, const std::vector<int64_t>& ext) {
  std::vector<int64_t> p(ext.size());
  for (int a = static_cast<int>(ext.size()) - 1; a >= 0; --a) {
    p[a] = flat % ext[a];
    flat /= ext[a];
  }
  return p;
}

struct Run {
  bool shared = true, vectors = true;
  int over = -1;  // output 0 written over this input (-1: apart)
};

// Runs the kernel of `src` (every input a field) on `patch`; returns the
// outputs.
std::vector<std::vector<double>> run(StencilSource src,
                                     const Patch& patch,
                                     const Run& how) {
  src.shared = how.shared;
  src.vectors = how.vectors;
  const int nd = patch.nd(), n = src.num_inputs;
  const int64_t w = patch.width, points = patch.points();
  std::vector<int64_t> pext = patch.ext;
  for (int64_t& e : pext) e += 2 * w;
  const std::vector<int64_t> ls = strides_of(patch.ext), ps = strides_of(pext);
  int64_t ppoints = 1;
  for (int64_t e : pext) ppoints *= e;
  const int64_t nb = patch.batch;
  std::vector<std::vector<double>> data(n), padded(n);
  for (int k = 0; k < n; ++k) {
    if (src.scalar[k]) {
      data[k] = padded[k] = {Patch::scalar(k)};
      continue;
    }
    data[k].resize(nb * points);
    padded[k].resize(nb * ppoints);
    for (int64_t b = 0; b < nb; ++b) {
      for (int64_t f = 0; f < ppoints; ++f) {
        std::vector<int64_t> p = point_of(f, pext), g = p;
        bool owned = true;
        for (int a = 0; a < nd; ++a) {
          p[a] -= w;
          g[a] = p[a] + patch.gpos[a];
          owned = owned && p[a] >= 0 && p[a] < patch.ext[a];
        }
        padded[k][b * ppoints + f] =
            owned ? std::nan("") : patch.value(k, g, b);
      }
      for (int64_t f = 0; f < points; ++f) {
        std::vector<int64_t> g = point_of(f, patch.ext);
        for (int a = 0; a < nd; ++a) g[a] += patch.gpos[a];
        data[k][b * points + f] = patch.value(k, g, b);
      }
    }
  }
  const int m = static_cast<int>(src.outputs.size());
  std::vector<std::vector<double>> y(m, std::vector<double>(nb * points, -1.0));
  if (how.over >= 0) y[0] = data[how.over];
  std::vector<const double*> in(n), pin(n);
  std::vector<int64_t> st, pst, ost, sizes(n, nb * points);
  int64_t origin = 0;
  for (int a = 0; a < nd; ++a) origin += w * ps[a];
  for (int k = 0; k < n; ++k) {
    in[k] = how.over == k ? y[0].data() : data[k].data();
    if (src.scalar[k]) {
      pin[k] = in[k];
      st.insert(st.end(), nd + 1, 0);
      pst.insert(pst.end(), nd + 1, 0);
      sizes[k] = 1;
      continue;
    }
    pin[k] = padded[k].data() + origin;
    st.push_back(nb > 1 ? points : 0);
    st.insert(st.end(), ls.begin(), ls.end());
    pst.push_back(nb > 1 ? ppoints : 0);
    pst.insert(pst.end(), ps.begin(), ps.end());
  }
  std::vector<double*> out(m);
  for (int j = 0; j < m; ++j) {
    out[j] = y[j].data();
    if (src.init[j] >= 0) {  // y_j starts from its input, in place
      y[j] = data[src.init[j]];
      in[src.init[j]] = y[j].data();
      out[j] = y[j].data();
    }
    ost.push_back(nb > 1 ? points : 0);
    ost.insert(ost.end(), ls.begin(), ls.end());
  }
  std::vector<int64_t> lo(nd + 1, 0), hi{nb};
  hi.insert(hi.end(), patch.ext.begin(), patch.ext.end());
  // The middle along the row, as the stencil op's kernel makes it.
  const ExprPtr all = tuple_of(src.outputs, src.init);
  const int64_t last = patch.ext[nd - 1];
  int64_t depth = 0, ilo = 0, ihi = last;
  for (const ReadKey& r : reads_of(all, nd))
    depth = std::max<int64_t>(depth, std::abs(r.offset[nd - 1]));
  for (const Offset& o : insides_of(all, nd)) {
    depth = std::max<int64_t>(depth, std::abs(o[nd - 1]));
    if (patch.periodic[nd - 1]) continue;
    ilo = std::max<int64_t>(ilo, -patch.gpos[nd - 1] - o[nd - 1]);
    ihi = std::min<int64_t>(
        ihi, patch.gext[nd - 1] - patch.gpos[nd - 1] - o[nd - 1]);
  }
  const int64_t m0 = std::min(std::max(ilo, depth), last);
  const int64_t mid[2] = {m0,
                          std::clamp(std::min(ihi, last - depth), m0, last)};
  const std::vector<double> constants = kernel_constants(src.outputs);
  std::vector<double> ring(ring_doubles(src, patch.ext) + 1, std::nan(""));
  const CompiledStencil k = compile_stencil(src);
  const KernelArgs args{in.data(),
                        st.data(),
                        pin.data(),
                        pst.data(),
                        out.data(),
                        ost.data(),
                        lo.data(),
                        hi.data(),
                        mid,
                        patch.ext.data(),
                        patch.gpos.data(),
                        patch.gext.data(),
                        constants.data(),
                        sizes.data(),
                        ring.data()};
  k.run(&args);
  return y;
}

// Every run of `src` against each other bitwise and against the
// expression evaluated point by point; `over`: an input output 0 may be
// written over.
void check(const StencilSource& src, const Patch& patch, int over) {
  const int nd = patch.nd();
  const std::vector<std::vector<double>> want = run(src, patch, {false, false});
  const int64_t points = patch.points();
  for (int64_t bf = 0; bf < patch.batch * points; ++bf) {
    const int64_t b = bf / points, f = bf % points;
    const std::vector<int64_t> p = point_of(f, patch.ext);
    auto value_of = [&](const ReadKey& r) {
      if (src.scalar[r.input]) return Patch::scalar(r.input);
      std::vector<int64_t> g = p;
      for (int a = 0; a < nd; ++a) g[a] += patch.gpos[a] + r.offset[a];
      return patch.value(r.input, g, b);
    };
    auto inside_of = [&](const Offset& o) {
      for (int a = 0; a < nd; ++a) {
        const int64_t g = p[a] + patch.gpos[a] + o[a];
        if (!patch.periodic[a] && (g < 0 || g >= patch.gext[a])) return false;
      }
      return true;
    };
    for (std::size_t m = 0; m < src.outputs.size(); ++m) {
      double v = evaluate(src.outputs[m], value_of, inside_of, nd);
      if (src.init[m] >= 0) v = value_of({src.init[m], Offset(nd, 0)}) + v;
      ASSERT_EQ(want[m][bf], v) << "output " << m << " at flat " << bf;
    }
  }
  for (const Run& how : {Run{true, true, -1},
                         Run{true, false, -1},
                         Run{false, true, -1},
                         Run{true, true, over},
                         Run{true, false, over}}) {
    const auto got = run(src, patch, how);
    for (std::size_t m = 0; m < got.size(); ++m)
      for (int64_t f = 0; f < patch.batch * points; ++f)
        ASSERT_EQ(got[m][f], want[m][f])
            << "shared " << how.shared << " vectors " << how.vectors << " over "
            << how.over << ": output " << m << " at flat " << f;
  }
}

StencilSource source(const std::vector<std::string>& outputs,
                     std::vector<int> init,
                     int num_inputs,
                     std::vector<bool> periodic) {
  StencilSource s;
  for (const std::string& t : outputs) s.outputs.push_back(parse(t));
  s.summed.assign(outputs.size(), false);
  s.init = std::move(init);
  s.ndim = static_cast<int>(periodic.size());
  s.num_inputs = num_inputs;
  s.scalar.assign(num_inputs, false);
  s.periodic = std::move(periodic);
  return s;
}

// The 2-D heat adjoint: ū = Σ_o where(inside[o], ȳ[o]·(c·κ[o]), 0) +
// ȳ·(1 − 4c·κ) and κ̄ += ȳ·c·lap(u) (in0 u, in1 κ, in2 ȳ, in3 κ̄).
StencilSource heat_adjoint() {
  auto term = [](const std::string& at) {
    return "where(inside[" + at + "],mul(in2[" + at + "],mul(0.2,in1[" + at +
           "])),0)";
  };
  return source({"add(add(add(add(" + term("1,0") + "," + term("0,1") +
                     "),mul(in2,add(1,mul(mul(0.2,in1),-4)))),"
                     "" +
                     term("0,-1") + ")," + term("-1,0") + ")",
                 "mul(in2,mul(sub(add(add(add(in0[-1,0],in0[1,0]),in0[0,-1]),"
                 "in0[0,1]),mul(4,in0)),0.2))"},
                {-1, 3},
                4,
                {false, false});
}

TEST(StencilShared, FindsTheTermReadAtEachNeighbour) {
  const StencilSource s = heat_adjoint();
  const detail::SharedTerms shared =
      detail::share_terms(s.outputs, 2, 4, s.scalar);
  ASSERT_EQ(shared.terms.size(), 1u);
  EXPECT_EQ(print(shared.terms[0].term),
            "mul(in2,mul(0.20000000000000001,in1))");
  EXPECT_EQ(shared.terms[0].anchors.size(), 4u);
  // ȳ and κ are read at the point only once it is shared; u is not; κ̄
  // starts an output.
  EXPECT_EQ(detail::read_at_point_only(s),
            (std::vector<bool>{false, true, true, false}));
  EXPECT_NE(kernel_source(s).find("tdone0"), std::string::npos);
  // In 2-D the fill, a row ahead, prefetches nothing (stencil_shared.cc).
  EXPECT_EQ(kernel_source(s).find("__builtin_prefetch(t"), std::string::npos);
  StencilSource unshared = s;
  unshared.shared = false;
  EXPECT_EQ(kernel_source(unshared).find("tdone0"), std::string::npos);
  EXPECT_EQ(ring_doubles(unshared, {8, 16}), 0);
  // Three rows of 16 points and 8 either side.
  EXPECT_EQ(ring_doubles(s, {8, 16}), 3 * 32);
}

// A patch inside the grid (its ghosts a neighbour's), one at the grid's
// corner, an uneven one (rows not a multiple of the vector width) and the
// whole grid, periodic along the rows.
TEST(StencilShared, HeatAdjointGivesTheSameBitsOverAnyPatch) {
  const StencilSource s = heat_adjoint();
  check(s, Patch{{6, 16}, {3, 16}, {20, 48}, {false, false}}, 2);
  check(s, Patch{{6, 16}, {0, 0}, {6, 40}, {false, false}}, 2);
  check(s, Patch{{5, 13}, {4, 3}, {9, 16}, {false, false}}, 2);
  StencilSource p = s;
  p.periodic = {false, true};
  check(p, Patch{{7, 12}, {0, 0}, {7, 12}, {false, true}}, 2);
}

// 3-D, 7 points: the term's rows behind and ahead on both outer axes
// (the ring spans a plane), periodic along axis 0.
TEST(StencilShared, SevenPointAdjointGivesTheSameBitsIn3D) {
  std::string sum;
  for (const char* at :
       {"1,0,0", "0,1,0", "0,0,1", "0,0,-1", "0,-1,0", "-1,0,0"}) {
    const std::string t = std::string("where(inside[") + at + "],mul(mul(in1[" +
                          at + "],in2[" + at + "]),0.1),0)";
    sum = sum.empty() ? t : "add(" + sum + "," + t + ")";
  }
  StencilSource s = source({"add(" + sum + ",mul(in2,sub(1,mul(in1,0.6))))",
                            "mul(in2,add(in0[0,0,1],in0[-1,0,0]))"},
                           {-1, 3},
                           4,
                           {false, false, false});
  ASSERT_EQ(detail::share_terms(s.outputs, 3, 4, s.scalar).terms.size(), 1u);
  // The fill, a plane ahead, prefetches its inputs' rows pf rows on.
  for (const char* j : {"1", "2"})
    EXPECT_NE(kernel_source(s).find(std::string("__builtin_prefetch(td") + j +
                                    " + pf * st[" + j + " * S + 2] + j, 0, 3)"),
              std::string::npos);
  check(
      s, Patch{{4, 5, 12}, {2, 3, 12}, {9, 10, 36}, {false, false, false}}, 2);
  check(s, Patch{{3, 4, 8}, {0, 0, 0}, {3, 4, 8}, {false, false, false}}, 2);
  s.periodic = {true, false, false};
  check(s, Patch{{4, 3, 9}, {0, 1, 0}, {4, 5, 9}, {true, false, false}}, 2);
}

// A term with a math function (the middle stays a scalar loop) read at
// three offsets, two of them along the row; an output written over the
// input read at the point only.
TEST(StencilShared, ScalarMiddleAndTermsAlongTheRow) {
  const StencilSource s = source(
      {"add(add(mul(exp(in0[0,1]),in1[0,1]),mul(exp(in0[0,-1]),in1[0,-1])),"
       "add(mul(exp(in0[1,0]),in1[1,0]),in2))"},
      {-1},
      3,
      {false, false});
  // exp(u)·v is read at three offsets and shared: u and v are then read
  // only by the ring (at the row it computes, not behind the one written).
  EXPECT_EQ(detail::read_at_point_only(s),
            (std::vector<bool>{true, true, true}));
  for (int over : {0, 2})
    check(s, Patch{{5, 11}, {2, 5}, {10, 30}, {false, false}}, over);
}

// Two batch entries, two terms (one with a scalar input in it, one read
// two points along the row), and outputs written over either input: in0
// is read only by the terms' rows, in1 at the point too.
TEST(StencilShared, BatchesTwoTermsAndAScalarInATerm) {
  std::string a, b;
  for (const char* at : {"1,0", "0,1", "0,-1"}) {
    const std::string t =
        std::string("mul(in0[") + at + "],mul(in2,in1[" + at + "]))";
    a = a.empty() ? t : "add(" + a + "," + t + ")";
  }
  for (const char* at : {"-1,0", "0,2", "0,-2"}) {
    const std::string t =
        std::string("sub(in1[") + at + "],mul(in0[" + at + "],3))";
    b = b.empty() ? t : "add(" + b + "," + t + ")";
  }
  StencilSource s =
      source({"add(add(" + a + "," + b + "),in1)"}, {-1}, 3, {false, false});
  s.scalar = {false, false, true};
  ASSERT_EQ(detail::share_terms(s.outputs, 2, 3, s.scalar).terms.size(), 2u);
  EXPECT_EQ(detail::read_at_point_only(s),
            (std::vector<bool>{true, true, false}));
  Patch patch{{5, 16}, {3, 8}, {12, 40}, {false, false}, 2, 2};
  for (int over : {0, 1}) check(s, patch, over);
}

// A term too large to write out in the ring (more than 64 operations,
// counted as a tree: a subexpression used twice counts twice) is not
// shared; the terms inside it are.
TEST(StencilShared, LeavesTermsTooLargeToWriteOut) {
  std::string big = "in0";
  for (int k = 0; k < 7; ++k) big = "mul(" + big + "," + big + ")";
  auto at = [&](const std::string& o) {
    std::string t = big;
    std::string::size_type p;
    while ((p = t.find("in0,")) != std::string::npos ||
           (p = t.find("in0)")) != std::string::npos)
      t.replace(p, 3, "in0[" + o + "]");
    return t;
  };
  const StencilSource s = source(
      {"add(" + at("0,1") + "," + at("0,-1") + ")"}, {-1}, 1, {false, false});
  const detail::SharedTerms shared =
      detail::share_terms(s.outputs, 2, 1, s.scalar);
  ASSERT_FALSE(shared.terms.empty());
  for (const detail::SharedTerm& t : shared.terms) EXPECT_LE(t.ops, 64);
}

// Two terms of two operations at two offsets each: (2 − 1)·2 < 3, not
// worth a ring; a term with an inside[] in it is never shared.
TEST(StencilShared, LeavesTermsNotWorthSharing) {
  const StencilSource s = source(
      {"add(mul(in0[0,1],mul(in1[0,1],2)),mul(in0[0,-1],mul(in1[0,-1],2)))",
       "add(mul(in0[1,0],inside[1,0]),mul(in0[-1,0],inside[-1,0]))"},
      {-1, -1},
      2,
      {false, false});
  EXPECT_TRUE(detail::share_terms(s.outputs, 2, 2, s.scalar).terms.empty());
  EXPECT_EQ(ring_doubles(s, {4, 8}), 0);
}

}  // namespace
}  // namespace adgraph::grid
