"""Private Fréchet means."""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..chunked import ChunkedSample, InMemorySample, as_sample, is_chunked
from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator, manifold_first
from ..mechanisms import NotNormalisableError, RiemannianLaplace, WrappedGaussian, WrappedLaplace
from ..mechanisms.registry import lookup
from ..privacy.conversions import check_count
from ..privacy import (GDP, RDP, ApproxDP, BudgetLedger, Guarantee, PureDP, gdp_to_pure_equivalent)
from ..mechanisms.kng import KNormGradient, convex_proposal, sample_convex
from ..mechanisms.laplace import SamplerInfo
from ..mechanisms.mcmc import exact_alternatives
from ..statistics import curvature_factor, frechet_mean, frechet_mean_sensitivity
from ..statistics.sensitivity import kng_mean_sensitivity
from .data_ball import enforce_ball
from .dp_rgd import dp_rsgd
from .release import Release, reserved

_THEOREMS = {
    "laplace": "Riemannian Laplace mechanism (Reimherr, Bharath & Soto 2021, Theorem 1) with the "
               "Fréchet-mean sensitivity of their Theorem 2",
    "restricted": "Riemannian Laplace restricted to the data ball (Reimherr, Bharath & Soto 2021, "
                  "Theorem 3) with the sensitivity of their Theorem 2",
    "wrapped-laplace": "exponential-wrapped Laplace (Theorem 3.1 of the exp-wrapped paper) with the "
                       "tangent sensitivity at the footpoint",
    "wrapped-gaussian": "exponential-wrapped Gaussian (Theorems 3.2-3.4 of the exp-wrapped paper) "
                        "with the tangent sensitivity at the footpoint",
}
SUBSAMPLE_FRACTION = 0.05


_ASK = {"epsilon": "epsilon alone (epsilon-DP)", "epsilon-delta": "epsilon and delta > 0 "
        "((epsilon, delta)-DP)", "mu": "mu alone (mu-GDP)", "rdp": "rdp=(alpha, epsilon) (Rényi DP)"}


def target_guarantee(name: str, epsilon, delta, mu, rdp) -> Guarantee:
    """The guarantee asked for, checked against the notions the registered mechanism gives."""
    notions = lookup(name).notions
    given = {k for k, v in {"epsilon": epsilon, "delta": delta, "mu": mu, "rdp": rdp}.items()
             if v is not None}
    if given == {"epsilon"} and "epsilon" in notions:
        return PureDP(epsilon)
    if given == {"epsilon", "delta"} and "epsilon-delta" in notions and delta is not None and delta > 0:
        return ApproxDP(epsilon, delta)
    if given == {"mu"} and "mu" in notions:
        return GDP(mu)
    if given == {"rdp"} and "rdp" in notions:
        alpha, eps = rdp
        return RDP([alpha], [eps])
    raise ValueError(f"the {name} mechanism needs exactly one of: "
                     f"{'; '.join(_ASK[n] for n in notions)}; got {sorted(given)}")


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


def _footpoint_mechanism(manifold, n, center, radius, epsilon_fp,
                         allow_approximate) -> tuple[RiemannianLaplace, int]:
    """The Riemannian Laplace that releases the mean of a random 5% subsample (m points).

    Its mean has the Theorem 2 sensitivity for m = ceil(0.05 n) points; the Laplace must be
    normalisable at scale Delta_m / epsilon_fp, otherwise this raises (a public footpoint is then
    the only sound choice). Approximate draws, if allowed, start in the data ball.
    """
    m = max(1, math.ceil(SUBSAMPLE_FRACTION * n))
    delta_sub = frechet_mean_sensitivity(manifold, radius, m)
    try:
        return RiemannianLaplace(manifold, delta_sub / epsilon_fp, allow_approximate=allow_approximate,
                                 chain_ball=(center, radius)), m
    except NotNormalisableError as exc:
        raise NotNormalisableError(
            f"private footpoint selection: the Riemannian Laplace release of the mean of a "
            f"{m}-point subsample (sensitivity {delta_sub:.4g}) at epsilon {epsilon_fp:.4g} is not "
            f"normalisable ({exc}). Use a public footpoint (the default: the data ball's center), "
            f"a larger footpoint_budget, or a larger budget") from None


def _private_footpoint(mech: RiemannianLaplace, m: int, x, center, rng) -> tuple[Array, dict]:
    """Draw the subsample (indices from ``rng`` alone), take its mean, release it with ``mech``.
    On a chunked sample the subsample is taken chunk by chunk, lazily."""
    if isinstance(x, ChunkedSample):
        idx = np.sort(rng.choice(x.n, size=m, replace=False))
        subsample = ChunkedSample(mech.manifold, x.points[idx], validate=False)
    else:
        subsample = x[rng.choice(len(x), size=m, replace=False)]
    sub_mean = frechet_mean(mech.manifold, subsample, init=center, tol=1e-12, max_iter=10_000,
                            on_spread="ignore").mean
    value = mech.sample(sub_mean, rng=rng)
    return value, {"subsample_size": m, "scale": mech.scale, "sampler": mech.last_info.as_dict()}


def _dp_rgd_mean(manifold, x, target, center, radius, steps, lr, ledger, rng, clipped,
                 secure) -> Release:
    """The Fréchet mean by full-batch DP-RGD (see ``private_frechet_mean``), replace-one.

    The per-record gradients -Log_w(x_i) have norm <= 2r for w and x_i in the data ball (the
    clipping at 2r never acts), and replacing a record moves one of them by
    |Log_w x - Log_w x'| <= 2r max(1, t / sin t), t = 2r sqrt(k) (Rauch comparison, see
    ``kng_mean_sensitivity``): on the sphere and Kendall's shape space this exceeds 2r.
    """
    nd = len(manifold.point_shape)

    def gradients(w, batch):
        return -manifold.log(np.expand_dims(w, -nd - 1), batch)

    def loss(w, data):
        sample = data if isinstance(data, ChunkedSample) else InMemorySample(manifold, data,
                                                                             validate=False)
        return float(sample.total(lambda xs, ws: manifold.mean_log_and_value(w, xs, ws)[1]))

    n = x.n if isinstance(x, ChunkedSample) else len(x)
    rel = dp_rsgd(manifold, gradients, x, target.epsilon, target.delta, steps, lr=lr, init=center,
                  clip=2.0 * radius, replace_sensitivity=n * kng_mean_sensitivity(manifold, radius, n),
                  rng=rng, loss=loss, ledger=ledger, label="Fréchet mean (dp-rgd)",
                  domain=(center, radius), progress=False, secure=secure)
    rel.parameters.update(radius=radius)
    rel.diagnostics.update(clipped_to_ball=clipped)
    return rel


def kng_mean_draws(manifold: Manifold, points: Array | ChunkedSample, minimiser: Array,
                   center: Array, radius: float, scale: float, rng: np.random.Generator,
                   size: int | None = None, *,
                   allow_approximate: bool = False) -> tuple[Array, SamplerInfo, float]:
    """Exact draws of the K-norm gradient Fréchet mean of ``points`` at ``scale`` on the data
    ball: density proportional to exp(-|grad F(m)| / scale), F(m) = (1/2n) sum_i rho(m, x_i)^2,
    through the strong convexity h(radius, k) of F (``sample_convex``; ``minimiser`` is the
    computed Fréchet mean). On a chunked sample each batch of proposals costs one distributed
    pass. ``allow_approximate`` lets the proposals come from MCMC where no exact sampler can draw
    them. Returns the draws, the sampler's report and the strong convexity."""
    data = as_sample(manifold, points)
    lam = curvature_factor(radius, manifold.curvature_bounds[1])

    def grad_norm(m):
        return manifold.norm(m, data.total(lambda xs, ws: manifold.mean_log_and_value(m, xs, ws)[0]))

    draws, info = sample_convex(manifold, grad_norm, minimiser, lam, center, radius, scale, rng, size,
                                allow_approximate=allow_approximate)
    return draws, info, lam


def _kng_mean(manifold, x, n, fit, target, center, radius, ledger, rng, clipped,
              allow_approximate) -> Release:
    """The Fréchet mean by the K-norm gradient mechanism (see ``private_frechet_mean``)."""
    mech = KNormGradient(kng_mean_sensitivity(manifold, radius, n), target.epsilon)
    lam = curvature_factor(radius, manifold.curvature_bounds[1])
    alternatives = ("the Riemannian Laplace mechanism ('laplace') instead of K-norm gradient",
                    "a larger epsilon")
    with exact_alternatives(*alternatives):
        convex_proposal(manifold, lam, center, radius, mech.scale, allow_approximate).check_exact(rng)
    with reserved(ledger, target, f"Fréchet mean (kng, {target.describe()})"), \
            exact_alternatives(*alternatives):
        value, info, lam = kng_mean_draws(manifold, x, fit.mean, center, radius, mech.scale, rng,
                                          allow_approximate=allow_approximate)
    return Release(value=value, guarantee=target, sensitivity=mech.sensitivity, scale=mech.scale,
                   mechanism="K-norm gradient Fréchet mean", exact_sampler=info.exact,
                   parameters={"n": n, "radius": radius, "strong_convexity": lam},
                   diagnostics={"clipped": clipped, "frechet_iterations": fit.iterations,
                                "sampler": info.as_dict()},
                   theorem="K-norm gradient mechanism (Reimherr & Awan 2019, Theorem 3.2) with the "
                           "gradient sensitivity of the Fréchet function (kng_mean_sensitivity)",
                   equivalent=equivalents(target))


def private_frechet_mean(manifold: Manifold, points: Array, epsilon: float | None = None,
                         center: Array | None = None, radius: float | None = None,
                         mechanism: str = "laplace", clip_data: bool = False,
                         ledger: BudgetLedger | None = None,
                         rng: np.random.Generator | int | None = None, *,
                         restrict: bool = False, delta: float | None = None,
                         mu: float | None = None, rdp: tuple[float, float] | None = None,
                         footpoint: Array | str | None = None,
                         tangent_sensitivity: float | None = None, footpoint_budget: float = 0.1,
                         steps: int = 3, lr: float = 0.7, allow_approximate: bool = False,
                         secure: bool = False, sensitivity_size: int | None = None) -> Release:
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
      A.3.1). ``tangent_sensitivity`` is a caller-proved bound on |Log_p0 f(D) - Log_p0 f(D')|
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
      exp(-|grad F_D(m)| / sigma), F_D(m) = (1/2n) sum_i rho(m, x_i)^2, sigma = 2 Delta / epsilon with
      Delta = ``kng_mean_sensitivity`` (Soto et al. 2022); sampled exactly through the strong
      convexity h(r, k) of F on the ball (``sample_convex``). Gives epsilon-DP.

    Parameters
    ----------
    manifold : Manifold
        First, as in every estimator of geodp (another order is a TypeError showing the
        expected call).
    points : array (n, *point_shape)
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
        thresholds) instead of refusing. The refusal is decided before the ledger reserves
        anything, from the public parameters (a restricted law's pilot at the ball's center);
        only a restricted law whose exact samplers pass at the center but fail at the data's
        mean refuses after the reservation, which the ledger then keeps.
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

    Example
    -------
    >>> from geodp.datasets import load
    >>> ds = load("digits-covariance")
    >>> center, radius = ds.public_ball()
    >>> rel = private_frechet_mean(ds.manifold, ds.points, 1.0, center, radius, rng=0)
    >>> rel.guarantee.describe()
    '1-DP (replace-one)'
    """
    manifold, points = manifold_first("private_frechet_mean", manifold, points)
    lookup(mechanism).check(manifold)  # capabilities it needs, before anything runs
    target = target_guarantee(mechanism, epsilon, delta, mu, rdp)
    if secure and mechanism != "dp-rgd":
        raise ValueError(f"secure=True (discrete Gaussian noise) applies to mechanism='dp-rgd' only; "
                         f"the {mechanism} mechanism has no secure sampler")
    if center is None or radius is None:
        raise ValueError("center and radius of the public data ball are required")
    wrapped = mechanism.startswith("wrapped")
    if restrict and mechanism != "laplace":
        raise ValueError(f"restrict applies to the Riemannian Laplace (Theorem 3) only, not to "
                         f"the {mechanism} mechanism")
    if not wrapped and (footpoint is not None or tangent_sensitivity is not None):
        raise ValueError("footpoint and tangent_sensitivity apply to the wrapped mechanisms only")
    rng = as_generator(rng)
    center = manifold.check_point(center)
    if is_chunked(points):
        x = ChunkedSample(manifold, points, validate=False)
        n = x.n
    else:
        x = manifold.check_point(points)
        if x.ndim != len(manifold.point_shape) + 1:
            raise ValueError(f"points must have shape (n, {manifold.point_shape}), got {x.shape}")
        n = len(x)
    size = _calibration_size(n, sensitivity_size, mechanism, footpoint)
    sensitivity = frechet_mean_sensitivity(manifold, radius, size)
    if tangent_sensitivity is not None and not 0 < tangent_sensitivity <= sensitivity:
        raise ValueError(f"tangent_sensitivity must lie in (0, Delta = {sensitivity:.6g}]: Log_p0 is "
                         f"a contraction, so Delta always bounds it; got {tangent_sensitivity}")
    fixed_footpoint = None
    if wrapped and not (isinstance(footpoint, str) and footpoint == "private"):
        fixed_footpoint = center if footpoint is None else manifold.check_point(footpoint)
    elif isinstance(footpoint, str) and footpoint != "private":
        raise ValueError(f"footpoint must be a point or 'private', got {footpoint!r}")
    x, clipped = enforce_ball(manifold, x, center, radius, clip_data)
    if clipped:
        clipped = {"records_clipped": clipped, "fraction": clipped / n}
    if mechanism == "dp-rgd":
        return _dp_rgd_mean(manifold, x, target, center, radius, steps, lr, ledger, rng, clipped,
                            secure)
    fit = frechet_mean(manifold, x, init=center, tol=1e-12, max_iter=10_000, on_spread="ignore")
    if not fit.converged:
        raise RuntimeError("the Fréchet mean did not converge; the sensitivity bound needs the "
                           "exact minimiser")
    if mechanism == "kng":
        rel = _kng_mean(manifold, x, size, fit, target, center, radius, ledger, rng, clipped,
                        allow_approximate)
        return rel if sensitivity_size is None else _size_public(rel, n)
    main, fp_mech = target, None
    if wrapped and fixed_footpoint is None:
        eps_fp, main = split_guarantee(target, footpoint_budget)
        fp_mech, fp_size = _footpoint_mechanism(manifold, n, center, radius, eps_fp, allow_approximate)
        with exact_alternatives("a public footpoint (the default: the center)",
                                "a larger footpoint_budget"):
            fp_mech.check_exact(rng)
    tangent = sensitivity if tangent_sensitivity is None else float(tangent_sensitivity)
    scale = lookup(mechanism).calibrate(main, tangent if wrapped else sensitivity)
    if not wrapped:
        scale *= 2.0 if restrict else 1.0  # Theorem 3: the restricted law's normaliser varies
        mech = RiemannianLaplace(manifold, scale, restrict_to=(center, radius) if restrict else None,
                                 allow_approximate=allow_approximate, chain_ball=(center, radius))
        mech.check_exact(rng)
    name = {"laplace": "Riemannian Laplace (Reimherr et al. 2021)",
            "wrapped-laplace": "exponential-wrapped Laplace",
            "wrapped-gaussian": "exponential-wrapped Gaussian"}[mechanism]
    if wrapped:
        cls = WrappedLaplace if mechanism == "wrapped-laplace" else WrappedGaussian
        if fixed_footpoint is not None:
            cls(manifold, scale, fixed_footpoint).check_representable(
                float(manifold.dist(fixed_footpoint, center)) + radius)
    diagnostics = {"clipped": clipped, "frechet_iterations": fit.iterations}
    parameters = {"n": size, "radius": radius, "restricted_to_ball": restrict}
    exact = True
    with reserved(ledger, target, f"Fréchet mean ({mechanism}, {target.describe()})"):
        if fp_mech is not None:
            fixed_footpoint, fp_info = _private_footpoint(fp_mech, fp_size, x, center, rng)
            sampler = fp_info.pop("sampler")
            parameters["private_footpoint"] = {"epsilon": eps_fp, **fp_info}
            diagnostics["private_footpoint_sampler"] = sampler
            exact = sampler["exact"]
        if wrapped:
            value = cls(manifold, scale, fixed_footpoint).sample(fit.mean, rng=rng)
            parameters.update(footpoint=np.asarray(fixed_footpoint).tolist(),
                              tangent_sensitivity=tangent, main_guarantee=main.describe())
        else:
            value = mech.sample(fit.mean, rng=rng)
            exact = mech.last_info.exact
            diagnostics.update(sampler=mech.last_info.as_dict())
    rel = Release(value=value, guarantee=target, sensitivity=sensitivity, scale=scale,
                  mechanism=name, exact_sampler=exact, diagnostics=diagnostics,
                  parameters=parameters, theorem=_THEOREMS[mechanism if not restrict else "restricted"],
                  equivalent=equivalents(target))
    return rel if sensitivity_size is None else _size_public(rel, n)


def _calibration_size(n: int, sensitivity_size: int | None, mechanism: str, footpoint) -> int:
    """The record count the sensitivity is calibrated on: n, or the caller's public lower bound
    ``sensitivity_size`` (see ``private_frechet_mean``), validated."""
    if sensitivity_size is None:
        return n
    size = check_count("sensitivity_size", sensitivity_size, 1)
    if mechanism == "dp-rgd":
        raise ValueError("sensitivity_size does not apply to mechanism='dp-rgd': DP-RGD divides the "
                         "gradient sum by the number of records, which must then be public")
    if isinstance(footpoint, str) and footpoint == "private":
        raise ValueError("sensitivity_size does not apply with footpoint='private': the footpoint's "
                         "subsample size is a share of the number of records, which must be public")
    return size


def _size_public(rel: Release, n: int) -> Release:
    """``rel`` with the calibration size published instead of the (private) record count n,
    which moves to the non-private diagnostics."""
    parameters = {k: v for k, v in rel.parameters.items() if k != "n"}
    parameters["sensitivity_size"] = int(rel.parameters["n"])
    return dataclasses.replace(rel, parameters=parameters, diagnostics={**rel.diagnostics, "n": n})
