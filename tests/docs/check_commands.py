#!/usr/bin/env python3
"""The programs a guide's command block starts exist and can be run.

    check_commands.py FILE...

Each non-comment line of each FILE (relative to the repository root) is a
command a guide shows; its first word must be an executable file of the
repository (scripts/demo, scripts/test). Exits 1 naming the line otherwise.
"""

import os
import shlex
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def main(argv):
    problems, count = [], 0
    for name in argv[1:]:
        with open(os.path.join(ROOT, name), encoding="utf-8") as h:
            for k, line in enumerate(h.read().splitlines(), 1):
                words = shlex.split(line, comments=True)
                if not words:
                    continue
                count += 1
                program = os.path.join(ROOT, words[0])
                if not (os.path.isfile(program) and os.access(program, os.X_OK)):
                    problems.append(f"{name}:{k}: {words[0]} is not an executable "
                                    f"file of the repository")
    for p in problems:
        print("check_commands: " + p)
    if not problems:
        print(f"check_commands: the {count} commands' programs exist")
    return 1 if problems or not count else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
