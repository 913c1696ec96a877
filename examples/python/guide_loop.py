"""docs/LOOPS.md's example in Python: u_{t+1} = a*u_t + x_t over 4 steps,
L = u_4, its gradient under each checkpoint schedule.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/guide_loop.py

By hand (a = 0.5, u_0 = 1, x = 1, 2, 3, 4): u = 1.5, 2.75, 4.375, 6.1875;
dL/da = 0.125*1 + 0.25*1.5 + 0.5*2.75 + 4.375 = 6.25; dL/dx_t = a^(3-t).
The test examples/python/guide_loop compares the output with
tests/guides/guide_loop.expected.
"""

import numpy as np

import adgraph as ag


def run(checkpoints):
    # doc:begin loop
    g = ag.Graph()
    a = g.placeholder("a", (1,))
    x = g.placeholder("x", (4, 1))  # one row per step
    u0 = g.constant(np.ones(1))

    def step(s):
        nxt = s.invariants[0] * s.carries[0] + s.xs[0]
        return [nxt], [nxt]  # next carries, per-step outputs

    r = ag.loop(4, [u0], [a], step, checkpoints=checkpoints, xs=[x])
    loss = ag.sum(r.carries[0])
    da, dx = ag.gradients(loss, [a, x])
    out = ag.Session(g).run([loss, r.outputs[0], da, dx],
                            {a: np.array([0.5]), x: np.arange(1.0, 5.0).reshape(4, 1)})
    # doc:end loop
    return out


first = run("all")
for label, value in zip(["L =", "u_1..u_4 =", "dL/da =", "dL/dx ="], first):
    print(label, " ".join(f"{v:g}" for v in np.ravel(value)))
for schedule in ["all", "every:2", "2", "budget:16", "auto", 3]:
    same = all(np.array_equal(p, q) for p, q in zip(run(schedule), first))
    print(f"{schedule!r:11} same bits as all: {'yes' if same else 'NO'}")
