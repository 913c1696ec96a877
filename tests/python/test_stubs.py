"""The type stubs (adgraph/*.pyi) the build generates (adgraph._stubgen).

They must parse, cover every public name of each module and nothing that
is not there at run time, give every function the parameter names, kinds
and defaults it has at run time, match what a fresh run of the generator
writes, and give a newly registered op its stub with no edit.
``mypy --strict`` (Debian's mypy, which scripts/common.sh installs)
accepts typed code using them and refuses a wrong attribute type and a
misspelt keyword.

Run by ctest in one process (a singleton MPI job); the regeneration runs
``python3 -m adgraph._stubgen`` in a process of its own, as the build does.
"""

import ast
import inspect
import os
import pathlib
import subprocess
import sys

import pytest

import adgraph
from adgraph import _adgraph, _signatures, _stubgen

STUB_DIR = pathlib.Path(adgraph.__file__).resolve().parent
MODULES = _stubgen.stubbed_modules()


def stub_of(module):
    path = STUB_DIR / _stubgen.stub_file(module.__name__)
    assert path.exists(), f"no stub {path} (build the target adgraph_stubs)"
    return ast.parse(path.read_text(encoding="utf-8"), str(path))


def top_level(tree):
    """{name: [nodes]} of a stub's definitions, imports from the package
    and assignments (not the typing and numpy names it uses)."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            out.setdefault(node.name, []).append(node)
        elif isinstance(node, ast.ImportFrom) and node.level > 0:
            for alias in node.names:
                out.setdefault(alias.asname or alias.name, []).append(node)
        elif isinstance(node, ast.AnnAssign):
            out.setdefault(node.target.id, []).append(node)
        elif isinstance(node, ast.Assign):
            out.setdefault(node.targets[0].id, []).append(node)
    return out


def literal(node):
    """A default in a stub: its value, or Ellipsis for ``...``."""
    return ast.literal_eval(node)


def stub_parameters(function):
    """[(name, kind, default)] of a stub's def; kind as inspect's, default
    None when there is none."""
    P = inspect.Parameter
    a = function.args
    out = []
    positional = a.posonlyargs + a.args
    defaults = [None] * (len(positional) - len(a.defaults)) + a.defaults
    for k, arg in enumerate(positional):
        kind = P.POSITIONAL_ONLY if k < len(a.posonlyargs) else P.POSITIONAL_OR_KEYWORD
        out.append((arg.arg, kind, defaults[k]))
    if a.vararg:
        out.append((a.vararg.arg, P.VAR_POSITIONAL, None))
    for arg, default in zip(a.kwonlyargs, a.kw_defaults):
        out.append((arg.arg, P.KEYWORD_ONLY, default))
    if a.kwarg:
        out.append((a.kwarg.arg, P.VAR_KEYWORD, None))
    return out


def check_python_signature(label, runtime, defs, method):
    """The stub's def has the run-time function's parameters: names, kinds
    and (literal) defaults."""
    assert len(defs) == 1, f"{label}: {len(defs)} stub definitions for a Python function"
    expected = list(inspect.signature(runtime).parameters.values())
    got = stub_parameters(defs[0])
    assert [(n, k) for n, k, _ in got] == [(p.name, p.kind) for p in expected], label
    for (name, _, default), p in zip(got, expected):
        if p.default is p.empty:
            assert default is None, f"{label}: {name} has a default in the stub only"
            continue
        assert default is not None, f"{label}: {name} lost its default"
        value = literal(default)
        assert value is Ellipsis or value == p.default, (label, name, value, p.default)
    if method:
        assert defs[0].args.args or defs[0].args.posonlyargs, f"{label}: no self"


def check_pybind_signature(label, name, runtime, defs, method):
    """The stub's defs (one per overload) have the parameter names and
    defaults pybind11's docstring gives, as adgraph._signatures reads it
    for its error messages."""
    forms = _signatures._forms(runtime.__doc__, name)
    assert forms and len(defs) == len(forms), (label, len(defs), len(forms))
    for form, stub in zip(forms, defs):
        got = [(n, d is not None) for n, k, d in stub_parameters(stub)]
        want = [(n, has) for n, _, has in form]
        assert got == want, (label, got, want)
        if len(defs) > 1:
            assert any(isinstance(d, ast.Name) and d.id == "overload"
                       for d in stub.decorator_list), label


def check_function(label, name, runtime, defs, method=False):
    if _stubgen.is_pybind_doc(runtime, name):
        check_pybind_signature(label, name, runtime, defs, method)
    else:
        check_python_signature(label, runtime, defs, method)


def class_members(node):
    out = {}
    for item in node.body:
        if isinstance(item, ast.FunctionDef):
            out.setdefault(item.name, []).append(item)
        elif isinstance(item, ast.AnnAssign):
            out.setdefault(item.target.id, []).append(item)
    return out


def check_class(label, cls, node):
    members = class_members(node)
    own = {n: m for n, m in vars(cls).items()
           if not n.startswith(("__pybind11", "_pybind11")) and n not in _stubgen._SKIPPED_MEMBERS
           and type(m).__name__ not in ("wrapper_descriptor", "method-wrapper")}
    # Attributes the class annotates in its body (set by its methods).
    attributes = [n for n in vars(cls).get("__annotations__", {}) if n not in own]
    assert sorted(members) == sorted(list(own) + attributes), \
        (label, sorted(set(members) ^ set(own) ^ set(attributes)))
    for name in attributes:
        assert isinstance(members[name][0], ast.AnnAssign), (label, name)
    for name, member in own.items():
        where = f"{label}.{name}"
        defs = [d for d in members[name] if isinstance(d, ast.FunctionDef)]
        if isinstance(member, property):
            assert defs and any(isinstance(d, ast.Name) and d.id == "property"
                                for d in defs[0].decorator_list), where
            setters = [d for d in defs[1:] if any(isinstance(x, ast.Attribute)
                                                  and x.attr == "setter"
                                                  for x in d.decorator_list)]
            assert bool(setters) == (member.fset is not None), where
        elif isinstance(member, staticmethod):
            check_function(where, name, member.__func__, defs)
        elif isinstance(member, classmethod):
            check_function(where, name, member.__func__, defs, method=True)
        elif type(member).__name__ == "instancemethod":
            check_function(where, name, member.__func__, defs, method=True)
        elif callable(member) and not isinstance(member, type):
            check_function(where, name, member, defs, method=True)


@pytest.mark.parametrize("module", MODULES, ids=[m.__name__ for m in MODULES])
def test_stub_covers_the_module(module):
    """Every public name of the module is in its stub, with its signature,
    and every name of the stub exists at run time."""
    defined = top_level(stub_of(module))
    public = _stubgen.public_names(module)
    if "__all__" in vars(module):
        public = sorted(set(public) | {"__all__"})
    stub_names = sorted(n for n in defined if n not in _stubgen.ALIASES and n != "_adgraph")
    assert stub_names == sorted(public), sorted(set(stub_names) ^ set(public))
    for name in public:
        runtime = getattr(module, name)
        nodes = defined[name]
        label = f"{module.__name__}.{name}"
        if isinstance(nodes[0], ast.ImportFrom):
            source = sys.modules[f"adgraph.{nodes[0].module}" if nodes[0].module else "adgraph"]
            imported = [a.name for a in nodes[0].names if (a.asname or a.name) == name][0]
            assert getattr(source, imported) is runtime, label
        elif isinstance(nodes[0], ast.ClassDef):
            assert isinstance(runtime, type), label
            check_class(label, runtime, nodes[0])
        elif isinstance(nodes[0], ast.FunctionDef):
            check_function(label, name, runtime, nodes)
        elif name == "__all__":
            assert sorted(literal(nodes[0].value)) == sorted(module.__all__)


def unannotated(tree, module):
    """The defs of a stub with a parameter or a result without an
    annotation: ["module.Class.method(param)", "module.function -> ?"]."""
    out = []

    def visit(body, prefix, in_class):
        for node in body:
            if isinstance(node, ast.ClassDef):
                visit(node.body, f"{prefix}{node.name}.", True)
            if not isinstance(node, ast.FunctionDef):
                continue
            a = node.args
            params = a.posonlyargs + a.args
            static = any(isinstance(d, ast.Name) and d.id == "staticmethod"
                         for d in node.decorator_list)
            if in_class and not static:
                params = params[1:]  # self or cls
            params += a.kwonlyargs + [p for p in (a.vararg, a.kwarg) if p is not None]
            out.extend(f"{prefix}{node.name}({p.arg})" for p in params if p.annotation is None)
            if node.returns is None:
                out.append(f"{prefix}{node.name} -> ?")
    visit(tree.body, f"{module.__name__}.", False)
    return out


def test_every_function_of_the_stubs_is_annotated():
    """Every parameter and result in every stub has a type: the pure-Python
    functions and methods too (_stubgen leaves out what their source does
    not annotate, so that a missing annotation shows here)."""
    offenders = [name for module in MODULES for name in unannotated(stub_of(module), module)]
    assert not offenders, "parameters or results without a type annotation: " + \
        ", ".join(offenders)


def test_unannotated_python_functions_are_found():
    """The check above sees a function without annotations (a probe module
    stubbed from its source)."""
    import types as pytypes
    module = pytypes.ModuleType("adgraph.probe_stub")
    exec("def typed(a: int, *, b: str = 'x') -> float: ...\n"
         "def untyped(a, b=1): ...\n"
         "class C:\n"
         "    def m(self, c: int): ...\n", vars(module))
    text = _stubgen.module_stub(module, {"adgraph", "adgraph._adgraph", module.__name__})
    found = unannotated(ast.parse(text), module)
    assert sorted(found) == sorted(["adgraph.probe_stub.untyped(a)",
                                    "adgraph.probe_stub.untyped(b)",
                                    "adgraph.probe_stub.untyped -> ?",
                                    "adgraph.probe_stub.C.m -> ?"]), found


def test_every_op_has_its_stub():
    """Each op function of the package: inputs, then its attributes (with
    the registry's defaults and types) and the name and control keywords,
    keyword-only; one Value or a tuple as the OpDef's outputs say."""
    defined = top_level(stub_of(adgraph))
    ops = _stubgen.op_functions(vars(adgraph))
    assert len(ops) >= 100 and "matvec" in ops and "mpi_allreduce" in ops
    for name, (op, function) in ops.items():
        stub = defined[name][0]
        assert isinstance(stub, ast.FunctionDef), name
        check_python_signature(name, function, [stub], method=False)
        annotations = {a.arg: ast.unparse(a.annotation) for a in stub.args.kwonlyargs}
        assert ast.unparse(stub.args.vararg.annotation) == "_Operand"
        for attr in op["attrs"]:
            expected = _stubgen.ATTR_TYPES[attr["type"]]
            assert annotations[attr["name"]] == expected, (name, attr)
        controls = [k for k in ("after", "control_after") if k not in
                    {a["name"] for a in op["attrs"]}]
        for k in controls:
            assert annotations[k] == "_Controls", (name, k)
        outputs = op["num_outputs"]
        returns = ast.unparse(stub.returns)
        assert returns == ("_adgraph.Value" if outputs == 1 else
                           "tuple[_adgraph.Value, ...]" if outputs == 0 else
                           "tuple[" + ", ".join(["_adgraph.Value"] * outputs) + "]"), name
    # pad's attribute `after` takes the short keyword: control edges are
    # control_after= only (adgraph._ops).
    pad = defined["pad"][0]
    kinds = {a.arg: ast.unparse(a.annotation) for a in pad.args.kwonlyargs}
    assert kinds["after"] == "int" and kinds["control_after"] == "_Controls"


def test_every_attribute_type_is_known():
    types_used = {a["type"] for op in _adgraph.registered_ops() for a in op["attrs"]}
    assert types_used <= set(_stubgen.ATTR_TYPES), types_used - set(_stubgen.ATTR_TYPES)


def test_regenerating_gives_the_built_stubs(tmp_path):
    """``python3 -m adgraph._stubgen`` (the build's command) in a fresh
    process writes the very files the build installed."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_COMM", "PMIX"))}
    subprocess.run([sys.executable, "-m", "adgraph._stubgen", str(tmp_path)], check=True,
                   env=env, timeout=120)
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == sorted(_stubgen.stub_file(m.__name__) for m in MODULES)
    for name in written:
        assert (tmp_path / name).read_text(encoding="utf-8") == \
            (STUB_DIR / name).read_text(encoding="utf-8"), f"{name} is out of date"


def test_a_new_op_gets_its_stub(tmp_path):
    """An op registered after the build (a Python op: the registry is the
    same) appears in the generated stub, with its derivative ops."""
    def forward(a, b):
        return a * b

    adgraph.custom_op("stub_probe_mul", forward, lambda inputs, out, ct: [ct, ct],
                      doc="y = a * b, for the stub test")
    text = _stubgen.generate()["__init__.pyi"]
    tree = ast.parse(text)
    defs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    probe = defs["stub_probe_mul"]
    assert ast.get_docstring(probe).startswith("y = a * b, for the stub test")
    assert probe.args.vararg.arg == "inputs"
    assert [a.arg for a in probe.args.kwonlyargs] == ["name", "name_", "after", "control_after"]
    assert "stub_probe_mul_vjp" in defs
    built = top_level(stub_of(adgraph))
    assert "stub_probe_mul" not in built


SNIPPET = '''
import numpy as np
import adgraph as ag
from adgraph import grid as agg

g = ag.Graph()
x: ag.Value = g.placeholder("x", (3,))
y = ag.pad(x, axis=0, before=1, after=2, control_after=[x])
loss: ag.Value = ag.sum(ag.square(ag.matvec(g.constant(np.eye(3)), x) - 1.0), name="loss")
grads: list[ag.Value] = ag.gradients(loss, [x])
out = ag.Session(g).run([loss, grads[0]], {x: np.ones(3)})
shape: tuple[int, ...] = tuple(y.shape)
expr: ag.grid.StencilExpr = agg.exp(agg.field(x))
rank: int = ag.communicator().rank
'''

BAD = '''
import adgraph as ag

g = ag.Graph()
x = g.placeholder("x", (3,))
ag.pad(x, axis="0", before=1, after=2)
ag.square(x, nmae="typo")
n: int = ag.square(x)
'''


def test_mypy_strict_reads_the_stubs(tmp_path):
    env = dict(os.environ, MYPYPATH=str(STUB_DIR.parent))
    good = tmp_path / "good.py"
    good.write_text(SNIPPET)
    bad = tmp_path / "bad.py"
    bad.write_text(BAD)
    args = ["mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache")]
    run = subprocess.run(args + [str(good)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    run = subprocess.run(args + [str(bad)], capture_output=True, text=True, env=env,
                         timeout=300)
    lines = run.stdout.splitlines()
    assert run.returncode == 1, run.stdout + run.stderr
    assert any(':6: error: Argument "axis" to "pad" has incompatible type "str"; '
               'expected "int"' in line for line in lines), run.stdout
    assert any(':7: error: Unexpected keyword argument "nmae" for "square"' in line
               for line in lines), run.stdout
    assert any(':8: error: Incompatible types in assignment (expression has type '
               '"Value", variable has type "int")' in line for line in lines), run.stdout
    assert len(lines) == 3, run.stdout


# The pure-Python functions (adgraph/*.py) through their stubs: a correct
# use of each passes mypy --strict; a wrong type for each is one error.
TYPED_API = '''
import numpy as np
from numpy.typing import NDArray
import adgraph as ag
from adgraph import ensemble, solvers, sparse
from adgraph import grid as agg

g = ag.Graph()
x = g.placeholder("x", (4,))
res = ag.loop(3, [x], [], lambda args: [args.carries[0] * 2.0], checkpoints="every:2",
              output_steps=[0, 2], name="doubling")
grid = agg.Grid((8, 8), procs=(1, 1), periodic=(True, False), comm=g.comm)
u = g.placeholder("u", grid.local_shape())
expr: ag.grid.StencilExpr = grid.field(u) * 2.0 + agg.field(u)
procs: tuple[int, ...] = agg.balanced_procs(4, (8, 8))
a = sparse.SparseMatrix(0, [0, 1, 2, 3, 4], [0, 1, 2, 3])
y: ag.Value = sparse.solve(a, np.ones(4), x, ksp="cg", rtol=1e-8, symmetric=True)
z: ag.Value = sparse.matvec_transpose(a, np.ones(4), y)
m: sparse.SparseMatrix = solvers.five_point_matrix(4, 4, 1, 1, 0)
heat = solvers.HeatInverse(nx=8, ny=8, checkpoints="auto")
kappa: NDArray[np.float64] = heat.kappa_start()
loss: float = heat.loss(kappa)
f, grad = heat.loss_and_gradient(kappa)
layout: str = heat.layout
ens = ensemble.Ensemble(members=4, groups=2, comm=g.comm)
comm: ag.Communicator = ens.group_comm
blocks: list[range] = ensemble.assignment(5, 2)
with ag.comm_scope(g, ens.cross_comm) as scoped:
    rank: int = scoped.rank
first: ag.Value = x[1:3, ..., None]
result = ag.minimize(ag.sum(ag.square(x)), [x], [np.ones(4)], layout="sharded",
                     bounds={"lower": 0.0}, max_iterations=10)
doc = ag.load_json("graph.json")
check: ag.GradientCheckResult = ag.check_gradients(ag.sum(x), [x], {x: np.ones(4)}, step=1e-6)
'''

# Line -> what mypy says there (one error a line).
BAD_TYPED = '''
import numpy as np
import adgraph as ag
from adgraph import ensemble, solvers, sparse
from adgraph import grid as agg

g = ag.Graph()
x = g.placeholder("x", (4,))
ag.loop("3", [x], [], lambda args: [args.carries[0]])
agg.Grid(8)
agg.Grid((8, 8), periodic=(True, False), comm="world")
sparse.solve(x, x, x)
sparse.solve(sparse.SparseMatrix(0, [0, 1], [0]), x, x, ksp=["cg"])
solvers.five_point_matrix(2.5, 2, 1, 1, 0)
ensemble.Ensemble(members="4", groups=2)
ag.gradient(x, [x])
ag.minimize(ag.sum(x), [x], [np.ones(4)], layout="shard")
ag.load_json(42)
n: int = agg.balanced_procs(4, (8, 8))
s: str = solvers.HeatInverse(nx=8).loss(np.ones(4))
e: int = ensemble.Ensemble(members=4, groups=2).group_comm
x[1.5]
with ag.comm_scope(g, 3):
    pass
'''
BAD_TYPED_ERRORS = {
    9: 'Argument 1 to "loop" has incompatible type "str"; expected "int"',
    10: 'Argument 1 to "Grid" has incompatible type "int"; expected "Sequence[int]"',
    11: 'Argument "comm" to "Grid" has incompatible type "str"',
    12: 'Argument 1 to "solve" has incompatible type "Value"; expected "SparseMatrix"',
    13: 'Argument "ksp" to "solve" has incompatible type "List[str]"',
    14: 'Argument 1 to "five_point_matrix" has incompatible type "float"; expected "int"',
    15: 'Argument "members" to "Ensemble" has incompatible type "str"; expected "int"',
    16: 'Argument 2 to "gradient" has incompatible type "List[Value]"; expected "Value"',
    17: """Argument "layout" to "minimize" has incompatible type "Literal['shard']";""",
    18: 'Argument 1 to "load_json" has incompatible type "int"',
    19: 'expression has type "Tuple[int, ...]", variable has type "int"',
    20: 'expression has type "float", variable has type "str"',
    21: 'expression has type "Communicator", variable has type "int"',
    22: 'Invalid index type "float" for "Value"',
    23: 'Argument 2 to "comm_scope" has incompatible type "int"',
}


def test_mypy_strict_checks_the_python_functions(tmp_path):
    env = dict(os.environ, MYPYPATH=str(STUB_DIR.parent))
    args = ["mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path / "cache")]
    good = tmp_path / "typed_api.py"
    good.write_text(TYPED_API)
    run = subprocess.run(args + [str(good)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    bad = tmp_path / "bad_typed.py"
    bad.write_text(BAD_TYPED)
    assert BAD_TYPED.splitlines()[9 - 1].startswith('ag.loop("3"')  # the numbering
    run = subprocess.run(args + [str(bad)], capture_output=True, text=True, env=env,
                         timeout=300)
    assert run.returncode == 1, run.stdout + run.stderr
    errors = {}
    for line in run.stdout.splitlines():
        _, number, kind, message = line.split(":", 3)
        assert kind.strip() == "error", line
        errors.setdefault(int(number), []).append(message.strip())
    assert sorted(errors) == sorted(BAD_TYPED_ERRORS), run.stdout
    for number, expected in BAD_TYPED_ERRORS.items():
        assert len(errors[number]) == 1 and expected in errors[number][0], \
            (number, expected, errors[number])
