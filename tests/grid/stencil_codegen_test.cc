// The kernel source, the cache (one compile per kernel and process, the
// object kept in the folder) and the message when there is no compiler.
#include "grid/stencil_codegen.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"

namespace adgraph::grid {
namespace {

StencilSource source_of(const std::string& text) {
  StencilSource s;
  s.outputs = {parse(text)};
  s.summed = {false};
  s.init = {-1};
  s.ndim = 2;
  s.num_inputs = 2;
  s.scalar = {false, true};
  s.periodic = {false, true};
  return s;
}

TEST(StencilCodegen, SourceStatesTheExpressionAndBothKernels) {
  const std::string src =
      kernel_source(source_of("add(in0[0,1],mul(in1,inside[-1,0]))"));
  EXPECT_NE(src.find("// output 0 add(in0[0,1],mul(in1,inside[-1,0]))"),
            std::string::npos);
  EXPECT_NE(src.find("adgraph_stencil_fast"), std::string::npos);
  EXPECT_NE(src.find("adgraph_stencil_checked"), std::string::npos);
  // The scalar is read once, before the loops.
  EXPECT_NE(src.find("const double s1 = in[1][0];"), std::string::npos);
}

TEST(StencilCodegen, CompilesEachKernelOncePerProcessAndKeepsItInTheFolder) {
  const CompiledStencil a = compile_stencil(source_of("mul(in0[1,0],2.5)"));
  const KernelCacheStats after_first = kernel_cache_stats();
  const CompiledStencil b = compile_stencil(source_of("mul(in0[1,0],2.5)"));
  const KernelCacheStats after_second = kernel_cache_stats();
  EXPECT_EQ(a.fast, b.fast);
  EXPECT_EQ(after_second.compiled, after_first.compiled);
  EXPECT_EQ(after_second.loaded, after_first.loaded);
  EXPECT_TRUE(std::filesystem::exists(a.source_path));
  std::string object = a.source_path;
  object.replace(object.size() - 3, 3, ".so");
  EXPECT_TRUE(std::filesystem::exists(object));
  EXPECT_EQ(std::filesystem::path(a.source_path).parent_path().string(),
            kernel_cache_folder());
}

TEST(StencilCodegen, RunsTheKernelItLoaded) {
  // y = in0 at (i, j+1) times 2.5 over a 2 x 3 box of a 2 x 4 array.
  const CompiledStencil k = compile_stencil(source_of("mul(in0[0,1],2.5)"));
  double u[8] = {1, 2, 3, 4, 5, 6, 7, 8}, s = 0, y[6] = {};
  const double* in[2] = {u, &s};
  const int64_t st[6] = {0, 4, 1, 0, 0, 0}, ost[3] = {0, 3, 1};
  const int64_t lo[3] = {0, 0, 0}, hi[3] = {1, 2, 3}, gpos[2] = {0, 0},
                gext[2] = {2, 4};
  const double constants[1] = {2.5};
  double* out[1] = {y};
  k.fast(in, st, out, ost, lo, hi, gpos, gext, constants);
  const double want[6] = {5, 7.5, 10, 15, 17.5, 20};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y[i], want[i]) << i;
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
  const int64_t lo[2] = {0, 0}, hi[2] = {2, 3}, gpos[1] = {0}, gext[1] = {3};
  const std::vector<double> constants = kernel_constants(s.outputs);
  k.fast(in, st, out, ost, lo, hi, gpos, gext, constants.data());
  for (int i = 0; i < 6; ++i) EXPECT_EQ(y0[i], 3 * u[i]) << i;
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(y1[i], c[i] + u[i] * u[i] + u[3 + i] * u[3 + i]) << i;
  EXPECT_NE(kernel_source(s).find(
                "// output 1 (summed over the batch) = in1 + mul(in0,in0)"),
            std::string::npos);
}

TEST(StencilCodegen, AMissingCompilerIsAClearError) {
  ::setenv("ADGRAPH_CXX", "/nonexistent/c++", 1);
  // A constant no earlier run compiled, so nothing is in the folder yet.
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  // (A new structure: numbers alone would find the kernel compiled.)
  std::string text = "in0";
  for (long i = 0; i < 3 + now % 50; ++i) text = "add(" + text + ",in0[0,1])";
  try {
    compile_stencil(source_of(text));
    ADD_FAILURE() << "compiled without a compiler";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("stencil kernel: `/nonexistent/c++ "), std::string::npos)
        << m;
    EXPECT_NE(m.find("failed"), std::string::npos) << m;
    EXPECT_NE(m.find("set ADGRAPH_CXX to another C++ compiler"),
              std::string::npos)
        << m;
  }
  ::unsetenv("ADGRAPH_CXX");
}

}  // namespace
}  // namespace adgraph::grid
