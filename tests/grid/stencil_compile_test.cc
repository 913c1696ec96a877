// The kernels' cache (one compile per kernel and process, the object kept
// in the folder) and the message when there is no compiler
// (grid/stencil_compile.cc).
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "core/error.h"
#include "grid/stencil_codegen.h"
#include "tests/grid/stencil_source_util.h"

namespace adgraph::grid {
namespace {

// First in the file: the process's kernel folder is chosen at its first
// compile. A folder named with a quote and a `;` is a folder: the kernel
// compiles into it and the shell runs nothing of its name (the compiler's
// command was built with the name in single quotes as it was).
TEST(StencilCompile, AFolderNamedWithQuotesIsAFolderNotACommand) {
  namespace fs = std::filesystem;
  char parent[] = "/tmp/adgraph-quoted-XXXXXX";
  ASSERT_NE(::mkdtemp(parent), nullptr);
  const fs::path cwd = fs::current_path();
  fs::current_path(parent);
  const std::string folder = std::string(parent) + "/it's a';touch INJECTED;'b";
  ::setenv("ADGRAPH_KERNEL_CACHE", folder.c_str(), 1);
  const CompiledStencil k = compile_stencil(source_of("mul(in0[0,1],3.25)"));
  fs::current_path(cwd);
  EXPECT_EQ(kernel_cache_folder(), folder);
  EXPECT_EQ(fs::path(k.source_path).parent_path().string(), folder);
  EXPECT_NE(k.run, nullptr);
  EXPECT_FALSE(fs::exists(fs::path(parent) / "INJECTED"));
}

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
    EXPECT_NE(m.find("failed (exit status 127: the shell found no such "
                     "command)"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find("set ADGRAPH_CXX to another C++ compiler"),
              std::string::npos)
        << m;
  }
  ::unsetenv("ADGRAPH_CXX");
}

// A "compiler" that exits with 0 and writes nothing: said so, not "cannot
// load" an object there is none of.
TEST(StencilCompile, ACompilerThatWritesNothingIsAClearError) {
  ::setenv("ADGRAPH_CXX", "/bin/true", 1);
  const auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  std::string text = "in0";
  for (long i = 0; i < 3 + now % 50; ++i) text = "sub(" + text + ",in0[1,0])";
  try {
    compile_stencil(source_of(text));
    ADD_FAILURE() << "loaded a kernel /bin/true compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("exited with status 0 but wrote no"),
              std::string::npos)
        << e.what();
  }
  ::unsetenv("ADGRAPH_CXX");
}

}  // namespace
}  // namespace adgraph::grid
