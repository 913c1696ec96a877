"""The snippets of docs/PYTHON.md, each checked against values derived by
hand (the comments say how). Runs at any rank count:

    PYTHONPATH=build/python mpirun -n 2 /usr/bin/python3 examples/python/guide_python.py
"""

import os

import numpy as np
from mpi4py import MPI

import adgraph as ag

world = MPI.COMM_WORLD
HERE = os.path.dirname(os.path.abspath(__file__))


def communicators():
    # doc:begin comm
    from mpi4py import MPI

    world = MPI.COMM_WORLD
    half = world.Split(color=world.rank % 2, key=world.rank)
    g = ag.Graph(half)                     # adgraph's own duplicate of `half`
    x = g.placeholder("x", (1,))
    total = ag.mpi_allreduce(x, op="sum")  # over this rank's half only
    out = ag.Session(g).run(total, {x: np.array([float(world.rank)])})
    mine = g.comm.to_mpi4py()              # the duplicate, for your own calls
    # doc:end comm
    # By hand: the sum of the ranks of the same parity.
    want = sum(r for r in range(world.size) if r % 2 == world.rank % 2)
    assert out[0] == want, (out, want)
    assert mine.size == half.size
    half.Free()
    return f"allreduce over the half of rank 0: {out[0]:g}"


def zero_copy():
    # doc:begin zero_copy
    g = ag.Graph()
    a = g.placeholder("a", (1000,))
    y = 2.0 * ag.square(a)
    session = ag.Session(g)
    feed = np.arange(1000.0)               # C-contiguous float64: read in place
    out = np.empty(1000)
    session.run_into([y], {a: feed}, [out])  # the kernel writes into `out`
    again = session.run(y, {a: feed})      # a new array that owns its memory
    # doc:end zero_copy
    assert np.array_equal(out, 2.0 * feed ** 2)
    assert np.array_equal(again, out)
    return f"run_into: out[3] = {out[3]:g}"


def indexing():
    # doc:begin indexing
    g = ag.Graph()
    u = g.placeholder("u", (5,))
    inner = u[1:-1]                        # NumPy's basic indexing, as nodes
    positive = ag.where(u > 0, u, 0.0)     # comparisons build nodes too
    loss = ag.sum(inner * inner) + ag.sum(positive)
    du = ag.gradient(loss, u)
    value, grad = ag.Session(g).run([loss, du], {u: np.array([-2.0, -1, 0, 1, 2])})
    # value = 5; grad = [0, -2, 0, 3, 1]
    # doc:end indexing
    # By hand: inner = [-1, 0, 1] gives 2 and 2*inner; positive = [0, 0, 0, 1, 2]
    # gives 3 and the indicator [0, 0, 0, 1, 1].
    assert value == 5.0, value
    assert np.array_equal(grad, [0.0, -2.0, 0.0, 3.0, 1.0]), grad
    return f"indexing: loss {value:g}, gradient {grad}"


def loops():
    # doc:begin loop
    g = ag.Graph()
    u0 = g.placeholder("u0", (3,))
    k = g.placeholder("k", (1,))
    steps = ag.loop(100, [u0], [k],
                    lambda a: [a.carries[0] * (1.0 - 0.01 * a.invariants[0])],
                    checkpoints="auto")    # or "all", 10, "every:10", "budget:1MiB"
    loss = ag.sum(steps.carries[0])
    dk = ag.gradient(loss, k)
    value, grad = ag.Session(g).run([loss, dk],
                                    {u0: np.array([1.0, 2, 3]), k: np.array([1.0])})
    # doc:end loop
    # By hand: u_100 = u0 q^100 with q = 1 - 0.01 k = 0.99, so
    # loss = 6 q^100 and dloss/dk = 6 * 100 q^99 * (-0.01) = -6 q^99.
    assert np.isclose(value, 6 * 0.99 ** 100, rtol=1e-13), value
    assert np.isclose(grad[0], -6 * 0.99 ** 99, rtol=1e-13), grad
    return f"loop: loss {value:.12g}, dloss/dk {grad[0]:.12g}"


def custom():
    # doc:begin custom_op
    cube = ag.custom_op(
        "guide_cube",
        forward=lambda x: x ** 3,                          # read-only inputs
        vjp=lambda xs, y, ybar: [3 * xs[0] ** 2 * ybar],   # one per input
        jvp=lambda xs, ts: 3 * xs[0] ** 2 * ts[0],
        doc="y = x^3, in numpy")
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    loss = ag.sum(cube(x))
    feeds = {x: np.array([1.0, -2.0])}
    grad = ag.Session(g).run(ag.gradient(loss, x), feeds)   # [3, 12]
    check = ag.check_gradients(loss, [x], feeds)            # check.ok
    # doc:end custom_op
    assert np.array_equal(grad, [3.0, 12.0]), grad
    assert check.ok, check.message
    return f"custom op: gradient {grad}, check {'passed' if check.ok else 'failed'}"


def errors():
    # doc:begin errors
    g = ag.Graph()
    a = g.placeholder("a", (3,))
    b = g.placeholder("b", (2,))
    try:
        a + b
    except ag.ShapeError as e:             # also a ValueError
        message = str(e)                   # names the node, input and shapes
    # doc:end errors
    assert "does not broadcast" in message, message
    assert isinstance(ag.ShapeError("x"), ValueError)
    return "shape error: " + message


def minimizing():
    # doc:begin minimize
    g = ag.Graph()
    theta = g.placeholder("theta", (2,))
    loss = ag.sum(ag.square(ag.mpi_bcast(theta) - np.array([1.0, 2.0])))
    result = ag.minimize(loss, [theta], [np.zeros(2)], layout="replicated",
                         max_iterations=50)
    # result.x[0] is close to [1, 2] on every rank; result.iterations, ...
    # doc:end minimize
    x = result.x[0]
    assert np.allclose(x, [1.0, 2.0], atol=1e-6), result
    return f"minimize: theta = [{x[0]:.6f}, {x[1]:.6f}]"


def documents():
    # doc:begin load_json
    doc = ag.load_json(os.path.join(HERE, "..", "graphs", "hello.json"))
    values = ag.Session(doc.graph).run(doc.fetch_values, doc.feeds)
    # the document's "fetch": s, L and dL_dx, as adgraph-run prints them
    # doc:end load_json
    r1 = world.rank + 1.0
    s = sum((r + 1.0) ** 2 for r in range(world.size)) * np.array([1.0, 4.0])
    if world.rank == 0:
        assert np.array_equal(values[0], s), values
        assert values[1] == 0.5 * np.sum(s * s), values
    assert np.array_equal(values[2], 2 * r1 * np.array([1.0, 2.0]) * s), values
    return f"load_json: L = {values[1]:g} on rank 0"


def main():
    lines = [communicators(), zero_copy(), indexing(), loops(), custom(), errors(),
             minimizing(), documents()]
    if world.rank == 0:
        print("\n".join(lines))
        print(f"guide_python: every snippet checked on {world.size} rank(s)")


main()
