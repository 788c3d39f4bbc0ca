"""The K-norm gradient (KNG) mechanism on manifolds and its samplers.

KNG (Reimherr & Awan 2019; on manifolds Soto, Bharath, Reimherr & Slavkovic 2022) releases
theta with density proportional to exp(-|G_D(theta)| / sigma) with respect to the Riemannian
volume of a public compact domain, G_D the gradient of an empirical risk. If
|G_D(theta) - G_D'(theta)| <= Delta for every theta in the domain and neighbouring D, D', the
log-density ratio is at most Delta/sigma and the normalisers differ by at most that factor too,
so sigma = 2 Delta / epsilon gives epsilon-DP (the normaliser depends on D, hence the 2).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from functools import cached_property

import numpy as np
from scipy import special

from ..manifolds import Manifold
from ..manifolds.base import Array
from ..privacy import PureDP
from ..parameters import ParameterError
from ..privacy.conversions import check_positive
from ..progress import bar
from .envelope import accumulate
from .laplace import RiemannianLaplace, SamplerInfo
from .spd_chains import CHAINS
from .mcmc import (ApproximateSamplerRefused, ApproximateSamplerWarning, diagnose, run_chains,
                   volume_ratio, warn_unless_converged)

#: Smallest acceptance rate of the exact uniform-proposal sampler; below it MCMC takes over.
MIN_UNIFORM_ACCEPTANCE = 1e-3
#: Uniform draws of the pilot run that decides between exact rejection and MCMC (either is
#: valid; at the 1e-3 threshold it expects one acceptance). It stops after its first quarter when
#: that estimates an acceptance below PILOT_STOP (a full gradient pass per draw is then spent on
#: a foregone choice: SPD(3) with 500 records estimates 1e-20, and the quarter saves 0.4 s).
PILOT = 1000
PILOT_STOP = 1e-8
#: Split R-hat above which the chains are reported as not mixed.
R_HAT_LIMIT = 1.1
#: Chains that have not mixed give way to exact rejection from the uniform law when the pilot
#: run estimates at least this acceptance (at most 1e5 proposals expected per draw; measured on
#: the trilobite shapes, Kendall(16) with 273 records: 3e-5, about 10 s, where 3000 chain steps
#: still do not mix).
FALLBACK_ACCEPTANCE = 1e-5
#: Largest batch of uniform proposals evaluated at once by the exact sampler (its overshoot).
EXACT_BATCH = 16_384
#: Proposals ``sample_convex`` asks of chains at once: one draw per chain, as many as the polar
#: chains run (a batch of exact proposals is far larger: they are cheap).
CHAIN_BATCH = CHAINS
#: The independence proposal is an equal mixture of the linearised KNG law at these multiples of
#: its scale. Clipped residuals make the gradient grow more slowly than its linearisation away
#: from the fit, and the public domain truncates the law where it is wide, so the KNG law is
#: wider than the linearised one and off its centre (on SPD(3) with 500 records: 1.1-1.6x along
#: the principal directions, the mean up to 1.8 of the proposal's standard deviations away along
#: the weakly determined ones). Chains stick where the proposal's tails are thinner than the
#: target's; the widest member bounds those weights. Integrated autocorrelation time of the log
#: target over 12 releases (6 data sets of the benchmark's kind, 600 kept steps of 8 chains):
#: widths (1, 1.5), jumps 1/2 of the steps, median 47 and mean 104 steps; (1, 1.5, 2.25, 3.4),
#: jumps 3/4: median 16-20, mean 18-29 over three sets of seeds; (1, 1.7, 3) about the same,
#: jumps 1/2 or 0.9, five widths up to 5.1, or recentring and rescaling the law from the chains'
#: states halfway through the burn-in no better within the noise (which is large: single
#: releases range from 5 to 240).
WIDTHS = (1.0, 1.5, 2.25, 3.375)
#: Weight of the proposal's wide members (``_widths``): a ladder of K-norm laws, each ``LADDER``
#: times wider than the last, up to the domain's size (at most ``MAX_RUNGS`` of them).
DEFENSIVE = 0.05
LADDER = 4.0
MAX_RUNGS = 12
#: Probability that a chain's step is an independence proposal rather than a random-walk move.
INDEPENDENCE = 0.75
#: Chains that have not mixed and have no exact fallback run on, each time by half the steps
#: they have run, up to MAX_RUN_ON times their first length (burn-in plus kept trace). SPD(3)
#: with 500 records, whose autocorrelation time is 45-200 steps, reads R-hat 1.2-1.7 over 100
#: kept steps and 1.04-1.06 over 1000 kept steps after 1000 more; on the hardest of three
#: benchmark data sets 6 of 10 releases had not mixed after 1600 steps (R-hat 1.12-1.31), hence
#: up to 3200 from 200. Running on by half instead of doubling (200, 300, 450, 675, ... steps)
#: took 705 steps on average instead of 776 over 60 seeded releases on the benchmark's SPD(3)
#: data (median 675 against 800; the longest 2277 against 1600).
MAX_RUN_ON = 16


class MixingWarning(ApproximateSamplerWarning):
    """MCMC chains whose diagnostics show they have not reached the target law."""


def check_max_steps(max_steps: int | None, first_run: int) -> None:
    """Refuse a bound on the chains' steps below their first run (burn-in plus kept steps)."""
    if max_steps is not None and max_steps < first_run:
        raise ParameterError(f"{{max_steps}} = {max_steps} must be at least the chains' first run, "
                             f"burn-in plus the kept steps ({first_run})", "max_steps")


class KNormGradient:
    """Calibration of KNG: ``scale`` sigma = 2 Delta / epsilon for epsilon-DP."""

    def __init__(self, sensitivity: float, epsilon: float):
        self.sensitivity = check_positive("sensitivity", sensitivity)
        self.epsilon = check_positive("epsilon", epsilon)
        self.scale = 2.0 * self.sensitivity / self.epsilon

    @property
    def guarantee(self) -> PureDP:
        return PureDP(self.epsilon)

    def __repr__(self) -> str:
        return f"KNormGradient(sensitivity={self.sensitivity:.4g}, epsilon={self.epsilon:g})"


def convex_proposal(manifold: Manifold, strong_convexity: float, center: Array, radius: float,
                    scale: float, allow_approximate: bool = False) -> RiemannianLaplace:
    """The restricted Riemannian Laplace at scale sigma/lambda that ``sample_convex`` proposes
    from; its ``check_exact`` refuses, from public parameters, a law it cannot draw exactly."""
    lam = check_positive("strong convexity", strong_convexity)
    return RiemannianLaplace(manifold, scale / lam, restrict_to=(center, radius),
                             allow_approximate=allow_approximate)


def sample_convex(manifold: Manifold, grad_norm: Callable[[Array], Array], minimiser: Array,
                  strong_convexity: float, center: Array, radius: float, scale: float,
                  rng: np.random.Generator, size: int | None = None, *,
                  allow_approximate: bool = False,
                  proposal: RiemannianLaplace | None = None) -> tuple[Array, SamplerInfo]:
    """Exact KNG draws on the convex ball B_radius(center) for a lambda-strongly convex risk: one
    point, or ``size`` independent draws stacked first.

    With m* the minimiser, |grad F(m)| >= lambda rho(m, m*) on the ball, and
    rho(m*, m_hat) <= |grad F(m_hat)| / lambda for the computed minimiser m_hat; so
    |grad F(m)| - lambda rho(m, m_hat) + |grad F(m_hat)| >= 0. Proposals from the Riemannian
    Laplace around m_hat at scale sigma/lambda restricted to the ball (``convex_proposal``, exact
    itself), accepted with probability exp(-(that non-negative gap)/sigma), are exact draws of KNG.
    Whether that Laplace draws exactly is decided from public parameters before the data are
    read (``RiemannianLaplace.exact_planned``); where it cannot, this raises
    ``ApproximateSamplerRefused``, unless ``allow_approximate``: the proposals then come from its
    Metropolis-Hastings chains, one per chain (its final state), at least ``CHAIN_BATCH`` at a
    time, and the report carries the diagnostics of the batch whose chains mixed worst (largest
    R-hat). ``proposal``: that Laplace (``convex_proposal``) when the caller has already checked
    it, so that one plan decides both.
    """
    lam = check_positive("strong convexity", strong_convexity)
    if proposal is None:
        proposal = convex_proposal(manifold, lam, center, radius, scale, allow_approximate)
    wanted = 1 if size is None else size
    most = 100_000 if proposal.exact_planned() else max(CHAIN_BATCH, 2 * wanted)
    slack = float(grad_norm(minimiser[None])[0])
    chains = []
    got = 0

    def accepted(batch: int) -> tuple[Array, int]:
        # the proposals and uniforms of the whole batch are drawn as before; the gradient norms
        # (a pass over the data per proposal) are evaluated in growing chunks, in order, only
        # until the draws still wanted are accepted: ``accumulate`` keeps the first accepted
        # proposals in order, so the returned draws are the same (same law, same seeded output);
        # the proposals never evaluated are not counted in the acceptance rate
        nonlocal got
        m = proposal.sample(minimiser, batch, rng)
        if not proposal.last_info.exact:
            chains.append(proposal.last_info.mcmc)
        log_u = np.log(rng.random(batch))
        keep = np.zeros(batch, dtype=bool)
        done, chunk = 0, 8
        while done < batch and got + int(keep.sum()) < wanted:
            part = slice(done, min(batch, done + chunk))
            gap = grad_norm(m[part]) - lam * manifold.dist(minimiser, m[part]) + slack
            keep[part] = log_u[part] <= -np.maximum(gap, 0.0) / scale
            done, chunk = part.stop, 2 * chunk
        got += int(keep.sum())
        return m[keep], done

    draw, rate = accumulate(accepted, wanted, 0.1, 1e-6, most)
    draw = draw[0] if size is None else draw
    if not chains:
        return draw, SamplerInfo("exact rejection from the restricted Riemannian Laplace (strong "
                                 "convexity envelope)", True, rate)
    worst = max(chains, key=lambda d: d.r_hat if np.isfinite(d.r_hat) else np.inf)
    return draw, SamplerInfo("rejection from a Metropolis-Hastings restricted Laplace (approximate)",
                             False, rate, worst, [f"{len(chains)} batches of proposals drawn by chains"])


class BundleDomain:
    """The public domain {(p, v): p in B_radius(center), |v|_p <= v_max} of the tangent bundle
    (radius None: the whole of a sphere or Kendall's shape space). States are stacked (k, 2, *point_shape):
    footpoint, shooting vector. ``moves`` says which part varies: "both", "footpoint" (v carried
    along by transport from the chains' start; 0 in the uniform law) or "shooting_vector" (p fixed
    at the center, which is then the released footpoint)."""

    def __init__(self, manifold: Manifold, center: Array, radius: float | None, v_max: float,
                 moves: str = "both"):
        self.manifold, self.center, self.radius = manifold, center, radius
        self.v_max, self.moves = v_max, moves
        #: indices of the moving parts of a state: 0 the footpoint, 1 the shooting vector
        self.parts = {"both": (0, 1), "footpoint": (0,), "shooting_vector": (1,)}[moves]

    @property
    def reach(self) -> float:
        """Footpoint moves of this length or more are not proposed: half the injectivity radius,
        and twice the ball's radius (a move that long, shorter than inj, is the distance moved,
        so it leaves the ball; Exp could not even represent its end on SPD far out)."""
        limit = 0.5 * self.manifold.injectivity_radius
        return limit if self.radius is None else min(limit, 2.0 * self.radius)

    def contains(self, state: Array) -> Array:
        m = self.manifold
        p, v = state[:, 0], state[:, 1]
        inside = m.norm(p, v) <= self.v_max
        if self.radius is not None:
            inside &= m.dist(self.center, p) <= self.radius
        return inside

    def uniform(self, k: int, rng: np.random.Generator) -> Array:
        """k points uniform for the Liouville measure vol(dp) dv restricted to the domain."""
        m = self.manifold
        if self.moves == "shooting_vector":
            p = np.broadcast_to(self.center, (k,) + m.point_shape)
        elif self.radius is None:  # sphere, Kendall: a projected isotropic Gaussian is uniform
            p = m.project(rng.standard_normal((k,) + m.point_shape))
        else:
            p = m.random_ball(self.center, self.radius, k, rng)
        c = np.zeros((k, m.dim))
        if self.moves != "footpoint":
            c = rng.standard_normal((k, m.dim))
            c *= self.v_max * rng.random(k)[:, None] ** (1.0 / m.dim) / np.linalg.norm(
                c, axis=1, keepdims=True)
        return np.stack([p, m.from_coords(p, c)], axis=1)


Gradient = Callable[[Array, Array], tuple[Array, Array]]


class _Chart:
    """Normal coordinates of the tangent bundle around (p0, v0): delta = (a, b) in R^dim x R^dim
    maps to p = Exp_p0(a), v = Gamma_{p0 -> p}(v0 + b) (coordinates in an orthonormal basis of
    T_p0); only the moving parts of the domain have coordinates. Its Liouville volume density is
    J_p0(a), since transport is an isometry."""

    def __init__(self, domain: BundleDomain, start: Array):
        self.m, self.domain = domain.manifold, domain
        self.p0, self.v0 = np.asarray(start[0], dtype=float), np.asarray(start[1], dtype=float)
        self.parts = domain.parts
        self.size = self.m.dim * len(self.parts)

    def _split(self, delta: Array) -> tuple[Array, Array]:
        k, d = len(delta), self.m.dim
        a, b = np.zeros((k, d)), np.zeros((k, d))
        for i, part in enumerate(self.parts):
            (a if part == 0 else b)[:] = delta[:, i * d:(i + 1) * d]
        return a, b

    def to_state(self, delta: Array) -> Array:
        m = self.m
        a, b = self._split(delta)
        p = m.exp(self.p0, m.from_coords(self.p0, a))
        v = m.to_tangent(p, m.transport(self.p0, p, self.v0 + m.from_coords(self.p0, b)))
        return np.stack([p, v], axis=1)

    def log_volume(self, a: Array, xi: Array | None = None) -> Array:
        """log J_p0 at footpoint coordinates ``a`` (``xi``: the same as a tangent vector, if known),
        +inf outside the chart, |a| >= inj (where Exp_p0 stops being injective), so that the
        independence proposal's log density there is -inf."""
        m = self.m
        xi = m.from_coords(self.p0, a) if xi is None else xi
        with np.errstate(divide="ignore", invalid="ignore"):  # beyond the chart: masked below
            log_j = np.log(m.volume_density(self.p0, xi))
        return np.where(self.in_chart(a) & np.isfinite(log_j), log_j, np.inf)

    def in_chart(self, a: Array) -> Array:
        """Whether footpoint coordinates lie in the chart: |a| < inj, on which Exp_p0 is a
        diffeomorphism (so a compact space is covered but for its cut locus)."""
        return np.linalg.norm(a, axis=1) < self.m.injectivity_radius

    def from_state(self, state: Array) -> tuple[Array, Array]:
        """Coordinates of each state, and the log volume density there (``log_volume``)."""
        m = self.m
        p, v = state[:, 0], state[:, 1]
        log_p = m.log(self.p0, p)
        a = m.to_coords(self.p0, log_p)
        b = m.to_coords(self.p0, m.transport(p, self.p0, v)) - m.to_coords(self.p0, self.v0)
        return np.concatenate([(a, b)[part] for part in self.parts], axis=1), self.log_volume(a, log_p)

    @cached_property
    def reach(self) -> float:
        """Footpoint coordinates longer than this leave the domain or the chart: |a| <= rho(p0,
        center) + radius (|a| = rho(p0, p) within the chart) and |a| < inj."""
        m, radius = self.m, self.domain.radius
        reach = m.injectivity_radius
        return reach if radius is None else min(reach, float(m.dist(self.domain.center, self.p0)) + radius)

    def balls(self) -> list[tuple[slice, Array, float]]:
        """Balls of the coordinates that hold the domain, as (rows, offset, radius): the
        footpoint's |a| <= ``reach``, the shooting vector's |v0 + b| <= v_max (transport is an
        isometry)."""
        m, d = self.m, self.m.dim
        return [(slice(i * d, (i + 1) * d), np.zeros(d), self.reach) if part == 0 else
                (slice(i * d, (i + 1) * d), -m.to_coords(self.p0, self.v0), self.domain.v_max)
                for i, part in enumerate(self.parts)]

    def gradient(self, gradient: Gradient, delta: Array) -> Array:
        """The moving parts of the gradient at the states of ``delta``, transported back to p0, in
        coordinates."""
        m = self.m
        state = self.to_state(delta)
        g = gradient(state[:, 0], state[:, 1])
        back = [m.to_coords(self.p0, m.transport(state[:, 0], self.p0, g[part])) for part in self.parts]
        return np.concatenate(back, axis=1)


def _linearised(chart: _Chart, gradient: Gradient) -> tuple[Array, Array, Array]:
    """G(delta) ~ G0 + A delta in the chart: G0, the symmetrised central-difference Jacobian A's
    eigenvalues and eigenvectors."""
    d = chart.size
    h = 1e-6 * max(1.0, float(np.linalg.norm(chart.v0)))
    eye = np.eye(d)
    cols = (chart.gradient(gradient, h * eye) - chart.gradient(gradient, -h * eye)) / (2 * h)
    lam, vecs = np.linalg.eigh(0.5 * (cols + cols.T))
    return chart.gradient(gradient, np.zeros((1, d)))[0], lam, vecs


def _newton_step(g0: Array, lam: Array, vecs: Array) -> tuple[Array, Array]:
    """|eigenvalues| of A, floored at 1e-6 of the largest, and delta* = -A^-1 G0 with them."""
    size = np.maximum(np.abs(lam), 1e-6 * np.max(np.abs(lam), initial=1e-300))
    return size, -vecs @ ((vecs.T @ g0) / (np.where(lam < 0, -1.0, 1.0) * size))


def _independence_proposal(domain: BundleDomain, start: Array, gradient: Gradient, scale: float,
                           newton_steps: int = 3):
    """The KNG law of the gradient linearised in normal coordinates of the bundle,
    G(delta) ~ G0 + A delta, with A symmetrised and B = |A| (same eigenvectors, absolute
    eigenvalues, so |A w| = |B w|): density proportional to exp(-|B (delta - delta*)| / s) in
    the coordinates delta, delta* = -A^-1 G0, drawn as B (delta - delta*) = r u, r ~ Gamma(D, s),
    u uniform on the unit sphere of R^D; an equal mixture over s = f * scale, f in WIDTHS
    (log density up to a constant: logaddexp over s of -|B (delta - delta*)| / s - D log s),
    each radius truncated to the part of its ray inside the balls that hold the domain
    (``_Chart.balls``, ``_knorm_mixture``). Clipped residuals flatten the gradient far from the
    fit, so the KNG law can fill the domain to its edge: on SPD(3) with 500 records (the
    benchmark) a quarter of the untruncated draws fell outside the domain and importance weights
    kept 0.5% of the draws; truncated, 1-10%, and the chains mixed in 30-35% fewer steps (mean
    over 10 releases on each of two data sets). The chart is centred by up to ``newton_steps``
    Newton steps from ``start`` towards the zero of G inside the domain (where the
    linearisation is best). Returns the chart, a function drawing k coordinates, and the log
    density there."""
    chart = _Chart(domain, start)
    g0, lam, vecs = _linearised(chart, gradient)
    for _ in range(newton_steps):
        moved = chart.to_state(_newton_step(g0, lam, vecs)[1][None])
        if not domain.contains(moved)[0]:
            break
        trial = _Chart(domain, moved[0])
        g1, lam1, vecs1 = _linearised(trial, gradient)
        if not np.linalg.norm(g1) < np.linalg.norm(g0):
            break
        chart, g0, lam, vecs = trial, g1, lam1, vecs1
    size, centre = _newton_step(g0, lam, vecs)
    return (chart, *_knorm_mixture(centre, (vecs * size) @ vecs.T, (vecs / size) @ vecs.T, scale,
                                   chart.balls()))


#: Relative slack of the ray interval in the truncated proposal's density, so that a draw at the
#: interval's end, recomputed from its rounded coordinates, keeps a positive density.
_RAY_SLACK = 1e-9


def _ray_intervals(centre: Array, directions: Array, balls) -> tuple[Array, Array]:
    """[lo, hi] of the rays centre + r e (r >= 0, rows of ``directions``) inside every ball
    |delta[rows] - offset| <= radius of ``balls`` ((rows, offset, radius) triples); [0, inf) where
    a ray misses them (a direction the truncation then leaves alone)."""
    k = len(directions)
    lo, hi = np.zeros(k), np.full(k, np.inf)
    for rows, offset, radius in balls:
        c0, e = centre[rows] - offset, directions[:, rows]
        ee, ce = np.sum(e * e, axis=1), e @ c0
        with np.errstate(divide="ignore", invalid="ignore"):
            root = np.sqrt(ce**2 - ee * (c0 @ c0 - radius**2)) / ee
            lo, hi = np.maximum(lo, -ce / ee - root), np.minimum(hi, -ce / ee + root)
    miss = ~(lo < hi)
    return np.where(miss, 0.0, np.maximum(lo, 0.0)), np.where(miss, np.inf, hi)


def _gamma_mass(d: int, lo: Array, hi: Array) -> Array:
    """P(lo <= r <= hi) for r ~ Gamma(d, 1), from the upper tail where lo is past the mode (no
    cancellation of two values near 1)."""
    return np.where(lo > d, special.gammaincc(d, lo) - special.gammaincc(d, hi),
                    special.gammainc(d, hi) - special.gammainc(d, lo))


def _widths(scale: float, b: Array, balls) -> tuple[Array, Array]:
    """The mixture's scales and log weights: ``WIDTHS`` times ``scale`` sharing 1 - ``DEFENSIVE``,
    and a ladder of wider members (each ``LADDER`` times the last) sharing ``DEFENSIVE``, up to
    the first whose mean radius D s reaches |B| times the diameter of ``balls`` (at most
    ``MAX_RUNGS``; none without balls)."""
    d = len(b)
    near = scale * np.asarray(WIDTHS)
    far = np.sqrt(sum((2.0 * radius) ** 2 for _, _, radius in balls)) * np.linalg.norm(b, 2) / d
    rungs = 0 if not balls or not far > near[-1] else min(
        MAX_RUNGS, int(np.ceil(np.log(far / near[-1]) / np.log(LADDER))))
    wide = near[-1] * LADDER ** np.arange(1, rungs + 1)
    weights = np.concatenate([np.full(len(near), (1.0 - DEFENSIVE * (rungs > 0)) / len(near)),
                              np.full(rungs, DEFENSIVE / max(rungs, 1))])
    return np.concatenate([near, wide]), np.log(weights)


def _knorm_mixture(centre: Array, b: Array, b_inv: Array, scale: float, balls=()):
    """Draws and log density (up to a constant) of a mixture of the K-norm laws
    exp(-|B (delta - centre)| / s) / s^D on R^D (B symmetric positive definite, ``b_inv`` its
    inverse), s and the weights from ``_widths``: B (delta - centre) = r u with u uniform on the
    unit sphere and r ~ Gamma(D, s), truncated to the part [lo, hi] of the ray that lies in
    ``balls`` (``_ray_intervals``; a truncation whose Gamma mass underflows is dropped), so that
    proposals do not leave a domain the law fills (density exp(-r / s) / (s^D mass_s(u)) there).
    The wide members make the proposal's density far from the centre at least about
    ``DEFENSIVE`` times the domain's uniform one, so that a chain stuck on a far plateau of
    the target accepts a proposal near the centre."""
    d = len(centre)
    scales, log_weights = _widths(scale, b, balls)

    def truncation(lo: Array, hi: Array, s: Array) -> tuple[Array, Array, Array]:
        mass = _gamma_mass(d, lo / s, hi / s)
        keep = mass > 1e-300
        return np.where(keep, lo, 0.0), np.where(keep, hi, np.inf), np.where(keep, mass, 1.0)

    def log_density(delta: Array) -> Array:
        z = (delta - centre) @ b
        r = np.linalg.norm(z, axis=1)
        s = scales[:, None]  # every member at every point
        ray = _ray_intervals(centre, (z / np.where(r > 0, r, 1.0)[:, None]) @ b_inv, balls)
        lo, hi, mass = truncation(*ray, s)
        inside = (r >= lo * (1 - _RAY_SLACK)) & (r <= hi * (1 + _RAY_SLACK))
        log_each = np.where(inside, log_weights[:, None] - r / s - d * np.log(s) - np.log(mass),
                            -np.inf)
        return np.logaddexp.reduce(log_each, axis=0)

    def draw(k: int, rng: np.random.Generator) -> Array:
        u = rng.standard_normal((k, d))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        s = scales[rng.choice(len(scales), size=k, p=np.exp(log_weights))]  # each draw's member
        lo, hi, _ = truncation(*_ray_intervals(centre, u @ b_inv, balls), s)
        p = rng.random(k)
        q_lo, q_hi = special.gammaincc(d, lo / s), special.gammaincc(d, hi / s)
        with np.errstate(invalid="ignore"):
            upper = s * special.gammainccinv(d, q_lo - p * (q_lo - q_hi))
            p_lo, p_hi = special.gammainc(d, lo / s), special.gammainc(d, hi / s)
            lower = s * special.gammaincinv(d, p_lo + p * (p_hi - p_lo))
        radius = np.clip(np.where(lo / s > d, upper, lower), lo, hi)
        return centre + (u * radius[:, None]) @ b_inv

    return draw, log_density


def uniform_acceptance_bound(n: int, epsilon: float) -> float:
    """A public lower bound, exp(-n epsilon / 4), on the acceptance of exact rejection from the
    uniform law on the domain, for the KNG law exp(-|G| / sigma), sigma = 2 Delta / epsilon, of a
    gradient G = (1/n) sum_i g_i whose replace-one sensitivity Delta is twice the largest |g_i|
    (``regression_sensitivity``): then |G| <= n Delta / 2 on the whole domain for every data set,
    and each uniform proposal is accepted with probability exp(-|G| / sigma) >= exp(-n epsilon / 4).
    """
    return float(np.exp(-n * epsilon / 4.0))


def exact_plan(n: int, budgets: dict[str, float], allow_approximate: bool) -> bool:
    """Whether every KNG draw of a release on n records, with the budgets ``budgets`` (name ->
    epsilon of one draw), is exact by the public plan: each ``uniform_acceptance_bound`` at least
    ``FALLBACK_ACCEPTANCE``, whatever the data. Where it is not, without ``allow_approximate`` an
    ``ApproximateSamplerRefused`` (from public parameters only, so before any reservation)."""
    name, eps = max(budgets.items(), key=lambda item: item[1])
    planned = uniform_acceptance_bound(n, eps) >= FALLBACK_ACCEPTANCE
    if planned or allow_approximate:
        return planned
    limit = 4.0 * float(np.log(1.0 / FALLBACK_ACCEPTANCE))
    raise ApproximateSamplerRefused(
        f"exact rejection from the uniform law on the public domain is sure to accept at least "
        f"{FALLBACK_ACCEPTANCE:g} of its proposals, whatever the data, only when n * {name} <= "
        f"{limit:.4g} (it accepts at least exp(-n * {name} / 4)); here n = {n} and {name} = "
        f"{eps:.4g}", [f"a release with n * {name} at most {limit:.4g}"])


def sample_bundle(domain: BundleDomain, gradient: Gradient, start: Array, scale: float,
                  rng: np.random.Generator, precondition: Array | None = None, chains: int = 8,
                  burn_in: int = 200, trace_length: int = 100, size: int = 1,
                  min_acceptance: float = MIN_UNIFORM_ACCEPTANCE, max_steps: int | None = None,
                  exact_only: bool = False, exact_fallback: bool = True, *,
                  planned: bool = False,
                  allow_approximate: bool = False) -> tuple[Array, SamplerInfo]:
    """``size`` KNG draws (p, v) on ``domain``, stacked (size, 2, *point_shape): density
    exp(-|G(p, v)| / scale) with G the moving parts of ``gradient(p, v) = (grad_p, grad_v)`` (both,
    in the product norm; or the footpoint's; or the shooting vector's).

    ``planned=True`` is the caller's public plan (``exact_plan``): uniform proposals accept at
    least ``FALLBACK_ACCEPTANCE`` whatever the data, so the draws are exact rejection from the
    uniform law on the domain (acceptance exp(-|G|/sigma)), with no pilot and no refusal. Without
    the plan, ``allow_approximate`` or ``exact_only`` must be given (else
    ``ApproximateSamplerRefused``, before the data are read). Then exact rejection when a pilot
    run accepts at least ``min_acceptance`` of its proposals (``exact_only``: a ValueError below
    it); below it, and where the chains below have not mixed while the pilot accepts at least
    ``FALLBACK_ACCEPTANCE``, exact rejection; otherwise ``chains`` Metropolis-Hastings chains
    started at draws of the uniform law on the domain (a law that does not depend on the data;
    ``start``, normally the non-private fit, only centres the independence proposal below). Each
    step, each chain independently picks one of two kernels, each of which leaves the target
    invariant, so their mixture does too:

    - a random walk with increments step (C z_1, C z_2) in orthonormal coordinates of the
      footpoint and the shooting vector, mixed by the symmetric 2x2 ``precondition`` C; each
      proposal scales the tuned step by 2^U, U uniform on [-2, 2] and drawn apart from the state,
      at most to the largest step (a mixture of symmetric walks: long moves hop between modes,
      short ones refine). On manifolds with infinite injectivity radius the chains live in the
      normal coordinates delta of one chart of the bundle (``_ChartChains``: target with the
      chart's volume density, the walk a symmetric move of delta); on compact ones the walk moves
      from each chain's state, p' = Exp_p(xi), v' = Gamma_{p -> p'}(v + eta), with the volume
      change of Exp as its Hastings factor (one on symmetric spaces), and proposals with
      |xi| >= ``domain.reach`` are rejected, a symmetric rule (``_BundleChains``). The walk makes
      the chain irreducible on the domain.
    - an independence proposal from the KNG law of the gradient linearised at ``start`` in normal
      coordinates of the bundle, mixed with that law widened (``_independence_proposal``; taken
      with probability ``INDEPENDENCE``), with the Hastings factor q(x) / q(y) of its density (in
      the chart's coordinates, or w.r.t. the Liouville measure). Where the linearisation is good
      it accepts most proposals, so the chains forget their start in a few steps.

    The draws are the final states of the first ``size`` chains (at least ``size`` are run).
    Chains that have not mixed (split R-hat above ``R_HAT_LIMIT`` over the kept steps) and have
    no exact fallback run on from their states with the step frozen, each time by half the steps
    they have run so far (more if the kept trace is shorter than half of them), the diagnostics
    then taken over the last half of all their steps (BDA3's rule of discarding the first half:
    the kernel is the same throughout them), until they mix or reach ``max_steps`` in all
    (default: MAX_RUN_ON times burn_in + trace_length); then a ``MixingWarning``, and chains
    that pass that limit but not the stricter ``mcmc.R_HAT_WARN`` or ``mcmc.ESS_WARN`` an
    ``ApproximateSamplerWarning`` (its parent class). ``exact_only=True`` never runs chains nor
    the slower exact sampler: below ``min_acceptance`` it raises a ValueError instead.
    ``exact_fallback=False`` keeps the chains' draws whatever their diagnostics (for reproducing
    a procedure that samples by MCMC of a fixed length, with ``allow_approximate=True``).
    """
    m = domain.manifold
    check_max_steps(max_steps, burn_in + trace_length)
    chains = max(chains, size)
    starts = domain.uniform(chains, rng)  # drawn before the data are read: the same for any data

    def grad_norm(p, v):
        g = gradient(p, v)
        return np.sqrt(sum(np.maximum(m.inner(p, g[i], g[i]), 0.0) for i in domain.parts))

    def log_target(state):
        out = np.full(len(state), -np.inf)
        ok = domain.contains(state)
        if np.any(ok):
            out[ok] = -grad_norm(state[ok, 0], state[ok, 1]) / scale
        return out

    def exact(rate: float, notes: list[str]) -> tuple[Array, SamplerInfo]:
        with bar(None, "exact rejection from the uniform law on the domain") as meter:
            def accepted(batch):
                s = domain.uniform(batch, rng)
                meter.update(batch)
                return s[np.log(rng.random(batch)) <= log_target(s)]
            draw, rate = accumulate(accepted, size, rate, FALLBACK_ACCEPTANCE, EXACT_BATCH)
        return draw, SamplerInfo("exact rejection from the uniform law on the domain", True, rate,
                                 notes=notes)

    def uniform_acceptance(k: int) -> float:
        return float(np.mean(np.exp(log_target(domain.uniform(k, rng)))))

    if planned:
        return exact(1.0, ["exact by the public plan: uniform proposals accept at least "
                           f"{FALLBACK_ACCEPTANCE:g} whatever the data"])
    if not (allow_approximate or exact_only):
        raise ApproximateSamplerRefused("no public plan makes exact rejection from the uniform law "
                                        "on the domain sure to accept", ["``exact_plan``"])
    quarter = PILOT // 4
    rate = uniform_acceptance(quarter)
    if rate >= PILOT_STOP:
        rate = (rate * quarter + uniform_acceptance(PILOT - quarter) * (PILOT - quarter)) / PILOT
    if rate >= min_acceptance:
        return exact(rate, [])
    if exact_only:
        raise ValueError(f"exact K-norm gradient draws were asked for, but uniform proposals on the "
                         f"domain accept about {rate:.1e} of draws, below {min_acceptance:g}")

    c = np.eye(2) if precondition is None else np.asarray(precondition, dtype=float)
    mask = [float(i in domain.parts) for i in (0, 1)]
    c = c * np.outer(mask, mask)
    c = c / np.max(np.abs(np.linalg.eigvalsh(c)))
    max_step = min(0.5 * m.injectivity_radius, 2.0 * max(domain.v_max, domain.radius or 0.0, 1e-300))
    chart, draw_coordinates, log_q = _independence_proposal(domain, start, gradient, scale)

    def increments(k, step, rng):
        """The walk's moves of footpoint and shooting vector, in orthonormal coordinates."""
        z = rng.standard_normal((2, k, m.dim)) * np.minimum(step * 2.0 ** rng.uniform(-2, 2, k),
                                                             max_step)[:, None]
        return c[0, 0] * z[0] + c[0, 1] * z[1], c[1, 0] * z[0] + c[1, 1] * z[1]

    step0 = scale * np.sqrt(2.0 * m.dim)
    if m.injectivity_radius == np.inf:
        space = _ChartChains(chart, log_target, increments, draw_coordinates, log_q)
    else:
        space = _BundleChains(chart, log_target, increments, draw_coordinates, log_q)
    starts, init = _inside(domain, space, starts, rng)
    state, diag = run_chains(init, space.log_target, space.propose, rng, burn_in, trace_length,
                             step0, max_step, None, target_rate=0.25)
    steps = burn_in + trace_length
    can_fall_back = exact_fallback and rate >= FALLBACK_ACCEPTANCE
    notes = [f"exact uniform proposals would accept {rate:.2e} of draws"]
    if not diag.r_hat <= R_HAT_LIMIT and not can_fall_back:
        notes.append(f"split R-hat after the first {steps} steps: {diag.r_hat:.3g}")
    max_steps = steps * MAX_RUN_ON if max_steps is None else max_steps
    window = diag.trace
    while not diag.r_hat <= R_HAT_LIMIT and not can_fall_back and steps < max_steps:
        more = min(max(steps // 2, steps - 2 * len(window)), max_steps - steps)
        state, diag = run_chains(state, space.log_target, space.propose, rng, 0, more,
                                 diag.step_size, max_step, None)
        steps += more
        window = np.concatenate([window, diag.trace])[-(steps // 2):]
        diag = diagnose(window, steps - len(window), diag.acceptance_rate, diag.step_size)
        notes.append(f"run on to {steps} steps, the first {diag.burn_in} discarded: R-hat {diag.r_hat:.3g}")
    if not diag.r_hat <= R_HAT_LIMIT and can_fall_back:
        return exact(rate, [f"the Metropolis-Hastings chains did not mix (split R-hat "
                            f"{diag.r_hat:.3g}): drawn exactly instead"])
    if not diag.r_hat <= R_HAT_LIMIT:
        advice = ("the exact fallback" if rate >= FALLBACK_ACCEPTANCE else
                  f"a narrower public domain (v_max, radius), on which exact uniform proposals "
                  f"reach {FALLBACK_ACCEPTANCE:g}")
        warnings.warn(f"the K-norm gradient chains have not mixed after {steps} steps (split R-hat "
                      f"above {R_HAT_LIMIT}; its value, the ESS and the pilot's acceptance, "
                      f"statistics of the data, are in the release's diagnostics): the draw is not "
                      f"yet from the mechanism's law, so the stated guarantee is not backed; raise "
                      f"max_steps, or use {advice}", MixingWarning, stacklevel=3)
    else:
        warn_unless_converged(diag, "the K-norm gradient chains", stacklevel=3)
    diag.start = starts
    return space.states(state[:size]), SamplerInfo(
        "Metropolis-Hastings on the tangent bundle, random walk mixed with a linearised-KNG "
        "independence proposal (approximate)", False, diag.acceptance_rate, diag, notes)


def _inside(domain: BundleDomain, space, states: Array, rng: np.random.Generator,
            tries: int = 100) -> tuple[Array, Array]:
    """The chains' starts, draws of the uniform law on the domain (which does not depend on the
    data), as states and in the chains' space (``space.from_states``); draws on the domain's edge
    that rounding moves out of it are drawn again."""
    states = np.array(states)
    for _ in range(tries):
        init = space.from_states(states)
        out = ~np.isfinite(space.log_target(init))
        if not np.any(out):
            return states, init
        states[out] = domain.uniform(int(out.sum()), rng)
    raise RuntimeError(f"no start inside the domain after {tries} uniform draws per chain")


class _Chains:
    """The step shared by both spaces of chains: each chain takes the walk (``_walk``: proposals
    and their log Hastings factors) or, with probability INDEPENDENCE, a fresh draw of the
    independence proposal (``_independent``: draws and log q(x) - log q(y) at the chains it
    replaces)."""

    def propose(self, x: Array, step: float, rng: np.random.Generator):
        y, log_h = self._walk(x, step, rng)
        jump = rng.random(len(x)) < INDEPENDENCE
        if np.any(jump):
            y[jump], log_h[jump] = self._independent(x[jump], rng)
        return y, log_h, ~jump


class _ChartChains(_Chains):
    """Chains in the normal coordinates delta of ``_Chart`` (manifolds with infinite injectivity
    radius, where the chart covers the whole bundle): target density pi(state(delta)) J_p0(a)
    (the Liouville volume in the chart), a random walk delta + increments (symmetric in delta)
    and the independence proposal with its density in delta. Only the proposals are mapped to
    the manifold, one Exp and one transport from the chart's single base point per step, where
    a walk on the bundle maps each move from its own footpoint and the independence proposal
    needs the chart coordinates of the current states too."""

    def __init__(self, chart: _Chart, log_target, increments, draw, log_q):
        self.chart, self.increments, self.draw, self.log_q = chart, increments, draw, log_q
        self._log_target = log_target

    def log_target(self, delta: Array) -> Array:
        a = self.chart._split(delta)[0]
        out = np.full(len(delta), -np.inf)
        near = np.linalg.norm(a, axis=1) <= self.chart.reach
        if np.any(near):
            out[near] = (self._log_target(self.chart.to_state(delta[near]))
                          + self.chart.log_volume(a[near]))
        return out

    def _walk(self, delta: Array, step: float, rng: np.random.Generator) -> tuple[Array, Array]:
        moves = self.increments(len(delta), step, rng)
        return (delta + np.concatenate([moves[part] for part in self.chart.parts], axis=1),
                np.zeros(len(delta)))

    def _independent(self, delta: Array, rng: np.random.Generator) -> tuple[Array, Array]:
        fresh = self.draw(len(delta), rng)
        log_q = self.log_q(np.concatenate([delta, fresh]))
        return fresh, log_q[:len(delta)] - log_q[len(delta):]

    def from_states(self, states: Array) -> Array:
        return self.chart.from_state(states)[0]

    def states(self, delta: Array) -> Array:
        return self.chart.to_state(delta)


class _BundleChains(_Chains):
    """Chains on the tangent bundle itself (compact manifolds, where no chart covers it): a walk
    xi, eta in T_p with p' = Exp_p(xi), v' = Gamma_{p -> p'}(v + eta), rejected when
    |xi| >= ``domain.reach``, with the volume (Hastings) factor of Exp where the space is not
    symmetric; and the independence proposal of the chart, with its density w.r.t. the Liouville
    measure (the chart's, divided by J_p0)."""

    def __init__(self, chart: _Chart, log_target, increments, draw, log_q):
        self.chart, self.domain, self.increments = chart, chart.domain, increments
        self.log_target, self.draw_coordinates, self.log_q = log_target, draw, log_q

    def _walk(self, state: Array, step: float, rng: np.random.Generator) -> tuple[Array, Array]:
        m, k = self.domain.manifold, len(state)
        xi_c, eta_c = self.increments(k, step, rng)
        p, v = state[:, 0], state[:, 1]
        xi, eta = m.from_coords(p, xi_c), m.from_coords(p, eta_c)
        short = m.norm(p, xi) < self.domain.reach
        xi = np.where(short.reshape((k,) + (1,) * len(m.point_shape)), xi, 0.0)
        p2 = m.exp(p, xi)
        v2 = m.to_tangent(p2, m.transport(p, p2, v + eta))
        log_h = 0.0 if m.symmetric_space else volume_ratio(m, p, xi, p2)
        return np.stack([p2, v2], axis=1), np.where(short, log_h, -np.inf)

    def _draw(self, k: int, rng: np.random.Generator) -> tuple[Array, Array]:
        """k states of the independence proposal and their log density (Liouville measure);
        draws beyond the chart (|a| >= inj) are not mapped (density -inf: rejected)."""
        delta = self.draw_coordinates(k, rng)
        far = ~self.chart.in_chart(self.chart._split(delta)[0])
        delta[far] = 0.0
        log_q = self.log_q(delta) - self.chart.log_volume(self.chart._split(delta)[0])
        return self.chart.to_state(delta), np.where(far, -np.inf, log_q)

    def _independent(self, state: Array, rng: np.random.Generator) -> tuple[Array, Array]:
        fresh, log_q_fresh = self._draw(len(state), rng)
        delta, log_j = self.chart.from_state(state)
        with np.errstate(invalid="ignore"):
            return fresh, np.where(np.isfinite(log_q_fresh), self.log_q(delta) - log_j - log_q_fresh,
                                   -np.inf)

    def from_states(self, states: Array) -> Array:
        return states

    def states(self, state: Array) -> Array:
        return state
