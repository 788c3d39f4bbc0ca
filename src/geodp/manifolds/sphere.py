"""The sphere of curvature k, embedded in R^(dim+1) with radius R = 1/sqrt(k)."""

from __future__ import annotations

import numpy as np

from ._special import inv_sinc, sinc
from .base import Array, Manifold, space_form_mean_log


def _dot(a: Array, b: Array) -> Array:
    return np.einsum("...i,...i->...", a, b)


class Sphere(Manifold):
    """S^dim of constant sectional curvature ``curvature`` (radius 1/sqrt(curvature)).

    Points are arrays of shape (..., dim + 1) with |x| = R; the metric is the one induced by R^(dim+1).
    """

    def __init__(self, dim: int, curvature: float = 1.0):
        if int(dim) < 1:
            raise ValueError(f"dim must be a positive integer, got {dim}")
        if not (np.isfinite(curvature) and curvature > 0):
            raise ValueError(f"a sphere needs a positive finite curvature, got {curvature}")
        self.dim = int(dim)
        self.curvature = float(curvature)
        self.radius = 1.0 / np.sqrt(self.curvature)
        self.point_shape = (self.dim + 1,)

    def __repr__(self) -> str:
        if self.curvature == 1.0:
            return f"Sphere({self.dim})"
        return f"Sphere({self.dim}, curvature={self.curvature:g})"

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        return (self.curvature, self.curvature)

    @property
    def injectivity_radius(self) -> float:
        return float(np.pi * self.radius)

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        return _dot(u, v)

    def exp(self, p: Array, v: Array) -> Array:
        """Exp_p(v) = cos(|v|/R) p + sinc(|v|/R) v."""
        t = np.sqrt(_dot(v, v))[..., None] / self.radius
        return np.cos(t) * p + sinc(t) * v

    def _angle(self, p: Array, q: Array) -> Array:
        """Angle 2 atan2(|p - q|, |p + q|), accurate at every angle; |p + q|^2 = 4R^2 - |p - q|^2
        on the sphere, so one difference suffices."""
        d = np.asarray(p, dtype=float) - q
        chord2 = _dot(d, d)
        return 2.0 * np.arctan2(np.sqrt(chord2), np.sqrt(np.maximum(4.0 * self.radius**2 - chord2, 0.0)))

    def dist(self, p: Array, q: Array) -> Array:
        return self.radius * self._angle(p, q)

    def log(self, p: Array, q: Array) -> Array:
        """Log_p(q) = theta/sin(theta) (q - cos(theta) p), theta the angle between p and q."""
        theta = self._angle(p, q)[..., None]
        return inv_sinc(theta) * (q - np.cos(theta) * p)

    def mean_log(self, p: Array, x: Array, weights: Array) -> Array:
        p = np.asarray(p, dtype=float)
        return space_form_mean_log(p, x, weights, self._angle(p[..., None, :], x), inv_sinc, np.cos)

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """Gamma(v) = v - <q, v> / (R^2 + <p, q>) (p + q)."""
        p = np.asarray(p, dtype=float)
        coef = _dot(q, v) / (self.radius**2 + _dot(p, q))
        return v - coef[..., None] * (p + q)

    def project(self, x: Array) -> Array:
        x = np.asarray(x, dtype=float)
        return self.radius * x / np.linalg.norm(x, axis=-1, keepdims=True)

    def to_tangent(self, p: Array, x: Array) -> Array:
        p = np.asarray(p, dtype=float)
        return x - (_dot(p, x) / self.radius**2)[..., None] * p

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        return self.to_tangent(p, g)

    def _householder(self, p: Array) -> tuple[Array, Array]:
        """w and 2/|w|^2 of the reflection H = I - 2ww'/|w|^2 that maps p/R to -sign(p_0) e_0."""
        u = np.asarray(p, dtype=float) / self.radius
        w = u.copy()
        w[..., 0] += np.where(u[..., 0] >= 0, 1.0, -1.0)
        return w, 2.0 / _dot(w, w)

    def to_coords(self, p: Array, v: Array) -> Array:
        """Coordinates in the basis of columns 1..dim of the Householder reflection H(p)."""
        w, beta = self._householder(p)
        hv = v - (beta * _dot(w, v))[..., None] * w
        return hv[..., 1:]

    def from_coords(self, p: Array, c: Array) -> Array:
        w, beta = self._householder(p)
        c = np.asarray(c, dtype=float)
        wc = _dot(w[..., 1:], c)
        shape = np.broadcast_shapes(w.shape, c.shape[:-1] + (self.dim + 1,))
        out = np.zeros(shape)
        out[..., 1:] = c
        return out - (beta * wc)[..., None] * w

    def volume_density(self, p: Array, v: Array) -> Array:
        """(sin(|v|/R) / (|v|/R))^(dim-1): Jacobi fields sin(sqrt(k) t)/sqrt(k) orthogonal to v."""
        t = np.sqrt(_dot(v, v)) / self.radius
        return sinc(t) ** (self.dim - 1)

    def _point_defect(self, x: Array) -> Array:
        return np.abs(np.linalg.norm(x, axis=-1) - self.radius)

    def _defect_hint(self) -> str:
        return f" (points must have Euclidean norm {self.radius:g})"

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        return np.abs(_dot(p, v)) / self.radius
