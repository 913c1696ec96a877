"""One field table per options struct, reached from every front end.

For every field of every table (adgraph._adgraph._option_fields(), the
tables the library's front ends are generated from) this sets a value in
range and one out of it through each front end that takes the struct:
  - JSON: adgraph-run --check on a document whose "optimize.options" set
    the field (LbfgsOptions);
  - Python: the keyword arguments of minimize, check_gradients,
    solvers.HeatInverse and sparse.solve (through _options, which reads
    them as those functions do);
  - the command line: heat_inversion --print-options (HeatInverseOptions,
    and SolverOptions as --implicit-*).
The value in range must arrive; the one out of range must be refused with
the same message after the place each front end names; the defaults must
be the table's everywhere (heat_inversion's own grid and step count aside).
Run by ctest with ADGRAPH_RUN and ADGRAPH_HEAT_INVERSION set; each front
end runs in its own process.
"""

import json
import math
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif("ADGRAPH_RUN" not in os.environ, reason="run by ctest")

PYTHON = """
import json, sys
import adgraph as ag
requests = json.loads(sys.argv[1])
out = {"tables": ag._adgraph._option_fields(), "results": []}
for kind, options in requests:
    try:
        out["results"].append([True, json.loads(ag._adgraph._options(kind, options))])
    except ag.OptionsError as e:
        out["results"].append([False, str(e)])
print(json.dumps(out))
"""


def python(requests):
    r = subprocess.run([sys.executable, "-c", PYTHON, json.dumps(requests)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


TABLES = python([])["tables"]

# Each front end and the structs it takes.
PYTHON_KINDS = ["LbfgsOptions", "GradientCheckOptions", "HeatInverseOptions", "SolverOptions"]


def after(message, name):
    """The detail after "<name>: " (the front end's place before it)."""
    head, sep, rest = message.partition(name + ": ")
    assert sep, (name, message)
    return rest.split("\n")[0].strip()


def inside(f, x):
    if isinstance(x, float) and math.isnan(x):
        return False
    if f["finite"] and not math.isfinite(x):
        return False
    low_ok = x > f["low"] if f["low_open"] else x >= f["low"]
    high_ok = x < f["high"] if f["high_open"] else x <= f["high"]
    return low_ok and high_ok


def number_values(f, default):
    """(a value in range other than the default, one out of range or None)."""
    integer = f["type"] in ("integer", "integers", "integer pairs")
    low, high = f["low"], f["high"]
    candidates = [1e-6, low, high, low + 1, (default or 0) + 1, 0.5]
    if integer:
        candidates = [low, low + 1, high, (default or 0) + 1]
    good = next(x for x in candidates
                if math.isfinite(x) and inside(f, x) and x != default)
    step = 1 if integer else 0.5
    refused = [x for x in [low - step, high + step, math.inf]
               if math.isfinite(x) or (x == math.inf and f["finite"])]
    bad = next((x for x in refused if not inside(f, x)), None)
    if integer:
        good, bad = int(good), (None if bad is None else int(bad))
    return good, bad


def cases(f):
    """(valid value, its JSON form as it arrives, invalid value or None)."""
    default = json.loads(f["default"])
    t = f["type"]
    if t == "bool":
        return (not default), (not default), None
    if t == "text":
        if f["choices"]:
            return f["choices"][-2], f["choices"][-2], "bogus"
        return "abc", "abc", None
    if t == "schedule":
        return "every:2", "every:2", "every:0"
    good, bad = number_values(f, default if t in ("integer", "real") else None)
    if t == "integers":
        return [good], [good], (None if bad is None else [bad])
    if t == "integer pairs":
        return [[good, good]], [[good, good]], (None if bad is None else [[bad, good]])
    return good, good, bad


def shown(v):
    """A value as the messages write it (C's %g for reals)."""
    if isinstance(v, float):
        return "%g" % v if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    return json.dumps(v)


# Values other fields need for a value to be valid as a whole.
COMPANIONS = {("LbfgsOptions", "resume"): {"checkpoint_path": "ck"},
              ("LbfgsOptions", "checkpoint_every"): {"checkpoint_path": "ck"}}


def test_every_table_is_listed_with_ranges_and_docs():
    assert sorted(TABLES) == sorted(["LbfgsOptions", "LineSearchOptions", "LoopOptions",
                                     "HeatInverseOptions", "SolverOptions",
                                     "GradientCheckOptions"])
    for kind, fields in TABLES.items():
        names = [f["name"] for f in fields]
        assert len(set(names)) == len(names), kind
        assert all(f["doc"] for f in fields), kind
    lbfgs = {f["name"]: f for f in TABLES["LbfgsOptions"]}
    assert lbfgs["history"]["range"] == "in [1, 1000]"
    assert json.loads(lbfgs["history"]["default"]) == 10


def test_python_defaults_values_and_messages_follow_the_tables():
    requests, expect = [], []
    for kind in PYTHON_KINDS:
        requests.append([kind, {}])
        expect.append((kind, None, None, None))
        for f in TABLES[kind]:
            good, arrives, bad = cases(f)
            extra = COMPANIONS.get((kind, f["name"]), {})
            requests.append([kind, {f["name"]: good, **extra}])
            expect.append((kind, f, arrives, None))
            if bad is not None:
                requests.append([kind, {f["name"]: bad}])
                expect.append((kind, f, None, bad))
    results = python(requests)["results"]
    for (kind, f, arrives, bad), (ok, got) in zip(expect, results):
        if f is None:
            defaults = {g["name"]: json.loads(g["default"]) for g in TABLES[kind]}
            if kind == "HeatInverseOptions":
                # "auto" is fixed by nt (100): C(15, 2) = 105 >= 100 > C(14, 2).
                assert got.pop("checkpoints") == "13"
                assert defaults.pop("checkpoints") == "default"
            assert ok and got == defaults, (kind, got)
        elif bad is None:
            assert ok, (kind, f["name"], got)
            assert got[f["name"]] == arrives, (kind, f["name"], got)
        else:
            assert not ok, (kind, f["name"], bad)
            detail = after(got, f["name"])
            if f["type"] == "schedule":
                assert detail.startswith("a checkpoint schedule is all, auto"), detail
            elif f["choices"]:
                assert detail == "must be %s, got %s" % (
                    ", ".join(f["choices"][:-1]) + " or " + f["choices"][-1],
                    json.dumps(bad)), detail
            else:
                lists = f["type"] in ("integers", "integer pairs")
                want = ("every entry " if lists else "") + "must be " + f["range"] + ", got "
                assert detail.startswith(want), detail


def test_messages_written_by_hand():
    got = python([["LbfgsOptions", {"history": 0}],
                  ["HeatInverseOptions", {"noise": -1.0}],
                  ["SolverOptions", {"rtol": 1.0}],
                  ["GradientCheckOptions", {"taylor_steps": 21}],
                  ["HeatInverseOptions", {"scheme": "implicit"}]])["results"]
    assert [m for _, m in got] == [
        "history: must be in [1, 1000], got 0",
        "noise: must be a finite number >= 0, got -1",
        "rtol: must be in (0, 1), got 1",
        "taylor_steps: must be in [2, 20], got 21",
        'scheme: must be explicit, backward_euler or crank_nicolson, got "implicit"']


def driver(options, tmp_path):
    doc = {"adgraph": 1,
           "nodes": [{"name": "x", "op": "placeholder", "shape": [2]},
                     {"name": "L", "op": "sum", "inputs": ["x"]}],
           "optimize": {"objective": "L", "variables": {"x": [1, 2]}, "options": options}}
    path = tmp_path / "options.json"
    path.write_text(json.dumps(doc))
    r = subprocess.run([os.environ["ADGRAPH_RUN"], str(path), "--check"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode == 0:
        return True, json.loads(r.stdout)["options"]
    assert r.returncode == 2, r.stderr
    return False, r.stderr


def test_json_takes_every_lbfgs_field_as_python_does(tmp_path):
    fields = TABLES["LbfgsOptions"]
    ok, defaults = driver({}, tmp_path)
    assert ok and defaults == {f["name"]: json.loads(f["default"]) for f in fields}
    requests = []
    for f in fields:
        good, arrives, bad = cases(f)
        extra = COMPANIONS.get(("LbfgsOptions", f["name"]), {})
        ok, got = driver({f["name"]: good, **extra}, tmp_path)
        assert ok and got[f["name"]] == arrives, (f["name"], got)
        if bad is not None:
            ok, message = driver({f["name"]: bad}, tmp_path)
            assert not ok
            requests.append((f["name"], bad, after(message, "optimize.options." + f["name"])))
    from_python = python([["LbfgsOptions", {name: bad}] for name, bad, _ in requests])
    for (name, bad, detail), (ok, message) in zip(requests, from_python["results"]):
        assert not ok and after(message, name) == detail, (name, bad, message, detail)


def heat_inversion(args):
    r = subprocess.run([os.environ["ADGRAPH_HEAT_INVERSION"], "--print-options"] + args,
                       capture_output=True, text=True, timeout=120)
    if r.returncode == 0:
        return True, json.loads(r.stdout)
    assert r.returncode == 2, r.stderr
    return False, r.stderr


def cli_args(name, value):
    option = "--" + name.replace("_", "-")
    if isinstance(value, bool):
        return [option + ("=true" if value else "=false")]
    if isinstance(value, list):
        return [option] + [",".join(map(str, v)) if isinstance(v, list) else str(v)
                           for v in value]
    return [option, value if isinstance(value, str) else shown(value)]


BASE = {"nx": "16", "ny": "16", "px": "1", "py": "1", "nt": "10"}


def test_the_command_line_takes_every_heat_and_solver_field_as_python_does():
    ok, defaults = heat_inversion([])
    assert ok
    # heat_inversion's own problem: a 256 x 256 grid on 2 x 2 patches, 2800
    # steps, "auto" checkpoints; every other default is the table's.
    own = {"nx": 256, "ny": 256, "px": 2, "py": 2, "nt": 2800, "checkpoints": "auto"}
    for kind, prefix in [("HeatInverseOptions", ""), ("SolverOptions", "implicit_")]:
        for f in TABLES[kind]:
            want = json.loads(f["default"])
            if kind == "HeatInverseOptions" and f["name"] in own:
                want = own[f["name"]]
            if kind == "SolverOptions":
                # HeatConfig's implicit solver: CG with BoomerAMG, symmetric.
                want = {"ksp": "cg", "pc": "hypre", "symmetric": True}.get(f["name"], want)
            assert defaults[kind][f["name"]] == want, (kind, f["name"])
    refused = []
    for kind, prefix in [("HeatInverseOptions", ""), ("SolverOptions", "implicit_")]:
        for f in TABLES[kind]:
            name = prefix + f["name"]
            base = sum(([f"--{k}", v] for k, v in BASE.items() if k != name), [])
            good, arrives, bad = cases(f)
            if name == "implicit_symmetric":  # CG needs a symmetric matrix
                base += ["--implicit-ksp", "gmres"]
            ok, got = heat_inversion(base + cli_args(name, good))
            assert ok, (name, good, got)
            assert got[kind][f["name"]] == arrives, (name, got[kind])
            if bad is not None:
                ok, message = heat_inversion(base + cli_args(name, bad))
                assert not ok, (name, bad)
                refused.append((kind, f["name"], bad, after(message, f["name"])))
    from_python = python([[kind, {name: bad}] for kind, name, bad, _ in refused])
    for (kind, name, bad, detail), (ok, message) in zip(refused, from_python["results"]):
        assert not ok and after(message, name) == detail, (kind, name, bad, message)
