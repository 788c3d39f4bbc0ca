"""Batched Cholesky factors and triangular solves of small matrices, entry by entry.

NumPy's batched LAPACK calls pay a fixed cost per matrix (a copy into a Fortran buffer and a
call), several times the arithmetic of an n <= 8 Cholesky factor or triangular solve. Here a
batch is held in the ``entries`` layout of ``_matrix`` (shape (n, n, *batch), C-contiguous:
entry (i, j) of every matrix contiguous), and each step of the textbook algorithm is one NumPy
operation on whole rows of entries, so the cost per matrix is the arithmetic alone. Only lower
triangles are read, and results have their lower triangles set only (the entries above the
diagonal are left as they come).
"""

from __future__ import annotations

import numpy as np

Array = np.ndarray


def lower_entries(x: Array) -> Array:
    """Entries (n, n, *batch) of x (..., n, n), C-contiguous, with the lower triangle that of the
    symmetric part (x + x^T)/2 (the upper triangle is x's)."""
    x = np.asarray(x, dtype=float)
    e = np.ascontiguousarray(np.moveaxis(x, (-2, -1), (0, 1)))
    for i in range(1, len(e)):
        e[i, :i] += e[:i, i]
        e[i, :i] *= 0.5
    return e


def cholesky_lower(e: Array) -> Array:
    """Lower Cholesky factor L (entries layout, lower triangle) of the symmetric matrices whose
    lower entries are e (left-looking, column by column: L_jj^2 = e_jj - sum_k<j L_jk^2,
    L_ij = (e_ij - sum_k<j L_ik L_jk) / L_jj). A matrix that is not numerically positive
    definite gets NaN (or infinite) entries from its first failing column on."""
    n = len(e)
    low = np.empty_like(e)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(n):
            s = e[j:, j].copy()
            for k in range(j):
                s -= low[j:, k] * low[j, k]
            np.sqrt(s[0], out=low[j, j])
            np.divide(s[1:], low[j, j], out=low[j + 1:, j])
    return low


def solve_lower(f: Array, g: Array, swap: Array) -> Array:
    """F^-1 G for lower-triangular F and G (entries layout), each pair exchanged where ``swap``
    (batch shape) is True: lower triangular, by forward substitution row by row,
    C_i = (G_i - sum_k<i F_ik C_k) / F_ii (each row of C nonzero up to its diagonal only)."""
    n = len(f)
    c = np.empty_like(g)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i in range(n):
            fi = np.where(swap, g[i, :i + 1], f[i, :i + 1])
            r = np.where(swap, f[i, :i + 1], g[i, :i + 1])
            for k in range(i):
                r[:k + 1] -= fi[k] * c[k, :k + 1]
            np.divide(r, fi[i], out=c[i, :i + 1])
    return c


def gram_lower(c: Array, upper: bool = False) -> Array:
    """C C^T for lower-triangular C (entries layout): entry (i, j) is
    sum_{k <= min(i, j)} C_ik C_jk; the lower triangle, and the upper one too if ``upper``."""
    n = len(c)
    z = np.empty_like(c)
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(n):
            acc = c[:i + 1, 0] * c[i, 0]
            for k in range(1, i + 1):
                acc[k:] += c[k:i + 1, k] * c[i, k]
            z[i, :i + 1] = acc
            if upper:
                z[:i, i] = acc[:i]
    return z


def inverse_lower(d: Array) -> Array:
    """L^-1 for lower-triangular L (entries layout), zero above the diagonal: row by row,
    X_ii = 1 / L_ii and X_ij = -X_ii sum_{j <= k < i} L_ik X_kj."""
    n = len(d)
    x = np.zeros_like(d)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i in range(n):
            np.divide(1.0, d[i, i], out=x[i, i])
            if i:
                acc = np.zeros((i,) + d.shape[2:])
                for k in range(i):
                    acc[:k + 1] += d[i, k] * x[k, :k + 1]
                np.multiply(acc, -x[i, i], out=x[i, :i])
    return x


#: ``inverse_lower_blocked`` inverts diagonal blocks of at most this size entry by entry.
LEAF = 4


def _block_plan(n: int) -> tuple[int, int]:
    """(leaf size b, number of leaves m = 2^k): the fewest halvings leaving blocks of at most
    ``LEAF``; n is padded to b m."""
    m = 1
    while -(-n // m) > LEAF:
        m *= 2
    return -(-n // m), m


def inverse_blocked(t: Array, lower: bool = True) -> Array:
    """T^-1 for triangular T (..., n, n) (standard layout, zero on the other side of the
    diagonal; ``lower`` or upper), by recursive doubling: the diagonal blocks of ``_block_plan``
    inverted entry by entry (upper ones as lower-triangular transposes), all in one
    ``inverse_lower``, then level by level [[A, 0], [B, C]]^-1 = [[A^-1, 0], [-C^-1 B A^-1,
    C^-1]] (upper: [[A, B], [0, C]]^-1 = [[A^-1, -A^-1 B C^-1], [0, C^-1]]) on every diagonal
    block pair, two batched products each on views of contiguous arrays. Padded with the
    identity where n is not b 2^k."""
    t = np.asarray(t, dtype=float)
    batch, n = t.shape[:-2], t.shape[-1]
    b, m = _block_plan(n)
    size = b * m
    t = t.reshape((-1, n, n))
    if size != n:
        padded = np.zeros((len(t), size, size))
        padded[:, :n, :n] = t
        idx = np.arange(n, size)
        padded[:, idx, idx] = 1.0
        t = padded
    leaves = np.empty((b, b, m, len(t)))
    for i in range(m):
        block = np.moveaxis(t[:, i * b:(i + 1) * b, i * b:(i + 1) * b], 0, -1)
        leaves[:, :, i] = block if lower else block.swapaxes(0, 1)
    inv = inverse_lower(leaves)
    x = np.zeros_like(t)
    for i in range(m):
        block = np.moveaxis(inv[:, :, i], -1, 0)
        x[:, i * b:(i + 1) * b, i * b:(i + 1) * b] = block if lower else block.swapaxes(-1, -2)
    while b < size:
        for s in range(0, size, 2 * b):
            one, two = slice(s, s + b), slice(s + b, s + 2 * b)
            if lower:
                x[:, two, one] = -(x[:, two, two] @ (t[:, two, one] @ x[:, one, one]))
            else:
                x[:, one, two] = -(x[:, one, one] @ (t[:, one, two] @ x[:, two, two]))
        b *= 2
    return x[:, :n, :n].reshape(batch + (n, n))
