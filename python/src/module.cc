// The extension module adgraph._adgraph. The Python package (python/adgraph)
// is the public face; this module holds the bindings it builds on.
#include <mpi.h>

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

void start_mpi() {
  if (environment == nullptr)
    environment = new MpiEnvironment(nullptr, nullptr);
  start_python_world();
}

void finish_mpi() {
  delete environment;
  environment = nullptr;
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
  translate_errors(m);
  m.def("start_mpi",
        &start_mpi,
        "Initialises MPI (MPI_THREAD_SERIALIZED) unless it is already; checks "
        "the thread level of an MPI started by someone else.");
  m.def("finish_mpi",
        &finish_mpi,
        "Finalises MPI if start_mpi() initialised it (at interpreter exit).");
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
