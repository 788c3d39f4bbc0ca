"""The ambient (Euclidean) Laplace baseline: K-norm noise in a vector space holding the manifold."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..manifolds import Manifold
from ..manifolds.capabilities import require
from ..manifolds.base import Array, as_generator, size_tuple
from ..privacy.conversions import check_positive


def l2_laplace(dim: int, scale: float, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
    """Draws of density proportional to exp(-|z| / scale) on R^dim (the K-norm mechanism of the
    Euclidean norm), array shape + (dim,): |z| ~ Gamma(dim, scale), direction uniform."""
    u = rng.standard_normal(tuple(shape) + (dim,))
    u /= np.linalg.norm(u, axis=-1, keepdims=True)
    return scale * rng.gamma(dim, 1.0, size=tuple(shape) + (1,)) * u


def ambient_radius(manifold: Manifold, center: Array, radius: float) -> float:
    """Radius r_E of a Euclidean ball containing the geodesic ball B_radius(center) (the
    manifold's ``ambient_radius`` capability).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.mechanisms import ambient_radius
    >>> round(ambient_radius(Sphere(2), np.array([0.0, 0.0, 1.0]), np.pi / 3), 6)   # chord 2 sin(r/2)
    1.0
    """
    require(manifold, ("ambient_radius",), by="the Euclidean Laplace baseline")
    return manifold.ambient_radius(center, radius)


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

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.mechanisms import EuclideanLaplace
    >>> m = Sphere(2)
    >>> out = EuclideanLaplace(m, scale=0.1).sample(m.origin(), size=5, rng=0)
    >>> out.shape, bool(np.allclose(np.linalg.norm(out, axis=-1), 1.0))   # projected back onto S^2
    ((5, 3), True)
    """

    def __init__(self, manifold: Manifold, scale: float, project: bool = True):
        self.manifold, self.project = manifold, project
        self.scale = check_positive("scale", scale)
        self.last_info: AmbientInfo | None = None

    def sample(self, center: Array, size=None, rng: np.random.Generator | int | None = None) -> Array:
        """Draws of shape size + batch(center) + point_shape, one per (size, center) pair."""
        rng = as_generator(rng)
        m = self.manifold
        c = m.to_ambient(m.check_point(center))
        shape = size_tuple(size) + c.shape[:-1]
        n = int(np.prod(shape, dtype=int)) if shape else 1
        dim = c.shape[-1]
        noise = l2_laplace(dim, self.scale, (n,), rng)
        c = np.broadcast_to(c, shape + (dim,)).reshape(n, dim)
        raw = m.from_ambient(c + noise)
        off = m.off_manifold(raw)
        self.last_info = AmbientInfo(int(off.sum()), n)
        out = m.project(raw) if self.project else raw
        return out.reshape(shape + m.point_shape)
