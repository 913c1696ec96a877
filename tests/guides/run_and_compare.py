#!/usr/bin/env python3
"""Runs a guide's example and compares what it prints with an expected file.

    run_and_compare.py EXPECTED COMMAND [ARG...]

The command must exit with status 0 and its standard output must equal
EXPECTED line for line (trailing whitespace ignored). The examples print
from rank 0 only, so the output does not depend on the rank count. Exits 1
with a diff otherwise. The docs/*.md guides show EXPECTED as the programs'
output (tests/docs/check_doc_blocks.py checks that they do).
"""

import difflib
import subprocess
import sys


def lines(text):
    out = [line.rstrip() for line in text.splitlines()]
    while out and not out[-1]:
        out.pop()
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        want = lines(f.read())
    run = subprocess.run(sys.argv[2:], stdout=subprocess.PIPE, text=True)
    got = lines(run.stdout)
    if run.returncode != 0:
        print(run.stdout)
        sys.exit(f"{sys.argv[2]} exited with status {run.returncode}")
    if got != want:
        sys.stdout.writelines(difflib.unified_diff(
            [w + "\n" for w in want], [g + "\n" for g in got],
            sys.argv[1], "output"))
        sys.exit(1)
    print(f"output equals {sys.argv[1]} ({len(want)} lines)")


if __name__ == "__main__":
    main()
