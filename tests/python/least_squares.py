"""The python suites' small problem: L = |A x - b|^2."""

import numpy as np

import adgraph as ag

A = np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]])
B = np.array([1.0, 2.0])


def least_squares():
    g = ag.Graph()
    x = g.placeholder("x", (3,))
    loss = ag.sum(ag.square(ag.matvec(g.constant(A), x) - g.constant(B)))
    return g, x, loss
