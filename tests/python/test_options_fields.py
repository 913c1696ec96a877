"""One field table per options struct, reached from every front end.

The expected fields below are written by hand from the structs' definitions
(their members' initializers and the ranges their comments give), not read
from the tables: a test first checks that the library's tables
(adgraph._adgraph._option_fields()) say the same. Then, for every field of
every table, a value in range and one out of it go through each front end
that takes the struct:
  - JSON (adgraph-run --check): "optimize.options" (LbfgsOptions), its
    "line_search" (LineSearchOptions) and "line_search_bounded"
    (MoreThuenteOptions); a repeat block (LoopOptions' "checkpoints", the
    one field that is a block's setting: the others are refused by name);
  - Python: the keyword arguments of minimize (and its line_search and
    line_search_bounded dicts), loop, check_gradients, solvers.HeatInverse
    and sparse.solve, through _options, which reads them with the same
    function those do; and ag.loop and ag.minimize themselves;
  - the command line: heat_inversion --print-options (HeatInverseOptions,
    SolverOptions as --implicit-*, and LbfgsOptions' limits with the older
    --max-iter and --tol).
The value in range must arrive; the one out of range must be refused with
the message written here by hand ("<name>: must be in [1, 1000], got 0",
after the place each front end names); the defaults must be the ones here.
No JSON front end takes HeatInverseOptions or GradientCheckOptions (the
driver runs neither); SolverOptions reaches JSON as sparse_solve's
attributes, which the op declares itself (not checked here).
Run by ctest with ADGRAPH_RUN and ADGRAPH_HEAT_INVERSION set; each front
end runs in its own process.
"""

import json
import math
import os
import re
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif("ADGRAPH_RUN" not in os.environ, reason="run by ctest")

INF = math.inf
I32 = "2147483647"

# kind -> field -> (type, default, range as the messages write it, choices),
# from the structs (optim/lbfgs.h, optim/line_search.h, optim/more_thuente.h,
# core/loops/loop.h, solvers/heat_inverse.h and heat_solver.h,
# sparse/sparse_matrix.h, core/checker/gradient_checker.h). An int member's
# range stops at its type's bound (a list's entries are int64).
SCHEMES = ["explicit", "backward_euler", "crank_nicolson"]
KSPS = ["cg", "gmres", "bcgs", "preonly"]
PCS = ["none", "jacobi", "bjacobi", "ilu", "gamg", "hypre", "lu", "mg"]
EXPECTED = {
    "LbfgsOptions": {
        "history": ("integer", 10, "in [1, 1000]"),
        "tolerance_gradient": ("real", 1e-8, "a finite number >= 0"),
        "tolerance_function": ("real", 0.0, "a finite number >= 0"),
        "max_iterations": ("integer", 1000, f"in [0, {I32}]"),
        "max_evaluations": ("integer", 100000, f"in [1, {I32}]"),
        "trace": ("bool", False, ""),
        "checkpoint_every": ("integer", 0, f"in [0, {I32}]"),
        "checkpoint_path": ("text", "", ""),
        "resume": ("bool", False, ""),
        "checkpoint_problem": ("text", "", "")},
    "LineSearchOptions": {
        "c1": ("real", 1e-4, "in (0, 1)"),
        "c2": ("real", 0.9, "in (0, 1)"),
        "max_step": ("real", 1e20, "> 0"),
        "max_evaluations": ("integer", 20, f"in [1, {I32}]"),
        "approximate_wolfe_epsilon": ("real", 1e-12, "in [0, 1e-06]")},
    "MoreThuenteOptions": {
        "ftol": ("real", 1e-3, "in (0, 1)"),
        "gtol": ("real", 0.9, "in (0, 1)"),
        "xtol": ("real", 0.1, "in (0, 1)"),
        "max_evaluations": ("integer", 20, f"in [1, {I32}]")},
    "LoopOptions": {
        "name": ("text", "", ""),
        "checkpoints": ("schedule", "default", ""),
        "output_steps": ("integers", [], ">= 0")},
    "HeatInverseOptions": {
        "nx": ("integer", 32, f"in [1, {I32}]"),
        "ny": ("integer", 32, f"in [1, {I32}]"),
        "px": ("integer", 1, f"in [1, {I32}]"),
        "py": ("integer", 1, f"in [1, {I32}]"),
        "nt": ("integer", 100, f"in [1, {I32}]"),
        "dt": ("real", 0.0, "a finite number >= 0"),
        "scheme": ("text", "explicit", "", SCHEMES),
        "overlap": ("bool", False, ""),
        "checkpoints": ("schedule", "default", ""),
        "replicated": ("bool", False, ""),
        "sensors": ("integer pairs", [], f"in [0, {I32}]"),
        "sensors_every": ("integer", 0, f"in [0, {I32}]"),
        "observe_steps": ("integers", [], ">= 1"),
        "noise": ("real", 0.0, "a finite number >= 0"),
        "seed": ("integer", 0, "in [0, 18446744073709551615]"),
        "reg_tikhonov": ("real", 0.0, "a finite number >= 0"),
        "reg_smooth": ("real", 0.0, "a finite number >= 0"),
        "kappa_min": ("real", -INF, ""),
        "kappa_max": ("real", INF, "")},
    "SolverOptions": {
        "ksp": ("text", "gmres", "", KSPS),
        "pc": ("text", "jacobi", "", PCS),
        "rtol": ("real", 1e-10, "in (0, 1)"),
        "atol": ("real", 1e-50, "a finite number >= 0"),
        "max_it": ("integer", 10000, f"in [1, {I32}]"),
        "symmetric": ("bool", False, ""),
        "prefix": ("text", "", "")},
    "GradientCheckOptions": {
        "step": ("real", 1e-6, "in (0, 1]"),
        "tolerance": ("real", 1e-7, "> 0"),
        "directions": ("integer", 3, f"in [0, {I32}]"),
        "taylor_epsilon": ("real", 1e-2, "in (0, 1]"),
        "taylor_steps": ("integer", 8, "in [2, 20]"),
        "rate_tolerance": ("real", 0.1, "in (0, 1]"),
        "seed": ("integer", 20261122, "in [0, 4294967295]"),
        "finite_differences": ("bool", True, ""),
        "check_jvp": ("bool", True, ""),
        "jvp_tolerance": ("real", 1e-9, "> 0")},
}

# Values other fields need for a value to be valid as a whole, and values in
# range chosen by hand where the first one tried is not valid as a whole.
COMPANIONS = {("LbfgsOptions", "resume"): {"checkpoint_path": "ck"},
              ("LbfgsOptions", "checkpoint_every"): {"checkpoint_path": "ck"}}
GOOD = {("LineSearchOptions", "c2"): 0.5,  # above c1 = 1e-4
        ("MoreThuenteOptions", "gtol"): 0.5}  # above ftol = 1e-3


def spec(kind, name):
    t, default, rng, *choices = EXPECTED[kind][name]
    return t, default, rng, (choices[0] if choices else [])


def as_json(v):
    """A default as the front ends write it (JSON has no infinity: null)."""
    return None if isinstance(v, float) and math.isinf(v) else v


def bounds(rng):
    """(low, high, low_open, high_open, finite) of a range's text."""
    finite = rng.startswith("a finite number ")
    rng = rng.removeprefix("a finite number ")
    if not rng:
        return -INF, INF, False, False, finite
    m = re.fullmatch(r"in ([\[(])(\S+), (\S+)([\])])", rng)
    if m:
        return float(m[2]), float(m[3]), m[1] == "(", m[4] == ")", finite
    m = re.fullmatch(r"(>=|>) (\S+)", rng)
    return float(m[2]), INF, m[1] == ">", False, finite


def inside(rng, x):
    low, high, low_open, high_open, finite = bounds(rng)
    if finite and not math.isfinite(x):
        return False
    return (x > low if low_open else x >= low) and (x < high if high_open else x <= high)


def number_values(kind, name):
    """(a value in range other than the default, one out of range or None)."""
    t, default, rng, _ = spec(kind, name)
    integer = t in ("integer", "integers", "integer pairs")
    scalar_default = default if t in ("integer", "real") else None
    low, high, low_open, _, _ = bounds(rng)
    if integer:
        candidates = [low, low + 1, (scalar_default or 0) + 1]
    else:
        candidates = [1e-6, low + 0.5, (low + high) / 2, 0.5]
    good = GOOD.get((kind, name))
    if good is None:
        good = next(x for x in candidates
                    if math.isfinite(x) and inside(rng, x) and x != scalar_default)
    step = 1 if integer else 0.5
    refused = [low if low_open else low - step, high + step, INF]
    bad = next((x for x in refused
                if (math.isfinite(x) or bounds(rng)[4]) and not inside(rng, x)), None)
    if integer:
        good, bad = int(good), (None if bad is None else int(bad))
    return good, bad


def cases(kind, name):
    """(valid value, its JSON form as it arrives, invalid value or None)."""
    t, default, _, choices = spec(kind, name)
    if t == "bool":
        return (not default), (not default), None
    if t == "text":
        if choices:
            return choices[-2], choices[-2], "bogus"
        return "abc", "abc", None
    if t == "schedule":
        return "every:2", "every:2", "every:0"
    good, bad = number_values(kind, name)
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


def refusal(kind, name, bad):
    """The message's detail for `bad`, by hand: "must be in [1, 1000], got 0"."""
    t, _, rng, choices = spec(kind, name)
    if t == "schedule":
        return None  # the schedule grammar's message (test_schedule_grammar)
    if choices:
        return "must be %s or %s, got %s" % (", ".join(choices[:-1]), choices[-1],
                                             json.dumps(bad))
    if t == "integers":
        return "every entry must be %s, got %s" % (rng, shown(bad[0]))
    if t == "integer pairs":
        return "every entry must be %s, got %s" % (rng, shown(bad[0][0]))
    return "must be %s, got %s" % (rng, shown(bad))


def after(message, name):
    """The detail after "<name>: " (the front end's place before it)."""
    head, sep, rest = message.partition(name + ": ")
    assert sep, (name, message)
    return rest.split("\n")[0].strip()


def check_refusal(kind, name, bad, detail):
    want = refusal(kind, name, bad)
    if want is None:
        assert detail.startswith("a checkpoint schedule is all, auto"), detail
    else:
        assert detail == want, (kind, name, detail, want)


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


def run_python(code):
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_the_tables_are_the_structs():
    tables = python([])["tables"]
    assert sorted(tables) == sorted(EXPECTED)
    for kind, fields in tables.items():
        assert [f["name"] for f in fields] == list(EXPECTED[kind]), kind
        for f in fields:
            t, default, rng, choices = spec(kind, f["name"])
            assert f["doc"], (kind, f["name"])
            assert f["type"] == t, (kind, f["name"], f["type"])
            assert json.loads(f["default"]) == as_json(default), (kind, f["name"])
            assert f["range"] == rng, (kind, f["name"], f["range"])
            assert f["choices"] == choices, (kind, f["name"])


def test_python_defaults_values_and_messages():
    requests, expect = [], []
    for kind in EXPECTED:
        requests.append([kind, {}])
        expect.append((kind, None, None, None))
        for name in EXPECTED[kind]:
            good, arrives, bad = cases(kind, name)
            extra = COMPANIONS.get((kind, name), {})
            requests.append([kind, {name: good, **extra}])
            expect.append((kind, name, arrives, None))
            if bad is not None:
                requests.append([kind, {name: bad}])
                expect.append((kind, name, None, bad))
        requests.append([kind, {"bogus_field": 1}])
        expect.append((kind, "bogus_field", None, "unknown"))
    results = python(requests)["results"]
    assert len(results) == len(expect)
    for (kind, name, arrives, bad), (ok, got) in zip(expect, results):
        if name is None:
            defaults = {k: as_json(spec(kind, k)[1]) for k in EXPECTED[kind]}
            if kind == "HeatInverseOptions":
                # HeatInverse reads a missing schedule as "auto", fixed by
                # nt (100): C(15, 2) = 105 >= 100 > C(14, 2), 13 snapshots.
                assert got.pop("checkpoints") == "13"
                defaults.pop("checkpoints")
            assert ok and got == defaults, (kind, got)
        elif bad == "unknown":
            # One message naming the keyword and listing every valid one.
            assert not ok and after(got, name).startswith("unknown option ("), got
            for valid in EXPECTED[kind]:
                assert valid in got, (kind, valid, got)
        elif bad is None:
            assert ok, (kind, name, got)
            assert got[name] == arrives, (kind, name, got)
        else:
            assert not ok, (kind, name, bad)
            check_refusal(kind, name, bad, after(got, name))


def test_messages_written_by_hand():
    got = python([["LbfgsOptions", {"history": 0}],
                  ["HeatInverseOptions", {"noise": -1.0}],
                  ["SolverOptions", {"rtol": 1.0}],
                  ["GradientCheckOptions", {"taylor_steps": 21}],
                  ["HeatInverseOptions", {"scheme": "implicit"}],
                  ["LineSearchOptions", {"c1": 2}],
                  ["MoreThuenteOptions", {"xtol": 0}],
                  ["LineSearchOptions", {"c1": 0.95}],
                  ["LoopOptions", {"output_steps": [3, -1]}],
                  ["LoopOptions", {"steps": 3}]])["results"]
    assert [m for _, m in got] == [
        "history: must be in [1, 1000], got 0",
        "noise: must be a finite number >= 0, got -1",
        "rtol: must be in (0, 1), got 1",
        "taylor_steps: must be in [2, 20], got 21",
        'scheme: must be explicit, backward_euler or crank_nicolson, got "implicit"',
        "line_search.c1: must be in (0, 1), got 2",
        "line_search_bounded.xtol: must be in (0, 1), got 0",
        "LbfgsOptions: line_search needs 0 < c1 < c2 < 1",
        "output_steps: every entry must be >= 0, got -1",
        "steps: unknown option (loop takes name, checkpoints, output_steps)"]


LOOP = """
import json
import adgraph as ag
out = []
g = ag.Graph()
x = g.placeholder("x", (2,))
def attempt(**options):
    try:
        r = ag.loop(4, [x], [], lambda a: ([a.carries[0] * 2.0], [a.carries[0] + 0.0]),
                    **options)
        L = ag.sum(r.carries[0])
        ag.gradients(L, [x])
        run = ag.Session(g).run([r.outputs[0], L], {x: [1.0, 2.0]})
        out.append([True, r.node.name, run[0].tolist(), float(run[1]),
                    ag.loop_stats(r.node)["schedule"]])
    except ag.OptionsError as e:
        out.append([False, str(e)])
    except ag.GraphError as e:
        out.append([False, str(e)])
attempt()
attempt(name="stepper", checkpoints="every:2", output_steps=(1, 3))
attempt(output_steps=[-1])
attempt(output_steps=[1, 4])
attempt(checkpoints="every:0")
attempt(checkpoint="all")
print(json.dumps(out))
"""


def test_ag_loop_takes_the_tables_keywords():
    got = run_python(LOOP)
    default, chosen, negative, beyond, schedule, unknown = got
    # x = [1, 2] doubled 4 times: [16, 32], L = 48; the outputs are the
    # carries before each step: rows [1, 2], [2, 4], [4, 8], [8, 16].
    assert default[0] and default[2] == [[1, 2], [2, 4], [4, 8], [8, 16]] and default[3] == 48
    assert chosen[:4] == [True, "stepper", [[2, 4], [8, 16]], 48.0]
    assert default[4] == "all" and chosen[4] != default[4]
    assert negative == [False, "output_steps: every entry must be >= 0, got -1"]
    assert not beyond[0] and beyond[1].endswith(
        "output_steps: output steps must increase strictly within [0, 4); entry 1 is 4"), beyond
    assert not schedule[0] and after(schedule[1], "checkpoints").startswith(
        "a checkpoint schedule is all, auto"), schedule
    assert unknown == [False, "checkpoint: unknown option (loop takes name, checkpoints, "
                              "output_steps)"]


MINIMIZE = """
import json
import numpy as np
import adgraph as ag
out = []
g = ag.Graph()
x = g.placeholder("x", (2,))
loss = ag.sum(ag.square(x - 3.0))
for options in [{}, {"line_search": {"c1": 1e-3, "c2": 0.5}},
                {"line_search_bounded": {"ftol": 1e-4}},
                {"line_search": {"c1": 2}}, {"line_search": {"ftol": 0.1}},
                {"line_search_bounded": {"gtol": 1.5}}, {"line_search": 0.5}]:
    try:
        r = ag.minimize(loss, [x], [np.zeros(2)], **options)
        out.append([True, r.termination, [float(v) for v in r.x[0]]])
    except ag.OptionsError as e:
        out.append([False, str(e)])
print(json.dumps(out))
"""


def test_minimize_takes_the_line_searches_as_dicts():
    got = run_python(MINIMIZE)
    for ok in got[:3]:
        assert ok[0] and ok[1] == "gradient_norm" and ok[2] == pytest.approx([3, 3]), ok
    assert got[3] == [False, "line_search.c1: must be in (0, 1), got 2"]
    assert got[4][0] is False and got[4][1].startswith("line_search.ftol: unknown option ("
                                                       "line_search has c1, c2, max_step,")
    assert got[5] == [False, "line_search_bounded.gtol: must be in (0, 1), got 1.5"]
    assert got[6][0] is False and got[6][1].startswith(
        "line_search: expected a dict of its fields, got 0.5")


def adgraph_run(doc, tmp_path):
    path = tmp_path / "options.json"
    path.write_text(json.dumps(doc))
    r = subprocess.run([os.environ["ADGRAPH_RUN"], str(path), "--check"],
                       capture_output=True, text=True, timeout=120)
    if r.returncode == 0:
        return True, json.loads(r.stdout)
    assert r.returncode == 2, r.stderr
    return False, r.stderr


def optimize_doc(options):
    return {"adgraph": 1,
            "nodes": [{"name": "x", "op": "placeholder", "shape": [2]},
                      {"name": "L", "op": "sum", "inputs": ["x"]}],
            "optimize": {"objective": "L", "variables": {"x": [1, 2]}, "options": options}}


# Where each struct sits in "optimize.options".
JSON_PLACES = {"LbfgsOptions": None, "LineSearchOptions": "line_search",
               "MoreThuenteOptions": "line_search_bounded"}


def test_json_optimize_takes_every_field_as_python_does(tmp_path):
    ok, got = adgraph_run(optimize_doc({}), tmp_path)
    assert ok
    nested = [p for p in JSON_PLACES.values() if p]
    for kind, place in JSON_PLACES.items():
        options = got["options"] if place is None else got["options"][place]
        options = {k: v for k, v in options.items() if k not in nested}
        assert options == {k: as_json(spec(kind, k)[1]) for k in EXPECTED[kind]}, kind
    refused = []
    for kind, place in JSON_PLACES.items():
        wrap = (lambda o: o) if place is None else (lambda o, p=place: {p: o})
        prefix = "optimize.options." + ("" if place is None else place + ".")
        for name in EXPECTED[kind]:
            good, arrives, bad = cases(kind, name)
            extra = COMPANIONS.get((kind, name), {})
            ok, got = adgraph_run(optimize_doc(wrap({name: good, **extra})), tmp_path)
            assert ok, (kind, name, got)
            options = got["options"] if place is None else got["options"][place]
            assert options[name] == arrives, (kind, name, options)
            if bad is not None:
                ok, message = adgraph_run(optimize_doc(wrap({name: bad})), tmp_path)
                assert not ok
                detail = after(message, prefix + name)
                check_refusal(kind, name, bad, detail)
                refused.append((kind, name, bad, detail))
        ok, message = adgraph_run(optimize_doc(wrap({"bogus_field": 1})), tmp_path)
        assert not ok and after(message, prefix + "bogus_field").startswith(
            "unknown field (allowed: "), message
        for valid in EXPECTED[kind]:
            assert valid in message, (kind, valid, message)
    # Python's message for the same values, after the field's name.
    from_python = python([[kind, {name: bad}] for kind, name, bad, _ in refused])
    for (kind, name, bad, detail), (ok, message) in zip(refused, from_python["results"]):
        assert not ok and after(message, name) == detail, (kind, name, message, detail)


def solve_doc(attrs):
    """One rank's Poisson solve in a JSON document, `attrs` on its node."""
    stencil = {"nx": 4, "ny": 4, "px": 1, "py": 1}
    return {"adgraph": 1,
            "nodes": [{"name": "kappa", "op": "placeholder", "shape": [4, 4]},
                      {"name": "values", "op": "five_point_values",
                       "inputs": ["kappa", "kappa", "kappa", "kappa", "kappa"],
                       "stencil": stencil},
                      {"name": "u", "op": "sparse_solve", "inputs": ["values", "kappa"],
                       "attrs": attrs, "stencil": stencil},
                      {"name": "L", "op": "sum", "inputs": ["u"]}]}


def test_json_sparse_solve_attributes_are_the_solver_table(tmp_path):
    """A sparse_solve node's attributes are SolverOptions' fields: each bad
    value is refused with the table's message, naming node and attribute,
    as Python refuses it."""
    ok, got = adgraph_run(solve_doc({}), tmp_path)
    assert ok, got
    refused = []
    for name in EXPECTED["SolverOptions"]:
        _, _, bad = cases("SolverOptions", name)
        if bad is None:
            continue
        ok, message = adgraph_run(solve_doc({name: bad}), tmp_path)
        assert not ok
        assert 'node "u" (sparse_solve)' in message, message
        detail = after(message, 'attribute "%s"' % name)
        check_refusal("SolverOptions", name, bad, detail)
        refused.append((name, bad, detail))
    assert [n for n, _, _ in refused] == ["ksp", "pc", "rtol", "atol", "max_it"]
    from_python = python([["SolverOptions", {name: bad}] for name, bad, _ in refused])
    for (name, bad, detail), (ok, message) in zip(refused, from_python["results"]):
        assert not ok and after(message, name) == detail, (name, message, detail)


def repeat_doc(**options):
    return {"adgraph": 1,
            "nodes": [{"name": "u0", "op": "placeholder", "shape": [2]},
                      dict({"repeat": 6, "carry": {"u": "u0"},
                            "body": [{"name": "u", "op": "square", "inputs": ["u"]}]},
                           **options)]}


def test_json_repeat_blocks_take_the_loop_fields_that_are_their_settings(tmp_path):
    # The default: the graph's (store all, "all").
    ok, got = adgraph_run(repeat_doc(), tmp_path)
    assert ok and got["loops"] == {"nodes[1]": "all"}, got
    good, _, bad = cases("LoopOptions", "checkpoints")
    ok, got = adgraph_run(repeat_doc(checkpoints=good), tmp_path)
    assert ok and got["loops"]["nodes[1]"] != "all", got
    schedule = run_python("import json, adgraph as ag; "
                          "print(json.dumps(ag.checkpoint_schedule(%r, 6)))" % good)
    assert got["loops"]["nodes[1]"] == schedule[1]
    ok, message = adgraph_run(repeat_doc(checkpoints=bad), tmp_path)
    assert not ok
    detail = after(message, "nodes[1].checkpoints")
    check_refusal("LoopOptions", "checkpoints", bad, detail)
    ok, from_python = python([["LoopOptions", {"checkpoints": bad}]])["results"][0]
    assert not ok and after(from_python, "checkpoints") == detail
    # "name" and "output_steps" are not a block's settings (a block is named
    # by its place and has no per-step outputs): refused by name.
    for name in ["name", "output_steps", "checkpoint"]:
        value = cases("LoopOptions", name)[0] if name in EXPECTED["LoopOptions"] else "all"
        ok, message = adgraph_run(repeat_doc(**{name: value}), tmp_path)
        assert not ok
        assert after(message, "nodes[1]." + name) == (
            "unknown field (allowed: repeat, carry, body, doc or checkpoints)"), message


def heat_inversion(args):
    r = subprocess.run([os.environ["ADGRAPH_HEAT_INVERSION"], "--print-options"] + args,
                       capture_output=True, text=True, timeout=120)
    if r.returncode == 0:
        return True, json.loads(r.stdout)
    assert r.returncode == 2, r.stderr
    return False, r.stderr


def cli_args(option, value):
    if isinstance(value, bool):
        return [option + ("=true" if value else "=false")]
    if isinstance(value, list):
        return [option] + [",".join(map(str, v)) if isinstance(v, list) else str(v)
                           for v in value]
    return [option, value if isinstance(value, str) else shown(value)]


BASE = {"nx": "16", "ny": "16", "px": "1", "py": "1", "nt": "10"}
# The command line's structs, their options' prefix, and the fields it
# takes: every field of HeatInverseOptions and SolverOptions; LbfgsOptions'
# limits (heat_inversion writes its checkpoints with --checkpoint and
# --resume and always traces).
CLI = [("HeatInverseOptions", "", list(EXPECTED["HeatInverseOptions"])),
       ("SolverOptions", "implicit_", list(EXPECTED["SolverOptions"])),
       ("LbfgsOptions", "", ["history", "max_iterations", "max_evaluations",
                             "tolerance_gradient", "tolerance_function"])]


def test_the_command_line_takes_its_fields_as_python_does():
    ok, defaults = heat_inversion([])
    assert ok
    # heat_inversion's own problem: a 256 x 256 grid on 2 x 2 patches, 2800
    # steps, "auto" checkpoints; its implicit solver is HeatConfig's (CG
    # with BoomerAMG, symmetric); its optimizer stops after 100 iterations
    # or at a gradient norm of 1e-10, traces, and checkpoints only with
    # --checkpoint. Every other default is the struct's.
    own = {"HeatInverseOptions": {"nx": 256, "ny": 256, "px": 2, "py": 2, "nt": 2800,
                                  "checkpoints": "auto"},
           "SolverOptions": {"ksp": "cg", "pc": "hypre", "symmetric": True},
           "LbfgsOptions": {"max_iterations": 100, "tolerance_gradient": 1e-10,
                            "trace": True}}
    for kind in ["HeatInverseOptions", "SolverOptions", "LbfgsOptions"]:
        want = {k: as_json(spec(kind, k)[1]) for k in EXPECTED[kind]}
        want.update(own[kind])
        assert defaults[kind] == want, kind
    refused = []
    for kind, prefix, names in CLI:
        for field in names:
            name = prefix + field
            option = "--" + name.replace("_", "-")
            base = sum(([f"--{k}", v] for k, v in BASE.items() if k != name), [])
            good, arrives, bad = cases(kind, field)
            if name == "implicit_symmetric":  # CG needs a symmetric matrix
                base += ["--implicit-ksp", "gmres"]
            ok, got = heat_inversion(base + cli_args(option, good))
            assert ok, (name, good, got)
            assert got[kind][field] == arrives, (name, got[kind])
            if bad is not None:
                ok, message = heat_inversion(base + cli_args(option, bad))
                assert not ok, (name, bad)
                detail = after(message, field)
                check_refusal(kind, field, bad, detail)
                refused.append((kind, field, bad, detail))
    from_python = python([[kind, {name: bad}] for kind, name, bad, _ in refused])
    for (kind, name, bad, detail), (ok, message) in zip(refused, from_python["results"]):
        assert not ok and after(message, name) == detail, (kind, name, bad, message)


def test_the_older_spellings_max_iter_and_tol():
    base = sum(([f"--{k}", v] for k, v in BASE.items()), [])
    ok, got = heat_inversion(base + ["--max-iter", "7", "--tol", "1e-05"])
    assert ok and got["LbfgsOptions"]["max_iterations"] == 7
    assert got["LbfgsOptions"]["tolerance_gradient"] == 1e-5
    ok, message = heat_inversion(base + ["--max-iter", "-1"])
    assert not ok and after(message, "max_iterations") == f"must be in [0, {I32}], got -1"
    ok, message = heat_inversion(base + ["--tol", "-0.5"])
    assert not ok and after(message, "tolerance_gradient") == (
        "must be a finite number >= 0, got -0.5")
    ok, message = heat_inversion(base + ["--tol", "inf"])
    assert not ok and after(message, "tolerance_gradient") == (
        "must be a finite number >= 0, got inf")


ARGPARSE = """
import argparse, json
import adgraph as ag
p = argparse.ArgumentParser()
ag.add_table_options(p, "HeatInverseOptions")
ag.add_table_options(p, "LbfgsOptions", ["max_iterations", "tolerance_gradient"],
                     aliases={"max_iterations": "--max-iter", "tolerance_gradient": "--tol"})
out = {"defaults": {k: v for k, v in vars(p.parse_args([])).items()}}
given = p.parse_args(["--max-iter", "7", "--tol", "1e-5", "--overlap", "--observe-steps",
                      "3", "5", "--scheme", "crank_nicolson", "--nx", "32", "--noise", "-1"])
out["heat"] = ag.table_values(given, "HeatInverseOptions")
out["lbfgs"] = ag.table_values(given, "LbfgsOptions", ["max_iterations", "tolerance_gradient"])
try:
    ag.solvers.HeatInverse(**out["heat"])
except ag.OptionsError as e:
    out["refused"] = str(e)
out["help"] = p.format_help()
print(json.dumps(out))
"""


def test_argparse_options_from_the_tables():
    """ag.add_table_options: each field of a table as --name with the
    table's default (the struct's, by hand in EXPECTED) and doc; aliases;
    table_values gives what differs from the defaults, which the library
    then checks with the table's message."""
    got = run_python(ARGPARSE)
    # (JSON has no infinity: an unbounded κ's default is null, not set.)
    heat = {k: as_json(spec("HeatInverseOptions", k)[1]) for k in EXPECTED["HeatInverseOptions"]}
    expected = dict(heat, max_iterations=spec("LbfgsOptions", "max_iterations")[1],
                    tolerance_gradient=spec("LbfgsOptions", "tolerance_gradient")[1])
    assert got["defaults"] == expected
    assert got["heat"] == {"overlap": True, "observe_steps": [3, 5],
                           "scheme": "crank_nicolson", "noise": -1.0}
    assert got["lbfgs"] == {"max_iterations": 7, "tolerance_gradient": 1e-5}
    assert got["refused"].endswith("noise: must be a finite number >= 0, got -1"), got
    help_text = " ".join(got["help"].split())
    assert "--max-iterations MAX_ITERATIONS, --max-iter MAX_ITERATIONS" in help_text
    assert "--overlap, --no-overlap" in help_text
    assert "(explicit, backward_euler, crank_nicolson) [default: explicit]" in help_text
    assert "(in [1, 2147483647]) [default: 32]" in help_text  # --nx, by hand
