"""Rényi-DP accounting of (subsampled) Gaussian mechanisms, for DP Riemannian (S)GD."""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np
from scipy import optimize, special

from .conversions import check_count, check_delta, check_positive, gdp_mu, rdp_to_approx
from .pld import PLDAccountant
from .pld_calibration import pld_noise_multiplier

#: Orders at which curves are tracked. Fractional orders wherever the optimum can fall: a
#: geometric grid towards 1, steps of 0.1 up to 11 (dp-accounting's default grid is a subset),
#: steps of 0.5 up to 64, integers up to 256, then a few large orders.
ORDERS = np.unique(np.round(np.concatenate([
    1.0 + np.geomspace(1e-3, 0.1, 25), np.arange(1.1, 11.0, 0.1), np.arange(11.0, 64.0, 0.5),
    np.arange(64.0, 257.0), [320.0, 384.0, 512.0, 768.0, 1024.0],
]), 12))
"""The Rényi orders every RDP curve is evaluated at, shape (427,): a dense fractional grid from
1.001 to 64 (containing dp-accounting's), the integers to 256, then 320 to 1024."""
SAMPLINGS = ("poisson", "without_replacement")
#: Relative slack added to every computed log-moment: covers floating-point rounding (far below
#: it), so the returned RDP is never below the exact value.
ROUNDING_SLACK = 1e-12
#: Largest trapezoidal grid of the fractional-order quadrature; beyond it (noise multipliers
#: below about 0.03) the chord between the exact integer orders is used, a valid upper bound.
MAX_NODES = 200_000


def _log_binom(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def _lse(x) -> float:
    """log(sum(exp(x))) of a 1-D array (scipy's logsumexp costs more than these short sums)."""
    x = np.asarray(x, dtype=float)
    m = float(np.max(x))
    if not np.isfinite(m):
        return m
    return m + float(np.log(np.sum(np.exp(x - m))))


def gaussian_rdp(noise_multiplier: float, orders: np.ndarray = ORDERS) -> np.ndarray:
    """alpha / (2 z^2): the Gaussian mechanism with sigma = z * sensitivity (Mironov 2017, Prop. 7)."""
    z = check_positive("noise_multiplier", noise_multiplier)
    return np.asarray(orders, dtype=float) / (2.0 * z * z)


def _log_expm1(y: np.ndarray) -> np.ndarray:
    """log(e^y - 1) for y > 0, without overflow or cancellation."""
    y = np.asarray(y, dtype=float)
    big = y > 1.0
    safe = np.where(big, y, 1.0)
    return np.where(big, safe + np.log1p(-np.exp(-safe)), np.log(np.expm1(np.where(big, 1.0, y))))


def _log_a_minus_one_integer(q: float, z: float, alpha: int) -> float:
    """log(A_alpha - 1) at integer alpha >= 2, A_alpha = E_{N(0,z^2)}[(1 - q + q e^{(2x-1)/(2z^2)})^alpha].

    Mironov, Talwar & Zhang (2019), Thm 11: A_alpha = sum_k C(alpha,k) (1-q)^(alpha-k) q^k
    exp((k^2-k)/(2z^2)). The binomial weights sum to one and the k = 0, 1 factors are 1, so
    A_alpha - 1 = sum_{k>=2} C(alpha,k) (1-q)^(alpha-k) q^k expm1((k^2-k)/(2z^2)): a sum of positive
    terms, summed in log space (no cancellation even when A_alpha - 1 is 1e-15).
    """
    k = np.arange(2, alpha + 1, dtype=float)
    terms = (_log_binom(float(alpha), k) + k * np.log(q) + (alpha - k) * np.log1p(-q)
             + _log_expm1((k * k - k) / (2.0 * z * z)))
    return float(_lse(terms))


def _log_h(u: np.ndarray, alpha: float) -> np.ndarray:
    """log h(u), h = e^(alpha u) - 1 - alpha (e^u - 1) >= 0 (u = log L, L the likelihood ratio).

    A series in u where alpha |u| < 1, h = sum_{k>=2} alpha (alpha^(k-1) - 1) u^k / k!; elsewhere
    h = e^u expm1(beta u) - beta expm1(u) with beta = alpha - 1 (exact algebra), factored by
    e^(alpha u) for u > 0 so that nothing overflows.
    """
    beta = alpha - 1.0
    out = np.full_like(u, -np.inf)
    small = alpha * np.abs(u) < 1.0
    us = u[small]
    series = np.zeros_like(us)
    power = us * us / 2.0
    for k in range(2, 30):
        series += alpha * np.expm1((k - 1) * np.log(alpha)) * power
        power = power * us / (k + 1)
    with np.errstate(divide="ignore"):
        out[small] = np.log(series)
    pos = ~small & (u > 0)
    up = u[pos]
    out[pos] = alpha * up + np.log(-np.expm1(-beta * up) + beta * np.expm1(-up) * np.exp(-beta * up))
    neg = ~small & (u <= 0)
    un = u[neg]
    out[neg] = np.log(np.maximum(np.exp(un) * np.expm1(beta * un) - beta * np.expm1(un), 0.0))
    return out


def _log_a_minus_one_fractional(q: float, z: float, alpha: float,
                                rtol: float = 1e-12) -> float | None:
    """An upper bound, within ``rtol`` relative, on log(A_alpha - 1) at any real alpha > 1.

    A_alpha - 1 = int phi_z(x) h(u(x)) dx with u = log(1 - q + q e^w), w = (2x - 1)/(2 z^2), h >= 0
    as in ``_log_h`` (E[L] = 1 removes the constant). It is computed by the trapezoidal rule with
    step s on [x_lo, x_hi] = [-K z, alpha + K z], with three rigorous error terms added:

    - discretisation: phi_z L^alpha, phi_z and phi_z L are analytic in the strip |Im x| < pi z^2
      (1 - q + q e^w never meets (-inf, 0] there) and their integrals along lines Im x = y are at
      most e^(y^2/(2z^2)) times A_alpha, 1 and 1. The trapezoidal error of each is at most
      2 M / (e^(2 pi a / s) - 1) for a < pi z^2 (Trefethen & Weideman 2014, Thm 5.1), hence for
      phi h = phi L^alpha + (alpha - 1) phi - alpha phi L it is at most
      2 e^(a^2/(2 z^2)) (A_alpha + 2 alpha - 1) / (e^(2 pi a / s) - 1);
    - left tail (x < x_lo): h is decreasing in x below 1/2 and bounded by
      h(1 - q) = (1-q)^alpha - 1 + alpha q, phi_z is increasing, so the omitted nodes sum to at most
      h(1 - q) Phi(x_lo / z);
    - right tail (x > x_hi >= alpha): L <= c e^w with c = q + (1-q) e^(-w_hi), and phi_z(x) e^(alpha w)
      = e^((alpha^2-alpha)/(2z^2)) phi_z(x - alpha) is decreasing there, so the omitted nodes sum
      to at most c^alpha e^((alpha^2-alpha)/(2z^2)) Phi((alpha - x_hi)/z).

    The step is halved until the discretisation term is below ``rtol`` of the sum; returns None
    when that needs more than ``MAX_NODES`` nodes (tiny noise multipliers, where the step scales
    as z^2), and the caller falls back to the chord.
    """
    log_q, log_1mq = np.log(q), np.log1p(-q)
    K = 12.0
    x_lo, x_hi = -K * z, alpha + K * z
    h_lo = np.expm1(alpha * log_1mq) + alpha * q
    log_tails = [np.log(h_lo) + special.log_ndtr(-K)]
    w_hi = (2.0 * x_hi - 1.0) / (2.0 * z * z)
    log_c = np.logaddexp(log_q, log_1mq - w_hi)
    log_tails.append(alpha * log_c + (alpha * alpha - alpha) / (2.0 * z * z) + special.log_ndtr(-K))
    step = z / 4.0
    while True:
        a = min(0.99 * np.pi * z * z, 2.0 * np.pi * z * z / step)
        if (x_hi - x_lo) / step > MAX_NODES:
            return None
        m = int(np.ceil((x_hi - x_lo) / step))
        x = x_lo + step * np.arange(m + 1)
        w = (2.0 * x - 1.0) / (2.0 * z * z)
        u = np.logaddexp(log_1mq, log_q + w)
        log_terms = np.log(step) - 0.5 * (x / z) ** 2 - np.log(z * np.sqrt(2 * np.pi)) + _log_h(u, alpha)
        log_sum = _lse(log_terms)
        # A_alpha <= 1 + e^log_sum (1 + rtol): bound the discretisation term with that A
        log_a = np.logaddexp(0.0, log_sum + rtol)
        log_disc = (np.log(2.0) + a * a / (2.0 * z * z) + np.logaddexp(log_a, np.log(2 * alpha - 1))
                    - _log_expm1(2.0 * np.pi * a / step))
        if log_disc <= log_sum + np.log(rtol) or step < z * 1e-4:
            break
        step /= 2.0
    total = _lse([log_sum, log_disc, *log_tails])
    return float(total + np.log1p(ROUNDING_SLACK))


def _poisson_integer(q: float, z: float, alpha: int) -> float:
    """Exact RDP (to rounding, which is added) at integer alpha >= 2 of the Poisson-subsampled
    Gaussian, add/remove neighbours: log(A_alpha) / (alpha - 1), see ``_log_a_minus_one_integer``."""
    log_am1 = _log_a_minus_one_integer(q, z, alpha) + np.log1p(ROUNDING_SLACK)
    return float(np.logaddexp(0.0, log_am1) / (alpha - 1))


def _poisson_rdp(q: float, z: float, alpha: float) -> float:
    """RDP at any order alpha > 1: D_alpha(mu_q || N(0, z^2)) with mu_q = (1-q) N(0, z^2) + q N(1, z^2),
    the larger of the two directions (Mironov, Talwar & Zhang 2019, Thm 5); exact at integers,
    a certified upper bound within 1e-12 relative elsewhere."""
    if float(alpha).is_integer():
        return _poisson_integer(q, z, int(alpha))
    log_am1 = _log_a_minus_one_fractional(q, z, alpha)
    if log_am1 is None:  # too fine a grid
        return _chord(lambda a: _poisson_integer(q, z, a), alpha)
    return float(np.logaddexp(0.0, log_am1) / (alpha - 1))


def _chord(rdp_at: Callable[[int], float], alpha: float) -> float:
    """An upper bound on eps(alpha) from the RDP at the integers around alpha: the chord of
    log A between floor(alpha) and floor(alpha) + 1, valid because log A_alpha = (alpha - 1)
    eps(alpha) is convex in alpha (the log of the moment E[(p/q)^alpha], convex by Hölder's
    inequality) with log A_1 = 0; exact at integers."""
    lo = int(np.floor(alpha + 1e-12))
    t = min(max(alpha - lo, 0.0), 1.0)

    def log_a(a: int) -> float:
        return 0.0 if a == 1 else (a - 1) * rdp_at(a)

    return float(((1 - t) * log_a(lo) + (t * log_a(lo + 1) if t > 0 else 0.0)) / (alpha - 1))


def _wor_integer(q: float, z: float, alpha: int) -> float:
    """RDP upper bound at integer alpha >= 2 for sampling b of n without replacement (gamma = b/n),
    replace-one neighbours (Wang, Balle & Kasiviswanathan 2019, Theorem 9), base mechanism the
    Gaussian with eps(j) = j / (2 z^2) and eps(inf) = inf:

    eps(alpha) <= log(1 + gamma^2 C(alpha,2) min{4(e^eps(2) - 1), 2 e^eps(2)}
                      + sum_{j>=3} gamma^j C(alpha,j) 2 e^{(j-1) eps(j)}) / (alpha - 1).
    """
    def eps(j):
        return j / (2.0 * z * z)

    logs = [0.0, 2 * np.log(q) + _log_binom(float(alpha), 2.0)
            + min(np.log(4.0) + np.log(np.expm1(eps(2))), np.log(2.0) + eps(2))]
    j = np.arange(3, alpha + 1, dtype=float)
    if len(j):
        logs.extend(j * np.log(q) + _log_binom(float(alpha), j) + np.log(2.0) + (j - 1) * eps(j))
    return float(_lse(logs) / (alpha - 1))


def subsampled_gaussian_rdp(noise_multiplier: float, sample_rate: float,
                            sampling: str = "poisson", orders: np.ndarray = ORDERS) -> np.ndarray:
    """RDP curve of one step of a subsampled Gaussian mechanism, an upper bound at every order.

    Poisson sampling (add/remove neighbours): exact at every order, integer (closed form) or
    fractional (certified quadrature within 1e-12 relative above), see ``_poisson_rdp``.
    Sampling without replacement (replace-one): the WBK bound at integer orders and its chord
    (``_chord``) between them. For sample_rate = 1 the curve is the Gaussian alpha / (2 z^2) at
    every order.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import ORDERS, subsampled_gaussian_rdp
    >>> curve = subsampled_gaussian_rdp(1.0, 0.01)
    >>> curve.shape == ORDERS.shape, bool(np.all(curve <= ORDERS / 2))   # below the full Gaussian's
    (True, True)
    """
    z = check_positive("noise_multiplier", noise_multiplier)
    q = float(sample_rate)
    if not 0 < q <= 1:
        raise ValueError(f"sample_rate must lie in (0, 1], got {sample_rate}")
    if sampling not in SAMPLINGS:
        raise ValueError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    orders = np.asarray(orders, dtype=float)
    if q == 1.0:
        return gaussian_rdp(z, orders)
    if sampling == "poisson":
        curve = np.array(_poisson_curve(q, z, tuple(orders.tolist())))
    else:
        wor = functools.lru_cache(maxsize=None)(lambda a: _wor_integer(q, z, a))
        curve = np.array([_chord(wor, a) for a in orders.tolist()])
    # subsampling never hurts: the full-batch Gaussian curve is also an upper bound
    return np.minimum(curve, gaussian_rdp(z, orders))


@functools.lru_cache(maxsize=256)
def _poisson_curve(q: float, z: float, orders: tuple[float, ...]) -> tuple[float, ...]:
    return tuple(_poisson_rdp(q, z, a) for a in orders)


class RDPAccountant:
    """Composes mechanisms as RDP curves on ``ORDERS`` and converts to (epsilon, delta).

    For Poisson-subsampled Gaussians the curves are exact at every order; ``PLDAccountant`` is
    tighter still (RDP's conversion to (epsilon, delta) is lossy).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import RDPAccountant
    >>> acc = RDPAccountant().compose_gaussian(1.1, steps=1000, sample_rate=0.01)
    >>> round(acc.epsilon(1e-5), 2)
    1.71
    """

    def __init__(self, orders: np.ndarray = ORDERS):
        self.orders = np.asarray(orders, dtype=float)
        self.rdp = np.zeros_like(self.orders)
        self.steps = 0

    def compose_gaussian(self, noise_multiplier: float, steps: int = 1, sample_rate: float = 1.0,
                         sampling: str = "poisson", n: int | None = None) -> "RDPAccountant":
        """Add ``steps`` Gaussian steps with sigma = noise_multiplier * sensitivity.

        ``sampling="poisson"``: each record joins each batch independently with probability
        ``sample_rate`` (add/remove neighbours). ``sampling="without_replacement"``: batches of
        b = sample_rate * n records drawn without replacement (replace-one neighbours; the
        sensitivity is then the replace-one sensitivity, e.g. 2C for sums of gradients clipped
        at C). Returns self (chainable); the accountant is updated in place.
        """
        steps = check_count("steps", steps)
        if sampling == "without_replacement" and n is not None:
            b = sample_rate * n
            if abs(b - round(b)) > 1e-9 or not 1 <= round(b) <= n:
                raise ValueError(f"sample_rate * n must be a batch size in 1..n, got {b}")
        self.rdp = self.rdp + steps * subsampled_gaussian_rdp(noise_multiplier, sample_rate,
                                                              sampling, self.orders)
        self.steps += steps
        return self

    def compose_rdp(self, rdp: np.ndarray) -> "RDPAccountant":
        """Add any RDP curve given on ``self.orders``."""
        rdp = np.asarray(rdp, dtype=float)
        if rdp.shape != self.orders.shape or np.any(rdp < 0):
            raise ValueError("the RDP curve must be non-negative and given on the accountant's orders")
        self.rdp = self.rdp + rdp
        return self

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon over the orders such that the composition is (epsilon, delta)-DP."""
        return rdp_to_approx(self.orders, self.rdp, delta)[0]

    def optimal_order(self, delta: float) -> float:
        """The order at which ``epsilon(delta)`` is attained."""
        return rdp_to_approx(self.orders, self.rdp, delta)[1]

    @staticmethod
    def noise_multiplier_for(epsilon: float, delta: float, sample_rate: float = 1.0,
                             steps: int = 1, sampling: str = "poisson") -> float:
        """See the module function ``noise_multiplier_for`` (here with ``accountant="rdp"``)."""
        return noise_multiplier_for(epsilon, delta, sample_rate, steps, sampling, accountant="rdp")


ACCOUNTANTS = ("pld", "rdp")


def composed_epsilon(noise_multiplier: float, delta: float, sample_rate: float = 1.0,
                     steps: int = 1, sampling: str = "poisson", accountant: str = "pld") -> float:
    """Epsilon at ``delta`` of ``steps`` subsampled Gaussian steps by the chosen accountant.

    With ``accountant="pld"`` and ``sample_rate=1`` the composition is exactly sqrt(T)/z-GDP, and
    ``PLDAccountant`` reads its epsilon from the closed form (``gdp_epsilon``).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import composed_epsilon
    >>> round(composed_epsilon(1.1, 1e-5, sample_rate=0.01, steps=1000), 2)
    1.52
    """
    if accountant == "rdp":
        return RDPAccountant().compose_gaussian(noise_multiplier, steps, sample_rate,
                                                sampling).epsilon(delta)
    if accountant == "pld":
        return PLDAccountant().compose_gaussian(noise_multiplier, steps, sample_rate,
                                                sampling).epsilon(delta)
    raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")


def noise_multiplier_for(epsilon: float, delta: float, sample_rate: float = 1.0, steps: int = 1,
                         sampling: str = "poisson", accountant: str = "pld") -> float:
    """Smallest noise multiplier z whose composition of ``steps`` subsampled Gaussian steps is
    (epsilon, delta)-DP by the chosen accountant, to a relative tolerance: 1e-6 by RDP, 1e-5 by
    PLD (``pld_calibration.Z_TOL``). The z returned is certified: the accountant's epsilon at z
    is at most ``epsilon`` (by RDP in PLD's one fallback, below).

    ``accountant="pld"`` (default; Poisson sampling only) uses ``PLDAccountant``, the tightest
    (at ``sample_rate=1`` the composition is exactly sqrt(T)/z-GDP: the closed form is used, as by
    ``composed_epsilon``); ``"rdp"`` uses ``RDPAccountant`` (also sampling without replacement).
    epsilon(z) is decreasing in z. RDP: bracket geometrically, then Brent's method on log z.
    PLD (``pld_calibration.pld_noise_multiplier``): a secant on coarse PLDs (grid steps 1e-3 and
    5e-4, extrapolated in step^2 to the accountant's 1e-4) steers the search from the central
    limit theorem's answer, and usually one evaluation on the accountant's own grid certifies
    the z returned (the add direction, usually far from binding, on a coarse grid containing
    it). Where PLD's own rounding terms exceed delta (a tiny delta after many steps), the RDP
    accountant's answer is returned, certified by RDP.

    A pure function of public numbers, so answers are cached (256 most recent arguments): a
    repeated calibration, as in a sweep of releases at one budget, costs a dictionary lookup.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import noise_multiplier_for
    >>> z = noise_multiplier_for(1.0, 1e-5, sample_rate=0.01, steps=1000)
    >>> round(z, 2)
    1.41
    """
    epsilon = check_positive("epsilon", epsilon)
    delta = check_delta(delta)
    steps = check_count("steps", steps, 1)
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, got {accountant!r}")
    if accountant == "pld" and sampling != "poisson":
        raise ValueError("the PLD accountant covers Poisson sampling; pass accountant='rdp' for "
                         "sampling without replacement")
    # validated first, so a cached answer never admits an argument a fresh call would refuse
    return _noise_multiplier(epsilon, delta, check_positive("sample_rate", sample_rate), steps,
                             sampling, accountant)


@functools.lru_cache(maxsize=256)
def _noise_multiplier(epsilon: float, delta: float, sample_rate: float, steps: int, sampling: str,
                      accountant: str) -> float:
    """``noise_multiplier_for`` on validated arguments (cached: a pure function of public numbers)."""

    def excess(log_z: float) -> float:
        return composed_epsilon(np.exp(log_z), delta, sample_rate, steps, sampling,
                                accountant) - epsilon

    if accountant == "pld" and sample_rate == 1.0:
        z = float(np.sqrt(steps) / gdp_mu(epsilon, delta))
        while composed_epsilon(z, delta, 1.0, steps, sampling, accountant) > epsilon:
            z = float(np.nextafter(z, np.inf))
        return z
    if accountant == "pld":
        z = pld_noise_multiplier(epsilon, delta, float(sample_rate), steps)
        if z is not None:
            return z
        # bracket below the RDP answer, which PLD certifies too unless its rounding terms alone
        # exceed delta (a tiny delta after many steps): then the RDP accountant certifies it
        rdp_z = _noise_multiplier(epsilon, delta, sample_rate, steps, sampling, "rdp")
        hi = np.log(rdp_z)
        if excess(hi) > 0:
            return rdp_z
        lo = hi + np.log(0.85)
        while excess(lo) <= 0:
            lo, hi = lo + np.log(0.85), lo
            if lo < np.log(1e-6):
                return float(np.exp(hi))
    else:
        lo, hi = np.log(0.1), np.log(1.0)
        while excess(hi) > 0:
            lo, hi = hi, hi + np.log(4.0)
            if hi > np.log(1e6):
                raise ValueError("no noise multiplier below 1e6 reaches the requested guarantee")
        while excess(lo) < 0:
            lo -= np.log(4.0)
            if lo < np.log(1e-6):
                return float(np.exp(hi))
    root = optimize.brentq(excess, lo, hi, xtol=1e-7)
    z = float(np.exp(root + 1e-7))
    while excess(np.log(z)) > 0:
        z *= 1.0 + 1e-6
    return z


noise_multiplier_for.cache_clear = _noise_multiplier.cache_clear
noise_multiplier_for.cache_info = _noise_multiplier.cache_info
