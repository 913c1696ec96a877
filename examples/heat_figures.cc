#include "examples/heat_figures.h"

#include <plstream.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>

namespace adgraph::examples {
namespace {

constexpr int kWidth = 900, kHeight = 760;

// A plot stream writing `path` as PNG, white background, black lines.
std::unique_ptr<plstream> open_png(const std::string& path) {
  auto pls = std::make_unique<plstream>();
  pls->sdev("pngcairo");
  pls->sfnam(path.c_str());
  pls->spage(0, 0, kWidth, kHeight, 0, 0);
  pls->scolbg(255, 255, 255);
  pls->init();
  pls->scol0(1, 0, 0, 0);  // axes and text in black
  return pls;
}

bool written(const std::string& path) {
  std::error_code ec;
  return std::filesystem::file_size(path, ec) > 0 && !ec;
}

void set_colours(plstream& pls, bool diverging) {
  if (diverging) {
    const PLFLT at[3] = {0, 0.5, 1}, r[3] = {0.15, 1, 0.7},
                g[3] = {0.3, 1, 0.1}, b[3] = {0.75, 1, 0.1};
    pls.scmap1l(true, 3, at, r, g, b, nullptr);
  } else {
    // Dark blue through teal and yellow (a viridis-like ramp).
    const PLFLT at[4] = {0, 0.35, 0.7, 1}, r[4] = {0.27, 0.13, 0.47, 0.99},
                g[4] = {0.0, 0.45, 0.82, 0.91}, b[4] = {0.33, 0.56, 0.32, 0.14};
    pls.scmap1l(true, 4, at, r, g, b, nullptr);
  }
}

// A vertical colour bar right of the viewport, from lo to hi, labelled
// `unit`.
void draw_colour_bar(plstream& pls,
                     double lo,
                     double hi,
                     const std::string& unit) {
  PLFLT width, height;
  PLINT n_values = 2;
  const PLFLT range[2] = {lo, hi};
  const PLFLT* values[1] = {range};
  const char* axis[1] = {"bcvtm"};
  PLFLT ticks[1] = {0};
  PLINT sub_ticks[1] = {0};
  PLINT label_opts[1] = {PL_COLORBAR_LABEL_BOTTOM};
  const char* labels[1] = {unit.c_str()};
  pls.colorbar(&width,
               &height,
               PL_COLORBAR_IMAGE,
               PL_POSITION_RIGHT | PL_POSITION_VIEWPORT | PL_POSITION_OUTSIDE,
               0.04,
               0.0,
               0.05,
               0.8,
               0,
               1,
               1,
               0.0,
               0.0,
               0,
               0.0,
               1,
               label_opts,
               labels,
               1,
               axis,
               ticks,
               sub_ticks,
               &n_values,
               values);
}

// The sensors (grid points (i, j)) as crosses.
void draw_sensors(plstream& pls,
                  const std::vector<std::pair<int, int>>& sensors,
                  double h) {
  if (sensors.empty()) return;
  std::vector<PLFLT> sx, sy;
  for (const auto& [i, j] : sensors) {
    sx.push_back((i + 1) * h);
    sy.push_back((j + 1) * h);
  }
  pls.col0(1);
  pls.ssym(0, 0.8);
  pls.poin(static_cast<PLINT>(sx.size()), sx.data(), sy.data(), 5);
}

// The legend of the convergence figure: the loss and `gradient_label`.
void draw_legend(plstream& pls, const std::string& gradient_label) {
  PLINT opts[2] = {PL_LEGEND_LINE, PL_LEGEND_LINE};
  PLINT text_colors[2] = {1, 1}, line_colors[2] = {9, 2}, styles[2] = {1, 1};
  PLFLT widths[2] = {2, 2};
  const char* text[2] = {"loss", gradient_label.c_str()};
  PLFLT lw, lh;
  pls.legend(&lw,
             &lh,
             PL_LEGEND_BACKGROUND | PL_LEGEND_BOUNDING_BOX,
             PL_POSITION_TOP | PL_POSITION_RIGHT | PL_POSITION_INSIDE,
             0.02,
             0.02,
             0.1,
             0,
             1,
             1,
             0,
             0,
             2,
             opts,
             1.0,
             1.0,
             2.0,
             1.0,
             text_colors,
             text,
             nullptr,
             nullptr,
             nullptr,
             nullptr,
             line_colors,
             styles,
             widths,
             nullptr,
             nullptr,
             nullptr,
             nullptr);
}

// The finite values of a history, as log10, each at its own iteration
// (PLplot loops forever on an infinite range).
struct Series {
  std::vector<PLFLT> at, value;
};

Series log_of(const std::vector<double>& v) {
  Series out;
  for (std::size_t k = 0; k < v.size(); ++k) {
    if (!std::isfinite(v[k])) continue;
    out.at.push_back(static_cast<PLFLT>(k));
    out.value.push_back(std::log10(std::max(v[k], 1e-300)));
  }
  return out;
}

}  // namespace

bool write_field_figure(const FieldFigure& f) {
  const std::vector<double>& v = *f.values;
  double lo = f.lo, hi = f.hi;
  if (!(hi > lo)) {
    lo = *std::min_element(v.begin(), v.end());
    hi = *std::max_element(v.begin(), v.end());
    if (!(hi > lo)) hi = lo + 1e-12;
  }
  {
    auto pls = open_png(f.path);
    set_colours(*pls, f.diverging);
    pls->adv(0);
    pls->vpor(0.1, 0.76, 0.1, 0.9);
    const double x0 = 0.5 * f.h, x1 = (f.nx + 0.5) * f.h;
    const double y0 = 0.5 * f.h, y1 = (f.ny + 0.5) * f.h;
    pls->wind(x0, x1, y0, y1);
    // imagefr takes data[x][y]: rows (i) along x, columns (j) along y.
    // Values beyond the colour range take its end colours (imagefr would
    // leave them blank).
    std::vector<PLFLT> storage(v.begin(), v.end());
    // NaN takes the low end too (PLplot draws only finite values).
    for (PLFLT& x : storage)
      x = std::isnan(x) ? lo : std::clamp<PLFLT>(x, lo, hi);
    std::vector<const PLFLT*> rows(f.nx);
    for (int i = 0; i < f.nx; ++i) rows[i] = &storage[std::size_t(i) * f.ny];
    pls->imagefr(rows.data(),
                 f.nx,
                 f.ny,
                 x0,
                 x1,
                 y0,
                 y1,
                 lo,
                 hi,
                 lo,
                 hi,
                 nullptr,
                 nullptr);
    if (f.sensors != nullptr) draw_sensors(*pls, *f.sensors, f.h);
    pls->col0(1);
    pls->box("bcnst", 0, 0, "bcnstv", 0, 0);
    pls->lab("x", "y", f.title.c_str());

    draw_colour_bar(*pls, lo, hi, f.unit);
  }  // the stream's destructor finishes the file
  return written(f.path);
}

bool write_convergence_figure(const std::string& path,
                              const std::vector<double>& loss,
                              const std::vector<double>& gradient_norm,
                              const std::string& gradient_label) {
  const Series loss_series = log_of(loss),
               gradient_series = log_of(gradient_norm);
  const std::vector<PLFLT>&l = loss_series.value, &g = gradient_series.value;
  const std::size_t iterations = std::max(loss.size(), gradient_norm.size());
  double lo = 0, hi = 1;
  if (!l.empty() || !g.empty()) {
    lo = 1e300, hi = -1e300;
    for (const auto* s : {&l, &g}) {
      for (PLFLT x : *s) lo = std::min(lo, x), hi = std::max(hi, x);
    }
    lo = std::floor(lo), hi = std::ceil(hi);
    if (hi <= lo) hi = lo + 1;
  }
  {
    auto pls = open_png(path);
    pls->col0(1);
    pls->env(0, std::max<PLFLT>(1, iterations - 1.0), lo, hi, 0, 20);
    pls->lab("iteration", "", "L-BFGS convergence");
    pls->width(2);
    pls->col0(9);  // blue
    pls->line(static_cast<PLINT>(l.size()), loss_series.at.data(), l.data());
    pls->col0(2);  // yellow-ish: change to red below
    pls->scol0(2, 200, 30, 30);
    pls->col0(2);
    pls->line(
        static_cast<PLINT>(g.size()), gradient_series.at.data(), g.data());
    draw_legend(*pls, gradient_label);
  }
  return written(path);
}

}  // namespace adgraph::examples
