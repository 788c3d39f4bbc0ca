"""The tangent-space Gaussian N_w(0, sigma^2) of Han, Mishra, Jawanpuria & Gao (Definition 3).

Its density on T_w M is proportional to exp(-|xi|_w^2 / (2 sigma^2)) for the Riemannian norm at
w. In orthonormal coordinates of T_w (``Manifold.to_coords``/``from_coords``, an isometry
T_w -> R^d) that is N(0, sigma^2 I_d) whatever the metric (the paper's Remark 1 writes the same
law as N(0, sigma^2 G_w^-1) in coordinates whose metric tensor is G_w). Sampling is therefore
exact: d independent normals mapped by ``from_coords``. The paper's code samples the SPD case by
Metropolis-Hastings; that is unnecessary, and its draws are only approximately from the law.

Proposition 2: H(D) + xi with xi ~ N_w(0, sigma^2) is the Gaussian mechanism on the Euclidean
space (T_w, <.,.>_w); with sensitivity Delta_H measured in the metric at w, sigma = z Delta_H gives
the guarantees of the Gaussian mechanism with noise multiplier z.
"""

from __future__ import annotations

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator, size_tuple


class TangentGaussian:
    """N_w(0, sigma^2) on the tangent spaces of ``manifold``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.mechanisms import TangentGaussian
    >>> m = Sphere(2)
    >>> xi = TangentGaussian(m, sigma=1.0).sample(m.origin(), size=20000, rng=0)
    >>> bool(np.allclose(xi[:, 2], 0.0))   # tangent at the north pole
    True
    >>> round(float(np.mean(m.norm(m.origin(), xi) ** 2)), 1)   # E|xi|^2 = d sigma^2 = 2
    2.0
    """

    def __init__(self, manifold: Manifold, sigma: float):
        sigma = float(sigma)
        if not (np.isfinite(sigma) and sigma >= 0):
            raise ValueError(f"sigma must be finite and non-negative, got {sigma}")
        self.manifold = manifold
        self.sigma = sigma

    def sample(self, w: Array, size: int | tuple[int, ...] | None = None,
               rng: np.random.Generator | int | None = None) -> Array:
        """Draws at the footpoint(s) w ``(..., *point_shape)``: shape size + w's batch + point shape."""
        rng = as_generator(rng)
        w = np.asarray(w, dtype=float)
        batch = w.shape[: w.ndim - len(self.manifold.point_shape)]
        coords = self.sigma * rng.standard_normal(size_tuple(size) + batch + (self.manifold.dim,))
        return self.manifold.from_coords(w, coords)

    def log_density(self, w: Array, xi: Array) -> Array:
        """log p_w(xi) = -``|xi|_w^2`` / (2 sigma^2) - (d/2) log(2 pi sigma^2), for tangent xi at w."""
        if self.sigma == 0:
            raise ValueError("sigma = 0: the law is a point mass, with no density")
        d = self.manifold.dim
        sq = self.manifold.inner(w, xi, xi)
        return -0.5 * sq / self.sigma**2 - 0.5 * d * np.log(2 * np.pi * self.sigma**2)
