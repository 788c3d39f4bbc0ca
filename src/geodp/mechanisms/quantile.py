"""A private quantile of distances: the exponential mechanism over a public grid.

Given values d_1..d_n >= 0 (distances of records to a released point), a public increasing grid
g_1 < ... < g_K and a level q in (0, 1), the utility of g_j is u_j = -|#{i: d_i <= g_j} - q n|.
Replacing one record changes each count #{i: d_i <= g_j} by at most 1, so u has sensitivity 1
under replace-one neighbours (n public), and drawing j with probability proportional to
exp(epsilon u_j / 2) is epsilon-DP (McSherry & Talwar 2007, Theorem 6). The draw is made by
inverse transform on the normalised probabilities (``quantile_probabilities``), computed with a
log-sum-exp.

The released g_j has at most a count error of (2 / epsilon) (log K + log(1 / beta)) with
probability 1 - beta (the exponential mechanism's utility bound), whatever the grid's range.
"""

from __future__ import annotations

import numpy as np

from ..privacy.conversions import check_count, check_positive

UTILITY_SENSITIVITY = 1.0  # a count #{d_i <= g} under replace-one


def geometric_grid(top: float, size: int = 400, ratio: float = 1e-6) -> np.ndarray:
    """``size`` radii from ``ratio * top`` to ``top``, evenly spaced on a log scale (public:
    a function of public numbers only)."""
    top = check_positive("top", top)
    size = check_count("size", size, 2)
    if not 0 < ratio < 1:
        raise ValueError(f"ratio must lie in (0, 1), got {ratio}")
    return np.geomspace(ratio * top, top, size)


def _check(values, quantile: float, grid, epsilon: float) -> tuple[np.ndarray, np.ndarray]:
    values = np.asarray(values, dtype=float).reshape(-1)
    grid = np.asarray(grid, dtype=float).reshape(-1)
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    check_positive("epsilon", epsilon)
    if len(grid) < 1 or np.any(np.diff(grid) <= 0) or not np.all(np.isfinite(grid)):
        raise ValueError("grid must be a finite, strictly increasing sequence")
    # a value double precision cannot give (NaN, inf: e.g. a distance from a released point that
    # overflows) counts as beyond every candidate: a fixed map of each record, so the utility's
    # sensitivity stays 1 and nothing branches on the data
    return np.where(np.isnan(values), np.inf, values), grid


def quantile_probabilities(values, quantile: float, grid, epsilon: float) -> np.ndarray:
    """The exponential mechanism's law over the grid: P(j) proportional to
    exp(epsilon u_j / 2), u_j = -|#{i: values_i <= grid_j} - quantile n|."""
    values, grid = _check(values, quantile, grid, epsilon)
    counts = np.searchsorted(np.sort(values), grid, side="right")
    log_w = -0.5 * epsilon * np.abs(counts - quantile * len(values)) / UTILITY_SENSITIVITY
    log_w -= log_w.max()
    w = np.exp(log_w)
    return w / w.sum()


def private_quantile(values, quantile: float, grid, epsilon: float,
                     rng: np.random.Generator) -> tuple[float, int]:
    """(grid value, its index) drawn by the exponential mechanism: epsilon-DP under replace-one
    for the ``quantile`` of ``values`` (see the module docstring).

    Parameters
    ----------
    values : array (n,)
        One value per record (e.g. its distance to a released point).
    quantile : float in (0, 1)
    grid : array (K,)
        Public, strictly increasing candidates (``geometric_grid``).
    epsilon : float
    rng : numpy.random.Generator
    """
    p = quantile_probabilities(values, quantile, grid, epsilon)
    j = int(min(np.searchsorted(np.cumsum(p), rng.random(), side="right"), len(p) - 1))
    return float(np.asarray(grid, dtype=float).reshape(-1)[j]), j
