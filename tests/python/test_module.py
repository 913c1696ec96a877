"""The extension module (python/src/module.cc): C++ errors reach Python
with the library's types and messages, and every registered op is a
documented function of the package."""

import numpy as np
import pytest

import adgraph as ag


def test_errors_have_the_librarys_types_and_messages():
    g = ag.Graph()
    a = g.placeholder("a", (3,))
    b = g.placeholder("b", (2,))
    with pytest.raises(ag.ShapeError) as error:
        ag.add(a, b, name="l")
    assert isinstance(error.value, ValueError) and isinstance(error.value, ag.Error)
    assert isinstance(error.value, RuntimeError)
    assert str(error.value).startswith('node "l" (add)')
    assert "[3]" in str(error.value) and "[2]" in str(error.value)
    with pytest.raises(ag.GraphError, match="unknown op"):
        ag._adgraph.add_node(g, "no_such_op", [a], {}, "", [])
    with pytest.raises(ag.RunError, match='"a"'):
        ag.Session(g).run(ag.sum(a))
    with pytest.raises(ag.RunError, match=r"expected shape \[3\], got \[2\]"):
        ag.Session(g).run(ag.sum(a), {a: np.ones(2)})
    with pytest.raises(ag.OptionsError):
        ag.Session(g, num_threads=-1)
    with pytest.raises(ag.GraphError, match="attribute"):
        ag.mpi_bcast(a, root=object())


def test_every_registered_op_is_a_documented_function():
    for op in ag._adgraph.registered_ops():
        f = getattr(ag, op["name"])
        assert callable(f)
    assert "root" in ag.mpi_bcast.__doc__
    assert "sum over ranks" in ag.mpi_sum.__doc__
