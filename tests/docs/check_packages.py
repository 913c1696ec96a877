#!/usr/bin/env python3
"""The README's Debian command line installs exactly what the scripts do.

    check_packages.py [ROOT]

Compares the packages of the `apt-get install` line of
tests/docs/install_packages.sh (the README's block) with the bash array
ADGRAPH_PACKAGES of scripts/common.sh, which scripts/demo and scripts/test
install: the same names, each once. Prints what one lists and the other
does not, and exits 1 on any difference.
"""

import os
import re
import shlex
import sys


def script_packages(text):
    """The words of `ADGRAPH_PACKAGES=( ... )`, comments dropped."""
    start = text.find("\nADGRAPH_PACKAGES=(")
    if start < 0:
        sys.exit("check_packages: scripts/common.sh: no ADGRAPH_PACKAGES=( ... )")
    words = []
    for line in text[start + len("\nADGRAPH_PACKAGES=("):].splitlines():
        code = line.split("#", 1)[0]
        words += code.split(")", 1)[0].split()
        if ")" in code:
            return words
    sys.exit("check_packages: scripts/common.sh: ADGRAPH_PACKAGES=( is not closed")


def readme_packages(text):
    """The package arguments of the one `apt-get install` command."""
    commands = text.replace("\\\n", " ").splitlines()
    installs = [c for c in commands if re.search(r"\bapt-get\s+install\b", c)]
    if len(installs) != 1:
        sys.exit(f"check_packages: install_packages.sh: {len(installs)} "
                 f"apt-get install lines, expected 1")
    words = shlex.split(installs[0], comments=True)
    after = words[words.index("install") + 1:]
    return [w for w in after if not w.startswith("-")]


def main(argv):
    root = argv[1] if len(argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "..")
    with open(os.path.join(root, "scripts", "common.sh"), encoding="utf-8") as h:
        want = script_packages(h.read())
    with open(os.path.join(root, "tests", "docs", "install_packages.sh"),
              encoding="utf-8") as h:
        got = readme_packages(h.read())
    problems = []
    for name in sorted(set(want) - set(got)):
        problems.append(f"{name}: in scripts/common.sh, missing from "
                        f"tests/docs/install_packages.sh")
    for name in sorted(set(got) - set(want)):
        problems.append(f"{name}: in tests/docs/install_packages.sh, not in "
                        f"scripts/common.sh")
    for name in sorted({n for n in got if got.count(n) > 1}):
        problems.append(f"{name}: listed {got.count(name)} times in "
                        f"tests/docs/install_packages.sh")
    for p in problems:
        print("check_packages: " + p)
    if problems or not want:
        return 1
    print(f"check_packages: the same {len(want)} packages in "
          f"scripts/common.sh and the README's apt-get line")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
