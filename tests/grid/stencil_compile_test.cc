// The kernels' cache (one compile per kernel and process, the object kept
// in the folder) and the message when there is no compiler
// (grid/stencil_compile.cc).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "grid/stencil_codegen.h"
#include "tests/grid/stencil_source_util.h"

namespace adgraph::grid {
namespace {

TEST(StencilCompile, CompilesEachKernelOncePerProcessAndKeepsItInTheFolder) {
  const CompiledStencil a = compile_stencil(source_of("mul(in0[1,0],2.5)"));
  const KernelCacheStats after_first = kernel_cache_stats();
  const CompiledStencil b = compile_stencil(source_of("mul(in0[1,0],2.5)"));
  const KernelCacheStats after_second = kernel_cache_stats();
  EXPECT_EQ(a.run, b.run);
  EXPECT_EQ(after_second.compiled, after_first.compiled);
  EXPECT_EQ(after_second.loaded, after_first.loaded);
  EXPECT_TRUE(std::filesystem::exists(a.source_path));
  std::string object = a.source_path;
  object.replace(object.size() - 3, 3, ".so");
  EXPECT_TRUE(std::filesystem::exists(object));
  EXPECT_EQ(std::filesystem::path(a.source_path).parent_path().string(),
            kernel_cache_folder());
}

TEST(StencilCompile, AMissingCompilerIsAClearError) {
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
