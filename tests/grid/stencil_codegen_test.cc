// The kernel source, and what the kernels it compiles compute.
#include "grid/stencil_codegen.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "tests/grid/stencil_source_util.h"

namespace adgraph::grid {
namespace {

// Runs `k` over [lo, hi) of a patch that is the whole grid (ext), its
// inputs without halos (their padded copies are the inputs themselves).
void run_whole_grid(const CompiledStencil& k,
                    const double* const* in,
                    const int64_t* st,
                    double* const* out,
                    const int64_t* ost,
                    const int64_t* lo,
                    const int64_t* hi,
                    const int64_t* mid,
                    const int64_t* ext,
                    const double* constants,
                    const int64_t* sizes) {
  const int64_t gpos[3] = {0, 0, 0};
  const KernelArgs args{
      in, st, in, st, out, ost, lo, hi, mid, ext, gpos, ext, constants, sizes};
  k.run(&args);
}

TEST(StencilCodegen, SourceStatesTheExpressionAndItsKernel) {
  const std::string src =
      kernel_source(source_of("add(in0[0,1],mul(in1,inside[-1,0]))"));
  EXPECT_NE(src.find("// output 0 add(in0[0,1],mul(in1,inside[-1,0]))"),
            std::string::npos);
  EXPECT_NE(src.find("void adgraph_stencil(const adgraph_stencil_args* A)"),
            std::string::npos);
  // The scalar is read once, before the loops.
  EXPECT_NE(src.find("const double s1 = in[1][0];"), std::string::npos);
}

// Rows are prefetched only for the inputs marked so, at their farthest
// read along the outer axes (in0 reads row +2 here: rows i0 + 2 + pf), and
// not at all when none is marked and no read moves along the rows.
TEST(StencilCodegen, PrefetchesTheRowsOfMarkedInputsOnly) {
  StencilSource s = source_of("add(in0[2,0],mul(in2[-1,0],in1))");
  s.num_inputs = 3;
  s.scalar = {false, true, false};
  const std::string plain = kernel_source(s);
  EXPECT_EQ(plain.find("__builtin_prefetch"), std::string::npos);
  s.prefetch = {true, false, false};
  const std::string src = kernel_source(s);
  EXPECT_NE(src.find("const int64_t at = b * st[0 * S] + "
                     "(i0 + 2 + pf) * st[0 * S + 1];\n"
                     "      if (at + lo[2] >= 0 && at + hi[2] <= size[0])"),
            std::string::npos);
  EXPECT_EQ(src.find("b * st[2 * S] + (i0"), std::string::npos);
  std::size_t count = 0;
  for (std::size_t at = src.find("__builtin_prefetch"); at != std::string::npos;
       at = src.find("__builtin_prefetch", at + 1))
    ++count;
  EXPECT_EQ(count, 1u);
  s.prefetch = {false, false, true};  // in2 reads row −1 only
  EXPECT_NE(kernel_source(s).find("(i0 + -1 + pf) * st[2 * S + 1];"),
            std::string::npos);
}

// In 3-D a row is first read at the farthest offset over the outer axes
// taken in order: the next plane's (i0 + 1), not the current plane's row
// i1 + 1 (read a plane before). A read that moves along the rows has the
// ghost columns its row's ends read from the padded copy prefetched, pf
// rows ahead (here one column left of lo, two right of hi).
TEST(StencilCodegen, PrefetchesWhereRowsAreFirstRead) {
  StencilSource s =
      source_of("add(add(in0[1,0,0],in0[0,1,0]),add(in0[0,0,-1],in0[0,0,2]))");
  s.ndim = 3;
  s.num_inputs = 1;
  s.scalar = {false};
  s.periodic = {false, false, false};
  s.prefetch = {true};
  const std::string src = kernel_source(s);
  EXPECT_NE(src.find("const int64_t at = b * st[0 * S] + (i0 + 1) * "
                     "st[0 * S + 1] + (i1 + 0 + pf) * st[0 * S + 2];"),
            std::string::npos);
  EXPECT_NE(src.find("if (true && i1 + 0 + pf >= 0 && i1 + 0 + pf < ext[1]) "
                     "{\n      const double* q = pin[0] + b * pst[0 * S] + "
                     "(i0 + 0) * pst[0 * S + 1] + (i1 + 0 + pf) * "
                     "pst[0 * S + 2];\n"
                     "      __builtin_prefetch(q + lo[3] - 1, 0, 3);\n"
                     "      __builtin_prefetch(q + hi[3] + 1, 0, 3);"),
            std::string::npos);
}

TEST(StencilCodegen, ComputesASharedSubexpressionOnceAndStaysSmall) {
  // e = in0[0,1], then the logistic map e = (3.9·e)·(1 − e) sixteen
  // times: a tree of 2^16 reads (1.3 MB printed) but 51 distinct nodes.
  // (Deeper makes the tree walks that are not the emitter's, e.g. the
  // constants' table, too slow in the sanitizer build.) Written as a tree
  // the source would be megabytes; each distinct node is computed once per
  // point (c<n>). The map is chaotic, so a kernel that skipped or reordered
  // a step would not match the same recurrence evaluated here.
  ExprPtr e = read(0, {0, 1});
  for (int i = 0; i < 16; ++i)
    e = apply(
        "mul",
        {apply("mul", {constant(3.9), e}), apply("sub", {constant(1.0), e})});
  StencilSource s = source_of("in0");
  s.outputs = {e};
  const std::string src = kernel_source(s);
  EXPECT_LT(src.size(), 40000u);
  EXPECT_NE(src.find("const double c"), std::string::npos);
  const CompiledStencil k = compile_stencil(s);
  double u[8] = {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8}, scalar = 0;
  double y[6] = {};
  const double* in[2] = {u, &scalar};
  const int64_t st[6] = {0, 4, 1, 0, 0, 0}, ost[3] = {0, 3, 1};
  const int64_t lo[3] = {0, 0, 0}, hi[3] = {1, 2, 3}, gext[2] = {2, 4};
  const std::vector<double> table = kernel_constants(s.outputs);
  double* out[1] = {y};
  const int64_t mid[2] = {0, 3}, sizes[2] = {8, 1};
  run_whole_grid(k, in, st, out, ost, lo, hi, mid, gext, table.data(), sizes);
  for (int row = 0; row < 2; ++row) {
    for (int j = 0; j < 3; ++j) {
      double want = u[row * 4 + j + 1];
      for (int i = 0; i < 16; ++i) want = (3.9 * want) * (1.0 - want);
      EXPECT_GT(want, 0.0);
      EXPECT_EQ(y[row * 3 + j], want) << row << " " << j;
    }
  }
}

TEST(StencilCodegen, RunsTheKernelItLoaded) {
  // y = in0 at (i, j+1) times 2.5 over a 2 x 3 box of a 2 x 4 array.
  const CompiledStencil k = compile_stencil(source_of("mul(in0[0,1],2.5)"));
  double u[8] = {1, 2, 3, 4, 5, 6, 7, 8}, s = 0, y[6] = {};
  const double* in[2] = {u, &s};
  const int64_t st[6] = {0, 4, 1, 0, 0, 0}, ost[3] = {0, 3, 1};
  const int64_t lo[3] = {0, 0, 0}, hi[3] = {1, 2, 3}, gext[2] = {2, 4};
  const double constants[1] = {2.5};
  double* out[1] = {y};
  const int64_t mid[2] = {0, 3}, sizes[2] = {8, 1};
  run_whole_grid(k, in, st, out, ost, lo, hi, mid, gext, constants, sizes);
  const double want[6] = {5, 7.5, 10, 15, 17.5, 20};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]) << i;
}

TEST(StencilCodegen, ReadsOutsideThePatchFromThePaddedCopysGhostsOnly) {
  // y[i, j] = u[i, j-1] + u[i+1, j] on a 3 x 4 patch. The padded copy
  // (5 x 6, one ghost layer) holds 100 + its index in its ghosts and NaN
  // where the patch is: owned points must come from u itself, the others
  // from the ghosts, in the middle [1, 3) of each row and at its ends
  // (rows 1 and 2 run the vector loop over the whole row, reading row 0's
  // and row 1's ends at their first point, then write that point again).
  StencilSource s = source_of("add(in0[0,-1],in0[1,0])");
  s.periodic = {false, false};
  const CompiledStencil k = compile_stencil(s);
  double u[12], padded[30], y[12] = {}, scalar = 0;
  for (int i = 0; i < 12; ++i) u[i] = i + 1;
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 6; ++c) {
      const bool owned = r >= 1 && r <= 3 && c >= 1 && c <= 4;
      padded[r * 6 + c] = owned ? std::nan("") : 100 + r * 6 + c;
    }
  }
  auto at = [&](int i, int j) {  // the field, ghosts included
    if (i >= 0 && i < 3 && j >= 0 && j < 4) return u[i * 4 + j];
    return padded[(i + 1) * 6 + (j + 1)];
  };
  const double* in[2] = {u, &scalar};
  const double* pin[2] = {padded + 7, &scalar};
  const int64_t st[6] = {0, 4, 1, 0, 0, 0}, pst[6] = {0, 6, 1, 0, 0, 0};
  const int64_t ost[3] = {0, 4, 1}, lo[3] = {0, 0, 0}, hi[3] = {1, 3, 4};
  const int64_t mid[2] = {1, 3}, ext[2] = {3, 4}, gpos[2] = {0, 0},
                gext[2] = {3, 4}, sizes[2] = {12, 1};
  double* out[1] = {y};
  const KernelArgs args{
      in, st, pin, pst, out, ost, lo, hi, mid, ext, gpos, gext, nullptr, sizes};
  k.run(&args);
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      EXPECT_EQ(y[i * 4 + j], at(i, j - 1) + at(i + 1, j)) << i << "," << j;
}

TEST(StencilCodegen, WritesEveryOutputInOnePassSummedAndInitialised) {
  // Two batch entries of a 1-D field u (3 points) and c (no batch):
  //   y0[b, i] = 3·u[b, i] (per entry);  y1[i] = c[i] + Σ_b u[b, i]·u[b, i].
  StencilSource s;
  s.outputs = {parse("mul(3,in0)"), parse("mul(in0,in0)")};
  s.summed = {false, true};
  s.init = {-1, 1};
  s.ndim = 1;
  s.num_inputs = 2;
  s.scalar = {false, false};
  s.periodic = {false};
  const CompiledStencil k = compile_stencil(s);
  double u[6] = {1, 2, 3, 4, 5, 6}, c[3] = {10, 20, 30}, y0[6] = {}, y1[3] = {};
  const double* in[2] = {u, c};
  double* out[2] = {y0, y1};
  const int64_t st[4] = {3, 1, 0, 1}, ost[4] = {3, 1, 0, 1};
  const int64_t lo[2] = {0, 0}, hi[2] = {2, 3}, gext[1] = {3};
  const std::vector<double> constants = kernel_constants(s.outputs);
  const int64_t mid[2] = {0, 3}, sizes[2] = {6, 3};
  run_whole_grid(
      k, in, st, out, ost, lo, hi, mid, gext, constants.data(), sizes);
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y0[i], 3 * u[i]) << i;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(y1[i], c[i] + u[i] * u[i] + u[3 + i] * u[3 + i]) << i;
  EXPECT_NE(kernel_source(s).find(
                "// output 1 (summed over the batch) = in1 + mul(in0,in0)"),
            std::string::npos);
}

// A kRows x cols patch of in0 (in1 a scalar), its padded copy with
// ghost widths 1 and 5 holding 1000 + its index in the ghosts and NaN where
// the patch is; the patch starts at gin on a global innermost axis of gxt
// points (axis 0 is the whole grid). Runs `text` with the middle written
// with vectors and with the scalar loop, and checks both against `want`
// (at(i, j): the field, ghosts included; in(i, o0, j, o1): inside[o0,o1]
// at point (i, j)) at every point, and each other bitwise.
constexpr int kRows = 4;
void check_vector_middle(
    const std::string& text,
    int cols,
    int gin,
    int gxt,
    const std::function<double(const std::function<double(int, int)>&,
                               const std::function<bool(int, int, int, int)>&,
                               int,
                               int,
                               double)>& want) {
  StencilSource s = source_of(text);
  s.periodic = {false, false};
  StencilSource scalar_only = s;
  scalar_only.vectors = false;
  EXPECT_NE(kernel_source(s).find("__builtin_shufflevector"),
            std::string::npos);
  EXPECT_EQ(kernel_source(scalar_only).find("__builtin_shufflevector"),
            std::string::npos);
  const int pad_rows = kRows + 2, pad_cols = cols + 10;
  std::vector<double> u(kRows * cols), padded(pad_rows * pad_cols);
  for (int k = 0; k < kRows * cols; ++k) u[k] = 0.5 + 0.01 * k;
  for (int r = 0; r < pad_rows; ++r) {
    for (int c = 0; c < pad_cols; ++c) {
      const bool owned = r >= 1 && r <= kRows && c >= 5 && c < 5 + cols;
      padded[r * pad_cols + c] = owned ? std::nan("") : 1000 + r * pad_cols + c;
    }
  }
  auto at = [&](int i, int j) {
    if (i >= 0 && i < kRows && j >= 0 && j < cols) return u[i * cols + j];
    return padded[(i + 1) * pad_cols + (j + 5)];
  };
  auto inside = [&](int i, int o0, int j, int o1) {
    return i + o0 >= 0 && i + o0 < kRows && gin + j + o1 >= 0 &&
           gin + j + o1 < gxt;
  };
  const double scalar = 1.25;
  const std::vector<double> table = kernel_constants(s.outputs);
  // The widest read along the row, and the middle where no read or
  // inside[] leaves the patch along it.
  int64_t depth = 0;
  for (const ReadKey& r : reads_of(s.outputs[0], 2))
    depth = std::max<int64_t>(depth, std::abs(r.offset[1]));
  int64_t m0 = depth, m1 = cols - depth;
  for (const Offset& o : insides_of(s.outputs[0], 2)) {
    m0 = std::max<int64_t>(m0, -(gin + o[1]));
    m1 = std::min<int64_t>(m1, gxt - gin - o[1]);
  }
  auto run = [&](const StencilSource& source) {
    const CompiledStencil k = compile_stencil(source);
    std::vector<double> y(kRows * cols, -1.0);
    const double* in[2] = {u.data(), &scalar};
    const double* pin[2] = {padded.data() + pad_cols + 5, &scalar};
    const int64_t st[6] = {0, cols, 1, 0, 0, 0},
                  pst[6] = {0, pad_cols, 1, 0, 0, 0};
    const int64_t ost[3] = {0, cols, 1}, lo[3] = {0, 0, 0},
                  hi[3] = {1, kRows, cols};
    const int64_t mid[2] = {std::clamp<int64_t>(m0, 0, cols),
                            std::clamp<int64_t>(m1, m0, cols)};
    const int64_t ext[2] = {kRows, cols}, gpos[2] = {0, gin},
                  gext[2] = {kRows, gxt}, sizes[2] = {kRows * cols, 1};
    double* out[1] = {y.data()};
    const KernelArgs args{in,
                          st,
                          pin,
                          pst,
                          out,
                          ost,
                          lo,
                          hi,
                          mid,
                          ext,
                          gpos,
                          gext,
                          table.data(),
                          sizes};
    k.run(&args);
    return y;
  };
  const std::vector<double> vectors = run(s), scalars = run(scalar_only);
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < cols; ++j) {
      EXPECT_EQ(vectors[i * cols + j], scalars[i * cols + j])
          << text << " at " << i << "," << j;
      EXPECT_DOUBLE_EQ(vectors[i * cols + j], want(at, inside, i, j, scalar))
          << text << " at " << i << "," << j;
    }
  }
}

// The middle written with vectors (reads along the row from shuffles of
// the vectors at i − L, i and i + L, or loaded directly beyond a vector's
// width) gives the scalar loop's bits, and both give the expression
// evaluated here, at every point. 41 points a row: the rows' middles hold
// a remainder past the last whole vector at every width, and the rows
// whose reads stay in the input's memory run the middle over the whole
// row first.
TEST(StencilCodegen, VectorMiddleGivesTheScalarLoopsBits) {
  check_vector_middle(
      "add(where(inside[0,1],sub(mul(add(in0[0,-3],in0[0,2]),in1),"
      "div(in0[0,-1],add(in0[1,0],3))),neg(in0[0,5])),"
      "mul(in0[-1,-1],in0[0,1]))",
      41,
      0,
      41,
      [](const auto& at, const auto&, int i, int j, double s) {
        const double value = j + 1 < 41 ? (at(i, j - 3) + at(i, j + 2)) * s -
                                              at(i, j - 1) / (at(i + 1, j) + 3)
                                        : -at(i, j + 5);
        return value + at(i - 1, j - 1) * at(i, j + 1);
      });
}

// Rows of a multiple of every vector width (48 points) and reads no
// farther than two points along them: the vector loop computes the rows'
// ends too, their reads outside the row from the ghosts and inside[] lane
// by lane, used as a where's condition and as a number. At the global
// grid's ends (the patch is the grid) and inside it (the patch at 48 of
// 144: every inside[] along the row holds, the ghosts are a neighbour's).
TEST(StencilCodegen, VectorLoopComputesTheRowsEnds) {
  const std::string text =
      "add(where(inside[0,-1],mul(in0[0,-1],in1),0.5),"
      "add(where(inside[0,2],sub(in0[0,2],in0[0,-2]),neg(in0[1,0])),"
      "mul(inside[1,1],in0[0,1])))";
  EXPECT_NE(kernel_source(source_of(text)).find("points_at_ends("),
            std::string::npos);
  for (const auto& [gin, gxt] : {std::pair{0, 48}, std::pair{48, 144}}) {
    check_vector_middle(
        text,
        48,
        gin,
        gxt,
        [](const auto& at, const auto& inside, int i, int j, double s) {
          const double a = inside(i, 0, j, -1) ? at(i, j - 1) * s : 0.5;
          const double b =
              inside(i, 0, j, 2) ? at(i, j + 2) - at(i, j - 2) : -at(i + 1, j);
          return a + (b + (inside(i, 1, j, 1) ? 1.0 : 0.0) * at(i, j + 1));
        });
  }
}

}  // namespace
}  // namespace adgraph::grid
