"""Noise calibration: the scale of a mechanism for a sensitivity and a target guarantee."""

from __future__ import annotations

import functools

import numpy as np

from .conversions import check_delta, check_positive, gdp_mu


def analytic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """Smallest sigma for which the Gaussian mechanism is (epsilon, delta)-DP.

    Balle & Wang (2018), Theorem 8: Phi(D/(2s) - eps s/D) - e^eps Phi(-D/(2s) - eps s/D) <= delta.
    With mu = D/s this is the GDP privacy profile delta_mu(eps), solved for mu in log space.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import analytic_gaussian_sigma
    >>> round(analytic_gaussian_sigma(1.0, 1e-5), 4)
    3.7306
    """
    epsilon = check_positive("epsilon", epsilon)
    sensitivity = check_positive("sensitivity", sensitivity)
    return sensitivity / gdp_mu(epsilon, delta)


def classic_gaussian_sigma(epsilon: float, delta: float, sensitivity: float = 1.0) -> float:
    """sigma = sqrt(2 ln(1.25/delta)) D / eps (Dwork & Roth 2014, Thm A.1), valid only for eps < 1.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import classic_gaussian_sigma
    >>> round(classic_gaussian_sigma(0.5, 1e-5), 4)
    9.6896
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta(delta)
    if epsilon >= 1:
        raise ValueError(
            f"the classic Gaussian calibration is not (eps, delta)-DP for eps >= 1 (got eps = "
            f"{epsilon}); use analytic_gaussian_sigma")
    return float(np.sqrt(2.0 * np.log(1.25 / delta)) * check_positive("sensitivity", sensitivity)
                 / epsilon)


def gdp_sigma(mu: float, sensitivity: float = 1.0) -> float:
    """sigma = D / mu: the Gaussian mechanism is mu-GDP (Dong, Roth & Su 2022, Thm 2.7).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import gdp_sigma
    >>> gdp_sigma(0.5, sensitivity=2.0)
    4.0
    """
    return check_positive("sensitivity", sensitivity) / check_positive("mu", mu)


def rdp_sigma(alpha: float, epsilon: float, sensitivity: float = 1.0) -> float:
    """sigma = D / sqrt(2 eps / alpha): the Gaussian mechanism is (alpha, eps)-RDP (Mironov 2017).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import rdp_sigma
    >>> float(rdp_sigma(alpha=8.0, epsilon=1.0))
    2.0
    """
    alpha = float(alpha)
    if not alpha > 1:
        raise ValueError(f"the RDP order alpha must exceed 1, got {alpha}")
    return check_positive("sensitivity", sensitivity) / np.sqrt(
        2.0 * check_positive("epsilon", epsilon) / alpha)


def laplace_scale(epsilon: float, sensitivity: float = 1.0) -> float:
    """b = D / eps: the Laplace (and K-norm) mechanism is eps-DP.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import laplace_scale
    >>> laplace_scale(0.5, sensitivity=0.1)
    0.2
    """
    return check_positive("sensitivity", sensitivity) / check_positive("epsilon", epsilon)


@functools.lru_cache(maxsize=256)
def zcdp_rho_for(epsilon: float, delta: float) -> float:
    """The largest rho (to 1e-12 relative) whose rho-zCDP implies (epsilon, delta)-DP by the RDP
    conversion of ``ZCDP.to_approx`` (Canonne, Kamath & Steinke 2020, Prop. 12, on geodp's
    orders); epsilon at rho grows with rho, so bisection finds it and the answer is checked."""
    from .guarantees import ZCDP

    epsilon, delta = check_positive("epsilon", epsilon), check_delta(delta)
    lo, hi = 1e-12, max(epsilon, 1.0)
    while ZCDP(hi).to_approx(delta).epsilon <= epsilon:
        lo, hi = hi, 2.0 * hi
    if ZCDP(lo).to_approx(delta).epsilon > epsilon:
        raise ValueError(f"epsilon = {epsilon:g} at delta = {delta:g} is below what any zCDP "
                         f"guarantee above rho = 1e-12 gives")
    while hi - lo > 1e-12 * hi:
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if ZCDP(mid).to_approx(delta).epsilon <= epsilon else (lo, mid)
    return lo


def calibrate(noise: str, target, sensitivity: float) -> float:
    """The scale of additive noise of the family ``noise`` that gives the guarantee ``target`` for
    a query of this (L2, or metric) ``sensitivity``: the one calibration of the mechanisms that
    add noise to a statistic.

    ``"laplace"`` (the Riemannian, wrapped and K-norm Laplace laws, density exp(-|x|/b)): pure
    epsilon-DP at b = Delta / epsilon. ``"gaussian"`` (N(0, sigma^2 I)): (epsilon, delta)-DP by
    the analytic condition (``analytic_gaussian_sigma``), mu-GDP at Delta / mu, (alpha, eps)-RDP
    at Delta / sqrt(2 eps / alpha), rho-zCDP at Delta / sqrt(2 rho).
    """
    from .guarantees import GDP, RDP, ZCDP, ApproxDP, PureDP

    if noise == "laplace":
        if not isinstance(target, PureDP):
            raise ValueError(f"Laplace noise gives epsilon-DP, not {target.describe()}")
        return laplace_scale(target.epsilon, sensitivity)
    if noise != "gaussian":
        raise ValueError(f"noise must be 'laplace' or 'gaussian', got {noise!r}")
    if isinstance(target, ApproxDP) and target.delta > 0:
        return analytic_gaussian_sigma(target.epsilon, target.delta, sensitivity)
    if isinstance(target, GDP):
        return gdp_sigma(target.mu, sensitivity)
    if isinstance(target, RDP) and len(target.orders) == 1:
        return rdp_sigma(float(target.orders[0]), float(target.epsilons[0]), sensitivity)
    if isinstance(target, ZCDP):
        return check_positive("sensitivity", sensitivity) / float(np.sqrt(2.0 * target.rho))
    raise ValueError(f"Gaussian noise gives (epsilon, delta)-DP with delta > 0, mu-GDP, one "
                     f"(alpha, eps)-RDP pair or rho-zCDP, not {target.describe()}")
