"""Global sensitivity of the sample Fréchet mean (Reimherr, Bharath & Soto 2021, Theorem 2)."""

from __future__ import annotations

import numpy as np

from ..manifolds import Manifold
from .frechet import uniqueness_radius


def curvature_factor(radius: float, k: float) -> float:
    """h(r, k) = 2 r sqrt(k) cot(2 r sqrt(k)) for k > 0, and 1 for k <= 0."""
    if k <= 0:
        return 1.0
    x = 2.0 * radius * np.sqrt(k)
    return float(x / np.tan(x))


def check_assumption_1(manifold: Manifold, radius: float) -> None:
    """Raise unless 0 < radius < r* = min(inj M, pi/(2 sqrt(k)))/2 (Assumption 1)."""
    r_star = uniqueness_radius(manifold)
    if not (np.isfinite(radius) and 0 < radius < r_star):
        k = manifold.curvature_bounds[1]
        raise ValueError(
            f"the data radius must satisfy 0 < radius < r* = min(inj, pi/(2 sqrt(k)))/2 = "
            f"{r_star:.6g} on {manifold!r} (Assumption 1 of Reimherr et al. 2021, with injectivity "
            f"radius {manifold.injectivity_radius:.6g} and curvature bound k = {k:g}); got {radius}")


def frechet_mean_sensitivity(manifold: Manifold, radius: float, n: int) -> float:
    """Delta = 2 r (2 - h) / (n h), h = h(r, k) with k the upper curvature bound (Theorem 2).

    Bounds rho(mean(D), mean(D')) for data sets of size n in a ball of radius r that differ in
    one point. Flat and negatively curved spaces give 2r/n.
    """
    if int(n) != n or n < 1:
        raise ValueError(f"n must be a positive integer, got {n}")
    radius = float(radius)
    check_assumption_1(manifold, radius)
    h = curvature_factor(radius, manifold.curvature_bounds[1])
    return 2.0 * radius * (2.0 - h) / (n * h)
