"""The Riemannian Laplace mechanism (Reimherr, Bharath & Soto 2021, Definition 3)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..manifolds import Manifold
from ..manifolds import _matrix as mx
from ..manifolds.base import Array, as_generator, size_tuple
from ..manifolds.spd import AffineInvariantSPD
from ..privacy.conversions import check_positive
from .envelope import accumulate
from .mcmc import MCMCDiagnostics, metropolis_hastings
from .radial import NotNormalisableError, radial_law
from .spd_laplace import (LowAcceptanceError, SPDEigenLaw, check_representable, haar_orthogonal,
                          spd_from_polar)


@dataclass
class SamplerInfo:
    """How the last draws were produced: ``exact`` is False only for the MCMC fallback."""

    method: str
    exact: bool
    acceptance_rate: float
    mcmc: MCMCDiagnostics | None = None
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        out = {"method": self.method, "exact": self.exact, "acceptance_rate": self.acceptance_rate}
        if self.mcmc is not None:
            out["mcmc"] = self.mcmc.as_dict()
        if self.notes:
            out["notes"] = list(self.notes)
        return out


class RiemannianLaplace:
    """Density proportional to exp(-rho(footpoint, m) / scale) w.r.t. the Riemannian volume.

    Theorem 1 of Reimherr et al. (2021): on a homogeneous space (every manifold of geodp) the
    normaliser does not depend on the footpoint, so scale = Delta / epsilon gives epsilon-DP for a
    statistic of sensitivity Delta. With ``restrict_to=(center, radius)`` the law is conditioned on
    the ball B_radius(center) (Theorem 3); the normaliser then depends on the footpoint and
    scale = 2 Delta / epsilon is needed.

    Sampling is exact where possible: geodesic polar coordinates (uniform direction, radius from
    the log-concave radial law) on isotropic spaces, the Hajri et al. decomposition on
    affine-invariant SPD; a restricted law is sampled by rejection from the better of the
    unrestricted law and the uniform law on the ball. When every exact sampler would accept fewer
    than ``min_acceptance`` of its proposals, random-walk Metropolis-Hastings takes over and
    ``last_info.exact`` is False.
    """

    def __init__(self, manifold: Manifold, scale: float, restrict_to: tuple[Array, float] | None = None,
                 min_acceptance: float = 1e-4, mcmc_burn_in: int = 3000):
        self.manifold, self.scale = manifold, check_positive("scale", scale)
        self.min_acceptance, self.mcmc_burn_in = min_acceptance, mcmc_burn_in
        self.restrict_to = None
        if restrict_to is not None:
            center, radius = restrict_to
            center = manifold.check_point(center)
            radius = float(radius)
            if not 0 < radius <= manifold.injectivity_radius:
                raise ValueError(f"the restriction radius must lie in (0, "
                                 f"{manifold.injectivity_radius:g}], got {radius}")
            self.restrict_to = (center, radius)
        self._law = None
        try:
            self._law = self._unrestricted_law()
        except NotNormalisableError:
            if self.restrict_to is None:
                raise
        self.last_info: SamplerInfo | None = None

    def _unrestricted_law(self):
        m = self.manifold
        if isinstance(m, AffineInvariantSPD):
            law = SPDEigenLaw(m.n, self.scale, self.min_acceptance)
            check_representable(m.n, self.scale)
            return law
        return radial_law(m, self.scale)

    def log_density(self, footpoint: Array, m: Array) -> Array:
        """-rho(footpoint, m) / scale (up to the normaliser); -inf outside the restriction ball."""
        out = -self.manifold.dist(footpoint, m) / self.scale
        if self.restrict_to is not None:
            center, radius = self.restrict_to
            out = np.where(self.manifold.dist(center, m) <= radius, out, -np.inf)
        return out

    # ---------------------------------------------------------------- samplers
    def _exact_unrestricted(self, footpoint: Array, n: int, rng) -> tuple[Array, float, str]:
        """n draws around one footpoint, or one draw around each of n stacked footpoints."""
        m = self.manifold
        single = footpoint.ndim == len(m.point_shape)
        if isinstance(self._law, SPDEigenLaw):
            r, acc, method = self._law.sample(n, rng)
            u = haar_orthogonal(m.n, n, rng)
            l, _ = mx.cholesky(footpoint)
            lu = mx.matmul(l, u)
            return spd_from_polar(lu, r, self.scale), acc, f"exact SPD polar decomposition ({method})"
        radius, acc = self._law.sample(n, rng)
        direction = m.random_direction(footpoint, n if single else None, rng)
        radius = radius.reshape((n,) + (1,) * len(m.point_shape))
        return m.exp(footpoint, radius * direction), acc, "exact geodesic polar coordinates"

    def _restricted_proposals(self, footpoint: Array, n: int, rng, which: str):
        """Accepted draws from proposal A (unrestricted law) or B (uniform on the ball)."""
        m = self.manifold
        center, radius = self.restrict_to
        if which == "A":
            x, _, _ = self._exact_unrestricted(footpoint, n, rng)
            return x[m.dist(center, x) <= radius]
        x = m.random_ball(center, radius, n, rng)
        rho_min = max(0.0, float(m.dist(footpoint, center)) - radius)
        keep = np.log(rng.random(n)) <= -(m.dist(footpoint, x) - rho_min) / self.scale
        return x[keep]

    def _exact_restricted(self, footpoint: Array, n: int, rng) -> tuple[Array, float, str]:
        pilot = 2000
        rates = {}
        for which in ("A", "B") if self._law is not None else ("B",):
            try:
                rates[which] = len(self._restricted_proposals(footpoint, pilot, rng, which)) / pilot
            except (LowAcceptanceError, RuntimeError):
                rates[which] = 0.0
        which = max(rates, key=rates.get)
        if rates[which] < self.min_acceptance:
            raise LowAcceptanceError(f"restricted proposals accept {rates[which]:.2e}")
        x, rate = accumulate(lambda batch: self._restricted_proposals(footpoint, batch, rng, which),
                             n, rates[which], self.min_acceptance, 2_000_000)
        label = "unrestricted law" if which == "A" else "uniform law on the ball"
        return x, rate, f"exact rejection from the {label}"

    def _mcmc(self, footpoint: Array, n: int, rng) -> tuple[Array, MCMCDiagnostics]:
        """One chain per draw, started at the footpoint (or the ball's center if outside it)."""
        m = self.manifold
        start = footpoint
        if self.restrict_to is not None and m.dist(self.restrict_to[0], footpoint) > self.restrict_to[1]:
            start = self.restrict_to[0]
        init = np.broadcast_to(start, (n,) + m.point_shape)
        x, diag = metropolis_hastings(
            m, lambda y: self.log_density(footpoint, y), init, rng, burn_in=self.mcmc_burn_in,
            step=min(self.scale, 0.25 * m.injectivity_radius),
            summary=lambda y: m.dist(footpoint, y))
        return x, diag

    def sample(self, footpoint: Array, size=None, rng: np.random.Generator | int | None = None) -> Array:
        """Independent draws centred at ``footpoint``, of shape size + batch + point_shape.

        ``footpoint`` may hold a batch of footpoints (shape batch + point_shape): each draw then
        uses its own footpoint, all in one vectorised call (a restricted law loops over them).
        """
        rng = as_generator(rng)
        m = self.manifold
        footpoint = m.check_point(footpoint)
        nd = len(m.point_shape)
        batch = footpoint.shape[: footpoint.ndim - nd]
        shape = size_tuple(size) + batch
        n = int(np.prod(shape, dtype=int)) if shape else 1
        if batch:
            footpoints = np.broadcast_to(footpoint, shape + m.point_shape).reshape((n,) + m.point_shape)
            if self.restrict_to is not None:
                draws = [self.sample(f, None, rng) for f in footpoints]
                return np.stack(draws).reshape(shape + m.point_shape)
            footpoint = np.ascontiguousarray(footpoints)
        try:
            if self.restrict_to is None:
                x, acc, method = self._exact_unrestricted(footpoint, n, rng)
            else:
                x, acc, method = self._exact_restricted(footpoint, n, rng)
            self.last_info = SamplerInfo(method, True, float(acc))
        except LowAcceptanceError as exc:
            x, diag = self._mcmc(footpoint, n, rng)
            self.last_info = SamplerInfo(
                "random-walk Metropolis-Hastings (approximate)", False, diag.acceptance_rate, diag,
                [f"exact samplers were not used: {exc}"])
        return x.reshape(shape + m.point_shape)
