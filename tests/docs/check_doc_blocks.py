#!/usr/bin/env python3
"""Checks that every fenced code block of README.md and docs/*.md is tested.

Each block must be preceded (on the line above its opening fence, or with
one blank line between) by one marker:

  <!-- from: PATH -->        the block is the whole file PATH
  <!-- from: PATH#NAME -->   the block is the region of PATH between the
                             lines holding `doc:begin NAME` and
                             `doc:end NAME` (marker lines excluded; the
                             indentation common to the region is removed)
  <!-- diagram -->           a picture drawn in text (```text only)

Trailing whitespace and trailing blank lines are ignored; a block indented
under a list item loses its fence's indentation. PATH (relative to the
repository root) must be named (by its file name or its stem) in a
CMakeLists.txt, a cmake/ script, a scripts/ program or a Python or shell
file under tests/: the file a test builds, runs or compares with.

    check_doc_blocks.py [--root DIR] [--only FILE...]

Prints file:line: problem for each bad block (with a short diff) and exits
1, or exits 0 saying how many blocks were checked.
"""

import argparse
import difflib
import os
import re
import sys

FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")
MARKER = re.compile(r"^\s*<!--\s*(?P<body>from:.*?|diagram)\s*-->\s*$")
FROM = re.compile(r"^from:\s*(?P<path>[^#\s]+)(?:#(?P<name>[\w.-]+))?$")
SKIP_DIRS = {".git", "node_modules", "__pycache__"}
# Planted documents of the self-test: their sources register nothing.
SKIP_PATHS = {os.path.join("tests", "docs", "bad")}


def documents(root):
    """README.md and docs/*.md under root, sorted."""
    out = []
    if os.path.isfile(os.path.join(root, "README.md")):
        out.append("README.md")
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        out += sorted(os.path.join("docs", f) for f in os.listdir(docs)
                      if f.endswith(".md"))
    return out


def registration_text(root):
    """The text of the files that register or drive tests."""
    texts = []
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = [d for d in dirnames
                       if d not in SKIP_DIRS and not d.startswith("build")
                       and os.path.normpath(os.path.join(rel, d))
                       not in SKIP_PATHS]
        top = rel.split(os.sep)[0]
        for f in filenames:
            wanted = (f == "CMakeLists.txt" or f.endswith(".cmake")
                      or top == "scripts"
                      or (top == "tests" and f.endswith((".py", ".sh"))))
            if wanted:
                try:
                    with open(os.path.join(dirpath, f),
                              encoding="utf-8", errors="replace") as h:
                        texts.append(h.read())
                except OSError:
                    pass
    return "\n".join(texts)


def normalise(lines):
    """Trailing whitespace off every line, trailing blank lines dropped."""
    out = [line.rstrip() for line in lines]
    while out and not out[-1]:
        out.pop()
    return out


def dedent(lines):
    """Removes the indentation common to the non-blank lines."""
    widths = [len(x) - len(x.lstrip()) for x in lines if x.strip()]
    cut = min(widths) if widths else 0
    return [x[cut:] if x.strip() else "" for x in lines]


def region(text, name):
    """The lines between `doc:begin name` and `doc:end name`, or an error."""
    lines = text.splitlines()
    begin = re.compile(r"doc:begin\s+" + re.escape(name) + r"(\s|$)")
    end = re.compile(r"doc:end\s+" + re.escape(name) + r"(\s|$)")
    starts = [i for i, x in enumerate(lines) if begin.search(x)]
    ends = [i for i, x in enumerate(lines) if end.search(x)]
    if not starts:
        return None, f"no line with 'doc:begin {name}'"
    if not ends:
        return None, f"no line with 'doc:end {name}'"
    if len(starts) > 1 or len(ends) > 1:
        return None, f"region '{name}' is marked more than once"
    if ends[0] < starts[0]:
        return None, f"'doc:end {name}' comes before 'doc:begin {name}'"
    return dedent(lines[starts[0] + 1:ends[0]]), None


def blocks(lines):
    """(line of the opening fence, indent, info, body lines, closed)."""
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        start, indent, fence = i, m.group("indent"), m.group("fence")
        body, closed = [], False
        i += 1
        while i < len(lines):
            c = FENCE.match(lines[i])
            if (c and c.group("fence")[0] == fence[0]
                    and len(c.group("fence")) >= len(fence)
                    and not c.group("info").strip()):
                closed = True
                break
            body.append(lines[i])
            i += 1
        # A block under a list item: its lines lose the fence's indentation.
        width = len(indent)
        body = [x[width:] if x[:width].strip() == "" else x.lstrip()
                for x in body]
        yield start, indent, m.group("info").strip(), body, closed
        i += 1


def marker_of(lines, fence_line):
    """(marker body, line) of the marker for the fence, or (None, None)."""
    for back in (1, 2):
        j = fence_line - back
        if j < 0:
            break
        if back == 2 and lines[fence_line - 1].strip():
            break
        m = MARKER.match(lines[j])
        if m:
            return m.group("body"), j
    return None, None


def short_diff(want, got, want_name, got_name):
    diff = list(difflib.unified_diff(want, got, want_name, got_name,
                                     lineterm="", n=1))
    if len(diff) > 24:
        diff = diff[:24] + [f"... ({len(diff) - 24} more diff lines)"]
    return "\n".join("    " + x for x in diff)


def check_block(root, registered, doc, start, info, body, marker):
    """The problems of one block (empty when it is fine)."""
    where = f"{doc}:{start + 1}"
    if marker is None:
        return [f"{where}: code block without a marker "
                f"(<!-- from: PATH -->, <!-- from: PATH#NAME --> or "
                f"<!-- diagram -->)"]
    if marker == "diagram":
        language = info.split()[0] if info else ""
        if language != "text":
            return [f"{where}: <!-- diagram --> is for ```text blocks only, "
                    f"this block is ```{language}"]
        return []
    m = FROM.match(marker)
    if not m:
        return [f"{where}: cannot read the marker '<!-- {marker} -->'"]
    path, name = m.group("path"), m.group("name")
    full = os.path.join(root, path)
    if not os.path.isfile(full):
        return [f"{where}: {path}: no such file"]
    with open(full, encoding="utf-8", errors="replace") as h:
        text = h.read()
    if name is None:
        want, source = text.splitlines(), path
    else:
        want, error = region(text, name)
        if error:
            return [f"{where}: {path}: {error}"]
        source = f"{path}#{name}"
    problems = []
    want, got = normalise(want), normalise(body)
    if want != got:
        problems.append(f"{where}: the block differs from {source}:\n"
                        + short_diff(want, got, source, where))
    base = os.path.basename(path)
    stem = os.path.splitext(base)[0]
    if (registered is not None
            and not re.search(r"(?<![\w-])" + re.escape(stem) + r"(?![\w-])",
                              registered)):
        problems.append(f"{where}: {path}: no test names it "
                        f"(neither '{base}' nor '{stem}' appears in a "
                        f"CMakeLists.txt, cmake/, scripts/ or tests/ script)")
    return problems


def check_document(root, registered, doc):
    """(problems, number of blocks) of one document."""
    try:
        with open(os.path.join(root, doc), encoding="utf-8") as h:
            lines = h.read().splitlines()
    except OSError as e:
        return [f"{doc}: cannot read: {e.strerror}"], 0
    problems, count, used = [], 0, set()
    for start, _indent, info, body, closed in blocks(lines):
        count += 1
        if not closed:
            problems.append(f"{doc}:{start + 1}: the code block is not "
                            f"closed")
            continue
        marker, at = marker_of(lines, start)
        if at is not None:
            used.add(at)
        problems += check_block(root, registered, doc, start, info, body,
                                marker)
    inside = set()
    for start, _i, _n, body, _c in blocks(lines):
        inside.update(range(start, start + len(body) + 2))
    for j, line in enumerate(lines):
        if MARKER.match(line) and j not in used and j not in inside:
            problems.append(f"{doc}:{j + 1}: a marker with no code block "
                            f"right below it")
    return problems, count


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", ".."),
        help="the repository root (default: this file's ../..)")
    parser.add_argument("--only", nargs="+", metavar="FILE",
                        help="check these documents (relative to the root) "
                             "instead of README.md and docs/*.md")
    parser.add_argument("--no-registration", action="store_true",
                        help="do not require a test to name each source")
    args = parser.parse_args(argv)
    root = os.path.normpath(args.root)
    docs = ([os.path.relpath(os.path.abspath(d), root)
             if os.path.isabs(d) else d for d in args.only]
            if args.only else documents(root))
    registered = None if args.no_registration else registration_text(root)
    problems, total = [], 0
    for doc in docs:
        p, n = check_document(root, registered, doc)
        problems += p
        total += n
    for p in problems:
        print(p)
    if problems:
        print(f"check_doc_blocks: {len(problems)} problem(s) in "
              f"{len(docs)} document(s)")
        return 1
    print(f"check_doc_blocks: {total} code block(s) in {len(docs)} "
          f"document(s), each from a tested file or a diagram")
    return 0


if __name__ == "__main__":
    sys.exit(main())
