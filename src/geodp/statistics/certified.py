"""The Fréchet mean computed to a public tolerance, with a certified distance to the exact mean.

A private release perturbs the *computed* mean m_hat, not the exact minimiser m* that Theorem 2
of Reimherr et al. (2021) bounds. Where F is lambda-strongly convex on the convex data ball
B_r(c) (lambda = h(r, k), ``curvature_factor``) and m_hat lies in the ball,
rho(m_hat, m*) <= ``|grad F(m_hat)|`` / lambda, so two neighbouring data sets give means at most
Delta + 2 tau / lambda apart when ``|grad F|`` <= tau at both. The tolerance tau comes from public
parameters only (``mean_tolerance``), and ``certified_mean`` meets it on every data set of the
ball, never refusing: a data-dependent refusal would itself be a release.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..chunked import as_sample
from ..manifolds.base import Array, Manifold, reproject
from ..progress import showing
from .frechet import ConvergenceWarning, frechet_mean
from .sensitivity import curvature_factor, smoothness_factor

#: tau = TOLERANCE_FACTOR x the manifold's bound on the gradient's rounding error
#: (``Manifold.gradient_rounding``): the computed gradient is then within tau / 100 of the exact
#: one, and double precision reaches tau / 2 with a margin (measured floors lie 20-1000 times
#: below the rounding bound itself).
TOLERANCE_FACTOR = 100.0
#: Passes the fast solver (Newton or Barzilai-Borwein, ``frechet_mean``) may take before the
#: provable projected descent takes over.
FAST_PASSES = 500


def mean_tolerance(manifold: Manifold, center: Array, radius: float,
                   max_condition: float | None = None) -> float:
    """tau: the public bound on ``|grad F|`` at the certified mean of data in B_radius(center),
    ``TOLERANCE_FACTOR`` times the manifold's public bound on the rounding error of the gradient.

    Without ``max_condition`` that bound is ``Manifold.gradient_rounding``, an estimate (on
    affine-invariant SPD not a worst case over the ball, whose matrices may be conditioned up to
    cond(C) e^(sqrt 2 r)). With a public cap K = ``max_condition`` on the records' condition
    numbers it is ``Manifold.capped_gradient_rounding``, a worst case over the ball's points of
    condition at most K (a capability; ``MissingCapability`` elsewhere).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Euclidean
    >>> from geodp.statistics.certified import mean_tolerance
    >>> float(mean_tolerance(Euclidean(2), np.array([1e5, 0.0]), 1.0)) < 1e-7
    True
    """
    return TOLERANCE_FACTOR * gradient_rounding_bound(manifold, center, radius, max_condition)


def gradient_rounding_bound(manifold: Manifold, center: Array, radius: float,
                            max_condition: float | None = None) -> float:
    """rho: the public bound on the rounding error of the computed sum_i w_i Log_p(x_i) (weights
    summing to 1, in the norm at p) for p and every x_i in B_radius(center), from which
    ``mean_tolerance`` is ``TOLERANCE_FACTOR`` x rho: ``Manifold.gradient_rounding`` (an
    estimate) without ``max_condition``, ``Manifold.capped_gradient_rounding`` (a worst case over
    the ball's points of condition <= K) with it. The K-norm gradient mean pays 2 rho in its
    sensitivity (``learn.frechet.kng_mean_calibration``)."""
    center = np.asarray(center, dtype=float)
    if max_condition is None:
        rounding = manifold.gradient_rounding(center, float(radius))
    else:
        rounding = manifold.capped_gradient_rounding(center, float(radius), float(max_condition))
    return float(rounding)


@dataclass(frozen=True)
class CertifiedMean:
    """``mean`` in B_radius(center) within ``tolerance / strong_convexity`` of the exact Fréchet
    mean; ``iterations`` (fast solver) and ``descent_steps`` (projected descent, 0 when the fast
    solver certified its point) are diagnostics."""

    mean: Array
    tolerance: float
    strong_convexity: float
    iterations: int
    descent_steps: int

    @property
    def distance_bound(self) -> float:
        """tau / lambda: the bound on rho(mean, exact Fréchet mean)."""
        return self.tolerance / self.strong_convexity


def into_ball(manifold: Manifold, point: Array, center: Array, radius: float) -> Array:
    """The metric projection of ``point`` onto the closed ball B_radius(center): the point of the
    geodesic from the center at distance min(rho, radius). It moves no point closer to the
    ball's far side: rho(P(x), y) <= rho(x, y) for y in the ball (the angle at P(x) is obtuse;
    CAT(k) comparison for balls of radius below pi / (2 sqrt(k)))."""
    v = manifold.log(center, point)
    size = float(manifold.norm(center, v))
    return point if size <= radius else manifold.exp(center, (radius / size) * v)


def into_domain(manifold: Manifold, point: Array, center: Array, radius: float,
                max_condition: float | None = None) -> Array:
    """``into_ball``, after the metric projection onto {cond <= max_condition} when a cap is
    given (``Manifold.cap_condition``). With cond(center) <= K the result lies in both sets (the
    geodesic from the center to a point of condition <= K keeps condition <= K: the set is
    geodesically convex), and each projection moves no point farther from the exact mean, which
    lies in both."""
    if max_condition is not None:
        point = manifold.cap_condition(point, max_condition, margin=False)
    return into_ball(manifold, point, center, radius)


def descent_steps(manifold: Manifold, radius: float, tolerance: float) -> tuple[int, float]:
    """(N, eta): projected Riemannian gradient descent m <- P(Exp_m(-eta grad F)) from any point
    of the ball ends within tau / (2 lambda) of the exact mean after N steps.

    With d = rho(m, m*), zeta = L = ``smoothness_factor`` (curvature >= k_min, sides <= 2r) and
    lambda = ``curvature_factor``: Zhang & Sra's law of cosines gives
    d'^2 <= d^2 + zeta eta^2 ``|g|^2`` + 2 eta <g, Log_m m*>, strong convexity on the geodesic
    m -> m* gives <g, Log_m m*> <= -lambda d^2 and smoothness ``|g|`` <= L d, so
    d'^2 <= (1 - 2 eta lambda + zeta eta^2 L^2) d^2 = q d^2 with q = 1 - lambda^2 / (zeta L^2) at
    eta = lambda / (zeta L^2); the projection does not increase d (``into_ball``). From d <= 2r,
    N = ceil(2 log(4 r lambda / tau) / -log q) steps suffice (one step in flat space, q = 0).
    """
    bounds = manifold.curvature_bounds
    lam = curvature_factor(radius, bounds[1])
    big_l = smoothness_factor(radius, bounds[0])
    q = 1.0 - lam**2 / big_l**3
    eta = lam / big_l**3
    if q <= 0.0 or 4.0 * radius * lam <= tolerance:
        return 1, eta
    return max(1, math.ceil(2.0 * math.log(4.0 * radius * lam / tolerance) / -math.log(q))), eta


def certified_mean(manifold: Manifold, points, center: Array, radius: float, *,
                   max_condition: float | None = None) -> CertifiedMean:
    """The Fréchet mean of ``points`` (an array ``(n, *point_shape)`` or a chunked sample, all in
    B_radius(center)) to the public tolerance tau = ``mean_tolerance``, never refusing.

    With ``max_condition`` = K (every record, and the center, of condition at most K) the
    tolerance is the worst case of ``Manifold.capped_gradient_rounding`` and every point the
    certificate judges is first projected onto {cond <= K} (``into_domain``), where that bound
    holds; without it the tolerance rests on the estimate ``Manifold.gradient_rounding``.

    The fast solver (``frechet_mean`` from the center, stopped at a computed ``|grad F|`` <= tau / 2,
    at most ``FAST_PASSES`` passes) gives a point, projected into the ball (``into_ball``); if
    the computed gradient there is <= tau / 2, the exact one is <= tau (the rounding error is
    below tau / 100) and rho(mean, m*) <= tau / lambda. Otherwise (the solver's iteration cap or
    a rounding floor above tau / 2, not seen on any data), projected gradient descent continues
    from that point for the public number of steps of ``descent_steps``, which brings it within
    tau / (2 lambda) of m* in exact arithmetic whatever the data; its rounding adds at most about
    2 tau / (TOLERANCE_FACTOR lambda). Either way the bound tau / lambda holds, so which branch
    ran need not be hidden, and no warning or error depends on the data.
    """
    center = np.asarray(center, dtype=float)
    tau = mean_tolerance(manifold, center, radius, max_condition)
    lam = curvature_factor(radius, manifold.curvature_bounds[1])
    data = as_sample(manifold, points)

    def gradient(at: Array) -> Array:
        return data.total(lambda xs, ws: manifold.mean_log_and_value(at, xs, ws))[0]

    with warnings.catch_warnings(), showing(False):  # its bar would show |grad F| on chunks
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = frechet_mean(manifold, data, init=center, tol=0.5 * tau, max_iter=FAST_PASSES,
                           on_spread="ignore")
    mean = into_domain(manifold, fit.mean, center, radius, max_condition)
    gnorm = fit.grad_norm if mean is fit.mean else manifold.norm(mean, gradient(mean))
    if float(gnorm) <= 0.5 * tau:
        # reprojected onto the model: far out on the hyperboloid Exp (the solver's steps,
        # ``into_ball``) misses the model by more than ``check_point``'s tolerance, and the mean
        # is checked again as the center of the release (a move of the order of that rounding)
        return CertifiedMean(reproject(manifold, mean), tau, lam, fit.iterations, 0)
    steps, eta = descent_steps(manifold, radius, tau)
    for _ in range(steps):  # re-projected onto the manifold, so rounding does not drift off it
        step = manifold.exp(mean, eta * manifold.to_tangent(mean, gradient(mean)))
        mean = into_domain(manifold, manifold.project(step), center, radius, max_condition)
    return CertifiedMean(reproject(manifold, mean), tau, lam, fit.iterations, steps)
