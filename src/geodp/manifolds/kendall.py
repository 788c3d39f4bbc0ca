"""Kendall's space of planar shapes of k landmarks (complex projective space CP^(k-2)).

A configuration of k planar landmarks, shape (..., k, 2), is identified with a complex k-vector.
Translation is removed by centring and scale by normalising (the pre-shape sphere); the rotation
quotient is handled by optimal alignment, as in Fletcher's framework: tangent vectors at a
pre-shape w are horizontal, i.e. complex-orthogonal to w.
"""

from __future__ import annotations

import numpy as np

from ._special import inv_sinc, sinc
from ._threads import threaded
from .base import Array, Manifold, integer_size, weighted_sum


def _to_complex(x: Array) -> Array:
    x = np.asarray(x, dtype=float)
    return x[..., 0] + 1j * x[..., 1]


def _to_real(z: Array) -> Array:
    return np.stack([z.real, z.imag], axis=-1)


def _hdot(a: Array, b: Array) -> Array:
    """Hermitian product <a, b> = sum conj(a) b."""
    return np.einsum("...i,...i->...", np.conj(a), b)


def helmert(k: int) -> Array:
    """Sub-Helmert matrix: k-1 orthonormal rows, each orthogonal to (1, ..., 1)."""
    h = np.zeros((k - 1, k))
    for j in range(1, k):
        h[j - 1, :j] = -1.0 / np.sqrt(j * (j + 1))
        h[j - 1, j] = j / np.sqrt(j * (j + 1))
    return h


class KendallShape(Manifold):
    """Planar shapes of ``k_landmarks`` landmarks: dim 2k - 4, curvature in [1, 4], inj = pi/2.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import KendallShape
    >>> m = KendallShape(3)                        # triangles
    >>> tri = m.random_point(0)
    >>> rotated = tri @ np.array([[0.0, -1.0], [1.0, 0.0]])   # the same shape, turned by 90 degrees
    >>> round(float(m.dist(tri, rotated)), 6), m.dim
    (0.0, 2)
    """

    symmetric_space = True

    def __init__(self, k_landmarks: int):
        self.k_landmarks = integer_size(k_landmarks, "k_landmarks", minimum=3)
        self.dim = 2 * self.k_landmarks - 4
        self.point_shape = (self.k_landmarks, 2)
        self._helmert = helmert(self.k_landmarks)

    def __repr__(self) -> str:
        return f"KendallShape({self.k_landmarks})"

    def origin(self) -> Array:
        """The pre-shape of the regular k-gon."""
        angle = 2 * np.pi * np.arange(self.point_shape[0]) / self.point_shape[0]
        return self.project(np.stack([np.cos(angle), np.sin(angle)], axis=-1))

    def radial_volume(self) -> tuple[str, float, float]:
        return "kendall", 1.0, np.pi / 2

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        return (1.0, 4.0) if self.k_landmarks > 3 else (4.0, 4.0)

    @property
    def injectivity_radius(self) -> float:
        return float(np.pi / 2)

    def align(self, p: Array, q: Array) -> Array:
        """The rotation of q closest to p: q exp(-i arg <p, q>)."""
        zp, zq = _to_complex(p), _to_complex(q)
        return _to_real(zq * self._phase(zp, zq).conj()[..., None])

    @staticmethod
    def _phase(zp: Array, zq: Array) -> Array:
        c = _hdot(zp, zq)
        a = np.abs(c)
        return np.where(a > 0, c / np.where(a > 0, a, 1.0), 1.0)

    def karcher_start(self, x: Array, weights: Array) -> Array:
        """The pre-shape mean of the data aligned to the first one (a Procrustes step); it has a
        positive product with that point, so it is never zero."""
        x = np.asarray(x, dtype=float)
        aligned = self.align(np.take(x, [0], axis=-3), x)
        return self.project(weighted_sum(aligned, weights, 2))

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        return np.einsum("...ij,...ij->...", u, v)

    @threaded
    def exp(self, p: Array, v: Array) -> Array:
        """Exp on the pre-shape sphere of a horizontal v: cos(``|v|``) p + sinc(``|v|``) v."""
        t = np.sqrt(np.einsum("...ij,...ij->...", v, v))[..., None, None]
        return np.cos(t) * p + sinc(t) * v

    def _aligned_angle(self, zp: Array, zq: Array) -> tuple[Array, Array]:
        zq = zq * self._phase(zp, zq).conj()[..., None]
        theta = 2.0 * np.arctan2(np.linalg.norm(zp - zq, axis=-1), np.linalg.norm(zp + zq, axis=-1))
        return theta, zq

    @threaded
    def dist(self, p: Array, q: Array) -> Array:
        """rho = arccos ``|<p, q>|``, computed as the chordal angle to the aligned q."""
        return self._aligned_angle(_to_complex(p), _to_complex(q))[0]

    @threaded
    def log(self, p: Array, q: Array) -> Array:
        zp = _to_complex(p)
        theta, zq = self._aligned_angle(zp, _to_complex(q))
        theta = theta[..., None]
        return _to_real(inv_sinc(theta) * (zq - np.cos(theta) * zp))

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """Transport along the horizontal geodesic to the aligned q, then rotate onto q.

        Along Exp_w(theta u): xi -> xi - b u + b(-sin(theta) w + cos(theta) u), b = <u, xi>.
        """
        zp, zq, xi = _to_complex(p), _to_complex(q), _to_complex(v)
        u = _to_complex(self.log(p, q))
        theta = np.linalg.norm(u, axis=-1)
        e = u / np.where(theta > 0, theta, 1.0)[..., None]
        b = _hdot(e, xi)[..., None]
        th = theta[..., None]
        moved = xi - b * e + b * (-np.sin(th) * zp + np.cos(th) * e)
        return _to_real(moved * self._phase(zp, zq)[..., None])

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """Transport e back along the horizontal geodesic (its unit velocity at the end,
        e1 = -sin(t) p + cos(t) u, goes to u, t = ``|v|``), then split along u = v/``|v|``: the real part
        of <u, e> is parallel to gamma (factor 1), its imaginary part lies on the plane (u, iu) of
        curvature 4 (cos 2t for d_p, sin(2t)/(2t) for d_v), the rest on planes of curvature 1
        (cos t, sin(t)/t)."""
        zp, zv, ze = _to_complex(p), _to_complex(v), _to_complex(e)
        t = np.linalg.norm(zv, axis=-1)
        u = zv / np.where(t > 0, t, 1.0)[..., None]
        t = t[..., None]
        e1 = -np.sin(t) * zp + np.cos(t) * u
        b = _hdot(e1, ze)[..., None]
        back = ze + b * (u - e1)
        c = _hdot(u, back)[..., None]
        rest = back - c * u
        par, twist = c.real * u, 1j * c.imag * u
        dp = par + np.cos(2.0 * t) * twist + np.cos(t) * rest
        dv = par + sinc(2.0 * t) * twist + sinc(t) * rest
        return _to_real(dp), _to_real(dv)

    def mean_exp_adjoints(self, p: Array, v: Array, x: Array, e: Array) -> tuple[Array, Array]:
        """The mean of ``exp_adjoints`` over the records in closed form. Record i moves along
        u_i = s_i u (s_i the sign of x_i) for t_i = ``|x_i|`` ``|v|``; with P_i = <p, e_i>, U_i = <u, e_i>,
        b_i = -sin(t_i) P_i + cos(t_i) s_i U_i and c_i = s_i U_i + b_i (1 - cos t_i), its adjoints
        are f(t_i) e_i + f(t_i) b_i sin(t_i) p + g_i u (f = cos for d_p, sinc for d_v, and g_i the
        scalar of the parallel, twisted and remaining parts along u), so each mean is one
        weighted sum of the e_i and two scalars: no (records x landmarks) temporaries beyond e."""
        zp, zv, ze = _to_complex(p), _to_complex(v), _to_complex(e)
        x = np.asarray(x, dtype=float)
        size = np.linalg.norm(zv, axis=-1)
        u = zv / np.where(size > 0, size, 1.0)[..., None]
        t = np.abs(x) * size[..., None]
        sign = np.sign(x)
        pe = np.einsum("...k,...nk->...n", np.conj(zp), ze)
        ue = sign * np.einsum("...k,...nk->...n", np.conj(u), ze)
        cos, sin = np.cos(t), np.sin(t)
        b = -sin * pe + cos * ue
        c = ue + b * (1.0 - cos)
        rest = sign * (b * (1.0 - cos) - c)
        n = x.shape[-1]

        def mean(f, f2, weight):
            """(1/n) sum_i weight_i (f_i e_i + f_i b_i sin_i p + g_i u)."""
            along = sign * (c.real + 1j * f2 * c.imag) + f * rest
            total = np.einsum("...n,...nk->...k", weight * f, ze)
            total = total + np.sum(weight * f * b * sin, axis=-1)[..., None] * zp
            return _to_real((total + np.sum(weight * along, axis=-1)[..., None] * u) / n)

        return mean(cos, np.cos(2.0 * t), 1.0), mean(sinc(t), sinc(2.0 * t), x)

    def project(self, x: Array) -> Array:
        """Centre and scale to the pre-shape sphere."""
        x = np.asarray(x, dtype=float)
        x = x - x.mean(axis=-2, keepdims=True)
        return x / np.linalg.norm(x, axis=(-2, -1), keepdims=True)

    def to_tangent(self, p: Array, x: Array) -> Array:
        """Centre x, then remove its complex component along p (normal and vertical parts)."""
        x = np.asarray(x, dtype=float)
        zx = _to_complex(x - x.mean(axis=-2, keepdims=True))
        zp = _to_complex(p)
        return _to_real(zx - _hdot(zp, zx)[..., None] * zp)

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        return self.to_tangent(p, g)

    def _householder(self, p: Array) -> tuple[Array, Array]:
        """w, beta of the unitary reflection I - beta w w^H mapping Helmert(p) to a multiple of e_0."""
        ph = _to_complex(p) @ self._helmert.T
        first = ph[..., 0]
        alpha = -np.where(np.abs(first) > 0, first / np.where(np.abs(first) > 0, np.abs(first), 1), 1)
        w = ph.copy()
        w[..., 0] -= alpha * np.linalg.norm(ph, axis=-1)
        return w, 2.0 / np.sum(np.abs(w) ** 2, axis=-1)

    def to_coords(self, p: Array, v: Array) -> Array:
        w, beta = self._householder(p)
        vh = _to_complex(v) @ self._helmert.T
        hv = vh - (beta * _hdot(w, vh))[..., None] * w
        return np.concatenate([hv[..., 1:].real, hv[..., 1:].imag], axis=-1)

    def from_coords(self, p: Array, c: Array) -> Array:
        w, beta = self._householder(p)
        m = self.k_landmarks - 2
        c = np.asarray(c, dtype=float)
        y = np.zeros(c.shape[:-1] + (m + 1,), dtype=complex)
        y[..., 1:] = c[..., :m] + 1j * c[..., m:]
        hy = y - (beta * _hdot(w, y))[..., None] * w
        return _to_real(hy @ self._helmert)

    def volume_density(self, p: Array, v: Array) -> Array:
        """sinc(2t) sinc(t)^(2k-6), t = ``|v|``: curvature 4 on the plane (u, iu), 1 elsewhere."""
        t = np.sqrt(np.einsum("...ij,...ij->...", v, v))
        return sinc(2.0 * t) * sinc(t) ** (2 * self.k_landmarks - 6)

    def _point_defect(self, x: Array) -> Array:
        centre = np.linalg.norm(x.mean(axis=-2), axis=-1) * np.sqrt(self.k_landmarks)
        return np.abs(np.linalg.norm(x, axis=(-2, -1)) - 1.0) + centre

    def _defect_hint(self) -> str:
        return " (pre-shapes must be centred with unit Frobenius norm; KendallShape.project does that)"

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        centre = np.linalg.norm(v.mean(axis=-2), axis=-1) * np.sqrt(self.k_landmarks)
        return np.abs(_hdot(_to_complex(p), _to_complex(v))) + centre
