"""NumPy arrays in and out (python/src/arrays.cc): fetched arrays own their
data and outlive the graph; an array run_into cannot use is refused naming
the fetch and the reason."""

import gc

import numpy as np
import pytest

import adgraph as ag
from least_squares import least_squares


def test_fetched_arrays_own_their_data_and_outlive_the_graph():
    g, x, loss = least_squares()
    grad = ag.gradient(loss, x)
    session = ag.Session(g)
    first = session.run(grad, {x: np.ones(3)})
    second = session.run(grad, {x: np.zeros(3)})
    del session, g, x, loss, grad
    gc.collect()
    np.testing.assert_array_equal(first, [4.0, 4.0, 4.0])
    # At x = 0: 2 A^T (-b) = (-2, -8, 4).
    np.testing.assert_array_equal(second, [-2.0, -8.0, 4.0])
    assert first.flags.writeable and first.flags.c_contiguous


@pytest.mark.parametrize("bad, why", [
    (np.empty(3, dtype=np.float32), "dtype float32"),
    (np.empty(4), "shape [4], expected [3]"),
    (np.empty(6)[::2], "not C-contiguous"),
    ([0.0, 0.0, 0.0], "not a numpy array"),
])
def test_run_into_refuses_an_unusable_array_naming_the_fetch(bad, why):
    g, x, loss = least_squares()
    grad = ag.gradient(loss, x)
    with pytest.raises(ValueError) as error:
        ag.Session(g).run_into(grad, {x: np.ones(3)}, bad)
    assert f'fetch "{grad.name}"' in str(error.value)
    assert why in str(error.value)
