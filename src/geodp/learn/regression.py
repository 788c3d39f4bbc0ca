"""Private geodesic regression by the K-norm gradient mechanism (Kulkarni & Soto)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator, manifold_first
from ..mechanisms.kng import (BundleDomain, KNormGradient, check_max_steps, exact_plan,
                              sample_bundle)
from ..privacy import BudgetLedger, PureDP
from ..parameters import ParameterError, literal, option_without_effect
from ..privacy.conversions import check_positive
from ..statistics import ConvergenceWarning
from ..statistics.regression import RegressionSample, fit_regression, regression_gradient
from ..statistics.sensitivity import regression_sensitivity
from .data_ball import RecordsOutsideBound, check_representable, into_ball
from .release import Release, reserved

#: Largest (states x records) temporary of the sampler's gradient field in memory, in bytes.
STATES_TIMES_RECORDS_BYTES = 2**23

RELEASES = ("joint", "sequential")


def _check_range(x_range) -> tuple[float, float]:
    try:
        lo, hi = (float(b) for b in x_range)
    except (TypeError, ValueError):
        raise ParameterError(f"{{x_range}} must be two numbers (lo, hi), got "
                             f"{literal(repr(x_range))}", "x_range") from None
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ParameterError(f"{{x_range}} must be finite with lo < hi, got ({lo}, {hi})",
                             "x_range")
    return lo, hi


#: Steps the sampler's chains keep for their diagnostics after the burn-in (first run).
KEPT_STEPS = 100


def _shortened(manifold: Manifold, p: Array, v: Array, v_max: float) -> Array:
    """v scaled down, if need be, to norm 0.99 v_max: a chain start strictly inside the domain."""
    size = float(manifold.norm(p, v))
    return v * (0.99 * v_max / size) if size > 0.99 * v_max else v


def is_compact(manifold: Manifold) -> bool:
    """Positively curved with a finite injectivity radius (spheres, Kendall's shape space): the
    footpoint domain may then be the whole space."""
    return bool(np.isfinite(manifold.injectivity_radius) and manifold.curvature_bounds[0] > 0)


def unused_regression_options(release: str, given: set[str]) -> ParameterError | None:
    """The refusal of an option in ``given`` without effect on ``release`` (``footpoint_budget``
    without the sequential release), or None (``parameters.option_without_effect``)."""
    return option_without_effect(given, {"footpoint_budget": (release == "sequential",
                                                              "{release} 'sequential'")},
                                 f"'{release}'", "release")


def _domain_ball(manifold: Manifold, center, radius) -> tuple[Array, float | None]:
    """The public footpoint ball; on a compact manifold radius None means the whole space."""
    if radius is None:
        if not is_compact(manifold):
            raise ValueError(f"the footpoint may range over the whole space only on a compact "
                             f"space of positive curvature (a sphere, Kendall's shape space), not "
                             f"on {manifold!r}: give center and radius of the public footpoint "
                             f"ball (the K-norm gradient density needs a bounded domain)")
        if center is not None:
            raise ParameterError("{center} was given without {radius}: without a radius the "
                                 "footpoint ranges over the whole compact space, where a center "
                                 "has no effect; give both for a footpoint ball", "center",
                                 "radius")
        shape = manifold.point_shape  # any fixed point: uniform proposals cover the space from it
        return manifold.project(np.cos(np.arange(np.prod(shape))).reshape(shape)), None
    if center is None:
        raise ParameterError("{radius} was given without {center}: the footpoint ball needs both",
                             "radius", "center")
    center = manifold.check_point(center)
    radius = check_positive("radius", radius)
    if radius > manifold.injectivity_radius:
        raise ParameterError(f"{{radius}} must be at most the injectivity radius "
                             f"{manifold.injectivity_radius:.6g} of {manifold!r}, got {radius}",
                             "radius")
    check_representable(manifold, center, radius)
    return center, radius


def _check_reach(manifold: Manifold, center: Array, radius: float | None, reach: float) -> None:
    """Refuse, from public parameters, a domain whose fitted points Exp_p(x v) (within radius +
    max |x| v_max of the center) double precision cannot hold: their residuals and adjoints
    would overflow on some states and not others, as the records decide (compact spaces are
    never refused)."""
    if radius is None:
        return
    try:
        check_representable(manifold, center, radius + reach)
    except ValueError as err:
        raise ParameterError(f"the fitted points of the public domain reach {radius + reach:.4g} "
                             f"from its center ({{radius}} plus the largest |x| of {{x_range}} "
                             f"times {{v_max}}), beyond what double precision represents on "
                             f"{manifold!r}: choose a narrower domain (for a ball of radius "
                             f"{radius + reach:.4g}: "
                             f"{str(err).replace('{', '{{').replace('}', '}}')})", "radius", "x_range",
                             "v_max") from None


def _records_in_range(manifold: Manifold, x, y, lo: float, hi: float,
                      clip_data: bool) -> tuple[RegressionSample, int]:
    """The records with their covariates in [lo, hi] (clipped into it with ``clip_data``; else
    ``RecordsOutsideBound``), and how many were clipped."""
    data = RegressionSample(manifold, x, y)
    outside = data.covariates_outside(lo, hi)
    if outside and not clip_data:
        raise RecordsOutsideBound(outside, data.n, f"covariates lie outside {{x_range}} = ({lo:g}, "
                                  f"{hi:g})", "clip them into it", "give a wider public range")
    return (data.clipped(lo, hi) if outside else data), outside


def _start(manifold: Manifold, data: RegressionSample, tau: float, center, radius,
           v_max: float) -> tuple[Array, Array]:
    """Where the chains' independence proposal is centred: the non-private fit, moved into the
    public domain; (``center``, 0) where no fit is defined (equal covariates), so that this never
    refuses on the data (the center is any point of the domain on a compact space)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        try:
            fit = fit_regression(manifold, data, tau=tau, max_iter=200)
        except ValueError:
            return center, np.zeros_like(center)
    p = into_ball(manifold, fit.footpoint, center, radius)[0] if radius else fit.footpoint
    v = _shortened(manifold, p, manifold.to_tangent(
        p, manifold.transport(fit.footpoint, p, fit.shooting_vector)), v_max)
    return p, v


def _gradient_field(manifold: Manifold, data: RegressionSample, tau: float):
    """(p, v) -> the mean clipped-residual gradient (grad_p, grad_v) at a batch of states; in
    memory, blocks of states keep the (states x records) temporaries to about 8 MiB (2.5x on the
    SPD(3) sampler's 1000-state pilot)."""
    nd, size = len(manifold.point_shape), math.prod(manifold.point_shape)

    def gradient(p, v):
        batch = math.prod(np.shape(p)[:np.ndim(p) - nd])
        block = batch if data.chunked else max(1, STATES_TIMES_RECORDS_BYTES // (8 * data.n * size))
        if np.ndim(p) == nd or batch <= block:
            return data.mean(lambda xs, ys: regression_gradient(manifold, p, v, xs, ys, tau)[:2], batch)
        parts = [gradient(p[i:i + block], v[i:i + block]) for i in range(0, len(p), block)]
        return tuple(np.concatenate(part) for part in zip(*parts))
    return gradient


def _sequential_draws(manifold: Manifold, gradient, start, center, radius, v_max: float, mechs,
                      run: dict, parameters: dict, diagnostics: dict) -> tuple[Array, Array]:
    """The sequential release: the footpoint by KNG with v held at 0, then v on T_p~ (see
    ``private_geodesic_regression``); records both steps' parameters and samplers."""
    mech_p, mech_v = mechs
    start_p, start_v = start
    state, info_p = sample_bundle(BundleDomain(manifold, center, radius, v_max, "footpoint"),
                                  gradient, np.stack([start_p, 0.0 * start_p]), mech_p.scale, **run)
    p = state[0, 0]
    v0 = _shortened(manifold, p, manifold.to_tangent(p, manifold.transport(start_p, p, start_v)),
                    v_max)
    state, info_v = sample_bundle(BundleDomain(manifold, p, None, v_max, "shooting_vector"),
                                  gradient, np.stack([p, v0]), mech_v.scale, **run)
    parameters.update(epsilon_footpoint=mech_p.epsilon, epsilon_shooting_vector=mech_v.epsilon,
                      scale_footpoint=mech_p.scale, sensitivity_footpoint=mech_p.sensitivity)
    diagnostics.update(sampler_footpoint=info_p.as_dict(), sampler_shooting_vector=info_v.as_dict())
    return p, state[0, 1]


def private_geodesic_regression(manifold: Manifold, x: Array, y: Array, epsilon: float, tau: float,
                                x_range: tuple[float, float], v_max: float,
                                center: Array | None = None, radius: float | None = None, *,
                                rng: np.random.Generator | int | None = None,
                                release: str = "joint", footpoint_budget: float = 0.5,
                                clip_data: bool = False, ledger: BudgetLedger | None = None,
                                chains: int = 8, burn_in: int = 100,
                                max_steps: int | None = None,
                                allow_approximate: bool = False) -> Release:
    """An epsilon-DP geodesic regression (footpoint p and shooting vector v) by K-norm gradients.

    Neighbouring relation: replace-one (data sets of the public size n differing in one record).

    The risk is Fletcher's energy with every residual clipped to norm ``tau`` (a Huber-type
    geodesic loss, ``regression_gradient``), so one record moves its gradient by at most the
    ``regression_sensitivity`` bound at every (p, v) of the public domain: p in the footpoint
    ball B_radius(center) (the whole space on a compact manifold when radius is None) and
    ``|v|`` <= ``v_max``; covariates in ``x_range``. Nothing of the domain is read from the data.

    ``release="joint"`` (default): one KNG draw of (p, v) on that domain of the tangent bundle,
    density exp(-``|grad E(p, v)|`` / sigma) for the product norm, sigma = 2 Delta / epsilon with the
    joint sensitivity: epsilon-DP (Reimherr & Awan 2019, Theorem 3.1 on the compact domain).

    ``release="sequential"``: the paper's two steps in a sound form. First p with
    epsilon_p = footpoint_budget * epsilon by KNG on ``|grad_p E(p, 0)|`` (the shooting vector held
    at the public value 0, so the footpoint step uses no data-dependent v; its sensitivity is
    2 tau / n), then v on T_p~ within ``|v|`` <= v_max with the rest of the budget by KNG on
    ``|grad_v E(p~, v)|`` (sensitivity Delta_v); epsilon_p + epsilon_v = epsilon by composition.
    With v = 0 the footpoint step targets the Huber mean of the responses, which is the regression
    footpoint when the covariates are centred (shift x so that 0 is their public mid-range).

    Whether the draws are exact is decided from public parameters alone, before the data are read
    (``kng.exact_plan``). Every record's term of the mean gradient has norm at most n Delta / 2
    (Delta is twice the largest term), so exact rejection from the uniform law on the domain
    accepts each proposal with probability at least exp(-n epsilon / 4) whatever the data
    (epsilon of the draw: ``epsilon``, or each step's share in the sequential release). Where that
    bound is at least 1e-5 (``kng.FALLBACK_ACCEPTANCE``), i.e. n epsilon <= 46.05, the draws are
    exact, with no refusal. Otherwise the release raises ``ApproximateSamplerRefused`` before the
    ledger reserves anything, unless ``allow_approximate=True``.

    With ``allow_approximate=True`` beyond that bound, a pilot on the data chooses: exact
    rejection where it accepts at least 1e-3 (``kng.MIN_UNIFORM_ACCEPTANCE``), otherwise
    ``chains`` Metropolis-Hastings chains started at uniform draws on the domain (split R-hat and
    ESS in ``diagnostics``; the guarantee holds for the target law, and the chain's output is
    approximate). That choice depends on the data, so the release then publishes
    ``exact_sampler=False`` whatever ran (which ran is in ``diagnostics``). Chains that have not
    mixed (R-hat > 1.1) give way
    to the exact sampler when it accepts at least 1e-5; otherwise they run on, each time by half
    the steps they have run, R-hat then taken over the last half of all steps, up to ``max_steps``
    (default 16 times burn_in + 100 kept steps), and if they still have not mixed a
    ``MixingWarning`` says so; an ``ApproximateSamplerWarning`` when they pass that limit but not
    R-hat 1.01 or ESS 100 (``mcmc.R_HAT_WARN``, ``mcmc.ESS_WARN``).

    Parameters
    ----------
    manifold : Manifold
        First, as in every estimator of geodp (another order is a TypeError showing the
        expected call).
    x : array (n,)
        Covariates. Outside ``x_range`` they raise, or with ``clip_data=True`` are clipped into it.
        With ``y`` a chunked ``dask.array.Array`` (``x`` then cut like it), every gradient is a
        distributed reduction: one pass per sampler step (200, and up to ``max_steps`` when the
        chains run on to mix).
    y : array ``(n, *point_shape)``
        Responses on ``manifold`` (one record is one pair (x_i, y_i); n is public).
    epsilon, tau, x_range, v_max, center, radius
        Budget and public domain (above).
    ledger : BudgetLedger, optional
        Reserved before any randomness is drawn.
    chains, burn_in, max_steps : int
        The Metropolis-Hastings chains, when they run: how many, their burn-in before 100 kept
        steps, and the most steps they may run on to mix (default 16 times the first run).
    allow_approximate : bool
        Where n epsilon > 46.05, release approximate draws (the chains' state where the exact
        sampler accepts too few proposals) instead of refusing.

    Returns
    -------
    Release with ``value = {"footpoint": p, "shooting_vector": v}``.

    Raises
    ------
    ApproximateSamplerRefused
        Without ``allow_approximate``, where n epsilon > 46.05 (before any reservation).

    Examples
    --------
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(0, 1, 100)
    >>> y = m.exp(np.array([0., 0, 1]), x[:, None] * np.array([0.5, 0, 0]))
    >>> rel = private_geodesic_regression(m, x, y, 0.4, tau=0.5, x_range=(0, 1), v_max=1.0, rng=0)
    >>> sorted(rel.value), rel.exact_sampler      # n epsilon = 40 <= 46.05: exact by the plan
    (['footpoint', 'shooting_vector'], True)
    """
    manifold, x, y = manifold_first("private_geodesic_regression", manifold, x, y)
    if release not in RELEASES:
        raise ValueError(f"release must be one of {RELEASES}, got {release!r}")
    epsilon = check_positive("epsilon", epsilon)
    tau = check_positive("tau", tau)
    v_max = check_positive("v_max", v_max)
    lo, hi = _check_range(x_range)
    data, outside = _records_in_range(manifold, x, y, lo, hi, clip_data)
    center, radius = _domain_ball(manifold, center, radius)
    refusal = unused_regression_options(release, {"footpoint_budget"} if footpoint_budget != 0.5
                                        else set())
    if refusal is not None:
        raise refusal
    if release == "sequential" and not 0 < footpoint_budget < 1:
        raise ValueError(f"footpoint_budget must lie in (0, 1), got {footpoint_budget}")
    check_max_steps(max_steps, burn_in + KEPT_STEPS)  # before the ledger reserves anything
    n, x_bound = data.n, max(abs(lo), abs(hi))
    budgets = ({"epsilon": epsilon} if release == "joint" else
               {"epsilon_footpoint": footpoint_budget * epsilon,
                "epsilon_shooting_vector": (1 - footpoint_budget) * epsilon})
    planned = exact_plan(n, budgets, allow_approximate)
    _check_reach(manifold, center, radius, x_bound * v_max)
    sens = regression_sensitivity(manifold, n, tau, x_bound, v_max)
    eps_p = footpoint_budget * epsilon
    mechs = ((KNormGradient(sens["joint"], epsilon),) if release == "joint" else
             (KNormGradient(regression_sensitivity(manifold, n, tau, x_bound, 0.0)["footpoint"],
                            eps_p), KNormGradient(sens["shooting_vector"], epsilon - eps_p)))
    target = PureDP(epsilon)
    start = ((center, np.zeros_like(center)) if planned  # exact draws need no fit
             else _start(manifold, data, tau, center, radius, v_max))
    parameters = {"n": n, "tau": tau, "x_range": [lo, hi], "v_max": v_max, "release": release,
                  "footpoint_ball": None if radius is None else {
                      "center": np.asarray(center).tolist(), "radius": radius},
                  "sensitivities": sens}
    diagnostics = {"covariates_clipped": outside}
    run = dict(rng=as_generator(rng), precondition=data.preconditioner(ridge=1e-3), chains=chains,
               burn_in=burn_in, trace_length=KEPT_STEPS, max_steps=max_steps,
               planned=planned, allow_approximate=allow_approximate)
    gradient = _gradient_field(manifold, data, tau)
    with reserved(ledger, target, f"geodesic regression (KNG {release}, {target.describe()})"):
        if release == "joint":
            state, info = sample_bundle(BundleDomain(manifold, center, radius, v_max), gradient,
                                        np.stack(start), mechs[0].scale, **run)
            p, v = state[0]
            diagnostics["sampler"] = info.as_dict()
        else:
            p, v = _sequential_draws(manifold, gradient, start, center, radius, v_max, mechs, run,
                                     parameters, diagnostics)
        scale, sensitivity = mechs[-1].scale, mechs[-1].sensitivity
    return Release(value={"footpoint": p, "shooting_vector": v}, guarantee=target,
                   sensitivity=sensitivity, scale=scale,
                   mechanism=f"K-norm gradient geodesic regression ({release})",
                   exact_sampler=planned, diagnostics=diagnostics,
                   parameters=parameters,
                   theorem="K-norm gradient mechanism (Reimherr & Awan 2019) with the clipped-residual "
                           "gradient sensitivities of Kulkarni & Soto (Theorems 3.3 and D.1), "
                           "replace-one",
                   equivalent={"GDP": target.to_gdp().describe()})
