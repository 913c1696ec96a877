"""quickstart: least squares from Python, with a gradient, a Hessian-vector
product and the gradient checker (the README's tour).

    PYTHONPATH=build/python /usr/bin/python3 examples/python/quickstart.py
"""

import sys

import numpy as np

import adgraph as ag

g = ag.Graph()
x = g.placeholder("x", (3,))
A = g.constant(np.array([[1.0, 2.0, 0.0], [0.0, 1.0, -1.0]]), "A")
b = g.constant(np.array([1.0, 2.0]), "b")
loss = ag.sum(ag.square(ag.matvec(A, x) - b))  # shapes checked here
grad = ag.gradient(loss, x)  # adjoint nodes added to g
v = g.placeholder("v", (3,))
hv = ag.gradient(ag.dot(grad, v), x)  # H v = 2 A^T A v

session = ag.Session(g)
feeds = {x: np.ones(3), v: np.array([1.0, 0.0, 0.0])}
L, dL, He1 = session.run([loss, grad, hv], feeds)
# By hand: Ax - b = (2, -2); L = 8; dL/dx = (4, 4, 4); H e1 = (2, 4, 0).
print(f"L(x)  = {L:g}   (by hand: 8)")
print(f"dL/dx = {dL}   (by hand: [4. 4. 4.])")
print(f"H e1  = {He1}   (by hand: [2. 4. 0.])")
check = ag.check_gradients(loss, [x], feeds)
print(f"gradient check: {'passed' if check.ok else check.message} "
      f"(max finite-difference error {check.max_fd_error:.1e})")
right = L == 8 and list(dL) == [4, 4, 4] and list(He1) == [2, 4, 0]
sys.exit(0 if right and check.ok else 1)
