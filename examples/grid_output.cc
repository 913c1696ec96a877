#include "examples/grid_output.h"

#include <fstream>

namespace adgraph::examples {

std::vector<double> gather_grid(Communicator& comm,
                                const solvers::HeatConfig& c,
                                const Tensor& local) {
  // Patches may differ in size (patch_of): each goes in a slot of the
  // first patch's size, the largest.
  const solvers::Patch first = solvers::patch_of(c, 0);
  const int64_t slot = first.n * first.m;
  std::vector<double> mine(local.data(), local.data() + local.size());
  mine.resize(slot, 0.0);
  std::vector<double> stacked(comm.rank() == 0 ? slot * comm.size() : 0);
  comm.gather(mine.data(), stacked.data(), slot, 0);
  if (comm.rank() != 0) return {};
  std::vector<double> grid(static_cast<std::size_t>(c.nx) * c.ny);
  for (int r = 0; r < comm.size(); ++r) {
    const solvers::Patch q = solvers::patch_of(c, r);
    for (int64_t i = 0; i < q.n; ++i) {
      for (int64_t j = 0; j < q.m; ++j) {
        grid[(q.row0 + i) * c.ny + q.col0 + j] =
            stacked[r * slot + i * q.m + j];
      }
    }
  }
  return grid;
}

bool write_vti(
    const std::string& path,
    int nx,
    int ny,
    double h,
    const std::vector<std::pair<std::string, const std::vector<double>*>>&
        fields) {
  std::ofstream out(path);
  out << "<?xml version=\"1.0\"?>\n<VTKFile type=\"ImageData\" "
         "version=\"0.1\">\n"
      << "<ImageData WholeExtent=\"0 " << ny - 1 << " 0 " << nx - 1
      << " 0 0\" Origin=\"" << h << " " << h << " 0\" Spacing=\"" << h << " "
      << h << " 1\">\n"
      << "<Piece Extent=\"0 " << ny - 1 << " 0 " << nx - 1
      << " 0 0\">\n<PointData>\n";
  out.precision(17);
  for (const auto& [name, values] : fields) {
    out << "<DataArray type=\"Float64\" Name=\"" << name
        << "\" format=\"ascii\">\n";
    for (double v : *values) out << v << "\n";
    out << "</DataArray>\n";
  }
  out << "</PointData>\n</Piece>\n</ImageData>\n</VTKFile>\n";
  return static_cast<bool>(out);
}

}  // namespace adgraph::examples
