// Grids, halos and stencil expressions (grid/) for Python: adgraph.Grid and
// adgraph.StencilExpr are thin wrappers over the C++ classes.
#include <pybind11/operators.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "python/src/bindings.h"

namespace adgraph::python {
namespace {

// An expression and the graph its values belong to (kept alive by it).
struct PyStencilExpr {
  std::shared_ptr<Graph> owner;
  grid::StencilExpr expr;
};

// `object` as an expression: an expression, a Value (a field or scalar of
// `owner`'s graph) or a number.
PyStencilExpr as_expr(py::handle object, const std::shared_ptr<Graph>& owner) {
  if (py::isinstance<PyStencilExpr>(object))
    return object.cast<PyStencilExpr>();
  if (py::isinstance<PyValue>(object)) {
    const PyValue& v =
        live(object.cast<const PyValue&>(), "stencil expression");
    return {v.owner, grid::field(v.value)};
  }
  if (py::isinstance<py::bool_>(object) ||
      !(py::isinstance<py::int_>(object) ||
        py::isinstance<py::float_>(object))) {
    throw OptionsError(
        "stencil expression: expected a StencilExpr, a Value or a number, "
        "got " +
        py::repr(object).cast<std::string>());
  }
  return {owner, grid::StencilExpr(object.cast<double>())};
}

PyStencilExpr apply_op(const std::string& op,
                       const std::vector<py::handle>& args) {
  std::shared_ptr<Graph> owner;
  for (py::handle a : args) {
    if (py::isinstance<PyStencilExpr>(a) && a.cast<PyStencilExpr>().owner)
      owner = a.cast<PyStencilExpr>().owner;
    if (py::isinstance<PyValue>(a)) owner = a.cast<const PyValue&>().owner;
  }
  std::vector<grid::StencilExpr> exprs;
  for (py::handle a : args) exprs.push_back(as_expr(a, owner).expr);
  return {owner, grid::stencil_apply(op, exprs)};
}

void bind_expression(py::module_& m) {
  py::class_<PyStencilExpr> e(
      m,
      "StencilExpr",
      "An expression evaluated at every point of a grid patch: fields read at\n"
      "offsets (field(u).shift((0, 1)) reads u at i + (0, 1)), scalars,\n"
      "numbers, + - * /, comparisons (< <= > >= == != build nodes; an\n"
      "expression has no truth value), and adgraph.grid's functions\n"
      "(exp, log, ..., minimum, maximum, where).");
  e.def(
       "shift",
       [](const PyStencilExpr& x, std::vector<int64_t> offset) {
         return PyStencilExpr{x.owner, x.expr.shift(offset)};
       },
       py::arg("offset"),
       "The expression with every field read moved by `offset` (one entry per "
       "spatial axis; missing trailing entries are 0).")
      .def_property_readonly(
          "text",
          [](const PyStencilExpr& x) { return x.expr.text(); },
          "The text form (inputs numbered in order of appearance).")
      .def("__repr__", [](const PyStencilExpr& x) {
        return "StencilExpr(" + x.expr.text() + ")";
      });
  const std::vector<std::pair<const char*, const char*>> binary = {
      {"__add__", "add"},
      {"__sub__", "sub"},
      {"__mul__", "mul"},
      {"__truediv__", "div"},
      {"__pow__", "pow"},
      {"__lt__", "lt"},
      {"__le__", "le"},
      {"__gt__", "gt"},
      {"__ge__", "ge"}};
  for (const auto& [py_name, op] : binary) {
    const std::string name = op;
    e.def(py_name, [name](py::object a, py::object b) {
      return apply_op(name, {a, b});
    });
  }
  const std::vector<std::pair<const char*, const char*>> reflected = {
      {"__radd__", "add"},
      {"__rsub__", "sub"},
      {"__rmul__", "mul"},
      {"__rtruediv__", "div"},
      {"__rpow__", "pow"}};
  for (const auto& [py_name, op] : reflected) {
    const std::string name = op;
    e.def(py_name, [name](py::object a, py::object b) {
      return apply_op(name, {b, a});
    });
  }
  e.def("__neg__", [](py::object a) { return apply_op("neg", {a}); });
  // == and != build eq/ne nodes as the other comparisons do; an operand
  // the language cannot read (None, a string) compares by identity.
  for (const auto& [py_name, op] :
       std::vector<std::pair<const char*, const char*>>{{"__eq__", "eq"},
                                                        {"__ne__", "ne"}}) {
    const std::string name = op;
    const bool equal = name == "eq";
    e.def(py_name, [name, equal](py::object a, py::object b) -> py::object {
      if (!b.is_none() && !py::isinstance<py::str>(b)) {
        return py::cast(apply_op(name, {a, b}));
      }
      return py::bool_(a.is(b) == equal);
    });
  }
  e.def("__hash__", [](py::object a) {
    return static_cast<py::ssize_t>(reinterpret_cast<std::intptr_t>(a.ptr()));
  });
  e.def("__bool__", [](const PyStencilExpr&) -> bool {
    throw py::type_error(
        "a StencilExpr has no truth value: `if`, `and`, `or` and Python's "
        "max()/min() would test it and silently pick one branch; use "
        "adgraph.grid.where(cond, a, b), maximum(a, b) and minimum(a, b)");
  });
}

// adgraph.stencil_exp … stencil_where, stencil_field: the language's
// functions over expressions, Values and numbers.
void bind_stencil_functions(py::module_& m) {
  for (const char* f : {"exp", "log", "sin", "cos", "tanh", "abs", "sqrt"}) {
    const std::string name = f;
    m.def((std::string("stencil_") + f).c_str(),
          [name](py::object a) { return apply_op(name, {a}); },
          py::arg("x"),
          ("Element-wise " + name + " inside a stencil expression.").c_str());
  }
  m.def(
      "stencil_minimum",
      [](py::object a, py::object b) {
        return apply_op("min", {a, b});
      },
      py::arg("a"),
      py::arg("b"),
      "min(a, b) inside a stencil expression (a where a <= b).");
  m.def(
      "stencil_maximum",
      [](py::object a, py::object b) {
        return apply_op("max", {a, b});
      },
      py::arg("a"),
      py::arg("b"),
      "max(a, b) inside a stencil expression (a where a >= b).");
  m.def(
      "stencil_where",
      [](py::object c, py::object a, py::object b) {
        return apply_op("where", {c, a, b});
      },
      py::arg("condition"),
      py::arg("a"),
      py::arg("b"),
      "a where condition != 0, else b, inside a stencil expression.");
  m.def(
      "stencil_field",
      [](const PyValue& v, const grid::Grid* g) {
        const PyValue& x = live(v, "stencil_field");
        return PyStencilExpr{
            x.owner, g ? grid::field(*g, x.value) : grid::field(x.value)};
      },
      py::arg("value"),
      py::arg("grid") = nullptr,
      "A field [batch..., patch...] or scalar [] read at offset 0; with a "
      "grid, a field of that grid (an expression mixing two grids, or "
      "given to another grid's stencil, is refused).");
}

// Grid.gather. A rank whose patch cannot be read still takes part (as no
// patch), so that every rank raises instead of waiting for it.
py::object gather_patches(const grid::Grid& g, py::object local, int root) {
  Tensor t(Shape{});
  std::string problem;
  try {
    t = to_tensor(local, "local");
  } catch (const std::exception& e) {
    problem = e.what();
  }
  Tensor global;
  try {
    py::gil_scoped_release release;
    global = g.gather(t, root);
  } catch (const OptionsError&) {
    if (problem.empty()) throw;
    throw OptionsError("Grid.gather: " + problem);
  }
  if (g.rank() != root) return py::none();
  return to_array(std::move(global));
}

void bind_grid_layout(py::class_<grid::Grid>& cls) {
  cls.def(py::init([](Shape shape,
                      std::vector<int> procs,
                      std::vector<bool> periodic,
                      std::shared_ptr<Communicator> comm) {
            return grid::Grid(std::move(shape),
                              std::move(procs),
                              std::move(periodic),
                              std::move(comm));
          }),
          py::arg("shape"),
          py::arg("procs"),
          py::arg("periodic"),
          py::arg("comm"))
      .def_property_readonly(
          "ndim", &grid::Grid::ndim, "The number of spatial axes (1 to 3).")
      .def_property_readonly(
          "shape",
          [](const grid::Grid& g) { return g.shape(); },
          "The global extents (points per axis).")
      .def_property_readonly(
          "procs",
          [](const grid::Grid& g) { return g.layout().procs; },
          "Processes per axis; their product is the communicator's size.")
      .def_property_readonly(
          "periodic",
          [](const grid::Grid& g) { return g.layout().periodic; },
          "Per axis, whether it wraps.")
      .def_property_readonly(
          "rank",
          &grid::Grid::rank,
          "This process's rank on the grid's communicator (its patch's "
          "number; process coordinates numpy.unravel_index(rank, procs)).")
      .def_property_readonly(
          "comm", &grid::Grid::comm, "The grid's communicator.")
      .def(
          "local_shape", &grid::Grid::local_shape, "This rank's patch extents.")
      .def("offset",
           &grid::Grid::offset,
           "The global index of this rank's first point.")
      .def("owner",
           &grid::Grid::owner,
           py::arg("index"),
           "The rank that owns global point `index`.")
      .def(
          "scatter",
          [](const grid::Grid& g, py::object global, int root) {
            // A root whose array cannot be read still takes part, so that
            // every rank raises instead of waiting for it.
            Tensor t(Shape{0});
            std::string problem;
            if (!global.is_none() && g.comm()->rank() == root) {
              try {
                t = to_tensor(global, "global_array");
              } catch (const std::exception& e) {
                problem = e.what();
              }
            }
            Tensor local;
            try {
              py::gil_scoped_release release;
              local = g.scatter(t, root);
            } catch (const OptionsError&) {
              if (problem.empty()) throw;
              throw OptionsError("Grid.scatter: " + problem);
            }
            return to_array(std::move(local));
          },
          py::arg("global_array"),
          py::arg("root") = 0,
          "Collective: `global_array` (shape (*batch, *shape) on `root`; "
          "ignored elsewhere) cut into patches; returns this rank's patch, "
          "(*batch, *local_shape()), in float64 (ints, float32 converted).")
      .def("gather",
           &gather_patches,
           py::arg("local_array"),
           py::arg("root") = 0,
           "Collective: every rank's patch joined into the global array on "
           "`root` (None elsewhere).");
}

// A halo's width argument: one int for every axis, or one per axis.
std::vector<int64_t> widths_of(const py::object& width, const char* where) {
  if (py::isinstance<py::int_>(width) && !py::isinstance<py::bool_>(width))
    return {width.cast<int64_t>()};
  try {
    return width.cast<std::vector<int64_t>>();
  } catch (const py::cast_error&) {
    throw OptionsError(std::string(where) +
                           ": width: expected an int or a list of ints (one "
                           "per spatial axis), got " +
                           py::repr(width).cast<std::string>(),
                       {},
                       {},
                       "width");
  }
}

// Grid.halo_start and Grid.halo_finish: the halo in two nodes.
void bind_halo_split(py::class_<grid::Grid>& cls) {
  cls.def(
         "halo_start",
         [](const grid::Grid& g,
            const PyValue& x,
            const py::object& width,
            bool corners,
            const std::string& boundary) {
           const PyValue& v = live(x, "Grid.halo_start");
           grid::HaloOptions o;
           o.corners = corners;
           o.boundary = boundary;
           return PyValue{
               v.owner,
               grid::halo_start(
                   g, v.value, widths_of(width, "Grid.halo_start"), o)};
         },
         py::arg("x"),
         py::arg("width"),
         py::arg("corners") = true,
         py::arg("boundary") = "zero",
         "Starts Grid.halo's exchange and returns a request: nodes that do "
         "not need the ghosts run while the messages travel, and exactly one "
         "Grid.halo_finish(request) gives the padded field, the same bits as "
         "Grid.halo. Without corners every axis's messages leave at the "
         "start; with corners only the first axis's.")
      .def(
          "halo_finish",
          [](const grid::Grid&, const PyValue& request) {
            const PyValue& r = live(request, "Grid.halo_finish");
            return PyValue{r.owner, grid::halo_finish(r.value)};
          },
          py::arg("request"),
          "Finishes the exchange Grid.halo_start began: the padded field.");
}

// Grid.halo and Grid.stencil: the nodes a grid adds to a graph.
void bind_grid_nodes(py::class_<grid::Grid>& cls) {
  cls.def(
         "halo",
         [](const grid::Grid& g,
            const PyValue& x,
            const py::object& width,
            bool corners,
            const std::string& boundary) {
           const PyValue& v = live(x, "Grid.halo");
           grid::HaloOptions o;
           o.corners = corners;
           o.boundary = boundary;
           return PyValue{
               v.owner,
               grid::halo(g, v.value, widths_of(width, "Grid.halo"), o)};
         },
         py::arg("x"),
         py::arg("width"),
         py::arg("corners") = true,
         py::arg("boundary") = "zero",
         "A node padding `x` (shape (*batch, *local_shape())) with `width` "
         "ghost layers per spatial axis (one int for every axis, or one per "
         "axis) from the neighbouring patches; its output has shape "
         "(*batch, *(n + 2 * w for each patch extent n and width w)). "
         "`corners` fills edge and corner ghosts too; "
         "`boundary` is what lies past a non-periodic edge: \"zero\", "
         "\"mirror\" (numpy.pad's reflect) or \"copy\" (numpy.pad's edge). "
         "Its adjoint sends the ghosts' cotangents back and adds them.")
      .def(
          "stencil",
          [](const grid::Grid& g, py::object expr, const std::string& name) {
            if (!py::isinstance<PyStencilExpr>(expr) &&
                !py::isinstance<PyValue>(expr)) {
              throw OptionsError("Grid.stencil: expected a StencilExpr, got " +
                                     py::repr(expr).cast<std::string>(),
                                 {},
                                 {},
                                 "expr");
            }
            PyStencilExpr e = as_expr(expr, nullptr);
            if (!e.owner)
              throw OptionsError("Grid.stencil: the expression reads no field");
            check_alive(e.owner, "Grid.stencil");
            return PyValue{e.owner, grid::stencil(g, e.expr, name)};
          },
          py::arg("expr"),
          py::arg("name") = "",
          "The fused stencil node of `expr` (a StencilExpr): output "
          "(*batch, *local_shape()), its gradient and tangent generated.");
}

// Sources and receivers anywhere in the grid (grid/points.h).
void bind_points(py::class_<grid::Grid>& cls) {
  cls.def(
         "sample",
         [](const grid::Grid& g, const PyValue& u, const grid::Points& points) {
           const PyValue& v = live(u, "Grid.sample");
           return PyValue{v.owner, grid::sample(g, v.value, points)};
         },
         py::arg("u"),
         py::arg("points"),
         "u (shape (*batch, *local_shape())) interpolated at `points` "
         "(global index coordinates, one list of ndim numbers per point, "
         "within [0, N - 1] on each axis) with bilinear (trilinear) "
         "weights: shape (*batch, len(points)), the same on every rank. A "
         "point on a grid point gives u there exactly. Adjoint: the sum "
         "over ranks of the cotangent, spread back onto the corners (the "
         "loss is the sum of the per-rank losses: compute a misfit of the "
         "samples on one rank).")
      .def(
          "inject",
          [](const grid::Grid& g,
             const PyValue& u,
             const grid::Points& points,
             const PyValue& amplitudes) {
            const PyValue& v = live(u, "Grid.inject");
            live(amplitudes, "Grid.inject");
            return PyValue{v.owner,
                           grid::inject(g, v.value, points, amplitudes.value)};
          },
          py::arg("u"),
          py::arg("points"),
          py::arg("amplitudes"),
          "u plus `amplitudes` (shape (*batch, len(points)), the same on "
          "every rank) spread onto each point's cell corners with bilinear "
          "(trilinear) weights, on the ranks that own them; a point on a "
          "grid point adds its amplitude there exactly.");
}

void bind_kernel_cache(py::module_& m) {
  m.def(
      "kernel_cache_stats",
      [] {
        const grid::KernelCacheStats s = grid::kernel_cache_stats();
        py::dict d;
        d["compiled"] = s.compiled;
        d["loaded"] = s.loaded;
        d["compile_seconds"] = s.compile_seconds;
        d["folder"] = grid::kernel_cache_folder();
        return d;
      },
      "What the stencil kernel cache did in this process: kernels compiled, "
      "kernels loaded, seconds spent compiling, and its folder.");
}

}  // namespace

void bind_grid(py::module_& m) {
  bind_expression(m);
  bind_stencil_functions(m);
  py::class_<grid::Grid> cls(m, "Grid");
  bind_grid_layout(cls);
  bind_grid_nodes(cls);
  bind_halo_split(cls);
  bind_points(cls);
  bind_kernel_cache(m);
}

}  // namespace adgraph::python
