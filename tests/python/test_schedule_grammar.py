"""One grammar for checkpoint schedules in every front end.

The same schedules go to the driver (a repeat block's "checkpoints" in a
JSON document, adgraph-run --check), to Python (adgraph.loop's
`checkpoints`) and to the heat_inversion example's --checkpoints (a run of
0 iterations). Each front end must accept the same ones and give the loop
the same schedule, and refuse the same ones with the same message (after
the place each names: a JSON field, a keyword, an option). The loops all
take 6 steps over 448 bytes of state (heat_inversion's 4 x 8 patch: u and
its four edges, 32 + 24 numbers), so "auto" and budgets resolve alike.

Run by ctest with ADGRAPH_RUN and ADGRAPH_HEAT_INVERSION naming the two
programs; each front end runs in its own process (a singleton MPI job).
"""

import json
import os
import subprocess
import sys

import pytest

STEPS = 6
STATE = 56  # numbers carried: 448 bytes

GRAMMAR = ("a checkpoint schedule is all, auto, N (binomial with N >= 1 "
           "snapshots), every:K (K >= 1) or budget:BYTES (BYTES >= 1, "
           "optionally with KiB, MiB or GiB); got ")


def refused(text):
    return GRAMMAR + json.dumps(text)


# Each text and what every front end must make of it, derived by hand:
# auto for 6 steps is the smallest s with C(s + 2, 2) >= 6, s = 2; binomial
# is capped at the step count; a budget holds floor(bytes / 448) states.
CASES = [
    ("all", "all"),
    ("auto", "binomial 2"),
    ("1", "binomial 1"),
    ("3", "binomial 3"),
    ("007", "binomial 6"),
    ("40", "binomial 6"),
    ("every:1", "every 1"),
    ("every:2", "every 2"),
    ("every:7", "every 7"),
    ("budget:2000", "binomial 4"),
    ("budget:1KiB", "binomial 2"),
    ("budget:448", "binomial 1"),
    ("budget:1MiB", "binomial 6"),
    ("budget:1", ValueError(
        "a budget of 1 B holds no snapshot of the loop's state (448 B: every "
        "carry once); give at least 448 B")),
] + [(text, ValueError(refused(text))) for text in [
    "0", "-1", "+3", "3.5", "every:0", "every:", "every 10", "binomial 100",
    "binomial:3", "budget:0", "budget:1kB", "budget:KiB", "some", "AUTO",
    "All", "default", "99999999999999999999"]]


def detail(message):
    """The message after the place a front end names ("...checkpoints: ")."""
    head, sep, rest = message.partition("checkpoints: ")
    assert sep, message
    return rest.split("\n")[0].strip()


def outcome(ok, text):
    return text if ok else ValueError(text)


def same(a, b):
    if isinstance(a, ValueError) or isinstance(b, ValueError):
        return type(a) is type(b) and str(a) == str(b)
    return a == b


def run(command, **kwargs):
    return subprocess.run(command, capture_output=True, text=True, timeout=120,
                          **kwargs)


def driver(value, tmp_path):
    """The schedule adgraph-run gives a repeat block, or its message."""
    doc = {"adgraph": 1, "nodes": [
        {"name": "u0", "op": "placeholder", "shape": [STATE]},
        {"repeat": STEPS, "carry": {"u": "u0"}, "checkpoints": value,
         "body": [{"name": "u", "op": "square", "inputs": ["u"]}]}]}
    path = tmp_path / "schedule.json"
    path.write_text(json.dumps(doc))
    r = run([os.environ["ADGRAPH_RUN"], str(path), "--check"])
    if r.returncode == 0:
        return outcome(True, json.loads(r.stdout)["loops"]["nodes[1]"])
    assert r.returncode == 2, r.stderr
    return outcome(False, detail(r.stderr))


PYTHON = """
import json, sys
import adgraph as ag
out = []
for value in json.loads(sys.argv[1]):
    g = ag.Graph()
    u0 = g.placeholder("u0", (%d,))
    try:
        r = ag.loop(%d, [u0], [], lambda a: [a.carries[0] * a.carries[0]],
                    checkpoints=value)
        out.append([True, ag.loop_stats(r.node)["schedule"]])
    except ag.OptionsError as e:
        out.append([False, str(e)])
print(json.dumps(out))
""" % (STATE, STEPS)


def python(values):
    """What adgraph.loop makes of each value (one process for all)."""
    r = run([sys.executable, "-c", PYTHON, json.dumps(values)])
    assert r.returncode == 0, r.stderr
    return [outcome(ok, text if ok else detail(text))
            for ok, text in json.loads(r.stdout)]


def heat_inversion(text, tmp_path):
    """The time loop's schedule of a 0-iteration heat_inversion run."""
    output = tmp_path / "heat.json"
    r = run([os.environ["ADGRAPH_HEAT_INVERSION"], "--nx", "4", "--ny", "8",
             "--nt", str(STEPS), "--px", "1", "--py", "1", "--max-iter", "0",
             "--checkpoints", text, "--output", str(output)], cwd=tmp_path)
    if r.returncode == 0:
        return outcome(True, json.loads(output.read_text())["checkpoints"]["schedule"])
    assert r.returncode == 2, r.stderr
    return outcome(False, detail(r.stderr))


@pytest.mark.skipif("ADGRAPH_RUN" not in os.environ, reason="run by ctest")
def test_driver_python_and_the_cli_agree_on_every_text(tmp_path):
    texts = [text for text, _ in CASES]
    from_python = python(texts)
    for (text, want), got_python in zip(CASES, from_python):
        got_driver = driver(text, tmp_path)
        got_cli = heat_inversion(text, tmp_path)
        for front, got in [("driver", got_driver), ("python", got_python),
                           ("heat_inversion", got_cli)]:
            assert same(got, want), f"{front}: {text!r}: {got!r}, not {want!r}"


@pytest.mark.skipif("ADGRAPH_RUN" not in os.environ, reason="run by ctest")
def test_json_numbers_and_older_objects_read_alike(tmp_path):
    # The JSON form beyond strings: an integer N, and the older objects.
    cases = [
        (3, "binomial 3"),
        (40, "binomial 6"),
        (0, ValueError(GRAMMAR + "0")),
        (-2, ValueError(GRAMMAR + "-2")),
        ({"every": 2}, "every 2"),
        ({"binomial": 4}, "binomial 4"),
        ({"budget": 2000}, "binomial 4"),
    ]
    from_python = python([value for value, _ in cases])
    for (value, want), got_python in zip(cases, from_python):
        got_driver = driver(value, tmp_path)
        assert same(got_driver, want), f"driver: {value!r}: {got_driver!r}"
        assert same(got_python, want), f"python: {value!r}: {got_python!r}"
