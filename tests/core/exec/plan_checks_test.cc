// The limits a plan is checked against before its first run
// (core/exec/plan_checks.cc): ADGRAPH_MEMORY_LIMIT and
// ADGRAPH_MAX_LOOP_STEPS as read from the environment, with their
// refusals, and the sizes error messages print. (The pairing of
// point-to-point messages is exercised on several ranks by
// mpi_ops/ordering_test and the driver's send_recv documents.)
#include "core/exec/plan_checks.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <string>

#include "core/error.h"

namespace adgraph {
namespace {

// Sets an environment variable for one scope and restores it after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) had_ = true, old_ = old;
    if (value) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

std::string message_of_memory_limit(const char* value) {
  ScopedEnv env("ADGRAPH_MEMORY_LIMIT", value);
  try {
    memory_available();
  } catch (const OptionsError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(MemoryAvailable, ReadsBytesWithAnOptionalBinarySuffix) {
  const std::pair<const char*, std::size_t> cases[] = {
      {"0", 0},
      {"4096", 4096},
      {"3K", 3 * 1024},
      {"1.5M", 3 * 512 * 1024},
      {"2G", std::size_t{2} << 30},
      {"0.5G", std::size_t{1} << 29}};
  for (const auto& [text, bytes] : cases) {
    ScopedEnv env("ADGRAPH_MEMORY_LIMIT", text);
    EXPECT_EQ(memory_available(), bytes) << text;
  }
}

TEST(MemoryAvailable, WithoutTheVariableItIsMemAvailableOrUnbounded) {
  ScopedEnv env("ADGRAPH_MEMORY_LIMIT", nullptr);
  // /proc/meminfo's MemAvailable is a positive number of KiB on Linux.
  const std::size_t bytes = memory_available();
  EXPECT_GT(bytes, 0u);
  if (bytes != std::numeric_limits<std::size_t>::max()) {
    EXPECT_EQ(bytes % 1024, 0u);
  }
}

TEST(MemoryAvailable, RefusesWhatIsNotANumberOfBytes) {
  for (const char* bad : {"", "lots", "12X", "1KB", "-5", "nan", "1e30G"}) {
    const std::string message = message_of_memory_limit(bad);
    EXPECT_NE(message.find("ADGRAPH_MEMORY_LIMIT must be a number of bytes, "
                           "optionally with a K, M or G suffix, got \"" +
                           std::string(bad) + "\""),
              std::string::npos)
        << bad << ": " << message;
  }
}

TEST(MaxLoopSteps, DefaultNumberOrInfinity) {
  {
    ScopedEnv env("ADGRAPH_MAX_LOOP_STEPS", nullptr);
    EXPECT_EQ(max_loop_steps(), kDefaultMaxLoopSteps);
  }
  {
    ScopedEnv env("ADGRAPH_MAX_LOOP_STEPS", "");
    EXPECT_EQ(max_loop_steps(), kDefaultMaxLoopSteps);
  }
  {
    ScopedEnv env("ADGRAPH_MAX_LOOP_STEPS", "250");
    EXPECT_EQ(max_loop_steps(), 250.0);
  }
  {
    ScopedEnv env("ADGRAPH_MAX_LOOP_STEPS", "inf");
    EXPECT_EQ(max_loop_steps(), std::numeric_limits<double>::infinity());
  }
  for (const char* bad : {"0", "0.5", "-3", "many", "10 steps", "nan"}) {
    ScopedEnv env("ADGRAPH_MAX_LOOP_STEPS", bad);
    try {
      max_loop_steps();
      ADD_FAILURE() << bad << " accepted";
    } catch (const OptionsError& e) {
      EXPECT_NE(std::string(e.what()).find(
                    "ADGRAPH_MAX_LOOP_STEPS must be a number of loop body "
                    "steps >= 1 (or \"inf\"), got \"" +
                    std::string(bad) + "\""),
                std::string::npos)
          << e.what();
    }
  }
}

TEST(ByteString, BinaryUnitsWithThreeSignificantDigits) {
  EXPECT_EQ(byte_string(0), "0 B");
  EXPECT_EQ(byte_string(8), "8 B");
  EXPECT_EQ(byte_string(1023), "1023 B");
  EXPECT_EQ(byte_string(1024), "1 KiB");
  EXPECT_EQ(byte_string(12 * 1024), "12 KiB");
  EXPECT_EQ(byte_string(640u << 20), "640 MiB");
  EXPECT_EQ(byte_string(std::size_t{3} << 29), "1.5 GiB");
  EXPECT_EQ(byte_string(std::size_t{1} << 40), "1 TiB");
  EXPECT_EQ(byte_string(std::size_t{5000} << 40), "5e+03 TiB");
}

}  // namespace
}  // namespace adgraph
