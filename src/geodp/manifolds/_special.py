"""Elementary functions that are evaluated near removable singularities.

Each function uses its Taylor series below a small threshold, so that exp/log/transport and volume
densities stay accurate to machine precision near v = 0.
"""

from __future__ import annotations

import numpy as np

_SMALL = 1e-4


def sinc(x: np.ndarray) -> np.ndarray:
    """sin(x)/x, with sinc(0) = 1."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < _SMALL
    safe = np.where(small, 1.0, x)
    x2 = x * x
    return np.where(small, 1.0 - x2 / 6.0 + x2 * x2 / 120.0, np.sin(safe) / safe)


def sinhc(x: np.ndarray) -> np.ndarray:
    """sinh(x)/x, with sinhc(0) = 1."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < _SMALL
    safe = np.where(small, 1.0, x)
    x2 = x * x
    return np.where(small, 1.0 + x2 / 6.0 + x2 * x2 / 120.0, np.sinh(safe) / safe)


def inv_sinc(x: np.ndarray) -> np.ndarray:
    """x/sin(x) on [0, pi), with value 1 at 0."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < _SMALL
    safe = np.where(small, 1.0, x)
    x2 = x * x
    return np.where(small, 1.0 + x2 / 6.0 + 7.0 * x2 * x2 / 360.0, safe / np.sin(safe))


def inv_sinhc(x: np.ndarray) -> np.ndarray:
    """x/sinh(x), with value 1 at 0."""
    x = np.asarray(x, dtype=float)
    small = np.abs(x) < _SMALL
    safe = np.where(small, 1.0, x)
    x2 = x * x
    return np.where(small, 1.0 - x2 / 6.0 + 7.0 * x2 * x2 / 360.0, safe / np.sinh(safe))


def log_sinhc(x: np.ndarray) -> np.ndarray:
    """log(sinh(x)/x) for x >= 0, without overflow for large x."""
    x = np.abs(np.asarray(x, dtype=float))
    small = x < _SMALL
    safe = np.where(small, 1.0, x)
    large = x + np.log1p(-np.exp(-2.0 * safe)) - np.log(2.0 * safe)
    return np.where(small, x * x / 6.0, large)


def log_sinc(x: np.ndarray) -> np.ndarray:
    """log(sin(x)/x) for 0 <= x < pi."""
    return np.log(sinc(x))
