"""Private Fréchet means."""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, replace

import numpy as np

from ..chunked import ChunkedSample, InMemorySample, as_sample, is_chunked
from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator, manifold_first
from ..manifolds.capabilities import has
from ..mechanisms import NotNormalisableError, RiemannianLaplace
from ..mechanisms.registry import Mechanism, lookup
from ..parameters import ParameterError, Spelled, literal, option_without_effect
from ..privacy.conversions import check_count
from ..privacy import (GDP, RDP, ApproxDP, BudgetLedger, Guarantee, PureDP, gdp_to_pure_equivalent)
from ..privacy.conversions import check_number, check_positive
from ..mechanisms.kng import KNormGradient, convex_proposal, sample_convex
from ..mechanisms.laplace import SamplerInfo
from ..mechanisms.mcmc import exact_alternatives
from ..statistics import curvature_factor, frechet_mean_sensitivity
from ..statistics.certified import (CertifiedMean, certified_mean, gradient_rounding_bound, into_ball,
                                   mean_tolerance)
from ..statistics.sensitivity import kng_mean_sensitivity
from .data_ball import check_condition_cap, enforce_ball, enforce_condition
from .dp_rgd import dp_rsgd
from .release import (Release, delta_caveat, diameter_bound, noise_caveat, reserved,
                      tolerance_caveat)

SUBSAMPLE_FRACTION = 0.05


_ASK = {"epsilon": "{epsilon} alone (epsilon-DP)", "epsilon-delta": "{epsilon} and {delta} > 0 "
        "((epsilon, delta)-DP)", "mu": "{mu} alone (mu-GDP)", "rdp": "{rdp} (Rényi DP)"}


def target_guarantee(name: str, notions: tuple[str, ...], epsilon, delta, mu, rdp) -> Guarantee:
    """The guarantee asked for, checked against the ``notions`` the mechanism ``name`` gives
    (``registry.NOTIONS``)."""
    given = {k for k, v in {"epsilon": epsilon, "delta": delta, "mu": mu, "rdp": rdp}.items()
             if v is not None}
    if delta is not None and not 0 <= delta < 1:
        raise ParameterError(f"{{delta}} must lie in [0, 1) (and below 1/n to protect anyone), "
                             f"got {delta}", "delta")
    if given == {"epsilon"} and "epsilon" in notions:
        return PureDP(epsilon)
    if given == {"epsilon", "delta"} and "epsilon-delta" in notions and delta is not None and delta > 0:
        return ApproxDP(epsilon, delta)
    if given == {"mu"} and "mu" in notions:
        return GDP(mu)
    if given == {"rdp"} and "rdp" in notions:
        if isinstance(rdp, (str, bytes)) or np.ndim(rdp) != 1 or len(rdp) != 2:
            raise ParameterError(f"{{rdp}} must be a pair (alpha, epsilon), got "
                                 f"{literal(repr(rdp))}", "rdp")
        alpha, eps = rdp
        return RDP([alpha], [eps])
    raise ParameterError(f"the {name} mechanism needs exactly one of: "
                         f"{'; '.join(_ASK[n] for n in notions)}; got "
                         f"{', '.join('{%s}' % k for k in sorted(given)) or 'none'}",
                         "epsilon", "delta", "mu", "rdp")


def split_guarantee(g: Guarantee, fraction: float) -> tuple[float, Guarantee]:
    """(pure epsilon for the footpoint release, guarantee left for the main release).

    The two compose back to ``g``: pure and (epsilon, delta) budgets add; GDP splits as
    sqrt(f) mu and sqrt(1 - f) mu, the footpoint's epsilon-DP implying sqrt(f) mu-GDP through
    ``gdp_to_pure_equivalent``; RDP at order alpha gives the footpoint the largest epsilon whose
    RDP bound min(eps, alpha eps^2 / 2) is f * eps_alpha.
    """
    if not 0 < fraction < 1:
        raise ValueError(f"footpoint_budget must lie in (0, 1), got {fraction}")
    if isinstance(g, PureDP):
        return fraction * g.epsilon, PureDP((1 - fraction) * g.epsilon)
    if isinstance(g, ApproxDP):
        return fraction * g.epsilon, ApproxDP((1 - fraction) * g.epsilon, g.delta)
    if isinstance(g, GDP):
        return gdp_to_pure_equivalent(math.sqrt(fraction) * g.mu), GDP(math.sqrt(1 - fraction) * g.mu)
    alpha, eps = float(g.orders[0]), float(g.epsilons[0])
    b = fraction * eps
    return max(b, math.sqrt(2 * b / alpha)), RDP([alpha], [(1 - fraction) * eps])


def equivalents(g: Guarantee) -> dict[str, str]:
    if isinstance(g, PureDP):
        return {"GDP": g.to_gdp().describe()}
    if isinstance(g, ApproxDP):
        return {}
    return {f"delta={d:g}": g.to_approx(d).describe() for d in (1e-5, 1e-6)}


class FootpointNotNormalisable(Spelled, NotNormalisableError):
    """The private footpoint's Riemannian Laplace is not normalisable; the message names the
    options that avoid it."""


def _footpoint_mechanism(manifold, n, center, radius, epsilon_fp, allow_approximate,
                         max_condition=None) -> tuple[RiemannianLaplace, int]:
    """The Riemannian Laplace that releases the mean of a random 5% subsample (m points).

    Its computed mean has the Theorem 2 sensitivity for m = ceil(0.05 n) points plus
    2 tau / lambda (``computed_mean_slack``); the Laplace must be normalisable at scale
    Delta_m / epsilon_fp, otherwise this raises (a public footpoint is then the only sound
    choice). Approximate draws, if allowed, start in the data ball.
    """
    m = max(1, math.ceil(SUBSAMPLE_FRACTION * n))
    delta_sub = frechet_mean_sensitivity(manifold, radius, m) + computed_mean_slack(
        manifold, center, radius, max_condition)[1]
    try:
        return RiemannianLaplace(manifold, delta_sub / epsilon_fp, allow_approximate=allow_approximate,
                                 chain_ball=(center, radius), max_condition=max_condition), m
    except NotNormalisableError as exc:
        raise FootpointNotNormalisable(
            f"private footpoint selection: the Riemannian Laplace release of the mean of a "
            f"{m}-point subsample (sensitivity {delta_sub:.4g}) at epsilon {epsilon_fp:.4g} is not "
            f"normalisable ({literal(exc)}). Use a public {{footpoint}} (the default: the data "
            f"ball's center), a larger {{footpoint_budget}}, or a larger budget", "footpoint",
            "footpoint_budget") from None


def _private_footpoint(mech: RiemannianLaplace, m: int, x, center, radius: float,
                       rng, max_condition: float | None = None) -> tuple[Array, dict]:
    """Draw the subsample (indices from ``rng`` alone), take its mean, release it with ``mech``,
    and move the release into the public ball (the center if it left double precision): a map of
    the released value alone (post-processing), so that the main law, checked before the
    reservation for every footpoint of the ball, never refuses after it. On a chunked sample the
    subsample is taken chunk by chunk, lazily."""
    if isinstance(x, ChunkedSample):
        idx = np.sort(rng.choice(x.n, size=m, replace=False))
        subsample = ChunkedSample(mech.manifold, x.points[idx], validate=False)
    else:
        subsample = x[rng.choice(len(x), size=m, replace=False)]
    sub_mean = certified_mean(mech.manifold, subsample, center, radius,
                              max_condition=max_condition).mean
    value = mech.sample(sub_mean, rng=rng)
    value = (into_ball(mech.manifold, value, center, radius) if np.all(np.isfinite(value))
             else center)
    return value, {"subsample_size": m, "scale": mech.scale, "sampler": mech.last_info.as_dict()}


@dataclass(frozen=True)
class _Request:
    """A validated release: the registered mechanism, the records (inside the public ball), the
    ball, the target guarantee, Theorem 2's sensitivity, and where the budget and noise come
    from. ``sensitivity`` is that of the computed mean: Theorem 2's Delta plus ``slack``
    = 2 tau / lambda for the public gradient tolerance ``tolerance`` (``computed_mean_slack``).
    ``clipped`` is a diagnostic (how many records ``clip_data`` moved). ``max_condition`` is the
    public cap on the records' condition numbers, or None."""

    spec: Mechanism
    manifold: Manifold
    x: Array | ChunkedSample
    n: int
    center: Array
    radius: float
    target: Guarantee
    sensitivity: float
    tolerance: float
    slack: float
    ledger: BudgetLedger | None
    rng: np.random.Generator
    clipped: dict | int
    allow_approximate: bool
    caveats: list[str]
    max_condition: float | None = None

    def label(self) -> str:
        return f"Fréchet mean ({self.spec.name}, {self.target.describe()})"


@dataclass(frozen=True)
class _Options:
    """The options only some mechanisms take (checked by ``_check_options``)."""

    restrict: bool = False
    footpoint: Array | str | None = None
    tangent_sensitivity: float | None = None
    footpoint_budget: float = 0.1
    steps: int = 3
    lr: float = 0.7
    secure: bool = False
    allow_approximate: bool = False
    max_condition: float | None = None


def is_private(footpoint) -> bool:
    """Whether ``footpoint`` asks for a private footpoint (the string "private"), never
    comparing an array with a string."""
    return isinstance(footpoint, str) and footpoint == "private"


def unused_options(mechanism: str, given: set[str], footpoint) -> ParameterError | None:
    """The refusal of the first option in ``given`` (Python keywords) that has no effect with
    ``mechanism`` and ``footpoint``, or None: ``footpoint_budget`` without a private footpoint,
    ``steps`` and ``lr`` outside DP-RGD, ``allow_approximate`` with a mechanism that is always
    exact (``Mechanism.always_exact``) unless a private footpoint (a Riemannian Laplace draw)
    may need MCMC. The command line passes the options given explicitly,
    ``private_frechet_mean`` those that differ from their defaults."""
    spec = lookup(mechanism)
    needs = {"footpoint_budget": (is_private(footpoint), "a private footpoint ({footpoint} "
                                                           "'private')"),
             "steps": (spec.name == "dp-rgd", "{mechanism} 'dp-rgd'"),
             "lr": (spec.name == "dp-rgd", "{mechanism} 'dp-rgd'"),
             "allow_approximate": (not spec.always_exact or is_private(footpoint),
                                   "a sampler that may need MCMC"),
             "max_condition": (spec.name != "dp-rgd", "a mechanism that computes the Fréchet "
                               "mean (all but 'dp-rgd')")}
    return option_without_effect(given, needs, f"'{spec.name}'", "mechanism", "footpoint")


def _check_options(spec: Mechanism, opts: _Options, center, radius) -> None:
    """Refuse options the mechanism does not take and invalid values, before any data are read."""
    if center is None or radius is None:
        raise ValueError("center and radius of the public data ball are required")
    check_positive("radius", radius)
    defaults = _Options()
    given = {k for k in ("footpoint_budget", "steps", "lr", "allow_approximate", "max_condition")
             if getattr(opts, k) != getattr(defaults, k)}
    refusal = unused_options(spec.name, given, opts.footpoint)
    if refusal is not None:
        raise refusal
    if not 0 < check_number("footpoint_budget", opts.footpoint_budget) < 1:
        raise ParameterError(f"{{footpoint_budget}} must lie in (0, 1), got {opts.footpoint_budget}",
                             "footpoint_budget")
    for keyword, check in (("steps", lambda v: check_count("steps", v, 1)),
                           ("lr", lambda v: check_positive("lr", v))):
        try:
            check(getattr(opts, keyword))
        except (TypeError, ValueError):
            raise ParameterError(f"{{{keyword}}} must be a positive "
                                 f"{'integer' if keyword == 'steps' else 'finite number'}, got "
                                 f"{getattr(opts, keyword)!r}", keyword) from None
    if opts.secure and not spec.secure:
        raise ParameterError(f"{{secure}} (discrete Gaussian noise) applies to {{mechanism}} "
                             f"'dp-rgd' only; the {spec.name} mechanism has no secure sampler",
                             "secure", "mechanism")
    if opts.restrict and spec.restricted_theorem is None:
        raise ParameterError(f"{{restrict}} applies to the Riemannian Laplace (Theorem 3) only, "
                             f"not to the {spec.name} mechanism", "restrict")
    if not spec.takes_footpoint and (opts.footpoint is not None
                                     or opts.tangent_sensitivity is not None):
        raise ParameterError("{footpoint} and {tangent_sensitivity} apply to the wrapped "
                             "mechanisms only", "footpoint", "tangent_sensitivity")
    if isinstance(opts.footpoint, str) and opts.footpoint != "private":
        raise ValueError(f"footpoint must be a point or 'private', got {opts.footpoint!r}")


def _records(manifold: Manifold, points) -> tuple[Array | ChunkedSample, int]:
    """The records checked on the manifold (a chunked sample is checked chunk by chunk later)."""
    if is_chunked(points):
        x = ChunkedSample(manifold, points, validate=False)
        return x, x.n
    x = manifold.check_point(points)
    if x.ndim != len(manifold.point_shape) + 1:
        raise ValueError(f"points must have shape (n, {', '.join(map(str, manifold.point_shape))}) "
                         f"(one point per record), got {x.shape}")
    if not len(x):
        raise ValueError("points is empty: a release needs at least one record")
    return x, len(x)


def _exact_mean(req: _Request) -> CertifiedMean:
    """The sample's Fréchet mean within the public tau / lambda of the exact minimiser
    (``certified_mean``; it never refuses, whatever the data)."""
    return certified_mean(req.manifold, req.x, req.center, req.radius,
                          max_condition=req.max_condition)


def computed_mean_slack(manifold: Manifold, center: Array, radius: float,
                        max_condition: float | None = None) -> tuple[float, float]:
    """(tau, 2 tau / lambda): the public gradient tolerance of ``certified_mean`` and what it adds
    to the sensitivity of the computed mean (each computed mean lies within tau / lambda of the
    exact one, lambda = ``curvature_factor``); a worst case under the cap ``max_condition``, an
    estimate without it on affine-invariant SPD (``mean_tolerance``)."""
    tau = mean_tolerance(manifold, center, radius, max_condition)
    return tau, 2.0 * tau / curvature_factor(radius, manifold.curvature_bounds[1])


def _dp_rgd_mean(req: _Request, opts: _Options) -> Release:
    """The Fréchet mean by full-batch DP-RGD (see ``private_frechet_mean``), replace-one.

    The per-record gradients -Log_w(x_i) have norm <= 2r for w and x_i in the data ball (the
    clipping at 2r never acts), and replacing a record moves one of them by
    |Log_w x - Log_w x'| <= 2r max(1, t / sin t), t = 2r sqrt(k) (Rauch comparison, see
    ``kng_mean_sensitivity``): on the sphere and Kendall's shape space this exceeds 2r.
    """
    manifold, n, radius = req.manifold, req.n, req.radius
    nd = len(manifold.point_shape)

    def gradients(w, batch):
        return -manifold.log(np.expand_dims(w, -nd - 1), batch)

    def loss(w, data):
        sample = data if isinstance(data, ChunkedSample) else InMemorySample(manifold, data,
                                                                             validate=False)
        return float(sample.total(lambda xs, ws: manifold.mean_log_and_value(w, xs, ws)[1]))

    rel = dp_rsgd(manifold, gradients, req.x, req.target.epsilon, req.target.delta, opts.steps,
                  lr=opts.lr, init=req.center, clip=2.0 * radius,
                  replace_sensitivity=n * kng_mean_sensitivity(manifold, radius, n), rng=req.rng,
                  loss=loss, ledger=req.ledger, label=req.label(), domain=(req.center, radius),
                  progress=False, secure=opts.secure)
    rel.parameters.update(radius=radius)
    rel.diagnostics.update(clipped_to_ball=req.clipped)
    return replace(rel, mechanism=req.spec.title, theorem=f"{rel.theorem}; {req.spec.theorem}")


def kng_mean_draws(manifold: Manifold, points: Array | ChunkedSample, minimiser: Array,
                   center: Array, radius: float, scale: float, rng: np.random.Generator,
                   size: int | None = None, *, allow_approximate: bool = False,
                   proposal: RiemannianLaplace | None = None) -> tuple[Array, SamplerInfo, float]:
    """Exact draws of the K-norm gradient Fréchet mean of ``points`` at ``scale`` on the data
    ball: density proportional to exp(-|grad F(m)| / scale), F(m) = (1/2n) sum_i rho(m, x_i)^2,
    through the strong convexity h(radius, k) of F (``sample_convex``; ``minimiser`` is the
    computed Fréchet mean). On a chunked sample each batch of proposals costs one distributed
    pass. ``allow_approximate`` lets the proposals come from MCMC where no exact sampler can draw
    them (``proposal``: the checked ``convex_proposal``, whose plan then decides). Returns the
    draws, the sampler's report and the strong convexity."""
    data = as_sample(manifold, points)
    lam = curvature_factor(radius, manifold.curvature_bounds[1])

    def grad_norm(m):
        return manifold.norm(m, data.total(lambda xs, ws: manifold.mean_log_and_value(m, xs, ws)[0]))

    draws, info = sample_convex(manifold, grad_norm, minimiser, lam, center, radius, scale, rng, size,
                                allow_approximate=allow_approximate, proposal=proposal)
    return draws, info, lam


#: The K-norm gradient mean pays rho = KNG_ROUNDING_MARGIN x ``gradient_rounding_bound`` for
#: the rounding of each computed gradient (``kng_mean_calibration``): far out on the hyperboloid
#: with tiny balls the computed gradient norms of neighbours were measured to differ from the
#: exact ones by up to 1.9 x the bound (both sides together), so the bound alone (2 x it) left
#: 5%; 4 leaves about 4x.
KNG_ROUNDING_MARGIN = 4.0


def kng_mean_calibration(manifold: Manifold, center: Array, radius: float, n: int,
                         max_condition: float | None = None) -> tuple[float, float]:
    """(Delta + 2 rho, rho): the sensitivity the K-norm gradient mean is calibrated on, and rho.

    The law exp(-|g_D(m)| / sigma) is epsilon-DP when the *computed* gradient norms of
    neighbouring data sets differ by at most the calibrated sensitivity at every m of the ball.
    The exact gradients differ by at most Delta = ``kng_mean_sensitivity``; each computed
    average gradient (and its norm) is taken to lie within rho of its exact value, so the
    computed norms differ by at most Delta + 2 rho. rho = ``KNG_ROUNDING_MARGIN`` x
    ``gradient_rounding_bound`` (the public rounding bound from which ``mean_tolerance`` is
    derived: eps d R cosh(D)^2 (1 + r/R) on the hyperboloid, D = (rho(o, c) + r) / R; the
    capped worst case with ``max_condition``), from public parameters only. Far out on the
    hyperboloid with small Delta (many records or a small ball) rho is comparable to Delta or
    larger: there the computed norms of the review's neighbours differed by up to 4.6 Delta
    (Delta was not an honest calibration); elsewhere 2 rho is negligible (below 1e-13 on a unit
    ball around the hyperboloid's origin, against Delta = 2 / n). rho is an estimate with a
    margin, not a proof (as ``mean_tolerance``'s)."""
    rho = KNG_ROUNDING_MARGIN * gradient_rounding_bound(manifold, center, radius, max_condition)
    return kng_mean_sensitivity(manifold, radius, n) + 2.0 * rho, rho


def _kng_mean(req: _Request, opts: _Options) -> Release:
    """The Fréchet mean by the K-norm gradient mechanism (see ``private_frechet_mean``),
    calibrated on Delta + 2 rho (``kng_mean_calibration``), rho published as
    ``parameters["gradient_rounding"]`` and Delta + 2 rho as ``parameters["sensitivity"]``."""
    manifold, center, radius = req.manifold, req.center, req.radius
    fit = _exact_mean(req)
    sensitivity, rounding = kng_mean_calibration(manifold, center, radius, req.n, req.max_condition)
    mech = KNormGradient(sensitivity, req.target.epsilon)
    lam = curvature_factor(radius, manifold.curvature_bounds[1])
    alternatives = ("the Riemannian Laplace mechanism ('laplace') instead of K-norm gradient",
                    "a larger epsilon")
    proposal = convex_proposal(manifold, lam, center, radius, mech.scale, req.allow_approximate)
    with exact_alternatives(*alternatives):
        proposal.check_exact()
    with reserved(req.ledger, req.target, req.label()), exact_alternatives(*alternatives):
        value, info, lam = kng_mean_draws(manifold, req.x, fit.mean, center, radius, mech.scale,
                                          req.rng, allow_approximate=req.allow_approximate,
                                          proposal=proposal)
    return Release(value=value, guarantee=req.target, sensitivity=mech.sensitivity,
                   scale=mech.scale, mechanism=req.spec.title, exact_sampler=info.exact,
                   parameters={"n": req.n, "radius": radius, "strong_convexity": lam,
                               "gradient_rounding": rounding, "sensitivity": mech.sensitivity,
                               **condition_parameters(manifold, req.max_condition)},
                   diagnostics={"clipped": req.clipped, "frechet_iterations": fit.iterations,
                                "descent_steps": fit.descent_steps, "sampler": info.as_dict()},
                   theorem=req.spec.theorem, equivalent=equivalents(req.target))


def _cap(req: _Request) -> dict:
    """The keyword that passes a condition cap to a mechanism's ``sampler``: none without a cap,
    so that mechanisms registered before the keyword existed keep working where it is unused."""
    return {} if req.max_condition is None else {"max_condition": req.max_condition}


def _output_law(req: _Request, opts: _Options):
    """(the law centred at the mean, its guarantee, the footpoint mechanism or None, and the
    public parameters), every refusal decided from public parameters before any reservation.

    A private footpoint (wrapped mechanisms, ``footpoint="private"``) spends
    ``footpoint_budget`` of the target on a Riemannian Laplace release of a subsample's mean;
    the rest goes to the main law (``split_guarantee``)."""
    spec, manifold, center = req.spec, req.manifold, req.center
    main, fp_mech, fp_size = req.target, None, 0
    if is_private(opts.footpoint):
        eps_fp, main = split_guarantee(req.target, opts.footpoint_budget)
        fp_mech, fp_size = _footpoint_mechanism(manifold, req.n, center, req.radius, eps_fp,
                                                req.allow_approximate, req.max_condition)
        with exact_alternatives("a public footpoint (the default: the center)",
                                "a larger footpoint_budget"):
            fp_mech.check_exact()
    tangent = (req.sensitivity if opts.tangent_sensitivity is None
               else opts.tangent_sensitivity + req.slack)
    scale = spec.calibrate(main, tangent, restrict=opts.restrict)
    noise = noise_caveat(scale, req.radius, diameter_bound(manifold))
    req.caveats.extend([noise] if noise else [])
    params = {"n": req.n, "radius": req.radius, "restricted_to_ball": opts.restrict,
              "mean_tolerance": req.tolerance, "sensitivity": req.sensitivity}
    params.update(condition_parameters(req.manifold, req.max_condition))
    if spec.takes_footpoint:
        params.update(tangent_sensitivity=tangent, main_guarantee=main.describe())
    if fp_mech is not None:  # footpoints f in the ball: draws reach 2 r + noise from f, 3 r from c
        spec.sampler(manifold, scale, ball=(center, req.radius)).check_representable(3.0 * req.radius)
        return None, scale, (fp_mech, fp_size, eps_fp), params
    footpoint = None if opts.footpoint is None else manifold.check_point(opts.footpoint)
    law = spec.sampler(manifold, scale, ball=(center, req.radius), footpoint=footpoint,
                       restrict=opts.restrict, allow_approximate=req.allow_approximate,
                       **_cap(req))
    law.check_exact()
    if spec.takes_footpoint:
        law.check_representable(float(manifold.dist(law.footpoint, center)) + req.radius)
        params.update(footpoint=np.asarray(law.footpoint).tolist())
    return law, scale, None, params


def _output_mean(req: _Request, opts: _Options) -> Release:
    """The Fréchet mean perturbed by a registered output mechanism (see ``private_frechet_mean``):
    validate the law, reserve the budget, draw (the private footpoint first, if asked)."""
    spec = req.spec
    fit = _exact_mean(req)
    law, scale, private_fp, params = _output_law(req, opts)
    diagnostics = {"clipped": req.clipped, "frechet_iterations": fit.iterations,
                   "descent_steps": fit.descent_steps}
    exact = True
    with reserved(req.ledger, req.target, req.label()):
        if private_fp is not None:
            fp_mech, fp_size, eps_fp = private_fp
            footpoint, fp_info = _private_footpoint(fp_mech, fp_size, req.x, req.center,
                                                     req.radius, req.rng, req.max_condition)
            diagnostics["private_footpoint_sampler"] = fp_info.pop("sampler")
            exact = diagnostics["private_footpoint_sampler"]["exact"]
            params.update(private_footpoint={"epsilon": eps_fp, **fp_info},
                          footpoint=np.asarray(footpoint).tolist())
            law = spec.sampler(req.manifold, scale, ball=(req.center, req.radius),
                               footpoint=footpoint, **_cap(req))
        value = law.sample(fit.mean, rng=req.rng)
        exact = exact and law.last_info.exact
        diagnostics["sampler"] = law.last_info.as_dict()
    theorem = spec.restricted_theorem if opts.restrict else spec.theorem
    return Release(value=value, guarantee=req.target, sensitivity=req.sensitivity, scale=scale,
                   mechanism=spec.title, exact_sampler=exact, diagnostics=diagnostics,
                   parameters=params, theorem=theorem, equivalent=equivalents(req.target))


#: The releases of the objective mechanisms, whose noise enters the estimator.
_OBJECTIVE_RELEASES = {"dp-rgd": _dp_rgd_mean, "kng": _kng_mean}


def private_frechet_mean(manifold: Manifold, points: Array, epsilon: float | None = None,
                         center: Array | None = None, radius: float | None = None, *,
                         mechanism: str = "laplace", clip_data: bool = False,
                         ledger: BudgetLedger | None = None,
                         rng: np.random.Generator | int | None = None,
                         restrict: bool = False, delta: float | None = None,
                         mu: float | None = None, rdp: tuple[float, float] | None = None,
                         footpoint: Array | str | None = None,
                         tangent_sensitivity: float | None = None, footpoint_budget: float = 0.1,
                         steps: int = 3, lr: float = 0.7, allow_approximate: bool = False,
                         secure: bool = False, sensitivity_size: int | None = None,
                         max_condition: float | None = None) -> Release:
    """A differentially private Fréchet mean of data in the public ball B_radius(center).

    Mechanisms:

    - ``"laplace"``: Riemannian Laplace at the sample mean, scale Delta/epsilon with Delta of
      Theorem 2 (Reimherr et al. 2021); ``restrict=True`` conditions on the data ball and doubles
      the scale (Theorem 3). Gives epsilon-DP.
    - ``"wrapped-laplace"`` (epsilon-DP, Theorem 3.1) and ``"wrapped-gaussian"`` ((epsilon,
      delta)-DP with ``delta``, mu-GDP with ``mu``, or (alpha, eps)-RDP with ``rdp``; Theorems
      3.2-3.4) of the exponential-wrapped paper, on Hadamard manifolds only. ``footpoint`` is a
      public point (default: ``center``) or ``"private"``: a Riemannian Laplace release of the mean
      of a random 5% subsample spending ``footpoint_budget`` of the budget (the paper's appendix
      A.3.1). ``tangent_sensitivity`` is a caller-proved bound on ``|Log_p0 f(D) - Log_p0 f(D')|``
      (default: Delta, valid because Log_p0 is 1-Lipschitz on Hadamard manifolds).
    - ``"dp-rgd"``: the mean as empirical risk minimisation, F(w) = (1/2n) sum_i rho(w, x_i)^2,
      by DP Riemannian gradient descent (Han et al., Algorithm 1; ``dp_rsgd``) from the public
      ``center``, full batch, ``steps`` steps of size ``lr``, each iterate moved back onto the
      data ball; per-record gradients -Log_w(x_i) clipped to 2 * radius (their largest norm for
      w in the data ball, so the clipping never acts); replacing a record moves one gradient by
      at most 2r max(1, t / sin t), t = 2r sqrt(k) (``_dp_rgd_mean``), the noise's sensitivity.
      Gives (epsilon, delta)-DP with ``delta``; ``secure=True`` draws discrete Gaussian noise
      from the operating system (``dp_rsgd``).
    - ``"kng"``: the K-norm gradient mechanism on the data ball, density proportional to
      exp(-``|grad F_D(m)|`` / sigma), F_D(m) = (1/2n) sum_i rho(m, x_i)^2,
      sigma = 2 (Delta + 2 rho) / epsilon with Delta = ``kng_mean_sensitivity`` (Soto et al.
      2022) and rho a public bound on the computed gradient's rounding (``KNG_ROUNDING_MARGIN``
      x ``Manifold.gradient_rounding``, ``kng_mean_calibration``; published as
      ``parameters["gradient_rounding"]``, Delta + 2 rho as ``parameters["sensitivity"]``);
      sampled exactly through the strong convexity h(r, k) of F on the ball
      (``sample_convex``). Gives epsilon-DP.

    Parameters
    ----------
    manifold : Manifold
        First, as in every estimator of geodp (another order is a TypeError showing the
        expected call).
    points : array ``(n, *point_shape)``
        The records, one point each.
    epsilon, delta, mu, rdp
        The target guarantee (which ones a mechanism takes is listed above).
    center, radius
        The public data ball: they must not depend on the data.
    clip_data : bool
        Move records outside the ball onto its boundary (reported; warns above 5%).
    ledger : BudgetLedger, optional
        The release's guarantee is reserved before any randomness is drawn, and composed
        tightly with the ledger's other entries.
    rng : numpy.random.Generator, int or None
    allow_approximate : bool
        Where no exact sampler can draw the Riemannian Laplace (restricted, or on SPD near its
        largest scale; the K-norm gradient's proposals; a private footpoint), release the state
        of Metropolis-Hastings chains started in the public ball (``exact_sampler=False``, R-hat
        and ESS in ``diagnostics``, an ``ApproximateSamplerWarning`` when they fail their
        thresholds) instead of refusing; restricted laws on affine-invariant SPD (and the K-norm
        gradient's proposals there) run polar chains that stop on rank-normalised R-hat < 1.01
        and bulk ESS >= 400 (``mechanisms.spd_chains``). Exact or chains, and a refusal, are
        decided before the ledger reserves anything, from the public parameters alone (a
        restricted law's pilot at the ball's center: ``RiemannianLaplace.exact_planned``), so
        neither ``exact_sampler`` nor a refusal depends on the data.
    sensitivity_size : int, optional
        Calibrate on Delta(sensitivity_size) (Theorem 2; ``kng_mean_sensitivity`` for ``"kng"``)
        instead of Delta(len(points)), for callers whose record count is itself private and who
        hold a *public lower bound* on it (``PrivateMDM``'s class sizes). Valid for add/remove
        neighbours of sizes m - 1 and m whenever sensitivity_size <= m: adding a record at the
        mean of D' leaves the mean unchanged (it contributes Log_mu(mu) = 0 to the gradient, and
        the minimiser is unique below the radius of Assumption 1), so mean(D') = mean(D' u
        {mean(D')}), and D' u {mean(D')} and D' u {x} are replace-one neighbours of size m; the
        same holds for the K-norm gradient. The release then publishes ``sensitivity_size``, not
        n. It is not compared with n (the comparison would itself reveal something about n): a
        value above the true count voids the guarantee. Refused with ``"dp-rgd"`` (which divides
        the gradient sum by n) and with a private footpoint (its subsample size comes from n).
    max_condition : float, optional
        A public bound K on the condition number lambda_max / lambda_min of every record, on
        manifolds that offer it (affine-invariant SPD: ``Manifold.cap_condition``); it must be at
        least the center's. The set {cond <= K} is geodesically convex, so the mean obeys it too,
        and K makes two of the release's numerical guarantees worst cases over the public ball:
        the computed mean's tolerance tau (``Manifold.capped_gradient_rounding``, about
        eps n^2 K^2: keep K far below 1/sqrt(machine epsilon)) and, for the unrestricted Laplace,
        the bound on the chance that its draw leaves double precision
        (``mechanisms.spd_laplace.check_representable``, checked before the ledger reserves).
        Records above K are refused, or with ``clip_data`` their eigenvalues are clipped to a
        window of ratio K (a fixed map of each record). Published in ``parameters``. Without it
        both are estimates on affine-invariant SPD (for well-conditioned records, not worst cases
        over the ball), which the release states: ``parameters["numerical_bounds"]`` is
        ``"estimates"``.

    Returns
    -------
    Release: ``value`` (a point), ``guarantee``, ``sensitivity``, ``scale``, ``mechanism``,
    ``exact_sampler`` and ``diagnostics``.

    Raises
    ------
    TypeError for arguments of the wrong kind (e.g. no manifold, or a string epsilon);
    ValueError for data off the manifold or outside the ball, or a guarantee the mechanism cannot
    give; NotNormalisableError when the Laplace has no density at that scale;
    ApproximateSamplerRefused (a ValueError) when only an approximate sampler could draw the
    release and ``allow_approximate`` is False; BudgetExceededError when the ledger refuses;
    MissingCapability, before anything else, on a manifold without a logarithm, curvature
    bounds or injectivity radius (e.g. ``Stiefel``, which has no closed-form log).

    Every mechanism here is analysed for replace-one neighbours: data sets of the same public size
    n that differ in one record (``rel.guarantee.relation``).

    Examples
    --------
    >>> from geodp.datasets import load
    >>> ds = load("digits-covariance")
    >>> center, radius = ds.public_ball()
    >>> rel = private_frechet_mean(ds.manifold, ds.points, 1.0, center, radius, rng=0)
    >>> rel.guarantee.describe()
    '1-DP (replace-one)'
    >>> rel.value.shape, rel.exact_sampler
    ((5, 5), True)
    """
    manifold, points = manifold_first("private_frechet_mean", manifold, points)
    spec = lookup(mechanism)
    spec.check(manifold)  # capabilities it needs, before anything runs
    target = target_guarantee(spec.name, spec.notions, epsilon, delta, mu, rdp)
    opts = _Options(restrict, footpoint, None if tangent_sensitivity is None else
                    float(tangent_sensitivity), footpoint_budget, steps, lr, secure,
                    allow_approximate, max_condition)
    _check_options(spec, opts, center, radius)
    center = manifold.check_point(center)
    check_condition_cap(manifold, center, max_condition)
    if opts.footpoint is not None and not is_private(opts.footpoint):
        manifold.check_point(opts.footpoint)
    x, n = _records(manifold, points)
    size = _calibration_size(n, sensitivity_size, spec, opts.footpoint)
    sensitivity = frechet_mean_sensitivity(manifold, float(radius), size)
    if not np.isfinite(sensitivity):
        raise ParameterError(f"{{radius}} = {float(radius):g} is too large: the sensitivity it "
                             f"implies overflows double precision; choose a smaller {{radius}}",
                             "radius")
    if opts.tangent_sensitivity is not None and not 0 < opts.tangent_sensitivity <= sensitivity:
        raise ValueError(f"tangent_sensitivity must lie in (0, Delta = {sensitivity:.6g}]: Log_p0 "
                         f"is a contraction, so Delta always bounds it; got {tangent_sensitivity}")
    cap = None if max_condition is None else float(max_condition)
    x, capped = enforce_condition(manifold, x, cap, clip_data)
    x, clipped = enforce_ball(manifold, x, center, radius, clip_data)
    tolerance, slack = computed_mean_slack(manifold, center, float(radius), cap)
    moved = {"records_clipped": clipped, "fraction": clipped / n} if clipped else clipped
    if capped:
        moved = {**(moved or {}), "records_capped": capped}
    req = _Request(spec, manifold, x, size, center, float(radius), target, sensitivity + slack,
                   tolerance, slack, ledger, as_generator(rng), moved, allow_approximate, [], cap)
    large_delta = delta_caveat(getattr(target, "delta", None), size)
    wide_cap = tolerance_caveat(slack, sensitivity, cap)
    req.caveats.extend(c for c in (large_delta, wide_cap) if c)
    release = (_output_mean if spec.perturbs == "output" else _OBJECTIVE_RELEASES[spec.name])(req, opts)
    rel = replace(release, caveats=tuple(req.caveats) + release.caveats)
    return rel if sensitivity_size is None else _size_public(rel, n)


def condition_parameters(manifold: Manifold, max_condition: float | None) -> dict:
    """The public parameters of a condition cap, on manifolds that offer one (else none):
    ``max_condition`` (K or None) and ``numerical_bounds``, which says whether the computed
    mean's tolerance and the Laplace's representability bound are worst cases over the public
    ball (under K) or estimates for well-conditioned records (without K)."""
    if not has(manifold, "cap_condition"):
        return {}
    kind = "estimates" if max_condition is None else "worst case for records of condition <= K"
    return {"max_condition": max_condition, "numerical_bounds": kind}


def _calibration_size(n: int, sensitivity_size: int | None, spec: Mechanism, footpoint) -> int:
    """The record count the sensitivity is calibrated on: n, or the caller's public lower bound
    ``sensitivity_size`` (see ``private_frechet_mean``), validated."""
    if sensitivity_size is None:
        return n
    size = check_count("sensitivity_size", sensitivity_size, 1)
    if spec.name == "dp-rgd":
        raise ValueError("sensitivity_size does not apply to mechanism='dp-rgd': DP-RGD divides the "
                         "gradient sum by the number of records, which must then be public")
    if is_private(footpoint):
        raise ValueError("sensitivity_size does not apply with footpoint='private': the footpoint's "
                         "subsample size is a share of the number of records, which must be public")
    return size


def _size_public(rel: Release, n: int) -> Release:
    """``rel`` with the calibration size published instead of the (private) record count n,
    which moves to the non-private diagnostics."""
    parameters = {k: v for k, v in rel.parameters.items() if k != "n"}
    parameters["sensitivity_size"] = int(rel.parameters["n"])
    return replace(rel, parameters=parameters, diagnostics={**rel.diagnostics, "n": n})


class _Checked(Exception):
    """Raised by ``_CheckOnly`` at a release's reservation: every refusal before it has passed."""


class _CheckOnly:
    """A ledger whose reservation stops the release there: a release called with it runs every
    check it decides before reserving (from public parameters) and draws nothing."""

    def reserve(self, guarantee: Guarantee, label: str):
        raise _Checked


def check_frechet_mean(manifold: Manifold, n: int, center: Array, radius: float, *,
                       mechanism: str, epsilon: float | None = None, delta: float | None = None,
                       allow_approximate: bool = False,
                       max_condition: float | None = None) -> None:
    """Every refusal of ``private_frechet_mean`` on n records in B_radius(center) that its public
    parameters decide, raised here without the records: the release itself is run on the
    public center alone (n records' worth for DP-RGD, whose divisor is n; ``sensitivity_size=n``
    otherwise) against a ledger that stops it at the reservation, so nothing is drawn, and its
    warnings are not shown (the release shows its own). The exact plan's pilots draw from a
    fixed seed, so the answer is the release's own.

    For callers that run the release inside their own reservation on a ball they release
    themselves (``PrivateFrechetMean(ball="private")``, class means on released sizes).
    """
    center = manifold.check_point(center)
    dp_rgd = lookup(mechanism).name == "dp-rgd"
    points = np.broadcast_to(center, (n,) + center.shape) if dp_rgd else center[None]
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            private_frechet_mean(manifold, points, epsilon, center, radius, mechanism=mechanism,
                                 delta=delta, ledger=_CheckOnly(), rng=0,
                                 allow_approximate=allow_approximate,
                                 sensitivity_size=None if dp_rgd else n,
                                 max_condition=max_condition)
    except _Checked:
        return
    raise AssertionError("the release drew without reserving")  # pragma: no cover
