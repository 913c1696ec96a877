// heat_inversion's figures with values PLplot cannot draw: an infinite or
// NaN loss (a diverged run, or --noise 1e308) once made PLplot loop
// forever on an infinite axis range, leaving an empty PNG. The figures
// draw the finite values only and the file is a whole PNG.
#include "examples/heat_figures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

namespace adgraph::examples {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

// A PNG starts with these 8 bytes; a whole one ends with an IEND chunk.
bool is_whole_png(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)),
                          std::istreambuf_iterator<char>());
  return bytes.size() > 64 && bytes.compare(0, 8, "\x89PNG\r\n\x1a\n") == 0 &&
         bytes.find("IEND") == bytes.size() - 8;
}

std::string temp_path(const char* name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

TEST(HeatFigures, ConvergenceWithNonFiniteValuesIsDrawn) {
  const std::string path = temp_path("adgraph_convergence_non_finite.png");
  std::filesystem::remove(path);
  EXPECT_TRUE(write_convergence_figure(path,
                                       {kInf, 3.0, kNan, 0.5, 1e308 * 10},
                                       {-kInf, 1.0, 0.1, kNan, 1e-3},
                                       "gradient norm"));
  EXPECT_TRUE(is_whole_png(path));
}

TEST(HeatFigures, ConvergenceWithNothingFiniteIsDrawn) {
  const std::string path = temp_path("adgraph_convergence_none_finite.png");
  std::filesystem::remove(path);
  EXPECT_TRUE(write_convergence_figure(path, {kInf, kNan}, {kNan}, "g"));
  EXPECT_TRUE(is_whole_png(path));
}

TEST(HeatFigures, FieldWithNonFiniteValuesIsDrawn) {
  const std::string path = temp_path("adgraph_field_non_finite.png");
  std::filesystem::remove(path);
  const std::vector<double> values = {1.0, kNan, kInf, -kInf, 2.0, 1.5};
  FieldFigure f;
  f.path = path;
  f.title = "non-finite";
  f.unit = "kappa";
  f.values = &values;
  f.nx = 2, f.ny = 3, f.h = 0.25;
  f.lo = 1.0, f.hi = 2.0;
  EXPECT_TRUE(write_field_figure(f));
  EXPECT_TRUE(is_whole_png(path));
}

}  // namespace
}  // namespace adgraph::examples
