"""Sample Fréchet (Karcher) mean by Riemannian gradient descent."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..manifolds._threads import split_sample_sum
from ..manifolds.base import Array, Manifold


class NonUniqueMeanWarning(UserWarning):
    """The data are too spread for the Fréchet mean to be certified unique."""


@dataclass(frozen=True)
class FrechetMeanResult:
    """Outcome of ``frechet_mean``; ``mean`` has the batch shape of the input data.

    ``max_radius`` (largest distance from the mean to a data point) is computed when the
    uniqueness check needs it (positive curvature), and is None otherwise.
    """

    mean: Array
    iterations: int
    converged: bool
    grad_norm: Array
    max_radius: Array | None


def uniqueness_radius(manifold: Manifold) -> float:
    """r* = min(inj M, pi / (2 sqrt(k))) / 2 of Assumption 1 (Reimherr et al. 2021).

    Data inside a ball of radius r < r* have a unique Fréchet mean; for k <= 0 the only
    limit is the injectivity radius (infinite on Hadamard manifolds).
    """
    k = manifold.curvature_bounds[1]
    bound = manifold.injectivity_radius
    if k > 0:
        bound = min(bound, np.pi / (2.0 * np.sqrt(k)))
    return 0.5 * bound


def frechet_mean(manifold: Manifold, points: Array, weights: Array | None = None,
                 init: Array | None = None, step: float = 1.0, tol: float = 1e-10,
                 max_iter: int = 500, on_spread: str = "warn") -> FrechetMeanResult:
    """Fréchet mean argmin_m sum_i w_i rho(m, x_i)^2 by the Karcher iteration.

    m_{k+1} = Exp_{m_k}(step * sum_i w_i Log_{m_k}(x_i)), the gradient descent of supplement A.1
    of Reimherr, Bharath & Soto (2021), stopped when the Riemannian gradient norm
    |sum_i w_i Log_m(x_i)| is below ``tol``. ``points`` has shape (..., n, *point_shape); leading
    dimensions are independent data sets solved together. ``weights`` (..., n) are normalised to
    sum to one. ``on_spread`` ("warn", "raise" or "ignore") decides what happens when the data are
    not certified to lie in a ball of radius below ``uniqueness_radius`` around the mean
    (positive curvature only), i.e. when the mean may not be unique.
    """
    if on_spread not in ("warn", "raise", "ignore"):
        raise ValueError(f"on_spread must be 'warn', 'raise' or 'ignore', got {on_spread!r}")
    if not 0 < step <= 1:
        raise ValueError(f"step must lie in (0, 1], got {step}")
    x = manifold.check_point(points)
    nd = len(manifold.point_shape)
    if x.ndim < nd + 1:
        raise ValueError(f"points must have shape (..., n, {manifold.point_shape}), got {x.shape}")
    n = x.shape[-nd - 1]
    if n == 0:
        raise ValueError("the Fréchet mean of an empty sample is undefined")
    batch = x.shape[: x.ndim - nd - 1]
    if weights is None:
        w = np.full(batch + (n,), 1.0 / n)
    else:
        w = np.broadcast_to(np.asarray(weights, dtype=float), batch + (n,))
        if np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError("weights must be finite and non-negative")
        w = w / w.sum(axis=-1, keepdims=True)
    m = manifold.karcher_start(x, w) if init is None else manifold.check_point(init)
    m = np.broadcast_to(m, batch + manifold.point_shape).copy()
    it = 0
    while True:
        if manifold.blockwise:
            grad = split_sample_sum(lambda xs, ws: manifold.mean_log(m, xs, ws), x, w, -nd - 1)
        else:
            grad = manifold.mean_log(m, x, w)
        gnorm = manifold.norm(m, grad)
        active = gnorm > tol
        if not np.any(active) or it >= max_iter:
            break
        it += 1
        mask = active.reshape(active.shape + (1,) * nd)
        m = np.where(mask, manifold.exp(m, step * grad), m)
    converged = bool(np.all(gnorm <= tol))
    radius = None
    if manifold.curvature_bounds[1] > 0 and on_spread != "ignore":
        radius = np.max(manifold.dist(np.expand_dims(m, -nd - 1), x), axis=-1)
    r_star = uniqueness_radius(manifold)
    if radius is not None and np.any(radius >= r_star):
        msg = (f"data reach distance {float(np.max(radius)):.4g} from their mean, beyond "
               f"r* = {r_star:.4g} (Assumption 1 of Reimherr et al. 2021): the Fréchet mean on "
               f"{manifold!r} may not be unique")
        if on_spread == "raise":
            raise ValueError(msg)
        warnings.warn(msg, NonUniqueMeanWarning, stacklevel=2)
    return FrechetMeanResult(mean=m, iterations=it, converged=converged, grad_norm=gnorm,
                             max_radius=radius)
