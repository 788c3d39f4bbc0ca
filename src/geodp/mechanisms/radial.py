"""Radial laws of the Riemannian Laplace distribution in geodesic polar coordinates.

On an isotropic space the Laplace density exp(-rho(eta, x)/s) factorises in geodesic polar
coordinates around eta: the direction is uniform on the unit sphere of T_eta and the radius has
density exp(-r/s) J(r), J(r) = r^(d-1) * volume_density at radius r (Reimherr et al. 2021,
Definition 3; Chavel, Riemannian Geometry, III.1). Every J below is log-concave, so the radius is
sampled exactly by ``envelope.rejection_sample``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import optimize

from ..manifolds import Manifold
from ..manifolds.capabilities import require
from ..privacy.conversions import check_positive
from .envelope import accumulate, rejection_sample, tangent_envelope

#: Below this value of (d - 1) sqrt(k) scale the radius is drawn from the Gamma envelope (its
#: acceptance is then at least about 0.99); the tangent envelope serves larger scales.
GAMMA_REGIME = 0.05


class NotNormalisableError(ValueError):
    """The requested scale gives a density that cannot be normalised."""


@dataclass
class RadialLaw:
    """Radius density exp(h(r)) on [lo, hi), h concave; ``kind`` names J."""

    kind: str
    scale: float
    dim: int
    sqrt_k: float
    hi: float

    lo: float = 0.0

    def h(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=float)
        s, d, c = self.scale, self.dim, self.sqrt_k
        with np.errstate(divide="ignore"):
            if self.kind == "flat":
                return -r / s + (d - 1) * np.log(r)
            if self.kind == "sphere":
                return -r / s + (d - 1) * np.log(np.sin(c * r))
            if self.kind == "hyperbolic":
                return -r / s + (d - 1) * np.log(np.sinh(c * r))
            # Kendall planar shapes, CP^(m): J ~ sin(r)^(2m-1) cos(r), m = d/2
            return -r / s + (d - 1) * np.log(np.sin(r)) + np.log(np.cos(r))

    def dh(self, r: np.ndarray) -> np.ndarray:
        r = np.asarray(r, dtype=float)
        s, d, c = self.scale, self.dim, self.sqrt_k
        if self.kind == "flat":
            return -1.0 / s + (d - 1) / r
        if self.kind == "sphere":
            return -1.0 / s + (d - 1) * c / np.tan(c * r)
        if self.kind == "hyperbolic":
            return -1.0 / s + (d - 1) * c / np.tanh(c * r)
        return -1.0 / s + (d - 1) / np.tan(r) - np.tan(r)

    def mode(self) -> float:
        """Maximiser of h (closed forms from the README notes where they exist)."""
        s, d, c = self.scale, self.dim, self.sqrt_k
        if self.kind == "flat":
            return (d - 1) * s
        if self.kind == "sphere":
            return float(np.arctan((d - 1) * s * c) / c)
        if self.kind == "hyperbolic":
            return float(np.arctanh((d - 1) * s * c) / c)
        eps = 1e-12
        return float(optimize.brentq(self.dh, eps, np.pi / 2 - eps))

    def abscissae(self) -> np.ndarray:
        """Tangent points: the mode and multiples of the local standard deviation around it."""
        m = self.mode()
        hi = self.hi if np.isfinite(self.hi) else m + 1e3 * self.scale * self.dim
        step = 1e-5 * max(m, self.scale)
        if m > step:
            curv = -(self.dh(m + step) - self.dh(m - step)) / (2 * step)
        else:
            curv = (1.0 / self.scale) ** 2
        sd = 1.0 / np.sqrt(max(curv, 1e-300))
        span = (hi - self.lo)
        pts = m + sd * np.array([-4, -2.5, -1.5, -0.75, 0.0, 0.75, 1.5, 2.5, 4, 6, 9])
        pts = np.concatenate([pts, [self.lo + 1e-3 * span, hi - 1e-3 * span] if np.isfinite(
            self.hi) else [self.lo + 1e-3 * min(sd, span)]])
        inner = (pts > self.lo + 1e-9 * span) & (pts < hi - 1e-9 * span)
        pts = pts[inner]
        if not np.isfinite(self.hi):
            tail = max(pts.max(), m + 10 * sd)
            pts = np.append(pts, tail)
        return np.unique(pts)

    def sample(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """``size`` exact radii and the acceptance rate of the rejection step."""
        if self.kind == "flat":
            return rng.gamma(self.dim, self.scale, size=size), 1.0
        if self.dim == 1 and self.kind in ("sphere", "hyperbolic"):
            # J constant: an exponential truncated at hi, by inversion
            u = rng.random(size)
            cut = -np.expm1(-self.hi / self.scale) if np.isfinite(self.hi) else 1.0
            return -self.scale * np.log1p(-u * cut), 1.0
        if (self.dim - 1) * self.sqrt_k * self.scale < GAMMA_REGIME:
            return self._gamma_envelope_sample(size, rng)
        env = tangent_envelope(self.h, self.dh, self.abscissae(), self.lo, self.hi)
        return rejection_sample(self.h, env, size, rng)

    def _gamma_envelope_sample(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, float]:
        """Exact rejection from a Gamma law, for small scales (down to the smallest double).

        sin x <= x bounds the sphere's and Kendall's J by (c r)^(d-1), and sinh x <= x e^x the
        hyperbolic one by (c r)^(d-1) e^((d-1) c r): the proposal is Gamma(d, s') with
        1/s' = 1/s (sphere, Kendall) or 1/s - (d-1) c (hyperbolic), and r is kept with
        probability J(r) / envelope(r) = sinc(c r)^(d-1) (times cos r on Kendall's space, 0 past
        the cut locus) or ((1 - e^(-2 c r)) / (2 c r))^(d-1). As the scale shrinks the
        acceptance tends to 1 and the law to the Gamma law itself.
        """
        s, d, c = self.scale, self.dim, self.sqrt_k
        rate = 1.0 / s - ((d - 1) * c if self.kind == "hyperbolic" else 0.0)

        def propose(m: int) -> np.ndarray:
            r = rng.gamma(d, 1.0 / rate, size=m)
            x = c * r
            with np.errstate(divide="ignore", invalid="ignore"):
                if self.kind == "hyperbolic":
                    log_acc = (d - 1) * np.log(np.where(x > 0, -np.expm1(-2 * x) / (2 * x), 1.0))
                else:
                    log_acc = (d - 1) * np.log(np.maximum(np.sinc(x / np.pi), 0.0))
                    if self.kind == "kendall":
                        log_acc = log_acc + np.log(np.maximum(np.cos(r), 0.0))
            keep = (r < self.hi) & (np.log(rng.random(m)) <= log_acc)
            return r[keep]

        return accumulate(propose, size, 0.9, 1e-3, 10**6)


def radial_law(manifold: Manifold, scale: float) -> RadialLaw:
    """The radial law of the Laplace distribution with ``scale`` on an isotropic manifold (one
    with the ``radial_volume`` capability).

    Raises ``NotNormalisableError`` on hyperbolic space when scale >= 1/((d-1) sqrt(k)), where
    exp(-r/s) sinh(sqrt(k) r)^(d-1) is not integrable, and ``MissingCapability`` for manifolds
    whose volume in polar coordinates depends on the direction (affine-invariant SPD has its own
    sampler) or is not known.
    """
    scale = check_positive("scale", scale)
    require(manifold, ("radial_volume",), by="the exact polar sampler of the Riemannian Laplace")
    family, c, largest = manifold.radial_volume()
    if family == "hyperbolic" and manifold.dim > 1 and (manifold.dim - 1) * c * scale >= 1:
        raise NotNormalisableError(
            f"the Riemannian Laplace on {manifold!r} is normalisable only for scale < "
            f"1/((d-1) sqrt(k)) = {1 / ((manifold.dim - 1) * c):.6g}; got scale {scale:.6g}. "
            f"Increase epsilon or n, or restrict the release to a ball (restrict_to)")
    return RadialLaw(family, scale, manifold.dim, c, largest)
