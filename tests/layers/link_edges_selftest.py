"""scripts/check-link-layers catches a planted upward edge.

    link_edges_selftest.py CHECKER OBJECTS CXX

Copies the built library's object tree OBJECTS (as symbolic links) into a
temporary folder and checks it three ways with CHECKER:
  - as built: no upward edge, exit 0;
  - with an object planted in core/ that calls adgraph::register_ops_layer()
    (defined in ops/elementwise.cc): exit 1, naming the planted object, the
    function and the object above that defines it;
  - with an object planted in solvers/ calling the same function (a call
    down): exit 0;
  - with a unity batch (Unity/unity_*_cxx.cxx.o) whose .cxx includes a
    source of core/ and one of ops/: exit 1, naming the batch.
The planted objects are compiled with CXX. The tree may be per source or a
unity build's (ADGRAPH_UNITY): the definer of register_ops_layer is then a
batch of ops/.
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

CALL_OPS = """
namespace adgraph { void register_ops_layer(); }
void planted_call() { adgraph::register_ops_layer(); }
"""


def plant(cxx, tree, path):
    source = os.path.join(tree, path + ".src.cc")
    os.makedirs(os.path.dirname(source), exist_ok=True)
    with open(source, "w") as f:
        f.write(CALL_OPS)
    subprocess.run([cxx, "-c", source, "-o", os.path.join(tree, path + ".o")],
                   check=True)
    os.remove(source)


def check(checker, tree):
    run = subprocess.run([sys.executable, checker, "--objects", tree],
                         capture_output=True, text=True)
    return run.returncode, run.stdout + run.stderr


def main(checker, objects, cxx):
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        tree = os.path.join(tmp, "adgraph.dir")
        shutil.copytree(os.path.abspath(objects), tree, symlinks=True,
                        ignore=shutil.ignore_patterns("*.gch", "*.d"),
                        copy_function=os.symlink)
        code, out = check(checker, tree)
        if code != 0:
            failures.append(f"the built tree should pass, got {code}:\n{out}")

        plant(cxx, tree, "core/planted_upward.cc")
        code, out = check(checker, tree)
        expected = ["core/planted_upward.cc.o (core/)",
                    "adgraph::register_ops_layer()", " (ops/)"]
        if code != 1:
            failures.append(f"the planted edge should fail with 1, got {code}")
        for text in expected:
            if text not in out:
                failures.append(f"the report should name {text!r}:\n{out}")
        if out.count("link layers: ") != 1:
            failures.append(f"one edge only should be reported:\n{out}")

        os.remove(os.path.join(tree, "core/planted_upward.cc.o"))
        plant(cxx, tree, "solvers/planted_downward.cc")
        code, out = check(checker, tree)
        if code != 0 or "link layers: ok" not in out:
            failures.append(f"a call down should pass, got {code}:\n{out}")

        os.remove(os.path.join(tree, "solvers/planted_downward.cc.o"))
        mixed = os.path.join(tree, "Unity", "unity_mixed_cxx.cxx")
        os.makedirs(os.path.dirname(mixed), exist_ok=True)
        with open(mixed, "w") as f:
            for source in ("core/graph.cc", "ops/elementwise.cc"):
                f.write(f'#include "{os.path.join(ROOT, source)}"\n')
        plant(cxx, tree, "Unity/unity_mixed_cxx.cxx")
        code, out = check(checker, tree)
        if code != 1 or "Unity/unity_mixed_cxx.cxx.o (core/graph.cc, " \
                "ops/elementwise.cc) is in no one layer" not in out:
            failures.append(f"a batch of two layers should fail, got {code}:"
                            f"\n{out}")
    for failure in failures:
        print("FAILED:", failure)
    print("link_edges_selftest:", "failed" if failures else "passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
