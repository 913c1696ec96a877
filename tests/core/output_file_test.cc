// Output files: refused before any work when they cannot be written (a
// folder, a missing folder), and written whole or not at all. (A read-only
// file cannot be tested here: the suites run as root, who may write it.)
#include "core/output_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "core/error.h"

namespace adgraph {
namespace {

namespace fs = std::filesystem;

// A fresh folder of its own for each test, removed after it.
class OutputFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("adgraph_output_file_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return dir_ / name; }
  static std::string read(const std::string& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  // The message of the OptionsError `f` throws, with its field checked.
  template <class F>
  static std::string refusal(F f, const std::string& field) {
    try {
      f();
    } catch (const OptionsError& e) {
      EXPECT_EQ(e.field(), field);
      return e.what();
    }
    return "no OptionsError";
  }

  fs::path dir_;
};

TEST_F(OutputFile, APathInAWritableFolderPasses) {
  check_output_path(path("result.json"), "--output");
  std::ofstream(path("old.json")) << "old";
  check_output_path(path("old.json"), "--output");
  EXPECT_EQ(read(path("old.json")), "old") << "the check touched the file";
  EXPECT_FALSE(fs::exists(path("result.json"))) << "the check made the file";
}

TEST_F(OutputFile, AFolderOrAMissingFolderIsRefusedByName) {
  EXPECT_EQ(refusal([&] { check_output_path(dir_.string(), "--output"); },
                    "--output"),
            "--output: " + dir_.string() +
                ": is a directory, not a file; nothing was run");
  const std::string lost = path("missing/result.json");
  EXPECT_EQ(refusal([&] { check_output_path(lost, "out"); }, "out"),
            "out: " + lost +
                ": cannot be written (no such folder); nothing "
                "was run");
}

TEST_F(OutputFile, WritesWholeAndReplacesWhatWasThere) {
  const std::string p = path("result.json");
  write_output_file(p, "first\n", "--output");
  EXPECT_EQ(read(p), "first\n");
  write_output_file(p, "second, longer\n", "--output");
  EXPECT_EQ(read(p), "second, longer\n");
  EXPECT_FALSE(fs::exists(p + ".partial"));
}

TEST_F(OutputFile, AFailedWriteLeavesNoPartialFile) {
  const std::string p = path("missing/result.json");
  const std::string message =
      refusal([&] { write_output_file(p, "text", "--output"); }, "--output");
  EXPECT_EQ(
      message,
      "--output: " + p + ": cannot be written (No such file or directory)");
  EXPECT_FALSE(fs::exists(p + ".partial"));
  EXPECT_FALSE(fs::exists(p));
}

}  // namespace
}  // namespace adgraph
