#!/usr/bin/python3
"""Property test of adgraph-run (issue #37): every document either runs, or
fails with one message naming the file; never an internal error, a signal,
a hang (the communication deadline) or a lossy result (JSON null).

The documents are mutants of seeds (repeat blocks, communicators,
nonblocking messages, optimize sections: every JSON file under the folders
given), made by structure-aware edits with a fixed seed, so a failure
reproduces: the failing mutant is written next to the report.

usage: property_test.py RUN_COMMAND... -- COUNT SEED OUT_DIR SEED_DIR...
RUN_COMMAND is the launcher and adgraph-run (mpirun -n 2 ... adgraph-run)."""
import copy
import json
import os
import random
import subprocess
import sys

# Values an edit puts in place of a field: extremes of every JSON type.
ODD_VALUES = [0, -1, 1, 2, 3, 1.5, -0.5, 1e20, -1e20, 4294967297,
              9223372036854775807, "", "x", "x:0", "x:9", "a@b", ":", "all",
              [], [0], [1, 2], [[1], [2, 3]], {}, {"every": 0}, None, True,
              False, "u", "u:1", "w:1", "nodes"]


def paths(value, prefix=()):
    """Every (path, value) in a JSON value, depth first."""
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths(v, prefix + (i,))


def names_in(doc):
    """Node names, carries and derivative keys: what references can name."""
    out = set()
    for _, v in paths(doc):
        if isinstance(v, dict):
            if isinstance(v.get("name"), str):
                out.add(v["name"])
            if isinstance(v.get("carry"), dict):
                out.update(v["carry"].keys())
    for section in ("gradients", "tangents"):
        if isinstance(doc, dict) and isinstance(doc.get(section), dict):
            out.update(doc[section].keys())
    return sorted(out)


def parent_of(doc, path):
    node = doc
    for key in path[:-1]:
        node = node[key]
    return node


def mutate(doc, rng):
    """One to three structure-aware edits of a copy of `doc`."""
    doc = copy.deepcopy(doc)
    for _ in range(rng.randint(1, 3)):
        spots = [p for p, _ in paths(doc) if p]
        if not spots:
            break
        path = rng.choice(spots)
        parent, key = parent_of(doc, path), path[-1]
        names = names_in(doc) or ["x"]
        kind = rng.randrange(7)
        if kind == 0:  # drop the field or entry
            del parent[key]
        elif kind == 1:  # an odd value
            parent[key] = rng.choice(ODD_VALUES)
        elif kind == 2:  # a reference to another name (or an output of it)
            ref = rng.choice(names)
            parent[key] = ref if rng.random() < 0.6 else f"{ref}:{rng.randrange(5)}"
        elif kind == 3 and isinstance(parent, list):  # duplicate an entry
            parent.insert(rng.randrange(len(parent) + 1), copy.deepcopy(parent[key]))
        elif kind == 4 and isinstance(parent, list) and len(parent) > 1:  # swap
            other = rng.randrange(len(parent))
            parent[key], parent[other] = parent[other], parent[key]
        elif kind == 5 and isinstance(parent[key], (int, float)) \
                and not isinstance(parent[key], bool):  # a nearby number
            parent[key] = rng.choice([parent[key] + 1, parent[key] - 1,
                                      parent[key] * 1000, -parent[key]])
        elif kind == 6 and isinstance(parent, dict):  # a key renamed
            parent[rng.choice(names + ["x:0", "", "u@1"])] = parent.pop(key)
    return doc


def has_null(value):
    return any(v is None for _, v in paths(value))


def check(run, path, name):
    """None when the run kept the property, else why not."""
    try:
        done = subprocess.run(run + [path], capture_output=True, text=True,
                              timeout=120)
    except subprocess.TimeoutExpired:
        return "no result in 120 s (a hang)"
    out, err, rc = done.stdout, done.stderr, done.returncode
    if rc == 0:
        try:
            result = json.loads(out)
        except ValueError:
            return "exit 0 without a JSON result: " + out[-300:]
        if has_null(result):
            return "a null in the result (a lost value): " + out[-300:]
        return None
    if rc < 0 or rc >= 128:
        return f"killed by a signal (status {rc}): " + err[-600:]
    if rc == 124 or "deadline" in err:
        return "waited until the communication deadline: " + err[-600:]
    if "internal error" in err:
        return "an internal error: " + err[-600:]
    if rc not in (2, 3) or f"{name}:" not in err:
        return f"exit {rc} without a message naming {name}: " + err[-600:]
    return None


def main():
    split = sys.argv.index("--")
    run = sys.argv[1:split]
    count, seed, out_dir = int(sys.argv[split + 1]), int(sys.argv[split + 2]), sys.argv[split + 3]
    seeds = []
    for folder in sys.argv[split + 4:]:
        for entry in sorted(os.listdir(folder)):
            if entry.endswith(".json") and os.path.isfile(os.path.join(folder, entry)):
                try:
                    with open(os.path.join(folder, entry)) as f:
                        seeds.append((entry, json.load(f)))
                except ValueError:
                    pass  # a malformed document: nothing to mutate
    os.makedirs(out_dir, exist_ok=True)
    rng = random.Random(seed)
    failures = []
    for k in range(count):
        origin, doc = rng.choice(seeds)
        name = f"mutant_{k}.json"
        path = os.path.join(out_dir, name)
        with open(path, "w") as f:
            json.dump(mutate(doc, rng), f)
        why = check(run, path, name)
        if why is None:
            os.remove(path)
            continue
        failures.append(f"{name} (from {origin}): {why}")
    for line in failures:
        print("FAILED", line)
    print(f"{count} mutants of {len(seeds)} seeds (seed {seed}): "
          f"{count - len(failures)} kept the property, {len(failures)} did not")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
