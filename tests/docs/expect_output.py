#!/usr/bin/env python3
"""Runs a command and compares its standard output with an expected file.

    expect_output.py EXPECTED -- COMMAND [ARG...]

Passes when the command exits 0 and its standard output equals EXPECTED
line for line, after the one normalisation the guides' output blocks rely
on: trailing whitespace and trailing blank lines are ignored. On a
difference it prints a unified diff and exits 1. Standard error (MPI's
notices) is shown but not compared.
"""

import difflib
import subprocess
import sys


def lines(text):
    out = [x.rstrip() for x in text.splitlines()]
    while out and not out[-1]:
        out.pop()
    return out


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        print(__doc__)
        return 2
    expected_file, command = argv[1], argv[3:]
    with open(expected_file, encoding="utf-8") as h:
        want = lines(h.read())
    p = subprocess.run(command, capture_output=True, text=True, check=False)
    sys.stderr.write(p.stderr)
    got = lines(p.stdout)
    if p.returncode != 0:
        print(f"expect_output: the command exited with {p.returncode}:")
        print(p.stdout)
        return 1
    if got != want:
        print(f"expect_output: the output differs from {expected_file}:")
        for line in difflib.unified_diff(want, got, expected_file, "output",
                                         lineterm=""):
            print(line)
        return 1
    print("\n".join(got))
    print(f"expect_output: {len(got)} line(s), equal to {expected_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
