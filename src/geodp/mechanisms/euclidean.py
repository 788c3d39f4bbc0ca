"""The ambient (Euclidean) Laplace baseline: K-norm noise in a vector space holding the manifold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..manifolds import SPD, Manifold
from ..manifolds.base import Array, as_generator, size_tuple
from ..privacy.conversions import check_positive


def to_ambient(manifold: Manifold, x: Array) -> Array:
    """Ambient coordinates: the embedding's coordinates, or vech (upper triangle) for SPD.

    The l2 norm of vech is at most the Frobenius norm, so a Frobenius sensitivity bounds it.
    """
    x = np.asarray(x, dtype=float)
    if isinstance(manifold, SPD):
        iu = np.triu_indices(manifold.n)
        return x[..., iu[0], iu[1]]
    nd = len(manifold.point_shape)
    return x.reshape(x.shape[: x.ndim - nd] + (-1,))


def from_ambient(manifold: Manifold, y: Array) -> Array:
    """Inverse of ``to_ambient`` (an array in the ambient space, not necessarily on the manifold)."""
    y = np.asarray(y, dtype=float)
    if isinstance(manifold, SPD):
        n = manifold.n
        iu = np.triu_indices(n)
        out = np.zeros(y.shape[:-1] + (n, n))
        out[..., iu[0], iu[1]] = y
        out[..., iu[1], iu[0]] = y
        return out
    return y.reshape(y.shape[:-1] + manifold.point_shape)


def ambient_radius(manifold: Manifold, center: Array, radius: float) -> float:
    """Radius r_E of a Euclidean ball containing the geodesic ball B_radius(center).

    Sphere of radius R: the chord 2R sin(r/(2R)) (Reimherr et al. 2021, suppl. A.3.2). SPD with
    the affine-invariant metric: lambda_max(center) (e^r - 1) (suppl. A.2.2, Proposition 1, moved
    from I to center by congruence). Flat spaces: r itself.
    """
    from ..manifolds import Euclidean, Sphere

    if isinstance(manifold, Sphere):
        return float(2 * manifold.radius * np.sin(radius / (2 * manifold.radius)))
    if isinstance(manifold, SPD) and manifold.metric == "affine":
        return float(np.linalg.eigvalsh(center)[-1] * np.expm1(radius))
    if isinstance(manifold, Euclidean):
        return float(radius)
    raise TypeError(f"no ambient radius for {manifold!r}")


@dataclass
class AmbientInfo:
    off_manifold: int
    total: int

    def as_dict(self) -> dict:
        return {"off_manifold": self.off_manifold, "total": self.total,
                "fraction_off_manifold": self.off_manifold / max(self.total, 1)}


class EuclideanLaplace:
    """K-norm (l2 Laplace) noise in ambient coordinates: x + scale * R * U, R ~ Gamma(D, 1).

    Supplement A.4 of Reimherr et al. (2021). epsilon-DP for an ambient l2 sensitivity Delta_E
    with scale = Delta_E / epsilon. ``sample`` returns the raw ambient outputs mapped back to the
    point representation and, when ``project`` is True, projected onto the manifold;
    ``last_info`` records how many raw outputs were off the manifold (e.g. not positive definite).
    """

    def __init__(self, manifold: Manifold, scale: float, project: bool = True):
        self.manifold, self.project = manifold, project
        self.scale = check_positive("scale", scale)
        self.last_info: AmbientInfo | None = None

    def sample(self, center: Array, size=None, rng: np.random.Generator | int | None = None) -> Array:
        """Draws of shape size + batch(center) + point_shape, one per (size, center) pair."""
        rng = as_generator(rng)
        m = self.manifold
        c = to_ambient(m, m.check_point(center))
        shape = size_tuple(size) + c.shape[:-1]
        n = int(np.prod(shape, dtype=int)) if shape else 1
        dim = c.shape[-1]
        u = rng.standard_normal((n, dim))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        c = np.broadcast_to(c, shape + (dim,)).reshape(n, dim)
        raw = from_ambient(m, c + self.scale * rng.gamma(dim, 1.0, size=(n, 1)) * u)
        off = self._off_manifold(raw)
        self.last_info = AmbientInfo(int(off.sum()), n)
        out = m.project(raw) if self.project else raw
        return out.reshape(shape + m.point_shape)

    def _off_manifold(self, raw: Array) -> Array:
        m = self.manifold
        if isinstance(m, SPD):
            return np.linalg.eigvalsh(raw)[..., 0] <= 0
        try:
            return m._point_defect(raw) > m.tolerance
        except (ValueError, FloatingPointError):
            return np.ones(len(raw), dtype=bool)
