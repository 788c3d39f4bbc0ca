"""The independence proposal of the K-norm gradient chains on the tangent bundle: normal
coordinates of the bundle around a footpoint and shooting vector (``_Chart``), the KNG law of the
gradient linearised there, widened and truncated to the public domain (``_knorm_mixture``), and
a mixture of such laws over the modes a local search finds (``Proposal``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING
from functools import cached_property

import numpy as np
from scipy import special

from ..manifolds.base import Array

if TYPE_CHECKING:
    from .kng import BundleDomain

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
#: The chart stops this fraction of the injectivity radius short of the cut locus, where
#: rounding can put Exp_p0(a) on it (SO(n)'s Log refuses rotations whose cosine rounds to -1,
#: within about 1.5e-8 of pi; Log and transport are then not defined).
CUT_MARGIN = 1e-6


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
        """Whether footpoint coordinates lie in the chart: |a| < inj (1 - ``CUT_MARGIN``), on
        which Exp_p0 is a diffeomorphism (so a compact space is covered but for a neighbourhood
        of its cut locus)."""
        return np.linalg.norm(a, axis=1) < self.m.injectivity_radius * (1.0 - CUT_MARGIN)

    def maps(self, a: Array) -> Array:
        """Whether footpoint coordinates are mapped to a state that may lie in the domain: in
        the chart and within its ``reach`` (beyond it, on SPD far out, Exp could not even
        represent the state)."""
        return self.in_chart(a) & (np.linalg.norm(a, axis=1) <= self.reach)

    def from_state(self, state: Array) -> tuple[Array, Array]:
        """Coordinates of each state, and the log volume density there (``log_volume``); where
        Log or the transport to p0 is not defined (the cut locus), coordinates 0 and +inf."""
        m = self.m
        p, v = state[:, 0], state[:, 1]
        with np.errstate(divide="ignore", invalid="ignore"):  # at the cut locus: masked below
            log_p = m.log_or_nan(self.p0, p)
            cut = ~np.all(np.isfinite(log_p.reshape(len(p), -1)), axis=1)
            p = np.where(cut.reshape((-1,) + (1,) * len(m.point_shape)), self.p0, p)  # SO(n) raises
            a = m.to_coords(self.p0, log_p)
            b = m.to_coords(self.p0, m.transport(p, self.p0, v)) - m.to_coords(self.p0, self.v0)
        delta = np.concatenate([(a, b)[part] for part in self.parts], axis=1)
        ok = np.all(np.isfinite(delta), axis=1)
        delta[~ok] = 0.0
        xi = np.where(ok.reshape((-1,) + (1,) * len(m.point_shape)), log_p, 0.0)
        return delta, np.where(ok, self.log_volume(np.where(ok[:, None], a, 0.0), xi), np.inf)

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

    def pull_back(self, state: Array, g: tuple[Array, Array]) -> Array:
        """The moving parts of the gradient ``g`` at ``state``, transported back to p0, in
        coordinates."""
        m = self.m
        back = [m.to_coords(self.p0, m.transport(state[:, 0], self.p0, g[part])) for part in self.parts]
        return np.concatenate(back, axis=1)


def _gradients(charts: list[_Chart], states: list[Array], gradient: Gradient) -> list[Array]:
    """Each chart's pulled-back gradient (``_Chart.pull_back``) at its states, from one call of
    ``gradient`` on all of them (its cost is per record and state, so the searches from several
    starts cost one batched evaluation per round instead of one each)."""
    both = np.concatenate(states)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is flagged by the callers
        g = gradient(both[:, 0], both[:, 1])
        ends = np.cumsum([len(s) for s in states])
        return [chart.pull_back(s, tuple(part[end - len(s):end] for part in g))
                for chart, s, end in zip(charts, states, ends)]


def _jacobians(charts: list[_Chart], gradient: Gradient) -> list[tuple[Array, Array] | None]:
    """G0 and the central-difference Jacobian of G(delta) at delta = 0 in each chart (columns
    d G / d delta_j): 2 D + 1 gradient evaluations per chart, in one batch; None where G
    overflows (far out on H^2)."""
    steps = [1e-6 * max(1.0, float(np.linalg.norm(chart.v0))) for chart in charts]
    deltas = [np.concatenate([h * np.eye(c.size), -h * np.eye(c.size), np.zeros((1, c.size))])
              for c, h in zip(charts, steps)]
    found = []
    for chart, h, g in zip(charts, steps, _gradients(charts, [c.to_state(d) for c, d in
                                                              zip(charts, deltas)], gradient)):
        d = chart.size
        with np.errstate(over="ignore", invalid="ignore"):
            cols, g0 = (g[:d] - g[d:2 * d]) / (2 * h), g[-1]
        found.append((g0, cols.T) if np.all(np.isfinite(g)) and np.all(np.isfinite(cols)) else None)
    return found


def _linearised(found: tuple[Array, Array] | None, size: int) -> tuple[Array, Array, Array]:
    """G(delta) ~ G0 + A delta in a chart of ``size`` coordinates, from its ``_jacobians``
    entry: G0, the symmetrised Jacobian A's eigenvalues and eigenvectors; where G overflows,
    G0 = 0 and A = 0 (whose law, floored by ``_linearised_law``, spans the domain)."""
    if found is None:
        return np.zeros(size), np.zeros(size), np.eye(size)
    g0, jac = found
    lam, vecs = np.linalg.eigh(0.5 * (jac + jac.T))
    return g0, lam, vecs


def _newton_step(g0: Array, lam: Array, vecs: Array, floor: float) -> tuple[Array, Array]:
    """|eigenvalues| of A, floored at 1e-6 of the largest and at ``floor``, and
    delta* = -A^-1 G0 with them."""
    size = np.maximum(np.abs(lam), max(1e-6 * np.max(np.abs(lam), initial=1e-300), floor))
    return size, -vecs @ ((vecs.T @ g0) / (np.where(lam < 0, -1.0, 1.0) * size))


class _Search:
    """One start's Levenberg-Marquardt search in its chart (``_descend``): the chart, the
    current coordinates delta, G and Broyden's Jacobian there, the damping mu, the failures in a
    row and the trial steps left."""

    def __init__(self, chart: _Chart, found: tuple[Array, Array], steps: int):
        self.chart, (self.g, self.jac), self.steps = chart, found, steps
        self.delta, self.damping, self.failed = np.zeros(chart.size), 0.0, 0
        self.floor = 1e-12 * max(float(np.sum(self.jac**2)), 1e-300)

    @property
    def active(self) -> bool:
        return self.steps > 0 and self.failed < STALLED

    def trial(self) -> Array:
        self.steps -= 1
        jac, g = self.jac, self.g
        self.step = -np.linalg.solve(jac.T @ jac + max(self.damping, self.floor) * np.eye(len(g)),
                                     jac.T @ g)
        return (self.delta + self.step)[None]

    def update(self, trial: Array, g1: Array | None) -> None:
        """Accept ``trial`` where its G (None: out of the domain or the chart) is smaller."""
        if g1 is not None and np.linalg.norm(g1) < np.linalg.norm(self.g):
            step = self.step
            self.jac = self.jac + np.outer(g1 - self.g - self.jac @ step, step) / (step @ step)
            self.delta, self.g, self.damping, self.failed = trial[0], g1, self.damping / 4.0, 0
        else:
            self.damping = max(4.0 * self.damping,
                               1e-3 * float(np.max(np.linalg.eigvalsh(self.jac.T @ self.jac))))
            self.failed += 1


def _descend(domain: BundleDomain, starts: Array, gradient: Gradient,
             steps: list[int]) -> list[tuple[Array, float]]:
    """A state near a zero of G from each of ``starts``, found by up to ``steps`` trial steps in
    its chart: Levenberg-Marquardt steps -(J'J + mu)^-1 J' G with the Jacobian J updated by
    Broyden's rank-one rule after each success (one gradient evaluation per trial instead of
    2 D + 1), mu = 0 (Newton's step) at first, growing 4x after a trial that leaves the domain
    or does not lower |G| and shrinking 4x after a success, stopping after ``STALLED`` failures
    in a row (the damped steps then shrink 64x, to where Broyden's J is no guide); a footpoint
    move the chart does not map (``_Chart.maps``) is refused before Exp. The searches run side
    by side, their trials evaluated in one batch per round. Returns the last success and |G|
    there; the start and inf where G overflows."""
    charts = [_Chart(domain, start) for start in starts]
    searches = [None if found is None else _Search(chart, found, n)
                for chart, found, n in zip(charts, _jacobians(charts, gradient), steps)]
    while any(s is not None and s.active for s in searches):
        live = [s for s in searches if s is not None and s.active]
        trials = [s.trial() for s in live]
        states = [s.chart.to_state(t) if s.chart.maps(s.chart._split(t)[0])[0] else None
                  for s, t in zip(live, trials)]
        inside = [i for i, st in enumerate(states) if st is not None and domain.contains(st)[0]]
        grads = dict(zip(inside, _gradients([live[i].chart for i in inside],
                                            [states[i] for i in inside], gradient)
                         if inside else []))
        for i, (s, t) in enumerate(zip(live, trials)):
            s.update(t, grads[i][0] if i in grads else None)
    return [(np.asarray(start, dtype=float), np.inf) if s is None else
            (s.chart.to_state(s.delta[None])[0], float(np.linalg.norm(s.g)))
            for start, s in zip(starts, searches)]


#: Trial steps of the local search for the mode nearest the non-private fit (``_descend``), and
#: for the modes near the pilot's best uniform draws (``MODE_SEARCH`` of them).
FIT_STEPS = 3
SEARCH_STEPS = 20
MODE_SEARCH = 8
STALLED = 3
#: A search from a pilot draw has found a mode when |G| / scale is at most MODE_LEVEL there (the
#: density within e^-1 of its supremum); searches that stall on a plateau of the gradient, or at
#: the domain's edge, far below it (on the benchmark's SPD(3) law at e^-9 to e^-53), are dropped:
#: the heaviest member's wide ladder covers them, and each member costs a chart map per proposal.
MODE_LEVEL = 1.0


def independence_proposal(domain: BundleDomain, start: Array, gradient: Gradient, scale: float,
                          candidates: Array = ()) -> "Proposal":
    """The chains' independence proposal: a mixture over the modes found near ``start`` (the
    non-private fit) and ``candidates`` (states; pilot draws) of the KNG law of the gradient
    linearised at each mode (``_linearised_law``), in the chart centred there. On a compact
    space the law has a mode at every zero of G, where the loss has a critical point: on S^2
    with every residual clipped it is symmetric under (p, v) -> (-p, -v), two modes of equal
    mass, and a proposal centred at the fit alone drew every chain into the fit's mode (the
    review's antipodal pair). The fit's search always gives a member; a candidate's only where
    it reaches ``MODE_LEVEL`` and has not converged to a member's centre already (within a tenth
    of that member's narrowest mean radius). Members are weighted by their Laplace mass,
    exp(-|G0| / scale) / det B with B's eigenvalues floored where the law would outgrow the
    domain; two members each within the other's narrowest mean radius are the same (the lighter
    is dropped: a wide plateau law holds a narrow mode's centre, but not the other way round).
    The heaviest member's chart comes first."""
    fit, *found = _descend(domain, [start, *candidates], gradient,
                           [FIT_STEPS] + [SEARCH_STEPS] * len(candidates))
    searched = [fit[0]] + [state for state, size in found if size <= MODE_LEVEL * scale]
    charts = [_Chart(domain, state) for state in searched]
    laws, log_mass = [], []
    for state, chart, linear in zip(searched, charts, _jacobians(charts, gradient)):
        if any(law.holds(state, 0.1 * scale) for law in laws):
            continue
        law, mass = _linearised_law(chart, *_linearised(linear, chart.size), scale)
        laws.append(law)
        log_mass.append(mass)
    kept: list[int] = []
    for j in np.argsort(log_mass)[::-1]:
        if not any(laws[i].holds(laws[j].state, scale) and laws[j].holds(laws[i].state, scale)
                   for i in kept):
            kept.append(j)
    return Proposal([laws[j] for j in kept], np.array([log_mass[j] for j in kept]))


class _Law:
    """One member of ``Proposal``: a chart and the truncated K-norm mixture in its coordinates,
    delta = centre + B^-1 r u (``_knorm_mixture``)."""

    def __init__(self, chart: _Chart, centre: Array, size: Array, vecs: Array, scale: float):
        self.chart, self.centre = chart, centre
        self.b = (vecs * size) @ vecs.T
        self.draw, log_q = _knorm_mixture(centre, self.b, (vecs / size) @ vecs.T, scale,
                                          chart.balls())
        log_det = float(np.sum(np.log(size)))
        # a density in delta, up to a constant that all members share
        self.log_q = lambda delta: log_q(delta) + log_det

    @property
    def state(self) -> Array:
        """The chart's centre (p0, v0)."""
        return np.stack([self.chart.p0, self.chart.v0])

    def holds(self, state: Array, scale: float) -> bool:
        """Whether a state lies within the mean radius D scale of this law at ``scale``,
        |B (delta - centre)| <= D scale."""
        delta, log_j = self.chart.from_state(state[None])
        return bool(np.isfinite(log_j[0])  # not on the cut locus (antipodal modes are two)
                    and np.linalg.norm(self.b @ (delta[0] - self.centre)) <= len(delta[0]) * scale)


def _linearised_law(chart: _Chart, g0: Array, lam: Array, vecs: Array,
                    scale: float) -> tuple[_Law, float]:
    """The KNG law of the gradient linearised in normal coordinates of the bundle,
    G(delta) ~ G0 + A delta, with A symmetrised and B = |A| (same eigenvectors, absolute
    eigenvalues, so |A w| = |B w|): density proportional to exp(-|B (delta - delta*)| / s) in
    the coordinates delta, delta* = -A^-1 G0, drawn as B (delta - delta*) = r u, r ~ Gamma(D, s),
    u uniform on the unit sphere of R^D; a mixture over s = f * scale, f in WIDTHS and a wide
    ladder (``_widths``), each radius truncated to the part of its ray inside the balls that hold
    the domain (``_Chart.balls``, ``_knorm_mixture``). Clipped residuals flatten the gradient far
    from the fit, so the KNG law can fill the domain to its edge: on SPD(3) with 500 records (the
    benchmark) a quarter of the untruncated draws fell outside the domain and importance weights
    kept 0.5% of the draws; truncated, 1-10%, and the chains mixed in 30-35% fewer steps (mean
    over 10 releases on each of two data sets). Returns the law and its log Laplace mass,
    -|G0| / scale - log det B. B's eigenvalues are floored at D scale over the domain's diameter,
    where the law's mean radius spans the domain (on a plateau where every residual is clipped
    A can vanish: on S^1 exactly)."""
    diameter = np.sqrt(sum((2.0 * radius) ** 2 for _, _, radius in chart.balls()))
    size, centre = _newton_step(g0, lam, vecs, len(g0) * scale / diameter)
    return (_Law(chart, centre, size, vecs, scale),
            float(-np.linalg.norm(g0) / scale - np.sum(np.log(size))))


class Proposal:
    """A mixture of ``_Law`` members with weights proportional to exp(``log_mass``), as a law of
    states (k, 2, *point_shape) with its density w.r.t. the Liouville measure: member j's density
    in its coordinates divided by its chart's volume density J_j (0 beyond its chart)."""

    def __init__(self, laws: list[_Law], log_mass: Array):
        self.laws = laws
        self.log_weights = log_mass - np.logaddexp.reduce(log_mass)

    @property
    def chart(self) -> _Chart:
        return self.laws[0].chart

    def draw(self, k: int, rng: np.random.Generator) -> tuple[Array, Array]:
        """k states and their log density; draws beyond their chart (|a| >= inj) or its reach
        (outside the domain; on SPD far out Exp could not represent them) are not mapped
        (density -inf: rejected; the density at states of the domain is unchanged)."""
        which = (np.zeros(k, dtype=int) if len(self.laws) == 1 else
                 rng.choice(len(self.laws), size=k, p=np.exp(self.log_weights)))
        states = np.empty((k, 2) + self.chart.m.point_shape)
        far = np.zeros(k, dtype=bool)
        for j, law in enumerate(self.laws):
            rows = which == j
            delta = law.draw(int(rows.sum()), rng)
            far[rows] = ~law.chart.maps(law.chart._split(delta)[0])
            delta[far[rows]] = 0.0
            states[rows] = law.chart.to_state(delta)
            if len(self.laws) == 1:  # the density in the draws' own coordinates: no map back
                log_q = law.log_q(delta) - law.chart.log_volume(law.chart._split(delta)[0])
        if len(self.laws) > 1:
            log_q = self.log_density(states)
        return states, np.where(far, -np.inf, log_q)

    def radii(self, states: Array) -> Array:
        """|B_j (delta_j - centre_j)| of each state in each member's chart, (k, members): small
        in a member's own mode, large in another's, whichever parts of the state move."""
        return np.stack([np.linalg.norm((law.chart.from_state(states)[0] - law.centre) @ law.b,
                                        axis=1) for law in self.laws], axis=1)

    def log_density(self, states: Array) -> Array:
        each = []
        for law, log_w in zip(self.laws, self.log_weights):
            delta, log_j = law.chart.from_state(states)
            each.append(log_w + law.log_q(delta) - log_j)
        return np.logaddexp.reduce(each, axis=0)


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
