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

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array
from ..privacy import PureDP
from ..parameters import ParameterError
from ..privacy.conversions import check_positive
from ..progress import bar
from .envelope import accumulate
from .laplace import RiemannianLaplace, SamplerInfo
from .spd_chains import CHAINS
from .kng_proposal import MODE_SEARCH, Gradient, Proposal, independence_proposal
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

    def pilot(k: int) -> tuple[Array, Array]:
        states = domain.uniform(k, rng)
        return states, log_target(states)

    if planned:
        return exact(1.0, ["exact by the public plan: uniform proposals accept at least "
                           f"{FALLBACK_ACCEPTANCE:g} whatever the data"])
    if not (allow_approximate or exact_only):
        raise ApproximateSamplerRefused("no public plan makes exact rejection from the uniform law "
                                        "on the domain sure to accept", ["``exact_plan``"])
    states, log_pi = pilot(PILOT // 4)
    if np.mean(np.exp(log_pi)) >= PILOT_STOP:
        states, log_pi = (np.concatenate(pair) for pair in zip((states, log_pi),
                                                                pilot(PILOT - PILOT // 4)))
    rate = float(np.mean(np.exp(log_pi)))
    if rate >= min_acceptance:
        return exact(rate, [])
    if exact_only:
        raise ValueError(f"exact K-norm gradient draws were asked for, but uniform proposals on the "
                         f"domain accept about {rate:.1e} of draws, below {min_acceptance:g}")

    # MODE_SEARCH pilot draws drawn without replacement with weights pi (Gumbel top-k): the best
    # draws where the law is peaked, spread over its modes where it is not
    picked = np.argsort(log_pi + rng.gumbel(size=len(log_pi)))[::-1][:MODE_SEARCH]
    space, step0, max_step = chain_space(domain, log_target, gradient, start, scale, precondition,
                                         states[picked[np.isfinite(log_pi[picked])]])
    starts, init = _inside(domain, space, starts, rng)
    state, diag = run_chains(init, space.log_target, space.propose, rng, burn_in, trace_length,
                             step0, max_step, None, target_rate=0.25, coordinates=space.coordinates)
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
                                 diag.step_size, max_step, None, coordinates=space.coordinates)
        steps += more
        window = np.concatenate([window, diag.trace])[-(steps // 2):]
        diag = diagnose(window, steps - len(window), diag.acceptance_rate, diag.step_size)
        notes.append(f"run on to {steps} steps, the first {diag.burn_in} discarded: R-hat {diag.r_hat:.3g}")
    if not diag.r_hat <= R_HAT_LIMIT and can_fall_back:
        return exact(rate, [f"the Metropolis-Hastings chains did not mix (split R-hat "
                            f"{diag.r_hat:.3g}): drawn exactly instead"])
    if not diag.r_hat <= R_HAT_LIMIT:
        advice = ("" if exact_fallback else "the exact fallback (where uniform proposals accept "
                  f"at least {FALLBACK_ACCEPTANCE:g}), or ")  # public: not the pilot's rate
        warnings.warn(f"the K-norm gradient chains have not mixed after max_steps = {max_steps} "
                      f"steps (split R-hat above {R_HAT_LIMIT}; its value, the ESS and the pilot's "
                      f"acceptance, statistics of the data, are in the release's diagnostics): the "
                      f"draw is not yet from the mechanism's law, so the stated guarantee is not "
                      f"backed; raise max_steps, or use {advice}a narrower public domain (v_max, "
                      f"radius), on which exact uniform proposals reach {FALLBACK_ACCEPTANCE:g}",
                      MixingWarning, stacklevel=3)
    else:
        warn_unless_converged(diag, "the K-norm gradient chains", stacklevel=3)
    diag.start = starts
    return space.states(state[:size]), SamplerInfo(
        "Metropolis-Hastings on the tangent bundle, random walk mixed with a linearised-KNG "
        "independence proposal (approximate)", False, diag.acceptance_rate, diag, notes)


def chain_space(domain: BundleDomain, log_target: Callable[[Array], Array], gradient: Gradient,
                start: Array, scale: float, precondition: Array | None = None,
                candidates: Array = ()) -> tuple[_Chains, float, float]:
    """The chains' kernel of ``sample_bundle`` (its random walk and independence proposal, the
    latter centred at the modes found from ``start`` and ``candidates``), as the space the chains
    live in, with the walk's initial and largest steps."""
    m = domain.manifold
    c = np.eye(2) if precondition is None else np.asarray(precondition, dtype=float)
    mask = [float(i in domain.parts) for i in (0, 1)]
    c = c * np.outer(mask, mask)
    c = c / np.max(np.abs(np.linalg.eigvalsh(c)))
    max_step = min(0.5 * m.injectivity_radius, 2.0 * max(domain.v_max, domain.radius or 0.0, 1e-300))
    proposal = independence_proposal(domain, start, gradient, scale, candidates)

    def increments(k, step, rng):
        """The walk's moves of footpoint and shooting vector, in orthonormal coordinates."""
        z = rng.standard_normal((2, k, m.dim)) * np.minimum(step * 2.0 ** rng.uniform(-2, 2, k),
                                                             max_step)[:, None]
        return c[0, 0] * z[0] + c[0, 1] * z[1], c[1, 0] * z[0] + c[1, 1] * z[1]

    space = (_ChartChains if m.injectivity_radius == np.inf else _BundleChains)(
        proposal, log_target, increments)
    return space, scale * np.sqrt(2.0 * m.dim), max_step


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

    @property
    def coordinates(self) -> Callable[[Array], Array] | None:
        """Further R-hat summaries where the proposal has several modes: each state's K-norm
        radius in each mode's chart (``Proposal.radii``; footpoint distances would miss modes
        that differ in v alone, as in the sequential release's second draw). Chains split
        between two modes of equal density, which log pi cannot tell apart, differ in them. With
        one mode, none: R-hat on every chart coordinate, or on the distance to the mode, flags
        the noise of 100 kept steps too, and on the benchmark's SPD(3) law held the chains 3-5x
        longer (675-1518 steps instead of 200-450)."""
        if len(self.proposal.laws) == 1:
            return None
        return lambda x: self.proposal.radii(self.states(x))

    def propose(self, x: Array, step: float, rng: np.random.Generator):
        y, log_h = self._walk(x, step, rng)
        jump = rng.random(len(x)) < INDEPENDENCE
        if np.any(jump):
            y[jump], log_h[jump] = self._independent(x[jump], rng)
        return y, log_h, ~jump


class _ChartChains(_Chains):
    """Chains in the normal coordinates delta of the proposal's first chart (manifolds with
    infinite injectivity radius, where the chart covers the whole bundle): target density
    pi(state(delta)) J_p0(a) (the Liouville volume in the chart), a random walk delta +
    increments (symmetric in delta) and the independence proposal with its density in delta.
    With one member the proposal draws in this chart and only its draws are mapped to the
    manifold, one Exp and one transport from the chart's base point per step; with several, its
    draws are mapped back to delta and its density at the chains' states taken on the manifold."""

    def __init__(self, proposal: Proposal, log_target, increments):
        self.proposal, self.chart, self.increments = proposal, proposal.chart, increments
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
        if len(self.proposal.laws) == 1:
            law = self.proposal.laws[0]
            fresh = law.draw(len(delta), rng)
            log_q = law.log_q(np.concatenate([delta, fresh]))
            return fresh, log_q[:len(delta)] - log_q[len(delta):]
        states, log_q_fresh = self.proposal.draw(len(delta), rng)
        fresh, log_j_fresh = self.chart.from_state(states)
        log_q = (self.proposal.log_density(self.chart.to_state(delta))
                 + self.chart.log_volume(self.chart._split(delta)[0]))
        with np.errstate(invalid="ignore"):  # a draw not mapped (density -inf) is rejected
            return fresh, np.where(np.isfinite(log_q_fresh), log_q - log_q_fresh - log_j_fresh,
                                   -np.inf)

    def from_states(self, states: Array) -> Array:
        return self.chart.from_state(states)[0]

    def states(self, delta: Array) -> Array:
        return self.chart.to_state(delta)


class _BundleChains(_Chains):
    """Chains on the tangent bundle itself (compact manifolds, where no chart covers it): a walk
    xi, eta in T_p with p' = Exp_p(xi), v' = Gamma_{p -> p'}(v + eta), rejected when
    |xi| >= ``domain.reach``, with the volume (Hastings) factor of Exp where the space is not
    symmetric; and the independence proposal with its density w.r.t. the Liouville measure."""

    def __init__(self, proposal: Proposal, log_target, increments):
        self.proposal, self.domain = proposal, proposal.chart.domain
        self.log_target, self.increments = log_target, increments

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

    def _independent(self, state: Array, rng: np.random.Generator) -> tuple[Array, Array]:
        fresh, log_q_fresh = self.proposal.draw(len(state), rng)
        with np.errstate(invalid="ignore"):
            return fresh, np.where(np.isfinite(log_q_fresh),
                                   self.proposal.log_density(state) - log_q_fresh, -np.inf)

    def from_states(self, states: Array) -> Array:
        return states

    def states(self, state: Array) -> Array:
        return state
