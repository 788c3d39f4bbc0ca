"""Exact sampling of the Riemannian Laplace on a compact space of nonnegative curvature by
rejection in the tangent space of the footpoint.

The law. The target is p(x) proportional to exp(-rho(eta, x)/s) with respect to the Riemannian
volume. Let D_eta be the open domain inside the tangent cut locus of eta (``before_cut_locus``):
Exp_eta maps D_eta diffeomorphically onto M minus the cut locus of eta, a null set, and
rho(eta, Exp_eta v) = |v| there (Chavel 2006, Riemannian Geometry, Sec. III.2). So for every
bounded f, in orthonormal coordinates v of T_eta = R^d,

    int_M f(x) p(x) dvol(x) = int_{D_eta} f(Exp_eta v) exp(-|v|/s) J(v) dv / Z,       (1)

with J(v) = ``volume_density(eta, v)``, the Jacobian of Exp_eta in orthonormal frames: the law of
Exp_eta(V) is the target when V has the density proportional to exp(-|v|/s) J(v) 1[v in D_eta].

The bound. If the sectional curvature is >= 0, J <= 1 on D_eta (Bishop's comparison: the Jacobi
fields grow at most linearly before the first conjugate point; Chavel 2006, Sec. III.4). On a
compact symmetric space J(v) = prod over positive restricted roots alpha of
(sin alpha(v) / alpha(v))^(m_alpha) (Helgason 1984, Groups and Geometric Analysis, Ch. I, Sec. 5),
each factor in (0, 1] on D_eta.

The sampler. Propose V from the density proportional to exp(-|v|/s) 1[|v| < diam] on R^d, the
Euclidean Laplace truncated at the diameter (which bounds |v| on D_eta since rho(eta, Exp v) =
|v| there): a direction uniform on the unit sphere times a radius of density r^(d-1) exp(-r/s) on
[0, diam), a Gamma(d, s) law truncated, drawn by inversion (``truncated_gamma``). Accept V with
probability J(V) 1[V in D_eta] <= 1. The accepted V has the density of (1) (von Neumann
rejection: proposal density times acceptance probability), so Exp_eta(V) is an exact draw.

The acceptance rate, E[J(V) 1[V in D_eta]] under the proposal, depends on the manifold and the
scale only (the footpoint is moved by an isometry, which maps D_eta, J and the rotation-invariant
proposal to those of the new footpoint); it falls as s or d grows, and a pilot run at the public
``origin()`` compares it with ``min_acceptance`` before any data are read. Each draw is accepted
with J and D evaluated at its own footpoint, so the draws are exact whether or not the manifold
is homogeneous: only the pilot's estimate relies on it.
"""

from __future__ import annotations

import numpy as np
from scipy import special

from ..manifolds import Manifold
from ..manifolds.base import Array
from ..manifolds.capabilities import MissingCapability, require
from .envelope import accumulate
from .spd_laplace import LowAcceptanceError

#: Proposals in the pilot run that estimates the acceptance rate (coordinates only: J and the
#: cut-locus test, no exponential map).
PILOT = 20_000
#: Most proposals held at once (the batches of ``accumulate`` and of the per-footpoint rounds).
MAX_BATCH = 250_000
#: Tolerance of the check J <= 1 (Bishop), against rounding in ``volume_density``.
J_ROUNDING = 1e-9


def truncated_gamma(shape: float, scale: float, top: float, size, rng: np.random.Generator) -> Array:
    """Draws of the Gamma(shape, scale) law conditioned on [0, top), by inversion, of shape ``size``.

    With P = gammainc(shape, top/scale) and U uniform on [0, 1), the draw solves
    gammainc(shape, r/scale) = U P. Where U P >= 1/2 the equivalent upper-tail equation
    gammaincc(shape, r/scale) = Q + (1 - U) P, Q = gammaincc(shape, top/scale), is solved
    instead: both sides are then formed without cancellation, so the upper tail keeps its
    relative precision rather than that of 1 - U P. Raises ``LowAcceptanceError`` when P
    underflows (a scale so large against ``top`` that the truncated law is beyond double
    precision; the rejection step would all but never accept there).
    """
    x = top / scale
    lower, upper = special.gammainc(shape, x), special.gammaincc(shape, x)
    if not lower > 0.0:
        raise LowAcceptanceError(f"the radius law Gamma({shape:g}, {scale:.4g}) truncated at "
                                 f"{top:.4g} has no mass in double precision")
    u = rng.random(size)
    p = u * lower
    with np.errstate(invalid="ignore"):
        r = np.where(p < 0.5, special.gammaincinv(shape, p),
                     special.gammainccinv(shape, upper + (1.0 - u) * lower))
    return scale * np.minimum(r, x)


def tangent_rejection_law(manifold: Manifold, scale: float, min_acceptance: float
                          ) -> TangentRejectionLaw:
    """The tangent-rejection law of the Laplace with ``scale`` on ``manifold``.

    Raises ``MissingCapability`` unless the manifold provides ``before_cut_locus``, ``diameter``,
    ``volume_density`` and ``curvature_bounds`` with a nonnegative lower bound (else J is not
    bounded by 1, nor the domain by the diameter).
    """
    require(manifold, ("before_cut_locus", "diameter", "volume_density", "curvature_bounds"),
            by="the exact tangent-rejection sampler of the Riemannian Laplace")
    if manifold.curvature_bounds[0] < 0 or not np.isfinite(manifold.diameter):
        raise MissingCapability(
            f"the exact tangent-rejection sampler of the Riemannian Laplace needs a compact "
            f"manifold of nonnegative curvature (J <= 1, Bishop); {manifold!r} has curvature "
            f"bounds {manifold.curvature_bounds} and diameter {manifold.diameter:g}")
    return TangentRejectionLaw(manifold, scale, min_acceptance)


class TangentRejectionLaw:
    """Exact draws of the Riemannian Laplace by rejection in T_eta (see the module notes).

    ``rate`` is the pilot's acceptance rate (None before ``choose``).
    """

    def __init__(self, manifold: Manifold, scale: float, min_acceptance: float):
        self.manifold, self.scale, self.min_acceptance = manifold, float(scale), float(min_acceptance)
        self.rate: float | None = None

    def propose(self, size: tuple[int, ...], rng: np.random.Generator) -> Array:
        """Coordinates (*size, d) of the truncated Euclidean Laplace on R^d: a uniform direction
        times a Gamma(d, s) radius truncated at the diameter."""
        m = self.manifold
        c = rng.standard_normal(size + (m.dim,))
        r = truncated_gamma(m.dim, self.scale, m.diameter, size, rng)
        return c * (r / np.linalg.norm(c, axis=-1))[..., None]

    def keep(self, footpoint: Array, c: Array, rng: np.random.Generator) -> Array:
        """Accept each proposal c (..., d) at ``footpoint`` (broadcast against c's batch) with
        probability J(v) 1[v in D_footpoint], v = from_coords(footpoint, c): bool (...)."""
        m = self.manifold
        v = m.from_coords(footpoint, c)
        inside = m.before_cut_locus(footpoint, v)
        j = np.where(inside, m.volume_density(footpoint, v), 0.0)
        if np.any(j > 1.0 + J_ROUNDING):
            raise RuntimeError(f"{m!r}: volume_density {float(np.max(j)):.17g} > 1 inside the cut "
                               f"locus, which curvature >= 0 excludes (Bishop); no draw is made")
        return rng.random(j.shape) < j

    def choose(self, rng: np.random.Generator) -> float:
        """The acceptance rate on a pilot of ``PILOT`` proposals at the public ``origin()``;
        ``LowAcceptanceError`` below ``min_acceptance``."""
        rate = float(np.mean(self.keep(self.manifold.origin(), self.propose((PILOT,), rng), rng)))
        if rate < self.min_acceptance:
            raise LowAcceptanceError(
                f"tangent rejection on {self.manifold!r} at scale {self.scale:.4g} accepts "
                f"{rate:.2e} < {self.min_acceptance:g} of its proposals")
        self.rate = rate
        return rate

    def sample(self, footpoint: Array, n: int, rng: np.random.Generator) -> tuple[Array, float]:
        """n exact draws around one footpoint (pooled batches of proposals), or one around each of
        n stacked footpoints (rounds over the footpoints still without a draw), and the
        fraction of proposals kept."""
        m = self.manifold
        if self.rate is None:
            self.choose(rng)
        if footpoint.ndim == len(m.point_shape):
            def accepted(batch: int) -> Array:
                c = self.propose((batch,), rng)
                return c[self.keep(footpoint, c, rng)]
            c, rate = accumulate(accepted, n, self.rate, self.min_acceptance, MAX_BATCH)
        else:
            c, rate = self._each(footpoint, rng)
        return m.exp(footpoint, m.from_coords(footpoint, c)), rate

    def _each(self, footpoints: Array, rng: np.random.Generator) -> tuple[Array, float]:
        """One accepted proposal (n, d) per footpoint: each round gives every footpoint without a
        draw k ~ 1/rate proposals and keeps its first accepted one (an exact draw: the first
        success of i.i.d. trials has the accepted law)."""
        n, todo = len(footpoints), np.arange(len(footpoints))
        out, proposed = np.empty((n, self.manifold.dim)), 0
        while todo.size:
            k = int(max(1, min(np.ceil(1.0 / self.rate), MAX_BATCH // todo.size)))
            c = self.propose((todo.size, k), rng)
            keep = self.keep(footpoints[todo][:, None], c, rng)
            hit = keep.any(axis=1)
            out[todo[hit]] = c[hit, keep[hit].argmax(axis=1)]
            proposed += c.shape[0] * k
            todo = todo[~hit]
        return out, n / proposed
