// What the inversion examples write about a field on the patch grid: the
// whole grid gathered on rank 0, and a ParaView file of named fields.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "mpi_ops/communicator.h"
#include "solvers/heat_solver.h"

namespace adgraph::examples {

// The whole grid on rank 0 (row-major, index i·ny + j); empty elsewhere.
// Collective.
std::vector<double> gather_grid(Communicator& comm,
                                const solvers::HeatConfig& c,
                                const Tensor& local);

// VTK ImageData (ASCII) with the named point fields; false when the file
// could not be written.
bool write_vti(
    const std::string& path,
    int nx,
    int ny,
    double h,
    const std::vector<std::pair<std::string, const std::vector<double>*>>&
        fields);

}  // namespace adgraph::examples
