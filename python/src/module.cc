// The extension module adgraph._adgraph. The Python package (python/adgraph)
// is the public face; this module holds the bindings it builds on.
#include <mpi.h>
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "builtin_ops.h"
#include "core/interrupt.h"
#include "python/src/bindings.h"

namespace adgraph::python {
void bind_grid(py::module_& m);  // grid_bindings.cc
}

namespace adgraph::python {
namespace {

// MPI for a Python process: started here unless mpi4py (or the program)
// already did, and finalised at interpreter exit when started here.
MpiEnvironment* environment = nullptr;

// Made at import beside the world's duplicate (both collective over
// MPI_COMM_WORLD, in the same order on every rank): agree_to_exit's own
// communicator, so its reduction never meets another collective.
MPI_Comm exit_comm = MPI_COMM_NULL;
// Set when every rank leaves with the same failure status (agree_to_exit):
// exit() then waits for MPI_Finalize as for a success.
std::atomic<bool> shared_exit{false};

void start_mpi() {
  if (environment == nullptr)
    environment = new MpiEnvironment(nullptr, nullptr);
  start_python_world();
  if (exit_comm == MPI_COMM_NULL && python_world()->size() > 1)
    MPI_Comm_dup(MPI_COMM_WORLD, &exit_comm);
}

// Whether every rank calls this with the same status within `seconds`
// (sys.exit on every rank: a bad option every rank saw). Otherwise the
// reduction stays pending, and the caller ends the job.
bool agree_to_exit(int status, double seconds) {
  if (exit_comm == MPI_COMM_NULL) return false;
  int mine[2] = {status, -status}, all[2] = {0, 0};
  MPI_Request request;
  MPI_Iallreduce(mine, all, 2, MPI_INT, MPI_MAX, exit_comm, &request);
  py::gil_scoped_release release;
  const auto until =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  int done = 0;
  while (true) {
    MPI_Test(&request, &done, MPI_STATUS_IGNORE);
    if (done || std::chrono::steady_clock::now() > until) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!done || all[0] != status || -all[1] != status) return false;
  shared_exit = true;
  return true;
}

void finish_mpi() {
  delete environment;
  environment = nullptr;
}

// Leaving through an uncaught SystemExit on a job of several ranks, the
// exit status is unknown until exit() (no Python hook sees it), and
// MPI_Finalize, which waits for every rank, would come first: a rank
// leaving with a failure would wait there for ranks that wait for it in a
// collective. So MPI_Finalize runs on a thread of its own, and exit()
// decides: a failure status that the other ranks do not share (they do not
// reach MPI_Finalize within a second) ends the job at once, naming the
// rank; status 0 waits for MPI_Finalize as usual.
std::thread* finishing = nullptr;
std::atomic<bool> finished{false};
int leaving_rank = 0, leaving_size = 1;

void finalise_mpi() {
  finish_mpi();
  int done = 0;
  MPI_Finalized(&done);
  if (!done) MPI_Finalize();  // started by mpi4py or the program
  finished = true;
}

void end_job_or_finish(int status, void*) {
  using Clock = std::chrono::steady_clock;
  const auto until = Clock::now() + std::chrono::seconds(shared_exit ? 60 : 1);
  while (status != 0 && !finished && Clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  if (status != 0 && !finished) {
    std::fprintf(stderr,
                 "adgraph: rank %d of %d: exit status %d (an uncaught "
                 "SystemExit), ending the job\n",
                 leaving_rank,
                 leaving_size,
                 status);
    std::fflush(stderr);
    std::_Exit(status);  // before MPI_Finalize ends: mpirun ends the job
  }
  finishing->join();
}

void finish_mpi_after_exit() {
  if (python_world()->size() <= 1 || finishing != nullptr) {
    finish_mpi();
    return;
  }
  leaving_rank = python_world()->rank();
  leaving_size = python_world()->size();
  py::gil_scoped_release release;
  finishing = new std::thread(finalise_mpi);
  // MPI_Finalized turns true once MPI_Finalize has run its callbacks
  // (PETSc's end, at_mpi_finalize) and only waits for the other ranks:
  // from then on nothing this process still tears down calls MPI.
  int started = 0;
  while (!started && !finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    MPI_Finalized(&started);
  }
  on_exit(end_job_or_finish, nullptr);
}

void translate_errors(py::module_& m) {
  py::module_ errors = py::module_::import("adgraph._errors");
  // Kept alive for the process: the translator runs until exit.
  static py::object error = errors.attr("Error");
  static py::object graph_error = errors.attr("GraphError");
  static py::object shape_error = errors.attr("ShapeError");
  static py::object json_error = errors.attr("JsonError");
  static py::object options_error = errors.attr("OptionsError");
  static py::object run_error = errors.attr("RunError");
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Interrupted&) {
      // A run stopped by Ctrl-C (InterruptWatch) ends as Python's own.
      PyErr_SetNone(PyExc_KeyboardInterrupt);
    } catch (const ShapeError& e) {
      PyErr_SetString(shape_error.ptr(), e.what());
    } catch (const GraphError& e) {
      PyErr_SetString(graph_error.ptr(), e.what());
    } catch (const JsonError& e) {
      PyErr_SetString(json_error.ptr(), e.what());
    } catch (const OptionsError& e) {
      PyErr_SetString(options_error.ptr(), e.what());
    } catch (const RunError& e) {
      PyErr_SetString(run_error.ptr(), e.what());
    } catch (const Error& e) {
      PyErr_SetString(error.ptr(), e.what());
    }
  });
  (void)m;
}

}  // namespace
}  // namespace adgraph::python

PYBIND11_MODULE(_adgraph, m) {
  using namespace adgraph::python;
  m.doc() = "adgraph's C++ runtime; use the adgraph package, not this module.";
  // Every op, for lookups by name (the generated op functions, load_json).
  adgraph::register_all_ops();
  translate_errors(m);
  m.def("start_mpi",
        &start_mpi,
        "Initialises MPI (MPI_THREAD_SERIALIZED) unless it is already; checks "
        "the thread level of an MPI started by someone else.");
  m.def("finish_mpi",
        &finish_mpi,
        "Finalises MPI if start_mpi() initialised it (at interpreter exit).");
  m.def("finish_mpi_after_exit",
        &finish_mpi_after_exit,
        "At interpreter exit through an uncaught SystemExit: on several "
        "ranks, finalises MPI on a thread and lets exit()'s status decide "
        "(a failure the other ranks do not share ends the job at once); "
        "otherwise as finish_mpi().");
  m.def("agree_to_exit",
        &agree_to_exit,
        py::arg("status"),
        py::arg("seconds"),
        "Whether every rank of the job leaves with this failure status "
        "within `seconds` (then exit() finalises MPI as usual); collective "
        "on a communicator of its own, made at import.");
  m.def(
      "abort_job",
      [](int code) { adgraph::abort_job(code); },
      "Ends every rank of the job (MPI_Abort) with `code`.");
  bind_communicator(m);
  bind_graph(m);
  bind_session(m);
  bind_custom_op(m);
  bind_optim(m);
  bind_solvers(m);
  bind_sparse(m);
  bind_grid(m);
}
