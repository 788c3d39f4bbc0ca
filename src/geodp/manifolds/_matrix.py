"""Batched kernels for symmetric matrices: eigendecomposition, matrix functions, divided differences.

2x2 symmetric eigenproblems use a closed form (Jacobi rotation); larger ones LAPACK ``eigh``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Array = np.ndarray


def sym(x: Array) -> Array:
    """Symmetric part (x + x^T)/2."""
    x = np.asarray(x, dtype=float)
    return 0.5 * (x + np.swapaxes(x, -1, -2))


def _eigh_2x2(a: Array) -> tuple[Array, Array]:
    """Closed-form eigendecomposition of symmetric 2x2 matrices, eigenvalues ascending."""
    p, q, r = a[..., 0, 0], 0.5 * (a[..., 0, 1] + a[..., 1, 0]), a[..., 1, 1]
    half = 0.5 * (p - r)
    rad = np.hypot(half, q)
    mid = 0.5 * (p + r)
    w = np.stack([mid - rad, mid + rad], axis=-1)
    phi = 0.5 * np.arctan2(q, half)
    c, s = np.cos(phi), np.sin(phi)
    v = np.empty(a.shape)
    v[..., 0, 0], v[..., 1, 0] = -s, c
    v[..., 0, 1], v[..., 1, 1] = c, s
    return w, v


def eigh(a: Array) -> tuple[Array, Array]:
    """Eigenvalues (ascending) and orthonormal eigenvectors of the symmetric part of a."""
    a = np.asarray(a, dtype=float)
    if a.shape[-1] == 2:
        return _eigh_2x2(a)
    return np.linalg.eigh(sym(a))


def eigvalsh(a: Array) -> Array:
    """Eigenvalues (ascending) of the symmetric part of a."""
    a = np.asarray(a, dtype=float)
    if a.shape[-1] == 2:
        p, q, r = a[..., 0, 0], 0.5 * (a[..., 0, 1] + a[..., 1, 0]), a[..., 1, 1]
        rad = np.hypot(0.5 * (p - r), q)
        mid = 0.5 * (p + r)
        return np.stack([mid - rad, mid + rad], axis=-1)
    return np.linalg.eigvalsh(sym(a))


def from_eig(w: Array, v: Array) -> Array:
    """V diag(w) V^T."""
    return np.einsum("...ij,...j,...kj->...ik", v, w, v)


def funcm(a: Array, f: Callable[[Array], Array]) -> Array:
    """Matrix function f(a) of a symmetric matrix through its eigendecomposition."""
    w, v = eigh(a)
    return from_eig(f(w), v)


def congruence(l: Array, x: Array) -> Array:
    """L X L^T."""
    return l @ x @ np.swapaxes(l, -1, -2)


def whiten(l: Array, x: Array) -> Array:
    """L^-1 X L^-T for lower-triangular L (Cholesky factor), symmetrised."""
    y = np.linalg.solve(l, x)
    return sym(np.linalg.solve(l, np.swapaxes(y, -1, -2)))


def divided_differences_log(w: Array) -> Array:
    """Daleckii-Krein matrix of log: (log a - log b)/(a - b), 1/a on the diagonal.

    Uses 2 atanh((a - b)/(a + b))/(a - b), which is stable when a and b are close.
    """
    a, b = w[..., :, None], w[..., None, :]
    d = a - b
    z = d / (a + b)
    small = np.abs(z) < 1e-5
    safe_d = np.where(small, 1.0, d)
    series = 2.0 / (a + b) * (1.0 + z * z / 3.0 + z**4 / 5.0)
    return np.where(small, series, 2.0 * np.arctanh(np.where(small, 0.0, z)) / safe_d)


def divided_differences_exp(s: Array) -> Array:
    """Daleckii-Krein matrix of exp: (e^a - e^b)/(a - b) = e^((a+b)/2) sinh(d)/d, d = (a-b)/2."""
    from ._special import sinhc

    a, b = s[..., :, None], s[..., None, :]
    return np.exp(0.5 * (a + b)) * sinhc(0.5 * (a - b))


def frechet_derivative(v: Array, gamma: Array, x: Array) -> Array:
    """Daleckii-Krein formula: V (Gamma o (V^T X V)) V^T for the divided-difference matrix Gamma."""
    vt = np.swapaxes(v, -1, -2)
    return v @ (gamma * (vt @ x @ v)) @ vt


def sym_to_coords(s: Array) -> Array:
    """Orthonormal coordinates of a symmetric matrix: diagonal, then sqrt(2) * upper triangle."""
    n = s.shape[-1]
    iu = np.triu_indices(n, 1)
    return np.concatenate([np.diagonal(s, axis1=-2, axis2=-1), np.sqrt(2.0) * s[..., iu[0], iu[1]]],
                          axis=-1)


def coords_to_sym(c: Array, n: int) -> Array:
    """Inverse of ``sym_to_coords``."""
    c = np.asarray(c, dtype=float)
    out = np.zeros(c.shape[:-1] + (n, n))
    idx = np.arange(n)
    out[..., idx, idx] = c[..., :n]
    iu = np.triu_indices(n, 1)
    off = c[..., n:] / np.sqrt(2.0)
    out[..., iu[0], iu[1]] = off
    out[..., iu[1], iu[0]] = off
    return out
