// Figures of the heat inversion, drawn with PLplot (pngcairo): a field with
// axes, a title, a colour bar with its values and the sensor locations, and
// the convergence of L-BFGS (loss and gradient norm, log scale).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace adgraph::examples {

struct FieldFigure {
  std::string path;   // PNG written here
  std::string title;  // above the plot
  std::string unit;   // colour bar label
  // Row-major nx × ny values; point (i, j) sits at x = (i+1)h, y = (j+1)h.
  const std::vector<double>* values = nullptr;
  int nx = 0, ny = 0;
  double h = 0.0;
  // Colour range; lo == hi picks the data's range.
  double lo = 0.0, hi = 0.0;
  // Diverging colours (blue–white–red, for differences) instead of
  // sequential ones.
  bool diverging = false;
  // Global (row, column) sensor points, marked with crosses.
  const std::vector<std::pair<int, int>>* sensors = nullptr;
};

// Writes the figure; false when the file could not be written.
bool write_field_figure(const FieldFigure& figure);

// Loss and gradient norm per iteration on a log scale. False when the file
// could not be written.
bool write_convergence_figure(const std::string& path,
                              const std::vector<double>& loss,
                              const std::vector<double>& gradient_norm,
                              const std::string& gradient_label);

}  // namespace adgraph::examples
