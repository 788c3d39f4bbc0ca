"""Exponential-wrapped Laplace and Gaussian mechanisms on Hadamard manifolds.

The noise is drawn in the tangent space of a fixed public footpoint p0, in orthonormal
coordinates, around the tangent center Log_p0 f(D), and pushed to the manifold by Exp_p0
(Definitions 3.1 and 3.2, Algorithm 1 of the exponential-wrapped paper). On a Hadamard manifold
Exp_p0 is a global diffeomorphism and Log_p0 is 1-Lipschitz, which is what the guarantees need;
elsewhere (positive curvature) the mechanisms are refused.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..manifolds import Manifold
from ..manifolds.capabilities import has
from ..manifolds.base import Array, as_generator, represents_distance, size_tuple
from ..privacy.conversions import check_positive
from .euclidean import l2_laplace
from .laplace import SamplerInfo


class NotHadamardError(ValueError):
    """The manifold has positive curvature somewhere or a finite injectivity radius."""


def check_hadamard(manifold: Manifold) -> None:
    """Raise ``NotHadamardError`` unless ``manifold`` is known to be Hadamard."""
    if not (has(manifold, "curvature_bounds") and has(manifold, "injectivity_radius")):
        raise NotHadamardError(f"exponential-wrapped mechanisms need a Hadamard manifold; "
                               f"{manifold!r} states no curvature bounds or injectivity radius")
    if not manifold.is_hadamard:
        k_max = manifold.curvature_bounds[1]
        raise NotHadamardError(
            f"exponential-wrapped mechanisms need a Hadamard manifold (complete, simply connected, "
            f"curvature <= 0); {manifold!r} has curvature up to {k_max:g} and injectivity radius "
            f"{manifold.injectivity_radius:g}, so Log_p0 is not defined everywhere and is not a "
            f"contraction: the privacy proofs do not apply. Use RiemannianLaplace instead")


class _Wrapped:
    """Shared machinery: tangent center, push-forward, density with the volume change."""

    def __init__(self, manifold: Manifold, footpoint: Array):
        check_hadamard(manifold)
        self.manifold = manifold
        self.footpoint = manifold.check_point(footpoint)
        if self.footpoint.ndim != len(manifold.point_shape):
            raise ValueError("the footpoint must be a single point")

    #: How the draws are produced: always exactly, by pushing tangent noise forward.
    last_info = SamplerInfo("exact push-forward of tangent noise by Exp_p0", True, 1.0)

    def check_exact(self) -> None:
        """A no-op: the tangent noise is drawn exactly at every scale."""

    def tangent_center(self, center: Array) -> Array:
        """Orthonormal coordinates of Log_p0(center)."""
        m = self.manifold
        return m.to_coords(self.footpoint, m.log(self.footpoint, m.check_point(center)))

    def _noise(self, shape: tuple[int, ...], rng: np.random.Generator) -> Array:
        raise NotImplementedError

    def _noise_norm_bound(self) -> float:
        """A norm the tangent noise exceeds with probability below 1e-14."""
        raise NotImplementedError

    def check_representable(self, tangent_radius: float) -> None:
        """Refuse, before any draw, a scale whose draws around a tangent center of norm up to
        ``tangent_radius`` would leave double precision (with probability above 1e-14)."""
        m = self.manifold
        reach = tangent_radius + self._noise_norm_bound()
        if not represents_distance(m, self.footpoint, reach):
            raise ValueError(
                f"noise at this scale reaches tangent norms near {reach:.3g}, beyond what double "
                f"precision represents on {m!r}; the guarantee this scale buys is negligible: use a "
                f"smaller scale (a larger privacy budget or sample, or a smaller public radius)")

    def _log_noise_density(self, u: Array) -> Array:
        raise NotImplementedError

    def sample(self, center: Array, size=None, rng: np.random.Generator | int | None = None) -> Array:
        """Draws Exp_p0(Log_p0(center) + noise), shape size + batch(center) + point_shape."""
        rng = as_generator(rng)
        c = self.tangent_center(center)
        shape = size_tuple(size) + c.shape[:-1]
        m = self.manifold
        with np.errstate(over="ignore", invalid="ignore"):  # overflowing draws raise below
            u = c + self._noise(shape, rng)
            out = m.exp(self.footpoint, m.from_coords(self.footpoint, u))
            if not np.all(np.isfinite(out)):
                raise ValueError(
                    f"draws at this noise scale leave double precision on {m!r} (tangent norms up "
                    f"to {float(np.max(np.linalg.norm(u, axis=-1))):.3g}); the guarantee this scale "
                    f"buys is negligible: use a smaller scale (a larger privacy budget or sample)")
        return out

    def log_density(self, center: Array, y: Array) -> Array:
        """log g(y) w.r.t. the Riemannian volume: log h(u - Log_p0 center) - log J_p0(u), u = Log_p0 y."""
        m = self.manifold
        v = m.log(self.footpoint, m.check_point(y))
        u = m.to_coords(self.footpoint, v)
        return self._log_noise_density(u - self.tangent_center(center)) - np.log(
            m.volume_density(self.footpoint, v))


class WrappedLaplace(_Wrapped):
    """Exponential-wrapped Laplace: tangent noise R * scale * U, R ~ Gamma(d, 1), U uniform.

    epsilon-DP with scale = Delta / epsilon (Theorem 3.1), Delta a bound on
    ``|Log_p0 f(D) - Log_p0 f(D')|`` (the global sensitivity suffices on Hadamard manifolds).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import SPD
    >>> from geodp.mechanisms import WrappedLaplace
    >>> mech = WrappedLaplace(SPD(2), scale=0.1, footpoint=np.eye(2))
    >>> draws = mech.sample(np.diag([2.0, 1.0]), size=3, rng=0)
    >>> draws.shape, bool(np.all(np.linalg.eigvalsh(draws) > 0))
    ((3, 2, 2), True)
    """

    def __init__(self, manifold: Manifold, scale: float, footpoint: Array):
        super().__init__(manifold, footpoint)
        self.scale = check_positive("scale", scale)

    def _noise(self, shape, rng):
        return l2_laplace(self.manifold.dim, self.scale, shape, rng)

    def _noise_norm_bound(self):
        return self.scale * float(special.gammainccinv(self.manifold.dim, 1e-14))

    def _log_noise_density(self, u):
        """exp(-|u|/s) / (s^d Gamma(d) |S^(d-1)|), |S^(d-1)| = 2 pi^(d/2) / Gamma(d/2)."""
        d = self.manifold.dim
        log_norm = (d * np.log(self.scale) + special.gammaln(d) + np.log(2.0)
                    + 0.5 * d * np.log(np.pi) - special.gammaln(0.5 * d))
        return -np.linalg.norm(u, axis=-1) / self.scale - log_norm


class WrappedGaussian(_Wrapped):
    """Exponential-wrapped Gaussian: tangent noise N(0, sigma^2 I) in orthonormal coordinates.

    Calibrations: (epsilon, delta)-DP by the analytic condition with the tangent sensitivity
    (Theorem 3.2, ``analytic_gaussian_sigma``); mu-GDP with sigma = Delta/mu (Theorem 3.3);
    (alpha, epsilon)-RDP with sigma = Delta/sqrt(2 epsilon/alpha) (Theorem 3.4).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Hyperbolic
    >>> from geodp.mechanisms import WrappedGaussian
    >>> m = Hyperbolic(2)
    >>> mech = WrappedGaussian(m, sigma=0.5, footpoint=m.origin())
    >>> mech.sample(m.origin(), size=4, rng=0).shape
    (4, 3)
    """

    def __init__(self, manifold: Manifold, sigma: float, footpoint: Array):
        super().__init__(manifold, footpoint)
        self.sigma = check_positive("sigma", sigma)

    def _noise(self, shape, rng):
        return self.sigma * rng.standard_normal(shape + (self.manifold.dim,))

    def _noise_norm_bound(self):
        """P(|Z| > sqrt(d) + t) <= exp(-t^2/2) for Z ~ N(0, I_d) (Gaussian concentration)."""
        return self.sigma * (np.sqrt(self.manifold.dim) + 8.0)

    def _log_noise_density(self, u):
        d = self.manifold.dim
        return (-0.5 * np.sum(u * u, axis=-1) / self.sigma**2
                - 0.5 * d * np.log(2 * np.pi * self.sigma**2))
