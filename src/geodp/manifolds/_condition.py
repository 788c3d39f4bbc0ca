"""A public cap K on the condition number of affine-invariant SPD points (issue 31).

The set S_K = {X : cond(X) <= K} is geodesically convex for the affine-invariant metric:
log lambda_max(A #_t B) <= (1 - t) log lambda_max(A) + t log lambda_max(B) (the geometric mean
is monotone and ``|A #_t B|`` <= ``|A|^(1-t) |B|^t``), and inversion, an isometry, turns the same
inequality into one for -log lambda_min. So the Fréchet mean of records in S_K lies in S_K, and so
does every point of a geodesic between two of its points.
"""

from __future__ import annotations

import numpy as np

from . import _matrix as mx
from .base import Array

#: Records are capped at K (1 - ``cap_margin``): the eigenvalues of a capped matrix, recomputed
#: after its reconstruction, stay below K despite the rounding of the product (which moves the
#: smallest eigenvalue by about n eps lambda_max, a relative n eps K).
CAP_MARGIN = 1e-9


def cap_margin(n: int, max_condition: float) -> float:
    """The relative margin below K = ``max_condition`` to which SPD(n) records are capped:
    ``CAP_MARGIN``, or 16 n eps K where the reconstruction's rounding is larger (K >~ 1e6)."""
    return max(CAP_MARGIN, 16.0 * n * float(np.finfo(float).eps) * float(max_condition))


def condition_numbers(x: Array) -> Array:
    """lambda_max / lambda_min of each matrix of ``x`` (..., n, n), from its computed
    eigenvalues (inf for a matrix whose smallest computed eigenvalue is not positive)."""
    w = np.linalg.eigvalsh(mx.sym(np.asarray(x, dtype=float)))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(w[..., 0] > 0, w[..., -1] / np.where(w[..., 0] > 0, w[..., 0], 1.0),
                        np.inf)


def window_start(logs: Array, width: float) -> Array:
    """a (...,) with sum_i (a - l_i)_+ = sum_i (l_i - a - width)_+ for sorted rows ``logs``
    (..., n) of spread above ``width``: clipping the row to [a, a + width] is then its Euclidean
    projection onto {l : max l - min l <= width} (the KKT conditions of that projection: what is
    cut from the top equals what is added at the bottom).

    The balance g(a) = sum (a - l_i)_+ - sum (l_i - a - width)_+ is continuous, increasing and
    piecewise linear with breakpoints l_i and l_i - width; its root is found on the segment
    between the two breakpoints where g changes sign, by linear interpolation (exact).
    """
    points = np.sort(np.concatenate([logs, logs - width], axis=-1), axis=-1)  # (..., 2n)
    diff = points[..., :, None] - logs[..., None, :]
    g = (np.maximum(diff, 0.0).sum(-1) - np.maximum(-diff - width, 0.0).sum(-1))
    k = np.clip(np.sum(g < 0.0, axis=-1), 1, points.shape[-1] - 1)[..., None]
    a0, a1 = np.take_along_axis(points, k - 1, -1), np.take_along_axis(points, k, -1)
    g0, g1 = np.take_along_axis(g, k - 1, -1), np.take_along_axis(g, k, -1)
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(g1 > g0, -g0 / np.where(g1 > g0, g1 - g0, 1.0), 0.0)
    return (a0 + np.clip(t, 0.0, 1.0) * (a1 - a0))[..., 0]


def cap_condition(x: Array, max_condition: float, margin: bool = True) -> Array:
    """The metric projection of each matrix of ``x`` (..., n, n) onto S_K, K = ``max_condition``
    (times 1 - ``cap_margin`` with ``margin``, the records' cap, so that a capped record's
    recomputed condition stays <= K; without it onto S_K itself, the certified mean's projection:
    the exact mean of records of condition <= K lies in S_K, and a smaller set would move the
    iterate away from it): same eigenvectors, log-eigenvalues clipped to the window
    [a, a + log K] of ``window_start``. Matrices already in the set are returned unchanged.

    It is the affine-invariant metric projection because S_K is invariant under rotations and
    rho(X, Y) >= ``|log lambda(X) - log lambda(Y)|`` (eigenvalues sorted alike; Bhatia, Positive
    Definite Matrices, Thm 6.1.4 with Lidskii's theorem), with equality for commuting X and Y:
    the closest point of S_K shares X's eigenvectors, and its log-eigenvalues are the Euclidean
    projection of X's. Being a metric projection onto a closed geodesically convex set of a
    Hadamard manifold, it moves no point farther from any point of S_K.
    """
    x = np.asarray(x, dtype=float)
    width = float(np.log(max_condition))
    if margin:
        width += float(np.log1p(-cap_margin(x.shape[-1], max_condition)))
    w, v = mx.eigh(mx.sym(x))
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.maximum(w, np.finfo(float).tiny))
    over = logs[..., -1] - logs[..., 0] > width
    if not np.any(over):
        return x
    a = window_start(logs[over], width)
    clipped = np.clip(logs[over], a[:, None], a[:, None] + width)
    out = np.array(x, dtype=float, copy=True)
    out[over] = mx.sym(mx.from_eig(np.exp(clipped), v[over]))
    return out


def capped_gradient_rounding(n: int, center: Array, radius: float, max_condition: float) -> float:
    """A worst-case bound on the rounding error of the computed gradient sum_i w_i Log_P(X_i)
    (norm at P) of affine-invariant SPD(n), for P and every X_i in B_radius(center) with
    condition at most K = ``max_condition``:

        eps n^2 (4 kappa + 2 r K),  kappa = min(min(K, cond(C) e^(sqrt 2 r))^2, e^(2 sqrt 2 r)).

    The gradient is sum_i w_i log(Z_i), Z_i = L^-1 X_i L^-T (P = L L^T), mapped back by L. The
    Cholesky factor, the whitening and the eigendecomposition of Z_i each err by about eps n
    ``|Z_i|`` in absolute terms (backward stability; LAPACK's eigenvalues are accurate relative to
    ``|Z_i|`` only), which moves log lambda_min(Z_i) by eps n cond(Z_i); and
    cond(Z_i) <= cond(P) cond(X_i) <= K^2 (also <= cond(C)^2 e^(2 sqrt 2 r), each point being
    within r of C, and <= e^(2 sqrt 2 r), the spread of log-eigenvalues of a vector of norm
    rho(P, X_i) <= 2r being at most sqrt 2 rho). Mapping the sum S (``|S|`` <= 2r) back by L and
    whitening it again to take its norm adds eps n cond(P) ``|S|`` <= 2 eps n r K. The constant 4
    and the second factor n cover the sum over n eigenvalues and records of the worst weight; the
    bound is checked against errors measured in 60-digit arithmetic on matrices of condition K
    whose eigenvectors oppose P's (``tests/test_condition_cap.py``): 80 times below it or more.
    """
    eps = float(np.finfo(float).eps)
    w = np.linalg.eigvalsh(np.asarray(center, dtype=float))
    reach = np.sqrt(2.0) * float(radius)
    with np.errstate(over="ignore"):
        spread = min(float(max_condition), float(w[-1] / w[0]) * float(np.exp(reach)))
        kappa = min(spread * spread, float(np.exp(2.0 * reach)))
    return eps * n * n * (4.0 * kappa + 2.0 * float(radius) * float(max_condition))
