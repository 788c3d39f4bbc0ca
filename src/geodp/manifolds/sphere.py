"""The sphere of curvature k, embedded in R^(dim+1) with radius R = 1/sqrt(k)."""

from __future__ import annotations

import numpy as np

from ._special import acos_ratio, sinc
from ._threads import threaded
from .base import (Array, Manifold, integer_size, rowdot, space_form_exp_adjoints,
                   space_form_mean_exp_adjoints, space_form_mean_log,
                   weighted_sum)


def _tan_half_angle(p: Array, q: Array, radius: float) -> tuple[Array, Array]:
    """d = q - p and t = tan(theta/2) = |q - p| / |q + p|, theta the angle between p and q:
    theta = 2 arctan(t) is accurate at every angle. Near the antipode |q + p| is taken from the
    vector q + p (4R^2 - |q - p|^2 would cancel and lose the gap); elsewhere from that identity."""
    q = np.asarray(q, dtype=float)
    d = q - p
    chord2 = rowdot(d, d)
    other2 = 4.0 * radius**2 - chord2
    near = other2 < radius**2
    if np.any(near):
        s = q + p
        other2 = np.where(near, rowdot(s, s), other2)
    with np.errstate(divide="ignore"):
        return d, np.sqrt(chord2 / np.maximum(other2, 0.0))


class Sphere(Manifold):
    """S^dim of constant sectional curvature ``curvature`` (radius 1/sqrt(curvature)).

    Points are arrays of shape (..., dim + 1) with ``|x|`` = R; the metric is the one induced by R^(dim+1).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> north, east = np.array([0.0, 0.0, 1.0]), np.array([1.0, 0.0, 0.0])
    >>> round(float(m.dist(north, east)), 6)   # a quarter of a great circle: pi/2
    1.570796
    >>> m.log(north, east).round(6)
    array([1.570796, 0.      , 0.      ])
    """

    symmetric_space = True

    def __init__(self, dim: int, curvature: float = 1.0):
        dim = integer_size(dim, "dim")
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

    def origin(self) -> Array:
        """The north pole R e_d."""
        e = np.zeros(self.point_shape)
        e[-1] = self.radius
        return e

    def ambient_radius(self, center: Array, radius: float) -> float:
        """The chord 2R sin(r/(2R)) (Reimherr et al. 2021, supplement A.3.2)."""
        return float(2 * self.radius * np.sin(radius / (2 * self.radius)))

    def radial_volume(self) -> tuple[str, float, float]:
        c = float(np.sqrt(self.curvature))
        return "sphere", c, np.pi / c

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        return (self.curvature, self.curvature)

    @property
    def injectivity_radius(self) -> float:
        return float(np.pi * self.radius)

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        return rowdot(u, v)

    @threaded
    def exp(self, p: Array, v: Array) -> Array:
        """Exp_p(v) = cos(t) p + sinc(t) v, t = ``|v|``/R, both from tau = tan(t/2):
        cos t = (1 - tau^2)/(1 + tau^2), sin t = 2 tau/(1 + tau^2)."""
        t = np.sqrt(rowdot(v, v)) / self.radius
        tau = np.tan(0.5 * t)
        den = 1.0 / (1.0 + tau * tau)
        sinc_t = np.divide(2.0 * tau * den, t, out=np.ones_like(t), where=t > 0)
        out = p * ((1.0 - tau * tau) * den)[..., None]
        out += sinc_t[..., None] * v
        return out

    @threaded
    def dist(self, p: Array, q: Array) -> Array:
        return 2.0 * self.radius * np.arctan(_tan_half_angle(p, q, self.radius)[1])

    @threaded
    def log(self, p: Array, q: Array) -> Array:
        """Log_p(q) = theta w / ``|w|``, w the component of q orthogonal to p and theta = 2 R arctan(t),
        t = ``|q - p|`` / ``|q + p|``.

        w is taken from the smaller of q - p and q + p (w = s - <p, s> p / R^2), so no difference of
        nearly equal numbers decides it: near p, q - p is exact to rounding; near the antipode the
        direction comes from the small gap q + p, and the length is the distance whatever the
        rounding in w. At the exact antipode every direction is a geodesic and this raises
        (``log_or_nan`` gives NaN there instead).
        """
        v, antipodal = self._log(p, q)
        if np.any(antipodal):
            raise ValueError("antipodal points: the sphere's logarithm is not defined at the cut "
                             "locus (every direction is a shortest geodesic)")
        return v

    @threaded
    def log_or_nan(self, p: Array, q: Array) -> Array:
        """``log``, with NaN rows for antipodal pairs instead of raising."""
        v, antipodal = self._log(p, q)
        return np.where(antipodal[..., None], np.nan, v)

    def _log(self, p: Array, q: Array) -> tuple[Array, Array]:
        """(Log_p(q) with 0 at the antipode, the mask of the antipodal pairs)."""
        p = np.asarray(p, dtype=float)
        q = np.asarray(q, dtype=float)
        d, t = _tan_half_angle(p, q, self.radius)
        far = t > 1.0
        if np.any(far):  # beyond a right angle the gap q + p is the small vector
            d = np.where(far[..., None], q + p, d)
        w = d - (rowdot(p, d) / self.radius**2)[..., None] * p
        size = np.sqrt(rowdot(w, w))
        theta = 2.0 * self.radius * np.arctan(t)
        scale = np.divide(theta, size, out=np.zeros_like(size), where=size > 0)
        return scale[..., None] * w, (size == 0) & far

    def mean_log_and_value(self, p: Array, x: Array, weights: Array) -> tuple[Array, Array]:
        p = np.asarray(p, dtype=float)
        return space_form_mean_log(p, x, weights, p / self.radius**2,
                                   lambda c: acos_ratio(np.clip(c, -1.0, 1.0)), 1.0, self.radius)

    def karcher_start(self, x: Array, weights: Array) -> Array:
        """The extrinsic mean R y/``|y|``, y = sum_i w_i x_i (the first data point where ``|y|`` ~ 0)."""
        y = weighted_sum(x, weights, 1)
        size = np.sqrt(rowdot(y, y))[..., None]
        ok = size > 1e-6 * self.radius
        return np.where(ok, self.radius * y / np.where(ok, size, 1.0), np.take(x, 0, axis=-2))

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """Gamma(v) = v - <q, v> / (R^2 + <p, q>) (p + q)."""
        p = np.asarray(p, dtype=float)
        coef = rowdot(q, v) / (self.radius**2 + rowdot(p, q))
        return v - coef[..., None] * (p + q)

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """Transport back along gamma itself (valid beyond the cut locus, where ``|v|`` > pi R), then
        cos(t) (d_p) and sin(t)/t (d_v) on the part orthogonal to gamma, t = ``|v|``/R."""
        return space_form_exp_adjoints(p, v, e, 1.0, self.radius, self.inner)

    def mean_exp_adjoints(self, p: Array, v: Array, x: Array, e: Array) -> tuple[Array, Array]:
        return space_form_mean_exp_adjoints(p, v, x, e, 1.0, self.radius, self.inner)

    def project(self, x: Array) -> Array:
        x = np.asarray(x, dtype=float)
        return self.radius * x / np.sqrt(rowdot(x, x))[..., None]

    def to_tangent(self, p: Array, x: Array) -> Array:
        p = np.asarray(p, dtype=float)
        normal = (rowdot(p, x) / self.radius**2)[..., None] * p
        return np.subtract(x, normal, out=normal)  # x - normal, without a second temporary

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        return self.to_tangent(p, g)

    def _householder(self, p: Array) -> tuple[Array, Array]:
        """w and 2/|w|^2 of the reflection H = I - 2ww'/|w|^2 that maps p/R to -sign(p_0) e_0."""
        u = np.asarray(p, dtype=float) / self.radius
        w = u.copy()
        w[..., 0] += np.where(u[..., 0] >= 0, 1.0, -1.0)
        return w, 2.0 / rowdot(w, w)

    def to_coords(self, p: Array, v: Array) -> Array:
        """Coordinates in the basis of columns 1..dim of the Householder reflection H(p)."""
        w, beta = self._householder(p)
        hv = v - (beta * rowdot(w, v))[..., None] * w
        return hv[..., 1:]

    def from_coords(self, p: Array, c: Array) -> Array:
        w, beta = self._householder(p)
        c = np.asarray(c, dtype=float)
        wc = rowdot(w[..., 1:], c)
        shape = np.broadcast_shapes(w.shape, c.shape[:-1] + (self.dim + 1,))
        out = np.zeros(shape)
        out[..., 1:] = c
        return out - (beta * wc)[..., None] * w

    def volume_density(self, p: Array, v: Array) -> Array:
        """(sin(``|v|``/R) / (``|v|``/R))^(dim-1): Jacobi fields sin(sqrt(k) t)/sqrt(k) orthogonal to v."""
        t = np.sqrt(rowdot(v, v)) / self.radius
        return sinc(t) ** (self.dim - 1)

    def _point_defect(self, x: Array) -> Array:
        return np.abs(np.sqrt(rowdot(x, x)) - self.radius)

    def _defect_hint(self) -> str:
        return f" (points must have Euclidean norm {self.radius:g})"

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        return np.abs(rowdot(p, v)) / self.radius
