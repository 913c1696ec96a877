"""What the sponge layer of wave_fwi.py leaves (docs/WAVE_FWI.md): the
energy returned to receivers on row 30 of a 100 x 100 grid, against the
same source in a 300 x 300 grid, for layers 0, 10, 20 and 30 points wide.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/guide_reflect.py \
        examples/python/wave_fwi.py

Prints: width, returned / direct energy, returned / returned with no layer.
"""
import importlib.util
import sys

import numpy as np
from mpi4py import MPI

spec = importlib.util.spec_from_file_location("wave_fwi", sys.argv[1])
fwi = importlib.util.module_from_spec(spec)
spec.loader.exec_module(fwi)
n, big, nt, zr = 100, 300, 600, 30
off = (big - n) // 2


def records(size, shot, depth, zrec, width):
    a = fwi.parse(["--nz", str(size), "--nx", str(size), "--nt", str(nt),
                   "--shots", str(shot), "--source-depth", str(depth),
                   "--receiver-depth", str(zrec), "--sponge", str(width)])
    p = fwi.Fwi(a, comm=MPI.COMM_SELF, c_ref=2000.0)
    return p.predict(p.patch(np.full(fwi.shape_of(a), 2000.0)))[:, 0]


reference = records(big, off + n // 2, off + n // 2, off + zr, 0)[:, off:off + n]
cols = slice(30, 70)
direct = np.sum(reference[:, cols] ** 2)
bare = np.sum((records(n, n // 2, n // 2, zr, 0) - reference)[:, cols] ** 2)
for width in (0, 10, 20, 30):
    returned = np.sum((records(n, n // 2, n // 2, zr, width) - reference)[:, cols] ** 2)
    print(width, returned / direct, returned / bare)
