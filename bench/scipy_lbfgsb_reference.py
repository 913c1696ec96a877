#!/usr/bin/python3
"""SciPy's L-BFGS-B on the bounded problems of tests/optim/lbfgsb_test.cc
and bench/lbfgs_counts.cc: the independent reference their expected values
and iteration counts come from. Run: /usr/bin/python3 bench/scipy_lbfgsb_reference.py
(Debian's python3-scipy; SciPy 1.10 wraps the L-BFGS-B 3.0 Fortran code)."""
import numpy as np
import scipy
from scipy.optimize import minimize


def driver1(x):
    """The L-BFGS-B distribution's driver1 problem (25 variables)."""
    t = x[1:] - x[:-1] ** 2
    f = 0.25 * (x[0] - 1) ** 2 + 4 * np.sum(t ** 2)
    g = np.zeros_like(x)
    g[0] = 0.5 * (x[0] - 1)
    g[1:] += 8 * t
    g[:-1] += -16 * x[:-1] * t
    return f, g


def coupled(x):
    """Σ a_i (x_i − t_i)² + x_i⁴/4 + (Σ x)²/2, a_i = 1 + sin(i)/2, t_i = cos(0.7 i)."""
    i = np.arange(x.size, dtype=float)
    a, t = 1 + 0.5 * np.sin(i), np.cos(0.7 * i)
    s = x.sum()
    f = np.sum(a * (x - t) ** 2 + 0.25 * x ** 4) + 0.5 * s * s
    g = 2 * a * (x - t) + x ** 3 + s
    return f, g


class Heat:
    """The demo's heat problem (solvers/heat_solver.h) on an n × n grid:
    u⁺ = u + dt(κ·Δ_h u + 1) with zero boundary values, u⁰ = sin(πx)sin(πy),
    κ_true = 1 + exp(−|x − ½|²/0.05)/2, dt = 0.2h²/max κ_true; loss
    Σ (u^nt − u_obs)² over all points (sensors: a 0/1 mask), with the
    adjoint written out by hand."""

    def __init__(self, n, nt, mask=None):
        self.n, self.nt, self.h = n, nt, 1.0 / (n + 1)
        x = (np.arange(n) + 1) * self.h
        X, Y = np.meshgrid(x, x, indexing="ij")
        self.u0 = np.sin(np.pi * X) * np.sin(np.pi * Y)
        self.kappa_true = 1 + 0.5 * np.exp(-((X - 0.5) ** 2 + (Y - 0.5) ** 2) / 0.05)
        self.dt = 0.2 * self.h ** 2 / self.kappa_true.max()
        self.mask = np.ones((n, n)) if mask is None else mask
        self.obs = self.forward(self.kappa_true)[-1]

    def laplacian(self, u):
        p = np.pad(u, 1)
        return (p[2:, 1:-1] + p[:-2, 1:-1] + p[1:-1, 2:] + p[1:-1, :-2] - 4 * u) / self.h ** 2

    def forward(self, kappa):
        states = [self.u0]
        for _ in range(self.nt):
            u = states[-1]
            states.append(u + self.dt * (kappa * self.laplacian(u) + 1.0))
        return states

    def fg(self, flat):
        kappa = flat.reshape(self.n, self.n)
        states = self.forward(kappa)
        r = self.mask * (states[-1] - self.obs)
        bar_u, bar_k = 2 * r, np.zeros_like(kappa)
        for u in reversed(states[:-1]):
            bar_k += self.dt * self.laplacian(u) * bar_u
            bar_u = bar_u + self.dt * self.laplacian(kappa * bar_u)
        return float(np.sum(r * (states[-1] - self.obs))), bar_k.ravel()


def splitmix64(z):
    m = (1 << 64) - 1
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def noise_deviate(seed, index):
    """solvers::heat_noise_deviate: Box–Muller on two SplitMix64 uniforms."""
    golden, m = 0x9E3779B97F4A7C15, (1 << 64) - 1
    base = (seed + (2 * index + 1) * golden) & m
    u1 = (splitmix64(base) >> 11) * 2.0 ** -53
    u2 = (splitmix64((base + golden) & m) >> 11) * 2.0 ** -53
    return np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(2.0 * np.pi * u2)


class SensorHeat(Heat):
    """Heat with sensors every k-th point (rows and columns k//2, k//2 + k,
    …), observations at several steps, relative Gaussian noise, and the
    smoothness term α Σ (κ_p − κ_q)² over right and lower neighbours."""

    def __init__(self, n, nt, every, steps, noise, seed, smooth):
        mask = np.zeros((n, n))
        mask[every // 2::every, every // 2::every] = 1
        super().__init__(n, nt, mask)
        self.steps, self.smooth = steps, smooth
        states = self.forward(self.kappa_true)
        clean = np.array([states[t] for t in steps])
        rms = np.sqrt(np.sum((clean * mask) ** 2) / (mask.sum() * len(steps)))
        e = np.array([[[noise_deviate(seed, (k * n + i) * n + j)
                        for j in range(n)] for i in range(n)]
                      for k in range(len(steps))])
        self.obs_t = clean + noise * rms * e

    def fg(self, flat):
        kappa = flat.reshape(self.n, self.n)
        states = self.forward(kappa)
        f, residual = 0.0, {}
        for k, t in enumerate(self.steps):
            r = self.mask * (states[t] - self.obs_t[k])
            f += float(np.sum(r * (states[t] - self.obs_t[k])))
            residual[t] = 2 * r
        bar_u, bar_k = np.zeros_like(kappa), np.zeros_like(kappa)
        for t in range(self.nt, 0, -1):
            bar_u = bar_u + residual.get(t, 0)
            u = states[t - 1]
            bar_k += self.dt * self.laplacian(u) * bar_u
            bar_u = bar_u + self.dt * self.laplacian(kappa * bar_u)
        dx, dy = np.diff(kappa, axis=0), np.diff(kappa, axis=1)
        f += self.smooth * (np.sum(dx ** 2) + np.sum(dy ** 2))
        g = np.zeros_like(kappa)
        g[1:, :] += 2 * dx
        g[:-1, :] -= 2 * dx
        g[:, 1:] += 2 * dy
        g[:, :-1] -= 2 * dy
        return f, (bar_k + self.smooth * g).ravel()


def report(name, r):
    print(f"{name}: nit={r.nit} nfev={r.nfev} f={r.fun!r} message={r.message}")
    print("  x =", np.array2string(r.x, precision=17, separator=", ",
                                   max_line_width=1000))


if __name__ == "__main__":
    print("scipy", scipy.__version__)
    n = 25
    lower = np.array([1.0 if i % 2 == 0 else -100.0 for i in range(n)])
    bounds = list(zip(lower, np.full(n, 100.0)))
    report("driver1 (m=5, SciPy defaults)",
           minimize(driver1, np.full(n, 3.0), jac=True, method="L-BFGS-B",
                    bounds=bounds, options=dict(maxcor=5)))
    report("driver1 without bounds (m=5, SciPy defaults)",
           minimize(driver1, np.full(n, 3.0), jac=True, method="L-BFGS-B",
                    options=dict(maxcor=5)))
    report("coupled (24 variables in [-0.3, 0.4], m=10, pgtol 1e-12)",
           minimize(coupled, np.full(24, 0.1), jac=True, method="L-BFGS-B",
                    bounds=[(-0.3, 0.4)] * 24,
                    options=dict(gtol=1e-12, ftol=1e-15, maxiter=1000)))
    heat = Heat(32, 200)
    r = minimize(heat.fg, np.ones(32 * 32), jac=True, method="L-BFGS-B",
                 bounds=[(1.0, 1.3)] * (32 * 32))
    print(f"heat 32x32 nt=200 kappa in [1, 1.3] from 1 (m=10, SciPy defaults): "
          f"nit={r.nit} nfev={r.nfev} f={r.fun!r} message={r.message}")
    err = np.linalg.norm(r.x - heat.kappa_true.ravel()) / np.linalg.norm(heat.kappa_true)
    active = int(np.sum((r.x == 1.0) | (r.x == 1.3)))
    print(f"  relative kappa error {err:.6e}, {active} active bounds")
    noisy = SensorHeat(32, 200, every=3, steps=[50, 100, 200], noise=0.01,
                       seed=7, smooth=1e-4)
    r = minimize(noisy.fg, np.ones(32 * 32), jac=True, method="L-BFGS-B",
                 bounds=[(1.0, 1.6)] * (32 * 32))
    err = np.linalg.norm(r.x - noisy.kappa_true.ravel()) / np.linalg.norm(noisy.kappa_true)
    print(f"noisy sparse smooth heat (every 3, steps 50 100 200, noise 0.01 seed 7, "
          f"smooth 1e-4, kappa in [1, 1.6]): nit={r.nit} nfev={r.nfev} f={r.fun!r} "
          f"message={r.message}")
    print(f"  relative kappa error {err:.6e}")
