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
import numpy as np, math
try:
    from scipy.optimize import _minpack2 as minpack2
except ImportError:
    from scipy.optimize import minpack2

def dcsrch_search(phi, dphi, a0, ftol, gtol, xtol, stpmin, stpmax, maxiter=100):
    phi1 = phi(0.0); derphi1 = dphi(0.0)
    isave = np.zeros((2,), np.intc); dsave = np.zeros((13,), float)
    task = b'START'
    stp = a0; n = 0
    for i in range(maxiter):
        stp, phi1, derphi1, task = minpack2.dcsrch(stp, phi1, derphi1, ftol, gtol, xtol, task, stpmin, stpmax, isave, dsave)
        if task[:2] == b'FG':
            n += 1
            phi1 = phi(stp); derphi1 = dphi(stp)
        else:
            break
    return stp, derphi1, n, task

def f1(b=2.0):
    return (lambda a: -a/(a*a+b)), (lambda a: (a*a-b)/(a*a+b)**2)
def f2(b=0.004):
    return (lambda a: (a+b)**5-2*(a+b)**4), (lambda a: (a+b)**3*(5*(a+b)-8))
def f3(b=0.01, l=39):
    def phi0(a):
        if a <= 1-b: return 1-a
        if a >= 1+b: return a-1
        return (a-1)**2/(2*b)+b/2
    def dphi0(a):
        if a <= 1-b: return -1.0
        if a >= 1+b: return 1.0
        return (a-1)/b
    return (lambda a: phi0(a)+2*(1-b)/(l*math.pi)*math.sin(l*math.pi*a/2)), (lambda a: dphi0(a)+(1-b)*math.cos(l*math.pi*a/2))
def yanai(b1,b2):
    g=lambda b: math.sqrt(1+b*b)-b
    return (lambda a: g(b1)*math.sqrt((1-a)**2+b2*b2)+g(b2)*math.sqrt(a*a+b1*b1)), (lambda a: -g(b1)*(1-a)/math.sqrt((1-a)**2+b2*b2)+g(b2)*a/math.sqrt(a*a+b1*b1))
cases=[("1",f1(),1e-3,0.1),("2",f2(),0.1,0.1),("3",f3(),0.1,0.1),("4",yanai(0.001,0.001),0.001,0.001),("5",yanai(0.01,0.001),0.001,0.001),("6",yanai(0.001,0.01),0.001,0.001)]
for name,(phi,dphi),ftol,gtol in cases:
    for a0 in [1e-3,1e-1,1e1,1e3]:
        stp,d,n,task=dcsrch_search(phi,dphi,a0,ftol,gtol,1e-10,0.0,1e10)
        print(name, a0, n, repr(stp), "%.2e"%d, task[:20])
