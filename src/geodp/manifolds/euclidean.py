"""Euclidean space R^d with the standard inner product."""

from __future__ import annotations

import numpy as np

from .base import Array, Manifold, integer_size, rowdot, weighted_sum


class Euclidean(Manifold):
    """R^dim, points and tangent vectors as arrays of shape (..., dim).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Euclidean
    >>> m = Euclidean(3)
    >>> float(m.dist(np.zeros(3), np.array([3.0, 4.0, 0.0])))
    5.0
    """

    symmetric_space = True

    def __init__(self, dim: int):
        self.dim = integer_size(dim, "dim")
        self.point_shape = (self.dim,)

    def origin(self) -> Array:
        return np.zeros(self.point_shape)

    def ambient_radius(self, center: Array, radius: float) -> float:
        return float(radius)

    def radial_volume(self) -> tuple[str, float, float]:
        return "flat", 0.0, np.inf

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        return (0.0, 0.0)

    @property
    def injectivity_radius(self) -> float:
        return float("inf")

    def exp(self, p: Array, v: Array) -> Array:
        return np.asarray(p, dtype=float) + v

    def log(self, p: Array, q: Array) -> Array:
        return np.asarray(q, dtype=float) - p

    def mean_log_and_value(self, p: Array, x: Array, weights: Array) -> tuple[Array, Array]:
        """sum_i w_i (x_i - p) = sum_i w_i x_i - (sum_i w_i) p, and 1/2 sum_i w_i ``|x_i - p|^2``."""
        w = np.asarray(weights, dtype=float)
        p = np.asarray(p, dtype=float)
        d = x - p[..., None, :]
        return weighted_sum(x, w, 1) - w.sum(axis=-1)[..., None] * p, 0.5 * np.sum(w * rowdot(d, d), axis=-1)

    def karcher_start(self, x: Array, weights: Array) -> Array:
        """sum_i w_i x_i: the mean itself, so the iteration only confirms it."""
        return weighted_sum(x, weights, 1)

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        return rowdot(u, v)

    def dist(self, p: Array, q: Array) -> Array:
        d = np.asarray(q, dtype=float) - p
        return np.sqrt(rowdot(d, d))

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        return np.broadcast_to(v, np.broadcast_shapes(np.shape(p), np.shape(q), np.shape(v))).copy()

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """Exp_p(v) = p + v: both differentials are the identity."""
        e = np.broadcast_to(e, np.broadcast_shapes(np.shape(p), np.shape(v), np.shape(e)))
        return e.copy(), e.copy()

    def project(self, x: Array) -> Array:
        return np.asarray(x, dtype=float)

    def to_tangent(self, p: Array, x: Array) -> Array:
        return np.asarray(x, dtype=float) + 0.0 * np.asarray(p)

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        return self.to_tangent(p, g)

    def to_coords(self, p: Array, v: Array) -> Array:
        return self.to_tangent(p, v)

    def from_coords(self, p: Array, c: Array) -> Array:
        return self.to_tangent(p, c)

    def volume_density(self, p: Array, v: Array) -> Array:
        return np.ones(np.broadcast_shapes(np.shape(p), np.shape(v))[:-1])

    def _point_defect(self, x: Array) -> Array:
        return np.zeros(x.shape[:-1])

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        return np.zeros(np.broadcast_shapes(p.shape, v.shape)[:-1])
