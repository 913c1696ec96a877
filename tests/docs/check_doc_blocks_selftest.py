#!/usr/bin/env python3
"""Proves check_doc_blocks.py can fail: it runs the checker on each planted
document of tests/docs/bad/ (a tiny tree: src/ holds the sources,
register.cmake "registers" two of them) and requires

- good.md to pass, counting its 4 blocks;
- every other document to fail with the problem its first line announces,
  `<!-- expect: LINE: TEXT -->`, printed as `NAME.md:LINE: TEXT`.
"""

import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
BAD = os.path.join(HERE, "bad")
CHECKER = os.path.join(HERE, "check_doc_blocks.py")
EXPECT = re.compile(r"^<!-- expect: (?P<line>\d+): (?P<text>.*) -->$")


def run(doc):
    p = subprocess.run([sys.executable, CHECKER, "--root", BAD, "--only", doc],
                       capture_output=True, text=True, check=False)
    return p.returncode, p.stdout + p.stderr


def main():
    failures = []
    status, out = run("good.md")
    if status != 0 or "4 code block(s) in 1 document(s)" not in out:
        failures.append(f"good.md: expected a pass over 4 blocks, got "
                        f"status {status}:\n{out}")
    planted = sorted(f for f in os.listdir(BAD)
                     if f.endswith(".md") and f != "good.md")
    for doc in planted:
        with open(os.path.join(BAD, doc), encoding="utf-8") as h:
            m = EXPECT.match(h.readline().rstrip("\n"))
        if not m:
            failures.append(f"{doc}: the first line is not "
                            f"<!-- expect: LINE: TEXT -->")
            continue
        want = f"{doc}:{m.group('line')}: {m.group('text')}"
        status, out = run(doc)
        if status != 1 or want not in out:
            failures.append(f"{doc}: expected status 1 and '{want}', got "
                            f"status {status}:\n{out}")
        else:
            print(f"{doc}: fails as planted: {want}")
    if len(planted) < 10:
        failures.append(f"only {len(planted)} planted documents in {BAD}")
    for f in failures:
        print("FAIL " + f)
    print(f"check_doc_blocks selftest: {len(planted)} planted documents, "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
