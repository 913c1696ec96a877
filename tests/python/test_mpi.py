"""Communication ops from Python at 1-4 ranks, ADCME's examples, and the
interplay with mpi4py (split communicators, the program's own messages).
Expected values are formulas in rank and size, derived by hand."""

import numpy as np
import pytest
from mpi4py import MPI

import adgraph as ag

WORLD = MPI.COMM_WORLD
RANK, SIZE = WORLD.rank, WORLD.size


def test_adcme_simple_sum():
    # l = mpi_bcast(theta)^rank, L = sum(mpi_sum(l)): on rank 0
    # L = sum_r 2^r = 2^P - 1 and dL/dtheta = sum_r r 2^(r-1); 0 elsewhere.
    g = ag.Graph()
    theta = g.placeholder("theta", (1,))
    l = ag.mpi_bcast(theta, root=0) ** ag.mpi_rank(g)
    loss = ag.sum(ag.mpi_sum(l))
    value, grad = ag.Session(g).run([loss, ag.gradient(loss, theta)], {theta: [2.0]})
    if RANK == 0:
        assert value == 2.0 ** SIZE - 1
        assert grad[0] == sum(r * 2.0 ** (r - 1) for r in range(SIZE))
    else:
        assert value == 0.0 and grad[0] == 0.0


def test_adcme_reduce_sum_and_broadcast():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    total = ag.mpi_sum(x * (RANK + 1.0), root=SIZE - 1)
    shared = ag.mpi_bcast(x, root=SIZE - 1)
    xv = np.array([1.0 + RANK, 2.0])
    t, s = ag.Session(g).run([total, shared], {x: xv})
    if RANK == SIZE - 1:
        np.testing.assert_array_equal(
            t, [sum((r + 1.0) * (1.0 + r) for r in range(SIZE)),
                sum(2.0 * (r + 1) for r in range(SIZE))])
    else:
        np.testing.assert_array_equal(t, [0.0, 0.0])
    np.testing.assert_array_equal(s, [float(SIZE), 2.0])


def test_adcme_send_recv_and_its_gradient():
    # Rank 0 sends x to the last rank, which returns it; others return x.
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    y = ag.mpi_sendrecv(x, src=0, dest=SIZE - 1)
    loss = ag.sum(y * np.array([1.0, 2.0]) * (RANK + 1.0))
    xv = np.array([3.0, 4.0]) * (RANK + 1)
    value, grad = ag.Session(g).run([loss, ag.gradient(loss, x)], {x: xv})
    got = np.array([3.0, 4.0]) if RANK == SIZE - 1 else xv
    assert value == np.dot(got, [1.0, 2.0]) * (RANK + 1)
    if SIZE > 1 and RANK == 0:
        np.testing.assert_array_equal(grad, np.array([1.0, 2.0]) * (1 + SIZE))
    elif SIZE > 1 and RANK == SIZE - 1:
        np.testing.assert_array_equal(grad, [0.0, 0.0])
    r = ag.check_gradients(loss, [x], {x: xv})
    assert r.ok, r.message


def test_allreduce_bcast_and_sum_pass_the_checker():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    y = ag.mpi_allreduce(ag.sin(x) * (RANK + 1.0))
    z = ag.mpi_bcast(ag.square(y), root=SIZE // 2)
    loss = ag.sum(ag.mpi_sum(z * (RANK + 0.5), root=0) + ag.exp(x * 0.1 * RANK))
    r = ag.check_gradients(loss, [x], {x: np.array([0.1, -0.3, 0.5]) + RANK})
    assert r.ok, r.message
    sums = ag.Session(g).run(y, {x: np.full(3, np.pi / 2)})
    np.testing.assert_allclose(sums, np.full(3, SIZE * (SIZE + 1) / 2), rtol=1e-15)


def test_the_ring_with_isend_irecv_waitall_and_its_gradient():
    # Each rank sends x to its right and receives its left neighbour's.
    right, left = (RANK + 1) % SIZE, (RANK - 1) % SIZE
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    send = ag.mpi_isend(x, dest=right, tag=7)
    recv = ag.mpi_irecv(x, src=left, tag=7)
    _, got = ag.mpi_waitall(send, recv)
    loss = ag.sum(got * got) * (RANK + 1.0)
    xv = np.array([1.0, 2.0]) * (RANK + 1)
    value, grad = ag.Session(g).run([loss, ag.gradient(loss, x)], {x: xv})
    from_left = np.array([1.0, 2.0]) * (left + 1)
    assert value == np.dot(from_left, from_left) * (RANK + 1)
    # x of this rank reaches its right neighbour, whose loss weighs (right + 1).
    np.testing.assert_array_equal(grad, 2 * xv * (right + 1))
    r = ag.check_gradients(loss, [x], {x: xv})
    assert r.ok, r.message


def test_a_split_mpi4py_communicator_and_the_programs_own_messages():
    # A user's ANY_SOURCE/ANY_TAG receive is outstanding on COMM_WORLD while
    # adgraph sends messages on its duplicates: it must take only the
    # user's message, sent after the run.
    pending = WORLD.irecv(source=MPI.ANY_SOURCE, tag=MPI.ANY_TAG)
    assert WORLD.allreduce(RANK) == SIZE * (SIZE - 1) // 2
    half = WORLD.Split(RANK % 2, RANK)
    g = ag.Graph(half)
    assert g.comm.size == half.size and g.comm.rank == half.rank
    x = g.placeholder("x", ())
    y = ag.mpi_allreduce(x)
    right = (half.rank + 1) % half.size
    ring = ag.mpi_sendrecv(x, src=0, dest=half.size - 1)
    sent = ag.mpi_isend(x, dest=right, tag=3)
    received = ag.mpi_wait(ag.mpi_irecv(x, src=(half.rank - 1) % half.size, tag=3))
    outs = ag.Session(g).run([y, ring, received, ag.mpi_wait(sent)], {x: float(RANK)})
    members = [r for r in range(SIZE) if r % 2 == RANK % 2]
    assert outs[0] == float(sum(members))
    assert outs[2] == float(members[(half.rank - 1) % half.size])
    assert WORLD.allreduce(1) == SIZE
    WORLD.send(("user", RANK), dest=(RANK + 1) % SIZE, tag=11)
    assert pending.wait() == ("user", (RANK - 1) % SIZE)
    back = g.comm.to_mpi4py()
    assert back.allreduce(1) == half.size
    half.Free()


def test_a_comm_scope_on_a_row_communicator():
    rows = 2 if SIZE % 2 == 0 else 1
    cols = SIZE // rows
    g = ag.Graph()
    x = g.placeholder("x", ())
    row = g.comm.row_communicator(rows, cols)
    with ag.comm_scope(g, row):
        s = ag.mpi_allreduce(x * (RANK + 1.0))
    loss = s * s
    i = RANK // cols
    members = [i * cols + j for j in range(cols)]
    value, grad = ag.Session(g).run([s, ag.gradient(loss, x)], {x: 1.0})
    assert value == float(sum(m + 1 for m in members))
    # d/dx of sum over the row's ranks of s^2 = cols * 2 s * (rank + 1).
    assert grad == cols * 2 * value * (RANK + 1)


def test_an_error_in_a_communication_graph_is_the_same_on_every_rank():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    with pytest.raises(ag.ShapeError) as error:
        ag.mpi_bcast(x, root=SIZE, name="b")
    messages = WORLD.allgather(str(error.value))
    assert all(m == messages[0] for m in messages)
    assert messages[0] == (f'node "b" (mpi_bcast): attribute "root": root {SIZE} '
                           f'is not a rank of a {SIZE}-rank communicator')
