#!/usr/bin/python3
"""The expected numbers of tests/optim/more_thuente_test.cc from a second
implementation: MINPACK-2's dcsrch as SciPy ships it, driven on the six
test functions of More and Thuente, "Line search algorithms with
guaranteed sufficient decrease", ACM TOMS 20(3), 1994, section 5, with
their (ftol, gtol) and initial steps 1e-3, 1e-1, 10, 1e3 (xtol 1e-10,
stpmin 0, stpmax 1e10). Prints: function, initial step, evaluations,
step, phi'(step).

    /usr/bin/python3 bench/more_thuente_reference.py
"""
import math

import numpy as np

try:
    from scipy.optimize import _minpack2 as minpack2
except ImportError:
    from scipy.optimize import minpack2


def dcsrch_search(phi, dphi, a0, ftol, gtol, xtol, stpmin, stpmax):
    """Runs dcsrch from step a0; returns (step, phi'(step), evaluations)."""
    f, g = phi(0.0), dphi(0.0)
    isave = np.zeros((2,), np.intc)
    dsave = np.zeros((13,), float)
    task = b"START"
    stp, evaluations = a0, 0
    for _ in range(100):
        stp, f, g, task = minpack2.dcsrch(
            stp, f, g, ftol, gtol, xtol, task, stpmin, stpmax, isave, dsave)
        if task[:2] != b"FG":
            break
        evaluations += 1
        f, g = phi(stp), dphi(stp)
    assert task.startswith(b"CONVERGENCE"), task
    return stp, g, evaluations


def function1(b=2.0):
    return (lambda a: -a / (a * a + b),
            lambda a: (a * a - b) / (a * a + b) ** 2)


def function2(b=0.004):
    return (lambda a: (a + b) ** 5 - 2 * (a + b) ** 4,
            lambda a: (a + b) ** 3 * (5 * (a + b) - 8))


def function3(b=0.01, ell=39):
    def base(a):
        if a <= 1 - b:
            return 1 - a
        if a >= 1 + b:
            return a - 1
        return (a - 1) ** 2 / (2 * b) + b / 2

    def dbase(a):
        if a <= 1 - b:
            return -1.0
        if a >= 1 + b:
            return 1.0
        return (a - 1) / b

    wave = ell * math.pi / 2
    return (lambda a: base(a) + 2 * (1 - b) / (ell * math.pi) * math.sin(wave * a),
            lambda a: dbase(a) + (1 - b) * math.cos(wave * a))


def yanai(b1, b2):
    def gamma(b):
        return math.sqrt(1 + b * b) - b

    g1, g2 = gamma(b1), gamma(b2)
    return (lambda a: g1 * math.sqrt((1 - a) ** 2 + b2 * b2)
            + g2 * math.sqrt(a * a + b1 * b1),
            lambda a: -g1 * (1 - a) / math.sqrt((1 - a) ** 2 + b2 * b2)
            + g2 * a / math.sqrt(a * a + b1 * b1))


CASES = [(1, function1(), 1e-3, 0.1), (2, function2(), 0.1, 0.1),
         (3, function3(), 0.1, 0.1), (4, yanai(1e-3, 1e-3), 1e-3, 1e-3),
         (5, yanai(1e-2, 1e-3), 1e-3, 1e-3), (6, yanai(1e-3, 1e-2), 1e-3, 1e-3)]

for number, (phi, dphi), ftol, gtol in CASES:
    for a0 in (1e-3, 1e-1, 1e1, 1e3):
        stp, g, evaluations = dcsrch_search(phi, dphi, a0, ftol, gtol, 1e-10, 0.0, 1e10)
        print(number, a0, evaluations, repr(stp), "%.2e" % g)
