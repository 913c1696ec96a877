// The stencil kernels' compiles and their cache (grid/stencil_codegen.h,
// "Cache"): the source written by stencil_codegen.cc becomes a shared
// object in the kernel folder, built once under a lock shared by every
// process, and is loaded once per process.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>

#include "core/error.h"
#include "grid/stencil_codegen.h"

#ifndef ADGRAPH_KERNEL_COMPILER
#define ADGRAPH_KERNEL_COMPILER "c++"
#endif
#ifndef ADGRAPH_KERNEL_FLAGS
#define ADGRAPH_KERNEL_FLAGS "-O3 -ffp-contract=off"
#endif

namespace adgraph::grid {
namespace {

uint64_t fnv1a(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::string compiler() {
  const char* env = std::getenv("ADGRAPH_CXX");
  return env != nullptr && *env != '\0' ? env : ADGRAPH_KERNEL_COMPILER;
}

std::string flags() {
  return std::string(ADGRAPH_KERNEL_FLAGS) + " -fno-math-errno -fPIC -shared";
}

// The first line `command` prints (empty when it cannot run).
std::string first_line_of(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return {};
  char buf[512] = {};
  const bool got = std::fgets(buf, sizeof buf, pipe) != nullptr;
  pclose(pipe);
  return got ? std::string(buf) : std::string();
}

// What besides the source changes a kernel's object: the compiler's
// version and, for -march=native, the processor (model and flags).
std::string build_identity() {
  std::string id = compiler() + " " + flags() + "\n" +
                   first_line_of(compiler() + " --version 2>/dev/null");
  if (flags().find("-march=native") != std::string::npos) {
    std::ifstream cpu("/proc/cpuinfo");
    std::string line;
    int found = 0;
    while (found < 2 && std::getline(cpu, line)) {
      if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) {
        id += line + "\n";
        ++found;
      }
    }
  }
  return id;
}

struct Cache {
  std::mutex mutex;
  std::map<std::string, CompiledStencil> loaded;
  KernelCacheStats stats;
  std::string folder;
  std::string identity;  // build_identity(), once per process and compiler
  std::string identity_of;
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: loaded kernels stay valid
  return *c;
}

std::string folder_locked(Cache& c) {
  if (!c.folder.empty()) return c.folder;
  namespace fs = std::filesystem;
  fs::path dir;
  if (const char* e = std::getenv("ADGRAPH_KERNEL_CACHE"); e != nullptr && *e)
    dir = e;
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x)
    dir = fs::path(x) / "adgraph" / "kernels";
  else if (const char* h = std::getenv("HOME"); h != nullptr && *h)
    dir = fs::path(h) / ".cache" / "adgraph" / "kernels";
  else
    dir = fs::temp_directory_path() / "adgraph-kernels";
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) {
    throw Error("stencil kernels: cannot create the kernel folder " +
                dir.string() + ": " + ec.message() +
                " (set ADGRAPH_KERNEL_CACHE to a writable folder)");
  }
  c.folder = dir.string();
  return c.folder;
}

// `path` as one word of a shell command, whatever it holds (a kernel
// folder named with a quote, or with `;`, is a file name, never a command).
std::string shell_quoted(const std::string& path) {
  std::string out = "'";
  for (char ch : path)
    out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

// What a pclose status says: the exit status, or the signal.
std::string status_text(int status) {
  if (WIFEXITED(status)) {
    const int code = WEXITSTATUS(status);
    return "exit status " + std::to_string(code) +
           (code == 127 ? ": the shell found no such command" : "");
  }
  if (WIFSIGNALED(status))
    return "killed by signal " + std::to_string(WTERMSIG(status));
  return "status " + std::to_string(status);
}

// Runs the compiler; returns what went wrong (its output), empty on
// success: it exited with 0 and wrote the object.
std::string run_compiler(const std::string& source, const std::string& object) {
  const std::string cxx = compiler();
  const std::string cmd = cxx + " " + flags() + " -o " + shell_quoted(object) +
                          " " + shell_quoted(source) + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return "cannot start the compiler: " + cmd;
  std::string out;
  char buf[512];
  while (std::fgets(buf, sizeof buf, pipe) != nullptr) out += buf;
  const int status = pclose(pipe);
  const std::string said = out.empty() ? std::string() : ":\n" + out;
  if (status != 0)
    return "`" + cmd + "` failed (" + status_text(status) + ")" + said;
  if (!std::filesystem::exists(object))
    return "`" + cmd + "` exited with status 0 but wrote no " + object + said;
  return {};
}

// Builds `base`.so from `source` unless it exists, under a lock shared by
// every process using the folder.
void build_object(const std::string& base,
                  const std::string& source,
                  Cache& c) {
  namespace fs = std::filesystem;
  const std::string object = base + ".so";
  if (fs::exists(object)) return;
  const int lock = ::open((base + ".lock").c_str(), O_CREAT | O_RDWR, 0644);
  if (lock >= 0) ::flock(lock, LOCK_EX);
  if (!fs::exists(object)) {
    { std::ofstream(base + ".cc") << source; }
    const std::string tmp = base + ".tmp" + std::to_string(::getpid()) + ".so";
    const auto start = std::chrono::steady_clock::now();
    const std::string failure = run_compiler(base + ".cc", tmp);
    c.stats.compile_seconds +=
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (!failure.empty()) {
      if (lock >= 0) ::close(lock);
      std::remove(tmp.c_str());
      throw Error("stencil kernel: " + failure + "\n(source: " + base +
                  ".cc; set ADGRAPH_CXX to another C++ compiler)");
    }
    std::rename(tmp.c_str(), object.c_str());
    ++c.stats.compiled;
  }
  if (lock >= 0) ::close(lock);
}

}  // namespace

CompiledStencil compile_stencil(const StencilSource& s) {
  const std::string source = kernel_source(s);
  Cache& c = cache();
  std::lock_guard<std::mutex> guard(c.mutex);
  if (c.identity_of != compiler()) {
    c.identity = build_identity();
    c.identity_of = compiler();
  }
  char hex[17];
  std::snprintf(
      hex,
      sizeof hex,
      "%016llx",
      static_cast<unsigned long long>(fnv1a(source + "\n" + c.identity)));
  auto it = c.loaded.find(hex);
  if (it != c.loaded.end()) return it->second;
  const std::string base = folder_locked(c) + "/stencil_" + hex;
  build_object(base, source, c);
  void* handle = ::dlopen((base + ".so").c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw Error("stencil kernel: cannot load " + base + ".so: " +
                (why ? why : "?") + " (remove it to have it compiled again)");
  }
  CompiledStencil k;
  k.run = reinterpret_cast<KernelFn>(::dlsym(handle, "adgraph_stencil"));
  k.source_path = base + ".cc";
  if (k.run == nullptr)
    throw Error("stencil kernel: " + base +
                ".so lacks its function (remove it)");
  ++c.stats.loaded;
  c.loaded[hex] = k;
  return k;
}

KernelCacheStats kernel_cache_stats() {
  std::lock_guard<std::mutex> guard(cache().mutex);
  return cache().stats;
}

std::string kernel_cache_folder() {
  std::lock_guard<std::mutex> guard(cache().mutex);
  return folder_locked(cache());
}

}  // namespace adgraph::grid
