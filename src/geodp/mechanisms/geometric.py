"""The two-sided geometric (discrete Laplace) mechanism for integer counts.

Adding Z with P(Z = k) = (1 - a) / (1 + a) a^|k|, a = exp(-epsilon / Delta_1), to each entry of an
integer vector of L1 sensitivity Delta_1 gives epsilon-DP (Ghosh, Roughgarden & Sundararajan
2012): the law's ratio at k and k + s is a^-|s| <= e^(epsilon |s| / Delta_1), and the shifts of
the entries sum to at most Delta_1 in absolute value. The draws are exact integers (the
difference of two geometric variables), so no floating-point attack applies.
"""

from __future__ import annotations

import math

import numpy as np

from ..privacy.conversions import check_count, check_positive


def geometric_ratio(epsilon: float, l1_sensitivity: float) -> float:
    """a = exp(-epsilon / Delta_1), the decay of the two-sided geometric law."""
    return math.exp(-check_positive("epsilon", epsilon) / check_positive("l1_sensitivity",
                                                                           l1_sensitivity))


def two_sided_geometric(counts: np.ndarray, epsilon: float, l1_sensitivity: float,
                        rng: np.random.Generator) -> np.ndarray:
    """``counts`` + Z, Z i.i.d. two-sided geometric with a = exp(-epsilon / Delta_1): epsilon-DP
    for an integer vector of L1 sensitivity ``l1_sensitivity``.

    Parameters
    ----------
    counts : int array (k,)
    epsilon, l1_sensitivity : float
    rng : numpy.random.Generator

    Returns
    -------
    int array (k,)
    """
    a = geometric_ratio(epsilon, l1_sensitivity)
    counts = np.asarray(counts, dtype=np.int64)
    if a == 0.0:  # exp underflow: the law is the point mass at 0 to double precision
        return counts.copy()
    p = 1.0 - a
    return counts + rng.geometric(p, counts.shape) - rng.geometric(p, counts.shape)


def geometric_tail(epsilon: float, l1_sensitivity: float, beta: float) -> int:
    """The smallest integer t >= 0 with P(Z > t) <= beta for the two-sided geometric law.

    P(Z >= k) = a^k / (1 + a) for k >= 1, so t = ceil(log(beta (1 + a)) / log a) - 1, checked
    exactly against the closed form (rounding never makes the bound fail). A noisy count minus t
    is then a lower bound on the true count except with probability at most beta.
    """
    if not 0 < beta < 1:
        raise ValueError(f"beta must lie in (0, 1), got {beta}")
    a = geometric_ratio(epsilon, l1_sensitivity)
    if a == 0.0:
        return 0
    t = max(0, math.ceil(math.log(beta * (1 + a)) / math.log(a)) - 1)
    while a ** (t + 1) / (1 + a) > beta:
        t += 1
    while t > 0 and a ** t / (1 + a) <= beta:
        t -= 1
    return check_count("t", t)
