"""Empirical privacy audits: rigorous lower bounds on epsilon (or mu, or delta) from samples.

A mechanism M is (epsilon, delta)-DP only if P(M(D) in E) <= e^epsilon P(M(D') in E) + delta for
every event E and neighbours D, D'. ``audit_mechanism`` draws n outputs on each of two neighbouring
inputs, scans threshold events {s > t} and {s < t} of a real statistic s (both tails, both
directions D -> D' and D' -> D), bounds each event's two probabilities by Clopper-Pearson
intervals at the Bonferroni-corrected level (1 - confidence) / (number of bounds), and reports

- epsilon_lower = max_E log((P_low(M(D) in E) - delta) / P_high(M(D') in E)),
- mu_lower = max_E Phi^-1(1 - alpha_high) - Phi^-1(beta_high), alpha = P(M(D') in E) and
  beta = 1 - P(M(D) in E) (a mu-GDP mechanism has beta >= Phi(Phi^-1(1 - alpha) - mu)),
- delta_lower(epsilon) = max_E P_low(M(D) in E) - e^epsilon P_high(M(D') in E),
- rdp_lower(alpha) = max_E alpha/(alpha - 1) log P_low(M(D) in E) - log P_high(M(D') in E): the
  Renyi divergence of order alpha is at least that of the two events' Bernoulli laws (data
  processing), which is at least (1/(alpha - 1)) log(p^alpha q^(1 - alpha)).

With probability at least ``confidence`` every interval holds at once, so each bound is a valid
lower bound on the mechanism's true parameter: an audit above a claim refutes the claim. An
audit below it proves nothing (a weak event family or too few samples), which is why the tests
also plant a defect and show that the audit catches it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from .manifolds import Manifold
from .manifolds.base import Array, as_generator
from .parameters import ParameterError
from .manifolds.capabilities import has
from .privacy.conversions import check_count, check_positive
from .statistics.sensitivity import check_assumption_1

Sampler = Callable[[int, np.random.Generator], Array]

__all__ = ["audit_mechanism", "AuditResult", "clopper_pearson", "neighbouring_footpoints",
           "dp_rgd_step_sampler", "projection_statistic", "kng_mean_neighbours", "kng_mean_sampler",
           "kng_regression_neighbours", "kng_regression_sampler", "kng_log_ratio_statistic"]


@dataclass(frozen=True)
class AuditResult:
    """Lower bounds that hold simultaneously with probability ``confidence``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import audit_mechanism
    >>> draw = lambda shift: (lambda n, rng: shift + rng.normal(size=n))   # 1-GDP
    >>> res = audit_mechanism(draw(0.0), draw(1.0), lambda y: y, 20000, rng=0)
    >>> res.mu_lower <= 1.0, res.confidence, res.n_samples
    (True, 0.95, 20000)
    """

    epsilon_lower: float
    mu_lower: float
    delta_lower: float | None
    n_samples: int
    confidence: float
    events: int
    rdp_lower: float | None = None
    ceiling: tuple[float, float, float | None, float | None] | None = None
    """The (epsilon, mu, delta, RDP) bounds of the most separated outcome these samples allow:
    no run of this size can certify more, so a claim at or above it cannot be tested."""

    def as_dict(self) -> dict:
        return {"epsilon_lower": self.epsilon_lower, "mu_lower": self.mu_lower,
                "delta_lower": self.delta_lower, "rdp_lower": self.rdp_lower,
                "n_samples": self.n_samples,
                "confidence": self.confidence, "events_tried": self.events}


def clopper_pearson(k: np.ndarray, n: int, level: float) -> tuple[np.ndarray, np.ndarray]:
    """One-sided Clopper-Pearson bounds at ``level`` (each side): P >= lower and P <= upper.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import clopper_pearson
    >>> lo, hi = clopper_pearson(np.array([50]), 100, 0.025)
    >>> lo.round(3), hi.round(3)
    (array([0.398]), array([0.602]))
    """
    k = np.asarray(k, dtype=float)
    lower = np.where(k > 0, special.betaincinv(k, n - k + 1, level), 0.0)
    upper = np.where(k < n, special.betaincinv(k + 1, n - k, 1 - level), 1.0)
    return lower, upper


def audit_mechanism(sample_d: Sampler, sample_d_prime: Sampler, statistic: Callable[[Array], Array],
                    n_samples: int, confidence: float = 0.95,
                    rng: np.random.Generator | int | None = None, *, delta: float = 0.0,
                    thresholds: int = 64, delta_at_epsilon: float | None = None,
                    rdp_order: float | None = None) -> AuditResult:
    """Lower bounds on the privacy parameters of a mechanism from ``n_samples`` draws on each of two
    neighbouring inputs.

    ``sample_d(n, rng)`` and ``sample_d_prime(n, rng)`` return n outputs of the mechanism on D and
    D'; ``statistic`` maps outputs to reals (it must not look at which input they came from).
    ``thresholds`` quantiles of the pooled statistic define the events, in both tails; ``delta``
    is the delta of the epsilon bound; ``delta_at_epsilon`` also bounds delta at that epsilon, and
    ``rdp_order`` the Renyi-DP epsilon at that order.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import audit_mechanism
    >>> eps = 1.0                      # the Laplace mechanism on a sensitivity-1 count
    >>> draw = lambda shift: (lambda n, rng: shift + rng.laplace(scale=1 / eps, size=n))
    >>> res = audit_mechanism(draw(0.0), draw(1.0), lambda y: y, 20000, rng=0)
    >>> 0.5 < res.epsilon_lower <= eps      # a valid lower bound, close to the claim
    True
    """
    n = check_count("n_samples", n_samples, 10)
    if not 0 < confidence < 1:
        raise ParameterError(f"{{confidence}} must lie in (0, 1), got {confidence}", "confidence")
    if not 0 <= delta < 1:
        raise ValueError(f"delta must lie in [0, 1), got {delta}")
    if rdp_order is not None and not rdp_order > 1:
        raise ValueError(f"rdp_order must exceed 1, got {rdp_order}")
    rng = as_generator(rng)
    s1 = np.asarray(statistic(sample_d(n, rng)), dtype=float).reshape(-1)
    s2 = np.asarray(statistic(sample_d_prime(n, rng)), dtype=float).reshape(-1)
    if len(s1) != n or len(s2) != n or not (np.all(np.isfinite(s1)) and np.all(np.isfinite(s2))):
        raise ValueError("statistic must return one finite real per draw")
    cuts = np.unique(np.quantile(np.concatenate([s1, s2]), np.linspace(0, 1, thresholds + 2)[1:-1]))
    a, b = np.sort(s1), np.sort(s2)
    above1 = n - np.searchsorted(a, cuts, side="right")
    above2 = n - np.searchsorted(b, cuts, side="right")
    below1 = np.searchsorted(a, cuts, side="left")
    below2 = np.searchsorted(b, cuts, side="left")
    k_first = np.concatenate([above1, below1])
    k_second = np.concatenate([above2, below2])
    events = len(k_first)
    level = (1 - confidence) / (4 * events)  # two bounds per event and direction
    bounds = _lower_bounds(k_first, k_second, n, level, delta, delta_at_epsilon, rdp_order)
    # the most separated outcome (an event every draw on D hits and none on D' does)
    ceiling = _lower_bounds(np.array([n]), np.array([0]), n, level, delta, delta_at_epsilon, rdp_order)
    return AuditResult(*bounds[:3], n, confidence, events, bounds[3], ceiling=ceiling)


def _lower_bounds(k_first: Array, k_second: Array, n: int, level: float, delta: float,
                  delta_at_epsilon: float | None, rdp_order: float | None
                  ) -> tuple[float, float, float | None, float | None]:
    """(epsilon, mu, delta, RDP) lower bounds from the counts of events among n draws on each
    input, each count bounded by Clopper-Pearson at ``level``, in both directions."""
    low1, high1 = clopper_pearson(k_first, n, level)
    low2, high2 = clopper_pearson(k_second, n, level)
    eps = -np.inf
    mu = 0.0
    dlt = rdp = -np.inf
    for p_low, q_high in ((low1, high2), (low2, high1)):  # D -> D' and D' -> D
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.log(np.maximum(p_low - delta, 0.0)) - np.log(q_high)
        eps = max(eps, float(np.max(ratio)))
        beta_high = 1.0 - p_low
        ok = (q_high < 1) & (beta_high < 1)
        if np.any(ok):
            mu = max(mu, float(np.max(stats.norm.ppf(1 - q_high[ok]) - stats.norm.ppf(beta_high[ok]))))
        if delta_at_epsilon is not None:
            dlt = max(dlt, float(np.max(p_low - math.exp(delta_at_epsilon) * q_high)))
        if rdp_order is not None:
            with np.errstate(divide="ignore"):
                bound = rdp_order / (rdp_order - 1) * np.log(p_low) - np.log(q_high)
            rdp = max(rdp, float(np.max(bound)))
    return (max(eps, 0.0), max(mu, 0.0), None if delta_at_epsilon is None else max(dlt, 0.0),
            None if rdp_order is None else max(rdp, 0.0))


def neighbouring_footpoints(manifold: Manifold, center: Array,
                            sensitivity: float) -> tuple[Array, Array, Array]:
    """Two footpoints at distance ``sensitivity`` along a geodesic through ``center``, and the unit
    tangent direction at ``center``: the worst case of a Fréchet-mean release whose sensitivity
    is that distance (the outputs on neighbouring data sets differ by at most it). A
    ``sensitivity`` beyond the injectivity radius is refused: the geodesic no longer minimises
    there, so the two footpoints would be closer than claimed.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import neighbouring_footpoints
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> a, b, direction = neighbouring_footpoints(m, m.origin(), 0.1)
    >>> round(float(m.dist(a, b)), 6)
    0.1
    """
    sensitivity = check_positive("sensitivity", sensitivity)
    inj = manifold.injectivity_radius if has(manifold, "injectivity_radius") else math.inf
    if sensitivity > inj:
        raise ParameterError(f"{{sensitivity}} = {sensitivity:g} exceeds the injectivity radius "
                             f"{inj:.6g} of {manifold!r}: no two points along a geodesic through "
                             f"the center are that far apart, so the audit would test other "
                             f"neighbours than the claim's", "sensitivity")
    center = manifold.check_point(center)
    direction = manifold.from_coords(center, np.eye(manifold.dim)[0])
    half = 0.5 * sensitivity * direction
    return manifold.exp(center, -half), manifold.exp(center, half), direction


def dp_rgd_step_sampler(manifold: Manifold, center: Array, footpoint: Array,
                        sigma: float) -> Sampler:
    """Draws of one DP-RGD step from ``center`` whose noiseless update lands on ``footpoint``:
    Exp_center(Log_center(footpoint) + xi), xi ~ N_center(0, sigma^2) (the tangent Gaussian on
    the gradient sum, then Exp). Neighbouring inputs move the noiseless update by at most the
    sum's sensitivity, so two footpoints at that distance are the worst case.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import dp_rgd_step_sampler
    >>> from geodp.manifolds import SPD
    >>> m = SPD(2)
    >>> draw = dp_rgd_step_sampler(m, np.eye(2), np.diag([1.1, 1.0]), sigma=0.05)
    >>> draw(3, np.random.default_rng(0)).shape
    (3, 2, 2)
    """
    from .mechanisms import TangentGaussian

    shift = manifold.log(center, footpoint)
    noise = TangentGaussian(manifold, sigma)
    return lambda n, rng: manifold.exp(center, shift + noise.sample(center, n, rng))


def projection_statistic(manifold: Manifold, center: Array, direction: Array) -> Callable[[Array], Array]:
    """s(y) = <Log_center(y), direction>: the coordinate of an output along the neighbours' geodesic.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import projection_statistic
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> s = projection_statistic(m, m.origin(), np.array([1.0, 0.0, 0.0]))
    >>> round(float(s(m.exp(m.origin(), np.array([0.3, 0.0, 0.0])))), 6)
    0.3
    """
    def statistic(y: Array) -> Array:
        return manifold.inner(center, manifold.log(center, y), direction)

    return statistic


def kng_mean_neighbours(manifold: Manifold, center: Array, radius: float,
                        n: int) -> tuple[Array, Array, Array]:
    """Neighbouring data sets for the K-norm gradient Fréchet mean: n - 1 records at ``center``
    and one at distance ``radius`` on either side of it along a geodesic (the replaced record
    moves the risk's gradient by the most the data ball allows). Returns D, D' and the unit
    direction of that geodesic at ``center``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import kng_mean_neighbours
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> d, d_prime, direction = kng_mean_neighbours(m, m.origin(), 0.3, 10)
    >>> d.shape, int(np.sum(np.any(d != d_prime, axis=-1)))   # one record differs
    ((10, 3), 1)
    """
    n = check_count("n", n, 1)
    check_assumption_1(manifold, radius)  # so 2 radius lies below the injectivity radius
    near, far, direction = neighbouring_footpoints(manifold, center, 2.0 * radius)
    rest = np.broadcast_to(manifold.check_point(center), (n - 1,) + near.shape)
    return np.concatenate([rest, far[None]]), np.concatenate([rest, near[None]]), direction


def kng_mean_sampler(manifold: Manifold, points: Array, center: Array, radius: float,
                     scale: float) -> Sampler:
    """Draws of the K-norm gradient Fréchet mean of ``points`` at ``scale`` on the data ball,
    exactly as ``private_frechet_mean(mechanism="kng")`` draws one.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import kng_mean_neighbours, kng_mean_sampler
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> d, _, _ = kng_mean_neighbours(m, m.origin(), 0.3, 10)
    >>> draw = kng_mean_sampler(m, d, m.origin(), 0.3, scale=0.05)
    >>> draw(4, np.random.default_rng(0)).shape
    (4, 3)
    """
    from .learn.frechet import kng_mean_draws
    from .statistics import frechet_mean

    minimiser = frechet_mean(manifold, points, init=center).mean
    return lambda k, rng: kng_mean_draws(manifold, points, minimiser, center, radius, scale, rng, k)[0]


def kng_regression_neighbours(manifold: Manifold, center: Array, n: int, x_bound: float,
                              separation: float = np.pi) -> tuple[Array, Array, Array]:
    """Neighbouring data sets for the K-norm gradient geodesic regression: n records at covariate
    ``x_bound`` with responses at ``center`` (D), and the same with the last response moved to
    distance ``separation`` along a geodesic (D'; default pi, the antipode on a sphere). Where
    the fitted point is near the center the moved residual points away from the others, so
    (clipped to tau) the replaced record moves the risk's gradient by up to the joint
    sensitivity; and D's law is the more concentrated one, so the normalising constants do not
    cancel as they do for mirror-image neighbours (whose privacy loss stays below epsilon/2).
    Returns the covariates, D's responses and D''s responses.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import kng_regression_neighbours
    >>> from geodp.manifolds import Sphere
    >>> x, y, y_prime = kng_regression_neighbours(Sphere(1), np.array([1.0, 0.0]), 2, 1.0)
    >>> x.shape, y.shape, y_prime.shape
    ((2,), (2, 2), (2, 2))
    """
    n = check_count("n", n, 1)
    center = manifold.check_point(center)
    moved = manifold.exp(center, separation * manifold.from_coords(center, np.eye(manifold.dim)[0]))
    y = np.broadcast_to(center, (n,) + center.shape)
    return np.full(n, float(x_bound)), y.copy(), np.concatenate([y[:-1], moved[None]])


def _regression_gradient_norm(manifold: Manifold, x: Array, y: Array, tau: float) -> Callable:
    from .statistics.regression import regression_gradient

    def norm(state: Array) -> Array:
        p = state[:, 0]
        gp, gv, _ = regression_gradient(manifold, p, state[:, 1], x, y, tau)
        return np.sqrt(np.maximum(manifold.inner(p, gp, gp) + manifold.inner(p, gv, gv), 0.0))

    return norm


def kng_regression_sampler(manifold: Manifold, x: Array, y: Array, tau: float, v_max: float,
                           scale: float, center: Array | None = None,
                           radius: float | None = None) -> Sampler:
    """Draws ``(k, 2, *point_shape)`` of the joint K-norm gradient regression release at ``scale``
    on the domain of ``private_geodesic_regression`` (footpoint ball ``center``, ``radius``; the
    whole space on compact manifolds; ``|v|`` <= ``v_max``), by its exact rejection sampler alone
    (``exact_only``: no chains are run, even where the release would run them first). An audit
    needs exact draws: where that sampler's acceptance is below ``kng.MIN_UNIFORM_ACCEPTANCE`` this
    raises.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import kng_regression_neighbours, kng_regression_sampler
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(1)
    >>> x, y, _ = kng_regression_neighbours(m, np.array([1.0, 0.0]), 2, 1.0)
    >>> draw = kng_regression_sampler(m, x, y, tau=1.0, v_max=1.0, scale=1.0)
    >>> draw(3, np.random.default_rng(0)).shape   # (k, footpoint and shooting vector, point)
    (3, 2, 2)
    """
    from .learn.regression import _domain_ball
    from .mechanisms.kng import BundleDomain, sample_bundle
    from .statistics.regression import regression_gradient

    center, radius = _domain_ball(manifold, center, radius)
    domain = BundleDomain(manifold, center, radius, v_max)
    start = np.stack([center, 0.0 * center])

    def gradient(p: Array, v: Array) -> tuple[Array, Array]:
        return regression_gradient(manifold, p, v, x, y, tau)[:2]

    def draw(k: int, rng: np.random.Generator) -> Array:
        try:
            return sample_bundle(domain, gradient, start, scale, rng, size=k, exact_only=True)[0]
        except ValueError as err:
            raise ValueError(f"the K-norm gradient density is too concentrated for an audit ({err}): "
                             f"audit with fewer records or a smaller epsilon") from None

    return draw


def kng_log_ratio_statistic(manifold: Manifold, x: Array, y: Array, y_prime: Array,
                            tau: float) -> Callable[[Array], Array]:
    """s(p, v) = ``|grad E_D'(p, v)|`` - ``|grad E_D(p, v)|``: sigma times the log-ratio of the two
    K-norm gradient densities up to their normalising constants, so its threshold events are the
    Neyman-Pearson tests between the neighbours (the most powerful events for the audit).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.audit import kng_log_ratio_statistic, kng_regression_neighbours
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(1)
    >>> x, y, y_prime = kng_regression_neighbours(m, np.array([1.0, 0.0]), 2, 1.0)
    >>> s = kng_log_ratio_statistic(m, x, y, y_prime, tau=1.0)
    >>> state = np.stack([y[0], np.zeros(2)])[None]    # one (footpoint, shooting vector) pair
    >>> s(state).shape
    (1,)
    """
    norm_d = _regression_gradient_norm(manifold, x, y, tau)
    norm_d_prime = _regression_gradient_norm(manifold, x, y_prime, tau)
    return lambda states: norm_d_prime(states) - norm_d(states)
