#!/usr/bin/env python3
"""Runs the commands of one region of a guide's command file.

    run_doc_command.py FILE REGION BUILD_DIR PYTHON

FILE's region REGION (between `doc:begin REGION` and `doc:end REGION`)
holds shell commands as a guide shows them, run from the repository root
after a build in build/. Each line runs under bash in the repository root
(FILE's ../..) with two substitutions, the only differences between what
the guide shows and what the test runs: `build/` at the start of a word
becomes BUILD_DIR/, and `/usr/bin/python3` becomes PYTHON (the interpreter
CMake chose, ADGRAPH_PYTHON_EXECUTABLE). Prints the commands' output and
exits with the first failing status.
"""

import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def region_lines(path, name):
    with open(path, encoding="utf-8") as h:
        lines = h.read().splitlines()
    begin = [i for i, x in enumerate(lines) if re.search(rf"doc:begin {re.escape(name)}\b", x)]
    end = [i for i, x in enumerate(lines) if re.search(rf"doc:end {re.escape(name)}\b", x)]
    if len(begin) != 1 or len(end) != 1 or end[0] < begin[0]:
        sys.exit(f"run_doc_command: {path}: no single region '{name}'")
    return lines[begin[0] + 1:end[0]]


def main(argv):
    if len(argv) != 5:
        sys.exit(__doc__)
    path, name, build, python = argv[1:]
    commands = [x for x in region_lines(path, name)
                if x.strip() and not x.lstrip().startswith("#")]
    # Backslash continuations make one command.
    joined, current = [], ""
    for line in commands:
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        joined.append(current)
        current = ""
    for command in joined:
        command = re.sub(r"(?<![\w/.-])build/", build.rstrip("/") + "/", command)
        command = command.replace("/usr/bin/python3", python)
        print(f"$ {command}", file=sys.stderr)
        sys.stdout.flush()
        status = subprocess.run(["bash", "-c", command], cwd=ROOT, check=False).returncode
        if status != 0:
            print(f"run_doc_command: '{command}' exited with {status}", file=sys.stderr)
            return status
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
