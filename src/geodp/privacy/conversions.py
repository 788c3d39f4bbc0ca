"""Conversions between privacy notions, each with the formula it implements.

All Gaussian tail computations use ``log_ndtr`` so that large mu or epsilon do not overflow.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from ..parameters import ParameterError, ParameterTypeError, field, literal


def check_number(name: str, value) -> float:
    """``value`` as a float; TypeError (``ParameterTypeError`` naming ``name``) for strings,
    booleans and non-numbers (a quoted "1" is a mistake to report, not to convert)."""
    if isinstance(value, (str, bytes, bool)) or not isinstance(value, (int, float, np.number)):
        if not (isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf"):
            named, keywords = field(name)
            raise ParameterTypeError(f"{named} must be a number, got {type(value).__name__} "
                                     f"{literal(repr(value))}", *keywords)
    return float(value)


def check_positive(name: str, value: float) -> float:
    """``value`` as a float, or ValueError (``ParameterError`` naming ``name``) unless it is
    positive and finite."""
    value = check_number(name, value)
    if not (np.isfinite(value) and value > 0):
        named, keywords = field(name)
        raise ParameterError(f"{named} must be positive and finite, got {value}", *keywords)
    return value


def check_count(name: str, value, minimum: int = 0) -> int:
    """``value`` as an int, or ValueError (``ParameterError`` naming ``name``) unless it is a
    whole number >= ``minimum`` (booleans are refused: ``steps=True`` is a mistake, not one
    step)."""
    try:
        whole = not isinstance(value, bool) and int(value) == value
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole or value < minimum:
        kind = {0: "a non-negative integer", 1: "a positive integer"}.get(
            minimum, f"an integer >= {minimum}")
        named, keywords = field(name)
        raise ParameterError(f"{named} must be {kind}, got {literal(repr(value))}", *keywords)
    return int(value)


def check_delta(delta: float) -> float:
    """``delta`` as a float, or ValueError (``ParameterError``) unless 0 < delta < 1."""
    delta = check_number("delta", delta)
    if not (0 < delta < 1):
        raise ParameterError(f"{{delta}} must lie in (0, 1), got {delta}", "delta")
    return delta


def log_gdp_delta(mu: float, epsilon: float) -> float:
    """log delta_mu(eps), delta_mu(eps) = Phi(-eps/mu + mu/2) - e^eps Phi(-eps/mu - mu/2).

    Dong, Roth & Su (2022), Corollary 2.13: the privacy profile of mu-GDP (equivalently of the
    Gaussian mechanism with sensitivity/sigma = mu). Evaluated as
    log Phi(a) + log(-expm1(eps + log Phi(b) - log Phi(a))), the difference of logarithms from its
    Taylor series when mu is small (``SERIES_MU``).
    """
    mu = check_positive("mu", mu)
    epsilon = float(epsilon)
    la = special.log_ndtr(-epsilon / mu + mu / 2.0)
    if mu < SERIES_MU:
        exponent = epsilon - _log_ndtr_gap(-epsilon / mu, mu)
    else:
        exponent = epsilon + special.log_ndtr(-epsilon / mu - mu / 2.0) - la
    with np.errstate(divide="ignore"):
        return float(la + np.log(-np.expm1(min(exponent, 0.0))))


#: Below this mu, log Phi(a) - log Phi(b) (b = a - mu) comes from its Taylor series: the
#: difference of the two logarithms, each rounded at its own size, would lose up to 2e-5 of
#: delta's relative accuracy to cancellation (mu = 1e-10), far beyond ``SAFETY``.
SERIES_MU = 1e-3


def _log_ndtr_gap(m: float, mu: float) -> float:
    """log Phi(m + mu/2) - log Phi(m - mu/2) = mu h1(m) + mu^3 h3(m) / 24 + O(mu^5), with h = log Phi,
    h1 = dh/dm = lambda = phi / Phi and h3 = d3h/dm3 = lambda ((lambda + m)(2 lambda + m) - 1). For
    mu < 1e-3 the remainder is below 1e-17 of the terms kept."""
    lam = float(np.sqrt(2.0 / np.pi) / special.erfcx(-m / np.sqrt(2.0)))  # phi(m) / Phi(m)
    third = lam * ((lam + m) * (2.0 * lam + m) - 1.0)
    return mu * lam + mu ** 3 * third / 24.0


def gdp_delta(mu: float, epsilon: float) -> float:
    """delta such that mu-GDP implies (epsilon, delta)-DP (Dong, Roth & Su 2022, Cor. 2.13).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import gdp_delta
    >>> f'{gdp_delta(1.0, 3.0):.3e}'
    '1.537e-03'
    """
    return float(np.exp(log_gdp_delta(mu, epsilon)))


#: Calibrations solve delta_mu(eps) = delta (1 - SAFETY): above the double-precision error of
#: ``log_gdp_delta`` (at most 2e-10 relative against 60-digit values for mu in [1e-10, 10]),
#: so the delta of a returned value, evaluated exactly, never exceeds the target.
SAFETY = 1e-9


def _safe_root(g, lo: float, hi: float, upward: bool) -> float:
    """A root of g (g(lo) and g(hi) of opposite signs) moved until g <= 0 holds in double
    precision: upward (towards hi) or downward (towards lo)."""
    x = optimize.brentq(g, lo, hi, xtol=1e-300, rtol=4 * np.finfo(float).eps, maxiter=500)
    ulp = 1
    while g(x) > 0:
        x = x * (1 + ulp * np.finfo(float).eps) if upward else x * (1 - ulp * np.finfo(float).eps)
        ulp *= 2
    return float(x)


def gdp_epsilon(mu: float, delta: float) -> float:
    """Smallest epsilon >= 0 with delta_mu(epsilon) <= delta: the inverse of ``gdp_delta``.

    delta_mu is strictly decreasing in epsilon; solved in log space by Brent's method, then moved
    up until delta_mu(eps) <= delta (1 - SAFETY) in double precision.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import gdp_delta, gdp_epsilon
    >>> eps = gdp_epsilon(1.0, 1e-5)
    >>> round(eps, 4), bool(gdp_delta(1.0, eps) <= 1e-5)
    (4.3772, True)
    """
    mu = check_positive("mu", mu)
    log_delta = np.log(check_delta(delta)) + np.log1p(-SAFETY)
    if log_gdp_delta(mu, 0.0) <= log_delta:
        return 0.0
    hi = max(1.0, mu * mu)
    while log_gdp_delta(mu, hi) > log_delta:
        hi *= 2.0
    return _safe_root(lambda e: log_gdp_delta(mu, e) - log_delta, 0.0, hi, upward=True)


def gdp_mu(epsilon: float, delta: float) -> float:
    """Largest mu such that mu-GDP implies (epsilon, delta)-DP (delta_mu(eps) = delta), moved down
    until delta_mu(eps) <= delta (1 - SAFETY) in double precision.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import gdp_mu
    >>> round(gdp_mu(1.0, 1e-5), 4)
    0.2681
    """
    epsilon = float(epsilon)
    if not (np.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and non-negative, got {epsilon}")
    log_delta = np.log(check_delta(delta)) + np.log1p(-SAFETY)
    lo, hi = 1e-3, 1.0
    while log_gdp_delta(lo, epsilon) > log_delta:
        lo /= 2.0
    while log_gdp_delta(hi, epsilon) < log_delta:
        hi *= 2.0
    return _safe_root(lambda m: log_gdp_delta(m, epsilon) - log_delta, lo, hi, upward=False)


def pure_to_gdp(epsilon: float) -> float:
    """mu = -2 Phi^-1(1/(1 + e^eps)): the mu-GDP implied by epsilon-DP.

    The inverse of eps = log[(1 - Phi(-mu/2)) / Phi(-mu/2)], used by the exponential-wrapped paper
    to compare eps-DP and GDP mechanisms. G_mu passes through the kink of the eps-DP trade-off
    function f_{eps,0} and is convex, hence lies below its two chords: f_{eps,0} >= G_mu.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import pure_to_gdp
    >>> round(pure_to_gdp(1.0), 4)   # 1-DP implies this mu-GDP
    1.232
    """
    epsilon = check_positive("epsilon", epsilon)
    if epsilon < 1e-6:
        # 1/(1 + e^eps) rounds to 1/2 here; its expansion gives mu = sqrt(pi/2) eps (1 + O(eps^2))
        return float(np.sqrt(np.pi / 2.0) * epsilon)
    return float(-2.0 * special.ndtri_exp(-np.logaddexp(0.0, epsilon)))


def gdp_to_pure_equivalent(mu: float) -> float:
    """eps = log[(1 - Phi(-mu/2)) / Phi(-mu/2)], the inverse of ``pure_to_gdp``.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import gdp_to_pure_equivalent, pure_to_gdp
    >>> round(gdp_to_pure_equivalent(pure_to_gdp(1.0)), 6)
    1.0
    """
    mu = check_positive("mu", mu)
    return float(special.log_ndtr(mu / 2.0) - special.log_ndtr(-mu / 2.0))


def rdp_to_approx(orders: np.ndarray, rdp: np.ndarray, delta: float) -> tuple[float, float]:
    """(eps, optimal order) from an RDP curve by the improved conversion.

    eps = min_alpha r(alpha) + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)
    (Balle et al. 2020, Thm 21; Canonne, Kamath & Steinke 2020, Prop. 12). Orders must exceed 1.
    Where r(alpha) <= -log(1 - delta^2) the mechanism is (0, delta)-DP: the KL divergence is at
    most r(alpha), and total variation <= sqrt(1 - e^(-KL)) <= delta (Bretagnolle-Huber).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import ORDERS, rdp_to_approx
    >>> rdp = ORDERS / (2 * 4.0 ** 2)           # the Gaussian mechanism at sigma = 4
    >>> eps, order = rdp_to_approx(ORDERS, rdp, 1e-5)
    >>> round(eps, 3), round(order, 1)
    (1.012, 17.5)
    """
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    if np.any(orders <= 1):
        raise ValueError("RDP orders must be > 1")
    log_delta = np.log(check_delta(delta))
    eps = rdp + np.log1p(-1.0 / orders) - (log_delta + np.log(orders)) / (orders - 1.0)
    eps = np.where(rdp <= -np.log1p(-delta * delta), 0.0, eps)
    i = int(np.nanargmin(eps))
    return max(float(eps[i]), 0.0), float(orders[i])


def pure_to_rdp(epsilon: float, orders: np.ndarray) -> np.ndarray:
    """eps-DP implies (alpha, min(eps, alpha eps^2 / 2))-RDP (Bun & Steinke 2016, Prop. 3.3)."""
    orders = np.asarray(orders, dtype=float)
    return np.minimum(epsilon, 0.5 * orders * epsilon * epsilon)
