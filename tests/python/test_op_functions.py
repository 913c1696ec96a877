"""The generated op functions (python/adgraph/_ops.py): every attribute of
every registered op can be passed from Python (none collides with the name
or control-edge keywords), pad against numpy.pad with its `after`, control
edges through `control_after=`; and help() of every communication op says
what goes in, what comes out, in which order and what a rank without a
partner gets, checked against what the ops do. Run at 1 and 2 ranks."""

import inspect
import pydoc

import numpy as np
import pytest
from mpi4py import MPI

import adgraph as ag
from adgraph import _adgraph, _ops

RANK, SIZE = MPI.COMM_WORLD.rank, MPI.COMM_WORLD.size
OPS = _adgraph.registered_ops()
# Central differences of losses of up to ~100: errors of ~1e-7.
FD_TOLERANCE = 1e-6


def recording(monkeypatch):
    """Replaces add_node with a recorder of its arguments."""
    calls = []

    def record(graph, op, inputs, attrs, name, after):
        calls.append(dict(op=op, attrs=dict(attrs), name=name, after=list(after)))
        return ["out"]
    monkeypatch.setattr(_adgraph, "add_node", record)
    return calls


@pytest.mark.parametrize("op", OPS, ids=[op["name"] for op in OPS])
def test_every_attribute_of_every_op_can_be_passed(op, monkeypatch):
    g = ag.Graph()
    edge = g.placeholder("edge", ())
    function = _ops.make_op_function(op)  # ag.loop, say, is the package's own
    calls = recording(monkeypatch)
    for a in op["attrs"]:
        marker = object()
        function(g, **{a["name"]: marker})
        assert calls[-1]["attrs"] == {a["name"]: marker}, a["name"]
        assert calls[-1]["after"] == [] and calls[-1]["name"] == ""
    # The long spellings always mean the node's name and its control edges.
    assert "control_after" not in [a["name"] for a in op["attrs"]]
    assert "name_" not in [a["name"] for a in op["attrs"]]
    function(g, name_="n", control_after=[edge])
    assert calls[-1]["name"] == "n" and calls[-1]["after"] == [edge]
    assert calls[-1]["attrs"] == {}
    # The short ones too, unless the op has such an attribute.
    names = {a["name"] for a in op["attrs"]}
    if "after" not in names:
        function(g, after=edge)
        assert calls[-1]["after"] == [edge] and calls[-1]["attrs"] == {}
    if "name" not in names:
        function(g, name="m")
        assert calls[-1]["name"] == "m" and calls[-1]["attrs"] == {}
    params = inspect.signature(function).parameters
    assert names <= set(params), "help() shows every attribute"


def test_control_edges_are_refused_unless_values_or_given_twice():
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    with pytest.raises(TypeError, match=r"identity: after= takes the control edges.*int 1"):
        ag.identity(x, after=1)
    with pytest.raises(TypeError, match="control edges given twice"):
        ag.identity(x, after=[x], control_after=[x])


@pytest.mark.parametrize("shape, axis, before, after, value", [
    ((3,), 0, 2, 1, 0.0), ((3,), 0, 0, 4, -1.5), ((2, 3), 1, 1, 2, 7.0),
    ((2, 3), 0, 3, 0, 0.0), ((2, 3, 4), -1, 2, 1, 0.5), ((2, 3, 4), 1, 0, 0, 0.0),
])
def test_pad_with_before_and_after_matches_numpy_pad(shape, axis, before, after, value):
    g = ag.Graph()
    x = g.placeholder("x", shape)
    xv = np.arange(np.prod(shape), dtype=float).reshape(shape) + RANK
    y = ag.pad(x, axis=axis, before=before, after=after, value=value)
    widths = [(0, 0)] * len(shape)
    widths[axis] = (before, after)
    expected = np.pad(xv, widths, constant_values=value)
    np.testing.assert_array_equal(ag.Session(g).run(y, {x: xv}), expected)
    weights = np.linspace(0.5, 1.5, expected.size).reshape(expected.shape)
    result = ag.check_gradients(ag.sum(ag.square(y) * weights), [x], {x: xv},
                                tolerance=FD_TOLERANCE)
    assert result.ok, result.message


def test_pad_tangent_with_a_fill_value():
    # pad is affine: its tangent pads with zeros, whatever the fill value.
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    y = ag.pad(x, axis=0, before=1, after=2, value=7.0)
    (tangent,) = ag.jvp([y], [x], [g.constant(np.ones(3))])
    np.testing.assert_array_equal(ag.Session(g).run(tangent, {x: np.ones(3)}),
                                  [0.0, 1.0, 1.0, 1.0, 0.0, 0.0])


touched = []
touch = ag.custom_op(
    "test_op_functions_touch",
    forward=lambda x: touched.append(1) or x,
    vjp=lambda xs, y, ybar: [ybar],
    jvp=lambda xs, ts: ts[0])


@pytest.mark.parametrize("build", [
    lambda x, s: ag.pad(x, axis=0, before=2, after=1, control_after=[s]),
    lambda x, s: ag.pad(x, axis=0, after=1, control_after=s),
    lambda x, s: ag.identity(x, after=[s]),
    lambda x, s: ag.identity(x, control_after=[s]),
])
def test_a_control_edge_makes_a_node_run_first(build):
    # touch(x) is needed by nothing but the control edge: fetching the node
    # runs it all the same, and only then.
    g = ag.Graph()
    x = g.placeholder("x", (2,))
    s = touch(x)
    y = build(x, s)
    touched.clear()
    ag.Session(g).run(ag.pad(x, axis=0, after=1), {x: np.ones(2)})
    assert touched == []
    ag.Session(g).run(y, {x: np.ones(2)})
    assert touched == [1]


COMM_OPS = [op for op in OPS if op["communication"]]


def words(text):
    return " ".join(text.split())


@pytest.mark.parametrize("op", COMM_OPS, ids=[op["name"] for op in COMM_OPS])
def test_help_of_a_communication_op_says_inputs_outputs_and_partners(op):
    # Every input and output has a line of its own, in order, and the
    # ranks' part says who exchanges with whom; help() shows all of it.
    assert len(op["input_docs"]) == len(op["inputs"]), "one line per input"
    outputs = op["num_outputs"]
    assert len(op["output_docs"]) == (outputs if outputs > 0 else 1)
    assert all(doc.strip() for doc in op["input_docs"] + op["output_docs"])
    assert op["ranks_doc"].strip()
    text = words(pydoc.render_doc(getattr(ag, op["name"]), renderer=pydoc.plaintext))
    for name, doc in zip(op["inputs"], op["input_docs"]):
        assert words(f"{name} {doc}") in text or words(f"{name}, ... {doc}") in text
    position = 0
    for k, doc in enumerate(op["output_docs"]):
        shown = words(f"[{k}] {doc}") if outputs > 1 else words(doc)  # 0: any number
        assert shown in text[position:], f"output {k} in order"
        position = text.index(shown, position)
    assert words(op["ranks_doc"]) in text


def test_data_exchange_gives_what_its_help_says_in_that_order():
    # A 1 x SIZE row of patches, then a SIZE x 1 column: rank r sends
    # 10 r + k in direction k (left, right, up, down); the help says output
    # k is what the neighbour in direction k sent towards r, zeros where
    # there is none.
    doc = words(ag.data_exchange.__doc__)
    assert "[0] from_left" in doc and "[3] from_down" in doc and "zeros" in doc
    for rows, cols in ((1, SIZE), (SIZE, 1)):
        g = ag.Graph()
        sends = [g.constant(np.full(2, 10.0 * RANK + k)) for k in range(4)]
        got = ag.Session(g).run(list(ag.data_exchange(*sends, rows=rows, cols=cols)))
        i, j = divmod(RANK, cols)
        neighbours = [(i, j - 1, 1), (i, j + 1, 0), (i - 1, j, 3), (i + 1, j, 2)]
        for k, (ni, nj, their) in enumerate(neighbours):
            present = 0 <= ni < rows and 0 <= nj < cols
            expected = 10.0 * (ni * cols + nj) + their if present else 0.0
            np.testing.assert_array_equal(got[k], np.full(2, expected), err_msg=f"{k}")


def test_rooted_collectives_give_what_their_help_says_off_root():
    # mpi_sum, mpi_gather and mpi_total: zeros on ranks other than root.
    g = ag.Graph()
    x = g.constant(np.array([1.0 + RANK, 2.0]))
    root = SIZE - 1
    sums, gathered, total = ag.Session(g).run(
        [ag.mpi_sum(x, root=root), ag.mpi_gather(x, root=root), ag.mpi_total(x, root=root)])
    for op in ("mpi_sum", "mpi_gather", "mpi_total"):
        assert "other ranks" in words(getattr(ag, op).__doc__)
    if RANK == root:
        np.testing.assert_array_equal(sums, [SIZE + SIZE * (SIZE - 1) / 2, 2.0 * SIZE])
        np.testing.assert_array_equal(gathered[:, 1], np.full(SIZE, 2.0))
        assert total == SIZE + SIZE * (SIZE - 1) / 2 + 2.0 * SIZE
    else:
        assert not sums.any() and not gathered.any() and total == 0.0
    assert gathered.shape == (SIZE, 2)


def test_sendrecv_returns_x_on_ranks_other_than_dest():
    doc = words(ag.mpi_sendrecv.__doc__)
    assert "on src and other ranks: their own x" in doc
    g = ag.Graph()
    x = g.constant(np.array([float(RANK)]))
    y = ag.Session(g).run(ag.mpi_sendrecv(x, src=0, dest=SIZE - 1))
    np.testing.assert_array_equal(y, [0.0 if RANK == SIZE - 1 else float(RANK)])


def test_help_names_the_keywords_an_op_takes():
    assert "``control_after``" in ag.pad.__doc__
    assert "Here ``after=`` is this op's attribute, and control edges go through " \
        "``control_after=``" in words(ag.pad.__doc__)
    assert "``after`` or ``control_after``" in words(ag.identity.__doc__)
    assert _ops.CONTROL_KEYWORDS == ("after", "control_after")
