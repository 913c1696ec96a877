"""examples/python/heat_inversion.py against the C++ heat_inversion: the same
options on the same ranks, run alternately (C++, Python, C++, ...), each
timed as a whole process (mpirun included) and by its fit's own clock
(wall_time_s in the JSON). Prints one RESULT line per program (medians over
the rounds) and whether the loss histories were equal in every round.

    /usr/bin/python3 bench/python_heat_inversion.py BUILD_DIR RANKS ROUNDS [options...]
    e.g. bench/python_heat_inversion.py build 4 5 --nx 64 --ny 64 --nt 400 --max-iter 10
"""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

build, ranks, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
options = sys.argv[4:]
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
env = dict(os.environ, PYTHONPATH=os.path.join(build, "python"),
           OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
           OMPI_MCA_rmaps_base_oversubscribe="1")
mpirun = ["mpirun", "-n", str(ranks)]
programs = {
    "C++": [os.path.join(build, "examples", "heat_inversion")],
    "Python": [sys.executable, os.path.join(root, "examples", "python", "heat_inversion.py")],
}
times = {name: [] for name in programs}
fits = {name: [] for name in programs}
same = True
with tempfile.TemporaryDirectory() as out:
    for _ in range(rounds):
        histories = {}
        for name, command in programs.items():
            result = os.path.join(out, name + ".json")
            start = time.perf_counter()
            subprocess.run(mpirun + command + options + ["--output", result], env=env,
                           check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - start)
            with open(result) as f:
                doc = json.load(f)
            fits[name].append(doc["wall_time_s"])
            histories[name] = doc["loss_history"]
        same = same and histories["C++"] == histories["Python"]
for name in programs:
    print(f"RESULT {name}: process {statistics.median(times[name]):.3f} s, "
          f"fit {statistics.median(fits[name]):.3f} s (medians of {rounds})")
ratio = statistics.median(fits["Python"]) / statistics.median(fits["C++"])
print(f"RESULT Python/C++ fit time {ratio:.3f}, process time "
      f"{statistics.median(times['Python']) / statistics.median(times['C++']):.3f}; "
      f"loss histories equal in every round: {same}")
