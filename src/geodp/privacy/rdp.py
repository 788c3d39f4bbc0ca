"""Rényi-DP accounting of (subsampled) Gaussian mechanisms, for DP Riemannian (S)GD."""

from __future__ import annotations

import numpy as np
from scipy import optimize, special

from .conversions import check_delta, check_positive, rdp_to_approx

#: Orders at which curves are tracked: a dense fractional grid near 1, integers, a few large ones.
ORDERS = np.unique(np.concatenate([
    1.0 + np.geomspace(1e-3, 1.0, 60), np.arange(2.0, 257.0), [320.0, 384.0, 512.0, 768.0, 1024.0],
]))
SAMPLINGS = ("poisson", "without_replacement")


def _log_binom(n: np.ndarray, k: np.ndarray) -> np.ndarray:
    return special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)


def gaussian_rdp(noise_multiplier: float, orders: np.ndarray = ORDERS) -> np.ndarray:
    """alpha / (2 z^2): the Gaussian mechanism with sigma = z * sensitivity (Mironov 2017, Prop. 7)."""
    z = check_positive("noise_multiplier", noise_multiplier)
    return np.asarray(orders, dtype=float) / (2.0 * z * z)


def _poisson_integer(q: float, z: float, alpha: int) -> float:
    """Exact RDP at integer alpha of the Poisson-subsampled Gaussian (add/remove neighbours).

    Mironov, Talwar & Zhang (2019), Thm 11: A_alpha = sum_k C(alpha, k) (1-q)^(alpha-k) q^k
    exp((k^2 - k) / (2 z^2)), eps(alpha) = log(A_alpha) / (alpha - 1), by log-sum-exp.
    """
    k = np.arange(alpha + 1, dtype=float)
    terms = (_log_binom(float(alpha), k) + k * np.log(q) + (alpha - k) * np.log1p(-q)
             + (k * k - k) / (2.0 * z * z))
    return float(special.logsumexp(terms) / (alpha - 1))


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
    return float(special.logsumexp(logs) / (alpha - 1))


def subsampled_gaussian_rdp(noise_multiplier: float, sample_rate: float,
                            sampling: str = "poisson", orders: np.ndarray = ORDERS) -> np.ndarray:
    """RDP curve of one step of a subsampled Gaussian mechanism, an upper bound at every order.

    Integer orders are computed exactly (Poisson) or by the WBK bound (without replacement).
    A fractional order alpha in (a, a+1) gets the chord of log A between a and a+1, where
    log A_alpha = (alpha - 1) eps(alpha) is convex in alpha (it is the log of the moment
    E[(p/q)^alpha], convex by Hölder's inequality) and log A_1 = 0: a valid upper bound, exact at
    integers. For sample_rate = 1 the curve is the Gaussian alpha / (2 z^2) at every order.
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
    lower = np.floor(orders + 1e-12).astype(int)
    frac = np.clip(orders - lower, 0.0, 1.0)
    fn = _poisson_integer if sampling == "poisson" else _wor_integer
    needed = np.unique(np.concatenate([lower, lower + 1]))
    log_a = {a: 0.0 if a == 1 else (a - 1) * fn(q, z, int(a)) for a in needed}
    chord = np.array([(1 - t) * log_a[a] + t * log_a[a + 1] for a, t in zip(lower, frac)])
    curve = chord / (orders - 1.0)
    # subsampling never hurts: the full-batch Gaussian curve is also an upper bound
    return np.minimum(curve, gaussian_rdp(z, orders))


class RDPAccountant:
    """Composes mechanisms as RDP curves on ``ORDERS`` and converts to (epsilon, delta).

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
        if int(steps) != steps or steps < 0:
            raise ValueError(f"steps must be a non-negative integer, got {steps}")
        if sampling == "without_replacement" and n is not None:
            b = sample_rate * n
            if abs(b - round(b)) > 1e-9 or not 1 <= round(b) <= n:
                raise ValueError(f"sample_rate * n must be a batch size in 1..n, got {b}")
        self.rdp = self.rdp + steps * subsampled_gaussian_rdp(noise_multiplier, sample_rate,
                                                              sampling, self.orders)
        self.steps += int(steps)
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
        """See the module function ``noise_multiplier_for``."""
        return noise_multiplier_for(epsilon, delta, sample_rate, steps, sampling)


def noise_multiplier_for(epsilon: float, delta: float, sample_rate: float = 1.0, steps: int = 1,
                         sampling: str = "poisson", orders: np.ndarray = ORDERS) -> float:
    """Smallest noise multiplier (to 1e-6 relative) whose composition is (epsilon, delta)-DP.

    epsilon(z) is decreasing in z: bracket geometrically, then Brent's method; the returned z is
    the upper end of the final bracket, so the guarantee holds at the returned value.
    """
    epsilon = check_positive("epsilon", epsilon)
    check_delta(delta)

    def excess(log_z: float) -> float:
        acc = RDPAccountant(orders).compose_gaussian(np.exp(log_z), steps, sample_rate, sampling)
        return acc.epsilon(delta) - epsilon

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
