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
    assert sorted(members) == sorted(own), (label, sorted(set(members) ^ set(own)))
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
