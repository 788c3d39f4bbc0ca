"""Critical points of the footpoint gradient field of geodesic regression, and the share of the
K-norm gradient law they carry (why the trilobite reproduction of Kulkarni & Soto is flat).

The footpoint density of the paper's procedure is exp(-|g(p)| / sigma), g(p) = grad_p E(p, v)
with v the non-private shooting vector transported to p. It peaks wherever g vanishes: at the
minimum of E, and at every other critical point (maxima and saddles, which a compact manifold
always has). Near a non-degenerate zero c of g with Jacobian J_c (in normal coordinates) the
density integrates to sigma^d C_d / |det J_c| (d = dim M), so as sigma -> 0 the share of two
zeros tends to |det J_a| / |det J_b|, whatever n and epsilon.
"""

from __future__ import annotations

import numpy as np

from ..statistics.regression import regression_gradient


def pulled_gradient(manifold, x, y, p, v, c):
    """g at Exp_p(c) (c in orthonormal coordinates of T_p), v transported along that move,
    transported back to T_p, in coordinates."""
    q = manifold.exp(p, manifold.from_coords(p, c))
    w = manifold.to_tangent(q, manifold.transport(p, q, v))
    g = regression_gradient(manifold, q, w, x, y)[0]
    return manifold.to_coords(p, manifold.to_tangent(p, manifold.transport(q, p, g)))


def jacobian(manifold, x, y, p, v, h: float = 1e-5) -> np.ndarray:
    """The Jacobian (d, d) of the pulled-back gradient field at c = 0, by central differences
    (all 2d displaced points in one batched gradient)."""
    d = manifold.dim
    c = np.concatenate([h * np.eye(d), -h * np.eye(d)])
    ps = np.broadcast_to(p, (2 * d,) + p.shape)
    vs = np.broadcast_to(v, (2 * d,) + v.shape)
    g = pulled_gradient(manifold, x, y, ps, vs, c)
    return (g[:d] - g[d:]).T / (2 * h)


def critical_point(manifold, x, y, p, v, iters: int = 40, max_step: float = 0.2):
    """Newton's method on g = 0 from (p, v) (steps capped at ``max_step``): the zero, the
    transported v, |g| there and the Jacobian."""
    for _ in range(iters):
        g0 = pulled_gradient(manifold, x, y, p, v, np.zeros(manifold.dim))
        jac = jacobian(manifold, x, y, p, v)
        if np.linalg.norm(g0) < 1e-12:
            break
        step = -np.linalg.lstsq(jac, g0, rcond=None)[0]
        step *= min(1.0, max_step / max(np.linalg.norm(step), 1e-300))
        q = manifold.exp(p, manifold.from_coords(p, step))
        v, p = manifold.to_tangent(q, manifold.transport(p, q, v)), q
    g0 = pulled_gradient(manifold, x, y, p, v, np.zeros(manifold.dim))
    return p, v, float(np.linalg.norm(g0)), jacobian(manifold, x, y, p, v)


def far_critical_points(problem, rng: np.random.Generator, starts: int = 6,
                        min_distance: float = 0.5) -> dict:
    """The fit's Jacobian, and critical points of g reached by Newton from the lowest-|g| of
    ``starts`` x 50 uniform points on the (compact) manifold, kept when at least
    ``min_distance`` from the fit. Returns the fit's log |det J| and singular values, and per far
    point its distance, E, log |det J|, singular values and Hessian signature."""
    m, x, y = problem.manifold, problem.x, problem.y
    jac_fit = jacobian(m, x, y, problem.p, problem.v)
    candidates = problem.uniform_points(50 * starts, rng)
    vs = m.to_tangent(candidates, m.transport(np.broadcast_to(problem.p, candidates.shape),
                                              candidates, np.broadcast_to(problem.v, candidates.shape)))
    norms = m.norm(candidates, regression_gradient(m, candidates, vs, x, y)[0])
    found = []
    for i in np.argsort(norms)[:starts]:
        p, v, gnorm, jac = critical_point(m, x, y, candidates[i], vs[i])
        dist = float(m.dist(problem.p, p))
        if gnorm > 1e-8 or dist < min_distance or any(abs(dist - f["distance"]) < 1e-6 for f in found):
            continue
        sym = np.linalg.eigvalsh(0.5 * (jac + jac.T))
        found.append({"distance": dist, "energy": float(regression_gradient(m, p, v, x, y)[2]),
                      "log_abs_det": float(np.linalg.slogdet(jac)[1]),
                      "singular_values": np.sort(np.linalg.svd(jac, compute_uv=False)),
                      "negative_directions": int(np.sum(sym < 0))})
    return {"log_abs_det_fit": float(np.linalg.slogdet(jac_fit)[1]),
            "singular_values_fit": np.sort(np.linalg.svd(jac_fit, compute_uv=False)),
            "far": found}
