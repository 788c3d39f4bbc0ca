"""The Riemannian Laplace mechanism (Reimherr, Bharath & Soto 2021, Definition 3)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..manifolds import Manifold
from ..manifolds import _matrix as mx
from ..manifolds.base import BALL_MIN_RATE, Array, as_generator, size_tuple
from ..manifolds.capabilities import MissingCapability, has, require
from ..privacy.conversions import check_positive
from .envelope import accumulate
from .mcmc import (MIN_CHAINS, ApproximateSamplerRefused, MCMCDiagnostics, metropolis_hastings,
                   warn_unless_converged)
from .radial import NotNormalisableError, radial_law
from .spd_chains import ball_chains
from .spd_laplace import (LowAcceptanceError, SPDEigenLaw, check_representable, haar_orthogonal,
                          spd_from_polar)
from .tangent_rejection import TangentRejectionLaw, tangent_rejection_law

#: Seed of the generator the exact plan's pilot runs draw from (``exact_planned``): public, so
#: that the plan is a function of the public parameters alone.
PLAN_SEED = 20_211_126


@dataclass
class SamplerInfo:
    """How the last draws were produced: ``exact`` is False only for the MCMC fallback.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import SPD
    >>> from geodp.mechanisms import RiemannianLaplace
    >>> mech = RiemannianLaplace(SPD(2), scale=0.2)
    >>> _ = mech.sample(np.eye(2), size=10, rng=0)
    >>> mech.last_info.exact, mech.last_info.mcmc is None
    (True, True)
    """

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


def _ball_starts(manifold: Manifold, center: Array, radius: float, k: int, rng) -> Array:
    """k points Exp_center(t u), u uniform on the unit sphere of T_center, t = radius U^(1/dim):
    uniform in the ball of normal coordinates at ``center``, a law that needs neither the data nor
    rejection (the Riemannian-uniform law of ``random_ball`` rejects nearly everything on a wide
    ball of SPD, whose volume grows exponentially)."""
    c = rng.standard_normal((k, manifold.dim))
    c *= (radius * rng.random(k) ** (1.0 / manifold.dim) / np.linalg.norm(c, axis=1))[:, None]
    return manifold.exp(center, manifold.from_coords(center, c))


class RiemannianLaplace:
    """Density proportional to exp(-rho(footpoint, m) / scale) w.r.t. the Riemannian volume.

    Theorem 1 of Reimherr et al. (2021): on a homogeneous space (every manifold of geodp) the
    normaliser does not depend on the footpoint, so scale = Delta / epsilon gives epsilon-DP for a
    statistic of sensitivity Delta. With ``restrict_to=(center, radius)`` the law is conditioned on
    the ball B_radius(center) (Theorem 3); the normaliser then depends on the footpoint and
    scale = 2 Delta / epsilon is needed.

    Sampling is exact where possible: geodesic polar coordinates (uniform direction, radius from
    the log-concave radial law) on isotropic spaces, the Hajri et al. decomposition on
    affine-invariant SPD, rejection of a truncated Euclidean Laplace in the tangent space by the
    volume density on compact spaces of nonnegative curvature that are not isotropic (SO(n),
    n >= 4, and the Grassmannians: ``tangent_rejection``); a restricted law is sampled by rejection from the better of the
    unrestricted law and the uniform law on the ball. When every exact sampler would accept fewer
    than ``min_acceptance`` of its proposals (at the ball's center, for a restricted law),
    ``sample`` raises ``ApproximateSamplerRefused``,
    unless ``allow_approximate=True``: random-walk Metropolis-Hastings then takes over (at least
    ``MIN_CHAINS`` chains started in the public ``chain_ball``, by default the
    restriction ball; an ``ApproximateSamplerWarning`` when R-hat or ESS fail their thresholds)
    and ``last_info.exact`` is False; a restricted law on affine-invariant SPD(n >= 2) runs the
    polar chains of ``spd_chains`` instead (proposals reversible for the data-free restricted
    Laplace at the ball's center, stopped on R-hat and bulk ESS). ``exact_planned`` takes that
    decision once, from the public parameters, before any data are read: exact or not, and a
    refusal, never depend on the data.

    On affine-invariant SPD an unrestricted draw may leave double precision (its eigenvalues
    spanning beyond what a double matrix holds); the whole call then raises
    ``UnrepresentableScaleError``. ``max_condition`` = K, a public bound on the condition of every
    footpoint the mechanism will be given, makes the refusal at construction a worst case: the
    scale is refused unless that chance is at most ``MAX_UNREPRESENTABLE`` around every footpoint
    of condition <= K (``spd_laplace.unrepresentable_bound``). Without it the check covers
    well-conditioned footpoints of SPD(2) only.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.mechanisms import RiemannianLaplace
    >>> m = Sphere(2)
    >>> mech = RiemannianLaplace(m, scale=0.1)
    >>> draws = mech.sample(m.origin(), size=1000, rng=0)
    >>> draws.shape, mech.last_info.exact
    ((1000, 3), True)
    >>> round(float(m.dist(m.origin(), draws).mean()), 2)   # about 2 scale on S^2
    0.2
    """

    def __init__(self, manifold: Manifold, scale: float, restrict_to: tuple[Array, float] | None = None,
                 min_acceptance: float = 1e-4, mcmc_burn_in: int = 3000, *,
                 allow_approximate: bool = False, chain_ball: tuple[Array, float] | None = None,
                 max_condition: float | None = None):
        self.manifold, self.scale = manifold, check_positive("scale", scale)
        self.max_condition = None if max_condition is None else float(max_condition)
        if self.max_condition is not None and not (has(manifold, "eigen_laplace_size")
                                                   and self.max_condition >= 1.0):
            raise ValueError(f"max_condition bounds the footpoints' condition numbers for the "
                             f"Laplace on affine-invariant SPD: it must be a number >= 1 there, "
                             f"and has no meaning on {manifold!r}; got {max_condition!r}")
        self.min_acceptance, self.mcmc_burn_in = min_acceptance, mcmc_burn_in
        self.allow_approximate = bool(allow_approximate)
        self.chain_ball = chain_ball if chain_ball is None else (manifold.check_point(chain_ball[0]),
                                                                 float(chain_ball[1]))
        self.restrict_to = None
        if restrict_to is not None:
            center, radius = restrict_to
            center = manifold.check_point(center)
            radius = float(radius)
            if not 0 < radius <= manifold.injectivity_radius:
                raise ValueError(f"the restriction radius must lie in (0, "
                                 f"{manifold.injectivity_radius:g}], got {radius}")
            self.restrict_to = (center, radius)
            if self.chain_ball is None:
                self.chain_ball = self.restrict_to
        require(manifold, ("dist",), by="the Riemannian Laplace mechanism")
        self._law, self._no_exact_law, self._ball_rate = None, None, None
        self._exact_plan: bool | None = None
        self._usable: tuple[str, ...] | None = None
        self._plan_reason = ""
        try:
            self._law = self._unrestricted_law()
        except NotNormalisableError:
            if self.restrict_to is None:
                raise
        except MissingCapability as exc:  # no exact law: MCMC, when the caller allows it
            self._no_exact_law = str(exc)
        self.last_info: SamplerInfo | None = None

    def _unrestricted_law(self):
        """The exact law for the manifold's capabilities: SPD's eigenvalue law, the radial law of
        an isotropic space, else tangent rejection where the cut locus is known (the
        ``MissingCapability`` of the radial law otherwise: no exact law)."""
        m = self.manifold
        if has(m, "eigen_laplace_size"):
            law = SPDEigenLaw(m.eigen_laplace_size, self.scale, self.min_acceptance)
            check_representable(m.eigen_laplace_size, self.scale, self.max_condition)
            return law
        if not has(m, "radial_volume") and has(m, "before_cut_locus"):
            return tangent_rejection_law(m, self.scale, self.min_acceptance)
        return radial_law(m, self.scale)

    def log_density(self, footpoint: Array, m: Array) -> Array:
        """-rho(footpoint, m) / scale (up to the normaliser); -inf outside the restriction ball."""
        out = -self.manifold.dist(footpoint, m) / self.scale
        if self.restrict_to is not None:
            center, radius = self.restrict_to
            out = np.where(self.manifold.dist(center, m) <= radius, out, -np.inf)
        return out

    # ---------------------------------------------------------------- samplers
    def _exact_unrestricted(self, footpoint: Array, n: int, rng,
                            drop_unrepresentable: bool = False) -> tuple[Array, float, str]:
        """n draws around one footpoint, or one draw around each of n stacked footpoints
        (``drop_unrepresentable``: fewer, without the SPD draws double precision cannot hold)."""
        m = self.manifold
        if self._law is None:
            raise LowAcceptanceError(self._no_exact_law or "the law is not normalisable")
        single = footpoint.ndim == len(m.point_shape)
        if isinstance(self._law, SPDEigenLaw):
            r, acc, method = self._law.sample(n, rng)
            u = haar_orthogonal(m.eigen_laplace_size, n, rng)
            l, _ = mx.cholesky(footpoint)
            lu = mx.matmul(l, u)
            return (spd_from_polar(lu, r, self.scale, drop_unrepresentable), acc,
                    f"exact SPD polar decomposition ({method})")
        if isinstance(self._law, TangentRejectionLaw):
            x, acc = self._law.sample(footpoint, n, rng)
            return x, acc, "exact rejection in the tangent space (volume density, cut locus)"
        radius, acc = self._law.sample(n, rng)
        direction = m.random_direction(footpoint, n if single else None, rng)
        radius = radius.reshape((n,) + (1,) * len(m.point_shape))
        return m.exp(footpoint, radius * direction), acc, "exact geodesic polar coordinates"

    def _restricted_proposals(self, footpoint: Array, n: int, rng, which: str):
        """Accepted draws from proposal A (unrestricted law) or B (uniform on the ball). The law
        is restricted to the ball's points that double precision holds, a public set (Theorem 3
        holds for any public set): A leaves out the SPD draws it cannot represent, which would
        otherwise make the whole batch raise at a rate that depends on the footpoint."""
        m = self.manifold
        center, radius = self.restrict_to
        if which == "A":
            x, _, _ = self._exact_unrestricted(footpoint, n, rng, drop_unrepresentable=True)
            return x[m.dist(center, x) <= radius]
        x = m.random_ball(center, radius, n, rng, give_up=False)  # usable: a public rate
        rho_min = max(0.0, float(m.dist(footpoint, center)) - radius)
        keep = np.log(rng.random(n)) <= -(m.dist(footpoint, x) - rho_min) / self.scale
        return x[keep]

    def _restricted_choice(self, footpoint: Array, rng, refuse: bool = True) -> tuple[str, float]:
        """The better proposal for the restricted law at ``footpoint`` by a pilot run ("A" the
        unrestricted law, "B" the uniform law on the ball) and its acceptance. Below
        ``min_acceptance``: LowAcceptanceError when ``refuse``; otherwise the better of the
        usable proposals (``_usable_proposals``), its rate counted as at least one acceptance in
        the pilot, for the caller to draw from all the same (``_exact_restricted``)."""
        pilot = 2000
        rates = {}
        for which in self._usable_proposals(rng):
            if which == "B" and rates.get("A", 0.0) >= 0.5:
                # A keeps half its proposals: B, whose every proposal is itself an accepted
                # uniform draw from the ball (``random_ball`` rejects on the volume density, at
                # a cost its rate does not count), cannot be more than twice as cheap, and its
                # pilot can cost 10^6 volume densities (SPD, wide balls). Either proposal gives
                # exact draws of the same law, and A's rate is above any min_acceptance
                break
            try:
                rates[which] = len(self._restricted_proposals(footpoint, pilot, rng, which)) / pilot
            except (LowAcceptanceError, RuntimeError):
                rates[which] = 0.0
        if not rates:
            raise LowAcceptanceError("neither the unrestricted law nor the uniform law on the ball "
                                     "can be drawn exactly")
        which = max(rates, key=rates.get)
        if rates[which] >= self.min_acceptance:
            return which, rates[which]
        if refuse:
            raise LowAcceptanceError(f"restricted proposals accept {rates[which]:.2e}")
        return which, max(rates[which], 1.0 / pilot)

    def _usable_proposals(self, rng) -> tuple[str, ...]:
        """The proposals of the restricted law that can draw at all, decided once from public
        parameters: "A" where the unrestricted law exists and its own exact sampler passes its
        pilot (at the public origin), "B" where ``random_ball`` keeps enough of its proposals
        on the ball (``_uniform_ball_rate``)."""
        if self._usable is None:
            usable = []
            try:
                self._unrestricted_pilot(rng)
                usable.append("A")
            except LowAcceptanceError:
                pass
            if self._uniform_ball_rate() >= BALL_MIN_RATE:
                usable.append("B")
            self._usable = tuple(usable)
        return self._usable

    def _unrestricted_pilot(self, rng) -> None:
        """LowAcceptanceError unless the unrestricted law has an exact sampler that passes its
        pilot: SPD's eigenvalue samplers and tangent rejection run theirs at the public origin
        (the radial law always draws)."""
        if self._law is None:
            raise LowAcceptanceError(self._no_exact_law)
        if isinstance(self._law, (SPDEigenLaw, TangentRejectionLaw)):
            self._law.choose(rng)

    def _uniform_ball_rate(self) -> float:
        """The share of its proposals that ``random_ball`` keeps on the restriction ball (its own
        rejection on the volume density, before proposal B's): 0 where the density's bound
        overflows (it then keeps none), else the mean of volume_density / bound over 2000
        proposals drawn with a fixed seed. A deterministic function of the public ball, computed
        once, that draws nothing from the caller's generator."""
        if self._ball_rate is None:
            m = self.manifold
            center, radius = self.restrict_to
            with np.errstate(over="ignore"):
                bound = m.max_volume_density(radius)
            if not np.isfinite(bound):
                self._ball_rate = 0.0
            else:
                rng = np.random.default_rng(0)
                c = rng.standard_normal((2000, m.dim))
                c *= (radius * rng.random(2000) ** (1.0 / m.dim) / np.linalg.norm(c, axis=1))[:, None]
                with np.errstate(over="ignore"):
                    density = m.volume_density(center, m.from_coords(center, c))
                self._ball_rate = float(np.mean(np.minimum(density / bound, 1.0)))
        return self._ball_rate

    def _exact_restricted(self, footpoint: Array, n: int, rng) -> tuple[Array, float, str]:
        """Exact draws of the restricted law at ``footpoint``, once ``exact_planned``: from the
        better proposal there, until ``n`` are accepted, however few it accepts (the choice and
        the run time depend on the data; nothing the release publishes or raises does)."""
        which, rate = self._restricted_choice(footpoint, rng, refuse=False)
        x, rate = accumulate(lambda batch: self._restricted_proposals(footpoint, batch, rng, which),
                             n, rate, self.min_acceptance, 2_000_000)
        label = "unrestricted law" if which == "A" else "uniform law on the ball"
        return x, rate, f"exact rejection from the {label}"

    def exact_planned(self) -> bool:
        """Whether ``sample`` draws exactly: decided once per mechanism, from the public
        parameters alone, before any data are read, and kept.

        Unrestricted, the exact samplers' acceptance depends on the manifold and the scale only
        (the pilot runs of the SPD eigenvalue samplers and of tangent rejection, at the public
        origin). Restricted, it also depends on where the footpoint lies in the ball, which is
        data: the pilot runs at the ball's center instead, and once it passes, ``sample`` draws
        exactly at every footpoint, however few proposals it accepts there. So neither the
        published ``exact`` flag nor a refusal ever depends on the data (only the run time does:
        a side channel outside the guarantee, as for every rejection sampler). With
        ``allow_approximate``, a plan that fails means Metropolis-Hastings chains for every data
        set. The pilots draw from a generator of fixed seed (``PLAN_SEED``), not the caller's: the
        plan is then one function of the public parameters, the same in a check run before a
        release (``learn.classes.releasable``) as in the release itself."""
        if self._exact_plan is None:
            rng = np.random.default_rng(PLAN_SEED)
            try:
                if self.restrict_to is not None:
                    self._restricted_choice(self.restrict_to[0], rng)
                else:
                    self._unrestricted_pilot(rng)
                self._exact_plan, self._plan_reason = True, ""
            except LowAcceptanceError as exc:
                self._exact_plan, self._plan_reason = False, str(exc)
        return self._exact_plan

    def check_exact(self) -> None:
        """Refuse now, from the public parameters alone (``exact_planned``), a law no exact
        sampler can draw; call it before a ledger reserves the release. A no-op with
        ``allow_approximate``, where such a law is drawn by chains instead.

        Raises
        ------
        ApproximateSamplerRefused
        """
        if not self.allow_approximate and not self.exact_planned():
            raise self._refusal() from None

    def _refusal(self) -> ApproximateSamplerRefused:
        """The refusal of approximate draws, with the exact alternatives of this law."""
        what = f"the Riemannian Laplace on {self.manifold!r} at scale {self.scale:.4g}"
        if self._no_exact_law is not None and self.restrict_to is None:
            return ApproximateSamplerRefused(
                f"{what} has no exact sampler ({self._no_exact_law})",
                ["a manifold with an exact Laplace law", "the K-norm gradient or DP-RGD mechanism"])
        if self.restrict_to is None:
            return ApproximateSamplerRefused(
                f"the exact samplers of {what} accept fewer than {self.min_acceptance:g} of their "
                f"proposals (as happens near the largest scale at which the law exists, or at large "
                f"scales on a compact space of high dimension)",
                ["a larger epsilon (a smaller scale)", "the exponential-wrapped Laplace"])
        return ApproximateSamplerRefused(
            f"exact rejection samplers for {what} restricted to the ball of radius "
            f"{self.restrict_to[1]:.4g} accept fewer than {self.min_acceptance:g} of their "
            f"proposals even at the ball's center, where they accept the most (decided before the "
            f"data are read)",
            ["the unrestricted Riemannian Laplace, where it is normalisable", "a larger epsilon "
             "(the unrestricted law's draws, narrower, land in the ball more often)"])

    def _mcmc(self, footpoint: Array, n: int, rng) -> tuple[Array, MCMCDiagnostics, str]:
        """n approximate draws around one footpoint, or one around each of n stacked footpoints,
        and how they were drawn. A restricted law on affine-invariant SPD(n >= 2) runs the polar
        chains of ``spd_chains`` (``_polar_chains``). Otherwise random-walk chains, at least
        ``MIN_CHAINS`` (stacked footpoints repeated as needed), all in one vectorised run,
        started in the public ``chain_ball`` (``_ball_starts``), a law that does not depend on
        the data. An ``ApproximateSamplerWarning`` when the chains fail their checks."""
        m = self.manifold
        if self.restrict_to is not None and has(m, "eigen_laplace_size") and m.eigen_laplace_size > 1:
            x, diag = self._polar_chains(footpoint, n, rng)
            return x, diag, ("Metropolis-Hastings in polar coordinates at the ball's center: "
                             "proposals reversible for the restricted Laplace at the center, "
                             "accepted on the ratio of the laws (approximate)")
        if self.chain_ball is None:
            raise ValueError("approximate draws of the unrestricted Riemannian Laplace need "
                             "chain_ball=(center, radius): a public ball, chosen without the data, "
                             "in which the Metropolis-Hastings chains start")
        single = footpoint.ndim == len(m.point_shape)
        if single:
            targets = np.broadcast_to(footpoint, (max(n, MIN_CHAINS),) + m.point_shape)
        else:
            targets = np.concatenate([footpoint] * -(-MIN_CHAINS // n))
        start = _ball_starts(m, *self.chain_ball, len(targets), rng)
        x, diag = metropolis_hastings(
            m, lambda y: self.log_density(targets, y), start, rng, burn_in=self.mcmc_burn_in,
            step=min(self.scale, 0.25 * m.injectivity_radius),
            summary=lambda y: m.dist(targets, y))
        diag.start = start
        warn_unless_converged(diag, "the Riemannian Laplace's Metropolis-Hastings chains", 4)
        return x[:n], diag, "random-walk Metropolis-Hastings (approximate)"

    def _polar_chains(self, footpoint: Array, n: int, rng) -> tuple[Array, MCMCDiagnostics]:
        """n approximate draws of the restricted law at one footpoint m by ``ball_chains``: the
        law is w Q, Q the restricted Laplace at the ball's center c (no data) and
        log w(x) = -(rho(m, x) - rho(c, x)) / scale."""
        m = self.manifold
        center, radius = self.restrict_to

        def log_tilt(x: Array, t: Array) -> Array:
            return -(m.dist(footpoint, x) - t) / self.scale

        x, diag = ball_chains(center, radius, self.scale, log_tilt, rng, n)
        warn_unless_converged(diag, "the restricted Riemannian Laplace's polar chains", 5)
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
            if not self.exact_planned():
                raise LowAcceptanceError(self._plan_reason)
            if self.restrict_to is None:
                x, acc, method = self._exact_unrestricted(footpoint, n, rng)
            else:
                x, acc, method = self._exact_restricted(footpoint, n, rng)
            self.last_info = SamplerInfo(method, True, float(acc))
        except LowAcceptanceError as exc:
            if not self.allow_approximate:
                raise self._refusal() from None
            x, diag, method = self._mcmc(footpoint, n, rng)
            self.last_info = SamplerInfo(
                method, False, diag.acceptance_rate, diag,
                [f"exact samplers were not used: {exc}"])
        return x.reshape(shape + m.point_shape)
