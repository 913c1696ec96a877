#!/usr/bin/env bash
# `pip install --no-build-isolation .` as the README gives it, offline, into
# a fresh venv that sees Debian's packages; then the installed package (not
# build/python) runs the README quickstart.
#   pip_install_test.sh PYTHON SOURCE_DIR BUILD_DIR WORK_DIR
# BUILD_DIR is handed to setup.py as ADGRAPH_BUILD_DIR, so the module built
# there is packaged instead of compiling the library a second time.
set -euo pipefail
python=$1 source=$2 tree=$3 work=$4
rm -rf "$work"
"$python" -m venv --system-site-packages "$work/venv"
cd "$source"
ADGRAPH_BUILD_DIR="$tree" "$work/venv/bin/python" -m pip install --quiet \
  --no-build-isolation --no-index .
cd "$work"
env -u PYTHONPATH "$work/venv/bin/python" - <<'PY'
import pathlib
import sys

import numpy as np

import adgraph as ag

where = pathlib.Path(ag.__file__).resolve()
assert str(where).startswith(str(pathlib.Path(sys.prefix).resolve())), where
g = ag.Graph()
x = g.placeholder("x", (3,))
A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]])
loss = ag.sum(ag.square(ag.matvec(g.constant(A), x) - g.constant([1.0, 2.0])))
value, grad = ag.Session(g).run([loss, ag.gradient(loss, x)], {x: np.ones(3)})
# Ax - b = (2, -2): L = 8, dL/dx = 2 A^T (2, -2) = (4, 4, 4).
assert value == 8.0 and list(grad) == [4.0, 4.0, 4.0], (value, grad)
print("installed adgraph from", where.parent, "runs the quickstart: 8.0 [4. 4. 4.]")
PY
