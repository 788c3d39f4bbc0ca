"""Faithful re-implementations of the samplers the papers' authors used (for timing baselines).

They run one point at a time, as the authors' Matlab and R code does; they are baselines, not
mechanisms, and release nothing.
"""

from __future__ import annotations

import math
import time

import numpy as np


def eigen_metropolis_seconds_per_step(n: int, scale: float, steps: int,
                                      rng: np.random.Generator) -> float:
    """Metropolis on the eigenvalue vector r of the SPD(n) Laplace (Hajri et al. 2016), as used
    by the exponential-wrapped paper with 10 000 steps per release: seconds per step.

    Scalar arithmetic on Python floats (the target is cheap; numpy calls on n-vectors would make
    the baseline slower than the authors' code).
    """
    def log_target(r):
        out = -math.sqrt(sum(x * x for x in r)) / scale
        for i in range(n):
            for j in range(i + 1, n):
                g = abs(r[i] - r[j]) / 2
                out += math.log(math.sinh(g)) if g > 0 else -math.inf
        return out

    r = list(0.1 * rng.standard_normal(n))
    lp = log_target(r)
    noise = (0.5 * scale * rng.standard_normal((steps, n))).tolist()
    uniforms = np.log(rng.random(steps)).tolist()
    t0 = time.perf_counter()
    for step, u in zip(noise, uniforms):
        prop = [a + b for a, b in zip(r, step)]
        lq = log_target(prop)
        if u < lq - lp:
            r, lp = prop, lq
    return (time.perf_counter() - t0) / steps


def sphere_metropolis_seconds_per_step(sigma: float, steps: int, rng: np.random.Generator) -> float:
    """The S^2 Metropolis chain of Reimherr et al. (2021), suppl. A.5: seconds per step."""
    eta = np.array([0.0, 0.0, 1.0])
    x = eta.copy()
    t0 = time.perf_counter()
    for _ in range(steps):
        g = rng.standard_normal(3)
        v = sigma * g / np.linalg.norm(g)
        v -= (v @ x) * x
        nv = np.linalg.norm(v)
        y = np.cos(nv) * x + np.sin(nv) * v / nv
        if rng.random() < np.exp((np.arccos(np.clip(x @ eta, -1, 1))
                                  - np.arccos(np.clip(y @ eta, -1, 1))) / sigma):
            x = y
    return (time.perf_counter() - t0) / steps


def sphere_uniform_rejection_rate(sigma: float, rng: np.random.Generator,
                                  budget_s: float = 2.0) -> float:
    """Draws per second of uniform-proposal rejection sampling on S^2 (vectorised batches)."""
    eta = np.array([0.0, 0.0, 1.0])
    got, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget_s:
        g = rng.standard_normal((200_000, 3))
        u = g / np.linalg.norm(g, axis=1, keepdims=True)
        rho = np.arccos(np.clip(u @ eta, -1, 1))
        got += int(np.sum(rng.random(len(u)) < np.exp(-rho / sigma)))
    return got / (time.perf_counter() - t0)


def spd_tangent_metropolis(w: np.ndarray, sigma: float, burn_in: int, thin: int,
                           rng: np.random.Generator) -> np.ndarray:
    """One draw of N_W(0, sigma^2) on SPD(r) the way the DP-RGD paper's code draws it: random-walk
    Metropolis-Hastings on the r(r+1)/2 free entries of a symmetric matrix E, target
    exp(-tr(W^-1 E W^-1 E) / (2 sigma^2)), ``burn_in`` steps then ``thin`` more per kept draw."""
    r = w.shape[0]
    winv = np.linalg.inv(w)
    iu = np.triu_indices(r)

    def log_target(e):
        m = winv @ e
        return -np.trace(m @ m) / (2 * sigma * sigma)

    e = np.zeros((r, r))
    lp = log_target(e)
    for _ in range(burn_in + thin):
        step = np.zeros((r, r))
        step[iu] = sigma * rng.standard_normal(len(iu[0]))
        prop = e + step + np.triu(step, 1).T
        lq = log_target(prop)
        if np.log(rng.random()) < lq - lp:
            e, lp = prop, lq
    return e


def paper_regression_gradient(manifold, p: np.ndarray, v: np.ndarray, x: np.ndarray,
                              y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Fletcher's (grad_p E, grad_v E) the way the geodesic-regression paper's code sums them: a
    Python loop over the records, one Exp, Log and adjoint pair per record."""
    gp, gv = np.zeros_like(p), np.zeros_like(p)
    for xi, yi in zip(x, y):
        w = xi * v
        yhat = manifold.exp(p, w)
        ap, av = manifold.exp_adjoints(p, w, manifold.log(yhat, yi))
        gp -= ap / len(x)
        gv -= xi * av / len(x)
    return gp, gv


def paper_kng_regression(manifold, x: np.ndarray, y: np.ndarray, p_hat: np.ndarray,
                         v_hat: np.ndarray, sigma_p: float, sigma_v: float, steps: int,
                         walk_radius: float, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """The geodesic-regression paper's KNG sampler (its Appendix A), one chain of ``steps``
    Metropolis steps per parameter: first the footpoint, proposals Exp_p(u) with u uniform in
    the disc of radius ``walk_radius`` of T_p and the shooting vector held at its non-private
    value (transported), target exp(-|grad_p E| / sigma_p); then the shooting vector on T_p~,
    proposals v + u, target exp(-|grad_v E| / sigma_v). No Hastings factor (as in the paper),
    no thinning; gradients by ``paper_regression_gradient``. Returns the last (p, v)."""
    def disc(p):
        c = rng.standard_normal(manifold.dim)
        c *= walk_radius * rng.random() ** (1.0 / manifold.dim) / np.linalg.norm(c)
        return manifold.from_coords(p, c)

    p, v = p_hat, v_hat
    current = manifold.norm(p, paper_regression_gradient(manifold, p, v, x, y)[0])
    for _ in range(steps):
        p2 = manifold.exp(p, disc(p))
        v2 = manifold.transport(p, p2, v)
        proposed = manifold.norm(p2, paper_regression_gradient(manifold, p2, v2, x, y)[0])
        if math.log(rng.random()) < -(proposed - current) / sigma_p:
            p, v, current = p2, v2, proposed
    current = manifold.norm(p, paper_regression_gradient(manifold, p, v, x, y)[1])
    for _ in range(steps):
        v2 = v + disc(p)
        proposed = manifold.norm(p, paper_regression_gradient(manifold, p, v2, x, y)[1])
        if math.log(rng.random()) < -(proposed - current) / sigma_v:
            v, current = v2, proposed
    return p, v
