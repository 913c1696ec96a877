#!/usr/bin/env python3
"""Runs the configure steps of the README's plain CMake build.

    plain_build_test.py PYTHON

Every `cmake -S . -B build ...` command of tests/docs/plain_build.sh (the
README's blocks) runs from the repository root into a fresh temporary
folder instead of build/, with -DBUILD_TESTING=OFF and /usr/bin/python3
replaced by PYTHON (the interpreter this build uses): only the configure
step, not the build, which the rest of the suite covers. It must succeed,
and every -DNAME=VALUE it passes must be in the new CMakeCache.txt.
"""

import os
import re
import shlex
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))


def configure_commands():
    with open(os.path.join(HERE, "plain_build.sh"), encoding="utf-8") as h:
        text = h.read().replace("\\\n", " ")
    return [shlex.split(x) for x in text.splitlines()
            if x.strip().startswith("cmake -S")]


def main(argv):
    python = argv[1] if len(argv) > 1 else "/usr/bin/python3"
    commands = configure_commands()
    if len(commands) < 2:
        print(f"plain_build_test: {len(commands)} configure commands, expected 2")
        return 1
    for words in commands:
        words = [w.replace("/usr/bin/python3", python) for w in words]
        with tempfile.TemporaryDirectory(prefix="adgraph-plain-") as tmp:
            b = words.index("-B")
            words[b + 1] = tmp
            command = words + ["-DBUILD_TESTING=OFF"]
            print("$ " + shlex.join(command), flush=True)
            p = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                               check=False)
            if p.returncode != 0:
                print(p.stdout + p.stderr)
                print(f"plain_build_test: the configure step exited with {p.returncode}")
                return 1
            with open(os.path.join(tmp, "CMakeCache.txt"), encoding="utf-8") as h:
                cache = h.read()
            for w in words:
                m = re.match(r"-D(\w+)=(.*)$", w)
                if m and not re.search(rf"^{m.group(1)}:\w+={re.escape(m.group(2))}$",
                                       cache, re.M):
                    print(f"plain_build_test: {m.group(1)}={m.group(2)} is not in "
                          f"the cache")
                    return 1
            print("configured; the cache holds every -D setting")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
