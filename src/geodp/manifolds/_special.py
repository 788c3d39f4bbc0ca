"""Elementary functions that are evaluated near removable singularities.

Each function evaluates the closed form and patches the (rare) entries below a small threshold
with a Taylor series, so exp/log/transport and volume densities stay accurate to machine
precision near v = 0 without evaluating both branches everywhere.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

_SMALL = 1e-4


def _patched(x: np.ndarray, closed: Callable[[np.ndarray], np.ndarray],
             series: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < _SMALL
    if not small.any():
        return closed(x)
    out = np.array(closed(np.where(small, 1.0, x)), dtype=float)
    out[small] = series(x[small])
    return out if out.ndim else out[()]


def sinc(x: np.ndarray) -> np.ndarray:
    """sin(x)/x, with sinc(0) = 1."""
    return _patched(x, lambda t: np.sin(t) / t, lambda t: 1.0 - t * t / 6.0 + t**4 / 120.0)


def sinhc(x: np.ndarray) -> np.ndarray:
    """sinh(x)/x, with sinhc(0) = 1."""
    return _patched(x, lambda t: np.sinh(t) / t, lambda t: 1.0 + t * t / 6.0 + t**4 / 120.0)


def inv_sinc(x: np.ndarray) -> np.ndarray:
    """x/sin(x) on [0, pi), with value 1 at 0."""
    return _patched(x, lambda t: t / np.sin(t), lambda t: 1.0 + t * t / 6.0 + 7.0 * t**4 / 360.0)


def acos_ratio(c: np.ndarray) -> np.ndarray:
    """theta/sin(theta) as a function of c = cos(theta) in (-1, 1]: arccos(c)/sqrt(1 - c^2).

    Analytic at c = 1, where the series in s = 1 - c is 1 + s/3 + 2s^2/15 + 2s^3/35; a function of
    c rather than theta because near c = 1 the angle is ill-conditioned but the ratio is not.
    """
    return _patched(1.0 - np.asarray(c, dtype=float), lambda s: np.arccos(1.0 - s) / np.sqrt(s * (2.0 - s)),
                    lambda s: 1.0 + s * (1.0 / 3.0 + s * (2.0 / 15.0 + s * 2.0 / 35.0)))


def acosh_ratio(c: np.ndarray) -> np.ndarray:
    """theta/sinh(theta) as a function of c = cosh(theta) >= 1, the continuation of ``acos_ratio``:
    series 1 - s/3 + 2s^2/15 - 2s^3/35 in s = c - 1."""
    return _patched(np.asarray(c, dtype=float) - 1.0, lambda s: acosh1p(s) / np.sqrt(s * (s + 2.0)),
                    lambda s: 1.0 - s * (1.0 / 3.0 - s * (2.0 / 15.0 - s * 2.0 / 35.0)))


def cosh_sinhc(t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cosh t, sinh(t)/t) from one e = expm1(t): cosh t = 1 + e^2 / (2(1 + e)) and
    sinh t = e (e + 2) / (2(1 + e)), accurate near 0 (sinh(t)/t = 1 at t = 0)."""
    t = np.asarray(t, dtype=float)
    e = np.expm1(t)
    half = 0.5 / (1.0 + e)
    return 1.0 + e * (e * half), np.divide(e * ((e + 2.0) * half), t, out=np.ones_like(t), where=t != 0)


def acosh1p(s: np.ndarray) -> np.ndarray:
    """arccosh(1 + s) for s >= 0, accurate for small s: log1p(s + sqrt(s (s + 2)))."""
    return np.log1p(s + np.sqrt(s * (s + 2.0)))


def log_sinhc(x: np.ndarray) -> np.ndarray:
    """log(sinh(x)/x) for x >= 0, without overflow for large x."""
    return _patched(np.abs(x), lambda t: t + np.log1p(-np.exp(-2.0 * t)) - np.log(2.0 * t),
                    lambda t: t * t / 6.0 - t**4 / 180.0)
