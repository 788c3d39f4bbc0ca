"""Hyperbolic space of curvature -k in the hyperboloid (Lorentz) model."""

from __future__ import annotations

import warnings

import numpy as np

from ._special import acosh1p, acosh_ratio, cosh_sinhc, log_sinhc
from ._threads import threaded
from .base import (Array, Manifold, integer_size, rowdot, space_form_exp_adjoints,
                   space_form_mean_exp_adjoints, space_form_mean_log,
                   weighted_sum)


def minkowski(a: Array, b: Array) -> Array:
    """Lorentzian inner product -a_0 b_0 + sum_i a_i b_i."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return rowdot(a[..., 1:], b[..., 1:]) - a[..., 0] * b[..., 0]


class HyperboloidPrecisionWarning(UserWarning):
    """Points so far from the origin that double precision no longer resolves their geometry."""


#: Largest coordinate ratio x_0 / R accepted without a warning: beyond it (distance
#: R arccosh(1e4) = 9.9 R from the origin) the constraint -x_0^2 + |x|^2 = -R^2 is held only to
#: eps x_0^2 / R^2 > 2e-8 relative, and distances near the point only to about eps x_0^2 / R.
FAR_COORDINATE = 1e4


class Hyperbolic(Manifold):
    """H^dim with constant curvature ``curvature`` < 0, as the hyperboloid sheet

    -x_0^2 + sum_i x_i^2 = 1/curvature = -R^2, x_0 > 0, in R^(dim+1) with the metric induced by the
    Minkowski form.

    Precision limit of the model (its conditioning, not of the code): a point at distance r from
    the origin has coordinates of size R cosh(r / R), so in double precision the constraint holds
    to about eps cosh(r/R)^2, and tangent norms and distances near the point carry absolute
    errors of about eps R cosh(r/R)^2 (``norm_rounding``; r = 10 R: 3e-8 R, r = 18.7 R: R).
    ``check_point`` warns beyond x_0 = 1e4 R (r = 9.9 R); public balls are refused beyond
    11.8 R (``data_ball.MAX_NORM_ROUNDING``).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Hyperbolic
    >>> m = Hyperbolic(2)
    >>> p = m.origin()
    >>> q = m.exp(p, np.array([0.0, 1.0, 0.0]))   # a unit step along the first axis
    >>> round(float(m.dist(p, q)), 6), m.curvature_bounds
    (1.0, (-1.0, -1.0))
    """

    symmetric_space = True

    def __init__(self, dim: int, curvature: float = -1.0):
        dim = integer_size(dim, "dim")
        if not (np.isfinite(curvature) and curvature < 0):
            raise ValueError(f"hyperbolic space needs a negative finite curvature, got {curvature}")
        self.dim = int(dim)
        self.curvature = float(curvature)
        self.radius = 1.0 / np.sqrt(-self.curvature)
        self.point_shape = (self.dim + 1,)

    def __repr__(self) -> str:
        if self.curvature == -1.0:
            return f"Hyperbolic({self.dim})"
        return f"Hyperbolic({self.dim}, curvature={self.curvature:g})"

    def origin(self) -> Array:
        """The hyperboloid's vertex R e_0."""
        e = np.zeros(self.point_shape)
        e[0] = self.radius
        return e

    def gradient_rounding(self, center: Array, radius: float) -> float:
        """eps d R cosh(D)^2 (1 + r / R), D = (rho(origin, center) + r) / R: the ball's points
        have coordinates up to R cosh(D), the Minkowski products of the logarithm are of size
        R^2 cosh(D)^2 and cancel to the tangent vector's size."""
        return float(np.finfo(float).eps * self.dim * self.radius * np.cosh(self._reach(center, radius))**2
                     * (1.0 + radius / self.radius))

    def _reach(self, center: Array, radius: float) -> float:
        """(rho(origin, center) + radius) / R: how far out, in curvature radii, a ball reaches."""
        return (float(self.dist(self.origin(), center)) + radius) / self.radius

    def norm_rounding(self, center: Array, radius: float) -> float:
        """eps cosh(D)^2, D = (rho(origin, center) + r) / R: a unit tangent vector at the ball's
        farthest point has coordinates of size cosh(D), and its Minkowski square cancels from
        cosh(D)^2 to 1 (measured on 2000 states of a regression domain ``|v|`` <= 1 within 10 R
        of the origin: 2.7e-8). Distances there, formed by the same cancellation, carry an
        absolute error of about eps R cosh(D)^2 however close the points: releases whose
        sensitivity is far smaller pay it in their calibration (``gradient_rounding``)."""
        with np.errstate(over="ignore"):
            return float(np.finfo(float).eps * np.cosh(self._reach(center, radius))**2)

    def radial_volume(self) -> tuple[str, float, float]:
        return "hyperbolic", float(np.sqrt(-self.curvature)), np.inf

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        return (self.curvature, self.curvature)

    @property
    def injectivity_radius(self) -> float:
        return float("inf")

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        return minkowski(u, v)

    @threaded
    def exp(self, p: Array, v: Array) -> Array:
        """Exp_p(v) = cosh(t) p + sinhc(t) v, t = ``|v|``/R, both from one expm1."""
        cosh_t, sinhc_t = cosh_sinhc(np.sqrt(np.maximum(minkowski(v, v), 0.0)) / self.radius)
        out = p * cosh_t[..., None]
        out += sinhc_t[..., None] * v
        return out

    def _cosh_minus_one(self, p: Array, q: Array) -> tuple[Array, Array]:
        """d = q - p and s = cosh(rho/R) - 1: |q - p|_L^2 / (2R^2) for close points, where
        -<p, q>_L / R^2 - 1 cancels, and that one beyond cosh = 1.5, where the chord cancels."""
        d = np.asarray(q, dtype=float) - p
        near = np.maximum(minkowski(d, d), 0.0) / (2.0 * self.radius**2)
        far = -minkowski(p, q) / self.radius**2 - 1.0
        return d, np.where(far > 0.5, far, near)

    @threaded
    def dist(self, p: Array, q: Array) -> Array:
        return self.radius * acosh1p(self._cosh_minus_one(p, q)[1])

    @threaded
    def log(self, p: Array, q: Array) -> Array:
        """Log_p(q) = theta/sinh(theta) (q - cosh(theta) p) = theta/sinh(theta) (q - p - s p),
        s = cosh(theta) - 1, sinh(theta) = sqrt(s (s + 2)), theta = log1p(s + sinh(theta))."""
        d, s = self._cosh_minus_one(p, q)
        sinh = np.sqrt(s * (s + 2.0))
        theta = np.log1p(s + sinh)
        ratio = np.divide(theta, sinh, out=np.ones_like(theta), where=sinh > 0)
        out = p * (-ratio * s)[..., None]
        out += ratio[..., None] * d
        return out

    def mean_log_and_value(self, p: Array, x: Array, weights: Array) -> tuple[Array, Array]:
        p = np.asarray(p, dtype=float)
        dual = np.concatenate([-p[..., :1], p[..., 1:]], axis=-1) / -self.radius**2
        return space_form_mean_log(p, x, weights, dual, lambda c: acosh_ratio(np.maximum(c, 1.0)),
                                   -1.0, self.radius)

    def karcher_start(self, x: Array, weights: Array) -> Array:
        """The Lorentzian centroid R y / sqrt(-<y, y>_L), y = sum_i w_i x_i (future time-like)."""
        y = weighted_sum(x, weights, 1)
        return self.radius * y / np.sqrt(-minkowski(y, y))[..., None]

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """Gamma(v) = v + <q, v>_L / (R^2 - <p, q>_L) (p + q)."""
        p = np.asarray(p, dtype=float)
        coef = minkowski(q, v) / (self.radius**2 - minkowski(p, q))
        return v + coef[..., None] * (p + q)

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """cosh(t) (d_p) and sinh(t)/t (d_v) on the part of the transported e orthogonal to gamma,
        t = ``|v|``/R."""
        return space_form_exp_adjoints(p, v, e, -1.0, self.radius, self.inner)

    def mean_exp_adjoints(self, p: Array, v: Array, x: Array, e: Array) -> tuple[Array, Array]:
        return space_form_mean_exp_adjoints(p, v, x, e, -1.0, self.radius, self.inner)

    def project(self, x: Array) -> Array:
        """Keep the space-like coordinates and solve for the time-like one."""
        x = np.asarray(x, dtype=float)
        out = x.copy()
        out[..., 0] = np.sqrt(self.radius**2 + rowdot(x[..., 1:], x[..., 1:]))
        return out

    def to_tangent(self, p: Array, x: Array) -> Array:
        p = np.asarray(p, dtype=float)
        return x + (minkowski(p, x) / self.radius**2)[..., None] * p

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        g = np.array(g, dtype=float)
        g[..., 0] *= -1.0
        return self.to_tangent(p, g)

    def to_coords(self, p: Array, v: Array) -> Array:
        """Coordinates in the basis obtained by boosting e_1..e_dim from the base point (R, 0)."""
        y = np.asarray(p, dtype=float) / self.radius
        ybar = y[..., 1:]
        vbar = np.asarray(v)[..., 1:]
        s = np.einsum("...i,...i->...", ybar, vbar) / (1.0 + y[..., 0])
        return vbar - ybar * (np.asarray(v)[..., :1] - s[..., None])

    def from_coords(self, p: Array, c: Array) -> Array:
        y = np.asarray(p, dtype=float) / self.radius
        ybar = y[..., 1:]
        yc = np.einsum("...i,...i->...", ybar, c)
        space = c + ybar * (yc / (1.0 + y[..., 0]))[..., None]
        return np.concatenate([yc[..., None] + 0.0 * space[..., :1], space], axis=-1)

    def volume_density(self, p: Array, v: Array) -> Array:
        """(sinh(``|v|``/R) / (``|v|``/R))^(dim-1)."""
        t = np.sqrt(np.maximum(minkowski(v, v), 0.0)) / self.radius
        return np.exp((self.dim - 1) * log_sinhc(t))

    def max_volume_density(self, radius: float) -> float:
        return float(np.exp((self.dim - 1) * log_sinhc(radius / self.radius)))

    def check_point(self, x: Array) -> Array:
        """``Manifold.check_point``, then ``project`` (each point on its own, so a fixed map of
        each record): the defect is judged relative to x_0^2, so far out it admits points off the
        sheet by a constraint error of order R^2, whose distances and logarithms are then
        wrong by far more than rounding (a review's crafted record, accepted at 11 R, moved a
        KNG mean's gradient by 4.4 times its sensitivity); projected, every accepted point is
        on the sheet up to rounding."""
        x = self.project(super().check_point(x))
        far = x[..., 0] > FAR_COORDINATE * self.radius
        if np.any(far):
            eps = np.finfo(float).eps
            warnings.warn(
                f"some points lie beyond distance {self.radius * np.arccosh(FAR_COORDINATE):.3g} "
                f"from the origin, where double precision holds the hyperboloid only to "
                f"{eps * FAR_COORDINATE**2:.1g} relative or worse, and distances near such a "
                f"point to about eps x_0^2 / R (neither how many nor how far is quoted: they may "
                f"be records)", HyperboloidPrecisionWarning, stacklevel=2)
        return x

    def _point_defect(self, x: Array) -> Array:
        scale = self.radius**2 + x[..., 0] ** 2
        lorentz = np.abs(minkowski(x, x) + self.radius**2) / scale
        return np.where(x[..., 0] > 0, lorentz, np.inf)

    def _defect_hint(self) -> str:
        return (f" (points must satisfy -x0^2 + sum xi^2 = {-self.radius**2:g} with x0 > 0; "
                f"Hyperbolic.project fixes x0)")

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        return np.abs(minkowski(p, v)) / self.radius
