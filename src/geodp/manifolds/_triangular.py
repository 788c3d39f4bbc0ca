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

import math

import numpy as np
from numpy.lib.stride_tricks import as_strided

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


def cholesky_lower(e: Array, out: Array | None = None) -> Array:
    """Lower Cholesky factor L (entries layout, lower triangle) of the symmetric matrices whose
    lower entries are e (left-looking, column by column: L_jj^2 = e_jj - sum_k<j L_jk^2,
    L_ij = (e_ij - sum_k<j L_ik L_jk) / L_jj), into ``out`` if given (which may be e itself:
    column j of e is read before column j of L is written). A matrix that is not numerically
    positive definite gets NaN (or infinite) entries from its first failing column on."""
    n = len(e)
    low = np.empty_like(e) if out is None else out
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for j in range(n):
            s = e[j:, j].copy()
            for k in range(j):
                s -= low[j:, k] * low[j, k]
            np.sqrt(s[0], out=low[j, j])
            np.divide(s[1:], low[j, j], out=low[j + 1:, j])
    return low


def solve_lower(f: Array, g: Array, swap: Array, out: Array | None = None) -> Array:
    """F^-1 G for lower-triangular F and G (entries layout), each pair exchanged where ``swap``
    (batch shape) is True: lower triangular, by forward substitution row by row,
    C_i = (G_i - sum_k<i F_ik C_k) / F_ii (each row of C nonzero up to its diagonal only); into
    ``out`` if given, which may be f or g (row i of both is read before row i of C is written,
    and later rows are never written early)."""
    n = len(f)
    c = np.empty_like(g) if out is None else out
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        for i in range(n):
            fi = np.where(swap, g[i, :i + 1], f[i, :i + 1])
            r = np.where(swap, f[i, :i + 1], g[i, :i + 1])
            for k in range(i):
                r[:k + 1] -= fi[k] * c[k, :k + 1]
            np.divide(r, fi[i], out=c[i, :i + 1])
    return c


def gram_lower(c: Array, upper: bool = False, out: Array | None = None) -> Array:
    """C C^T for lower-triangular C (entries layout): entry (i, j) is
    sum_{k <= min(i, j)} C_ik C_jk; the lower triangle, and the upper one too if ``upper``; into
    ``out`` if given (not c)."""
    n = len(c)
    z = np.empty_like(c) if out is None else out
    with np.errstate(invalid="ignore", over="ignore"):
        for i in range(n):
            acc = c[:i + 1, 0] * c[i, 0]
            for k in range(1, i + 1):
                acc[k:] += c[k:i + 1, k] * c[i, k]
            z[i, :i + 1] = acc
            if upper:
                z[:i, i] = acc[:i]
    return z


#: ``inverse_blocked`` inverts diagonal blocks of at most this size entry by entry (measured,
#: SPD(n) Cholesky factors in 1.5 MB blocks: leaves of 4 beat leaves of 2 and 8 at n = 8..32 by
#: 0-30%).
LEAF = 4

#: Sizes whose halvings end in a leaf larger than this (n = 7, 9, 11, 13, 14, 28, 30, ...) are
#: inverted padded with an identity block to the nearest size that halves to leaves of at most
#: ``LEAF`` (measured: SPD(28) factors, 2.2 against 2.4 us per matrix in 1.5 MB blocks and 2.7
#: against 3.7 for the 86 connectomes; n = 13 and 30, 2-7x faster; n = 10 and 20, leaves of 5,
#: 0.75-0.85x, so not padded).
LEAF_UNPADDED = 6


def _diagonal_blocks(x: Array, b: int) -> Array:
    """The diagonal b x b blocks of C-contiguous (count, s, s) matrices as a writable strided
    view (count, s / b, b, b): block k starts at entry (k b, k b)."""
    count, s, _ = x.shape
    st = x.strides
    return as_strided(x, shape=(count, s // b, b, b),
                      strides=(st[0], b * (st[1] + st[2]), st[1], st[2]))


def _leaf_inverses(x: Array, t: Array, lower: bool) -> None:
    """x := the inverses of the triangular blocks t (strided views (..., b, b) of
    ``_diagonal_blocks``), entry by entry: X_ii = 1 / T_ii and, below the diagonal (above it
    for upper blocks), X_ij = -X_ii sum_k T_ik X_kj over j <= k < i (upper: i < k <= j). x may
    be t itself: rows are taken from the diagonal outwards and, within a row, the entries
    farthest from the diagonal first (lower: j ascending; upper: j descending), so that every
    T_ik is read before X_ik overwrites it."""
    b = t.shape[-1]
    rows = range(b) if lower else range(b - 1, -1, -1)
    for i in rows:
        np.divide(1.0, t[..., i, i], out=x[..., i, i])
        for j in (range(i) if lower else range(b - 1, i, -1)):
            ks = range(j, i) if lower else range(i + 1, j + 1)
            acc = t[..., i, ks[0]] * x[..., ks[0], j]
            for k in ks[1:]:
                acc += t[..., i, k] * x[..., k, j]
            np.multiply(acc, -x[..., i, i], out=x[..., i, j])


def _padded_size(n: int) -> int:
    """The smallest b 2^k >= n with b <= ``LEAF``."""
    return min(b << max(0, math.ceil(math.log2(n / b))) for b in range(1, LEAF + 1))


def _inverse_padded(t: Array, m: int, lower: bool) -> Array:
    """T^-1 for C-contiguous triangular T (count, n, n) as the leading block of the inverse of
    diag(T, I) (count, m, m)."""
    n = t.shape[-1]
    big = np.zeros((len(t), m, m))
    big[:, :n, :n] = t
    extra = np.arange(n, m)
    big[:, extra, extra] = 1.0
    return inverse_blocked(big, lower=lower, overwrite=True)[:, :n, :n]


def inverse_blocked(t: Array, lower: bool = True, overwrite: bool = False) -> Array:
    """T^-1 for triangular T (..., n, n) (zero on the other side of the diagonal; ``lower`` or
    upper), by recursive doubling: n = b 2^k with b <= ``LEAF`` where n allows (else the
    fewest halvings that leave an integer b), the diagonal b x b blocks inverted entry by entry,
    then level by level [[A, 0], [B, C]]^-1 = [[A^-1, 0], [-C^-1 B A^-1, C^-1]] (upper:
    [[A, B], [0, C]]^-1 = [[A^-1, -A^-1 B C^-1], [0, C^-1]]) on all diagonal block pairs at once,
    two batched products on strided views (n whose leaves would exceed ``LEAF_UNPADDED``:
    padded, ``_inverse_padded``). Against LAPACK's ``inv`` (which factors T again): 2-5x
    faster for n = 4..32. ``overwrite``: T may be overwritten, and is, when it is a
    C-contiguous float array: the inverse takes T's place (as LAPACK's ``trtri`` does), and no
    batch-sized array is allocated but one product's temporaries."""
    t = np.asarray(t, dtype=float)
    batch, n = t.shape[:-2], t.shape[-1]
    in_place = overwrite and t.flags.c_contiguous
    t = np.ascontiguousarray(t.reshape((-1, n, n)))
    b = n
    while b % 2 == 0 and b > LEAF:
        b //= 2
    if b > LEAF_UNPADDED:
        x = _inverse_padded(t, _padded_size(n), lower)
        if in_place:
            t[...] = x
            return t.reshape(batch + (n, n))
        return np.ascontiguousarray(x).reshape(batch + (n, n))
    x = t if in_place else np.zeros_like(t)
    _leaf_inverses(_diagonal_blocks(x, b), _diagonal_blocks(t, b), lower)
    while b < n:
        d, tv = _diagonal_blocks(x, 2 * b), _diagonal_blocks(t, 2 * b)
        if lower:  # -C^-1 (B A^-1): the negation on the smaller factor, exact either way
            part = np.negative(tv[..., b:, :b] @ d[..., :b, :b])
            np.matmul(d[..., b:, b:], part, out=d[..., b:, :b])
        else:
            part = np.negative(tv[..., :b, b:] @ d[..., b:, b:])
            np.matmul(d[..., :b, :b], part, out=d[..., :b, b:])
        b *= 2
    return x.reshape(batch + (n, n))
