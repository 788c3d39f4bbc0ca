"""Batched kernels for symmetric matrices: eigendecomposition, matrix functions, divided differences.

2x2 and 3x3 problems use closed forms on contiguous entries; larger ones LAPACK, in blocks over
threads.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import lru_cache, reduce

import numpy as np

from ._special import cosh_sinhc, sinhc
from ._threads import split_batch
from ._triangular import inverse_blocked

Array = np.ndarray


@lru_cache(maxsize=64)
def triu(n: int, k: int = 0) -> tuple[Array, Array]:
    """``np.triu_indices(n, k)``, computed once per (n, k) (some 40 us a call: a share of a small
    batch's time)."""
    rows, cols = np.triu_indices(n, k)
    rows.flags.writeable = cols.flags.writeable = False
    return rows, cols


def extremes(x: Array) -> tuple[Array, Array]:
    """(min, max) over the last axis; written out column by column for lengths <= 4, where
    NumPy's reductions over a short last axis are 10-30x slower (10^6 x 2: 75 ms against 10 ms)."""
    if x.shape[-1] > 4:
        return np.min(x, axis=-1), np.max(x, axis=-1)
    cols = [x[..., i] for i in range(x.shape[-1])]
    return reduce(np.minimum, cols), reduce(np.maximum, cols)


def frob(a: Array, b: Array) -> Array:
    """<A, B>_F = tr(A^T B) of each pair (einsum: 4x faster than a sum over the two short trailing
    axes)."""
    return np.einsum("...ij,...ij->...", a, b)


def sym(x: Array) -> Array:
    """Symmetric part (x + x^T)/2, halved in place (one batch-sized temporary, not two)."""
    x = np.asarray(x, dtype=float)
    out = x + np.swapaxes(x, -1, -2)
    out *= 0.5
    return out


def _eigh_2x2(a: Array) -> tuple[Array, Array]:
    """Closed-form eigendecomposition of symmetric 2x2 matrices, eigenvalues ascending."""
    p, q, r = a[..., 0, 0], 0.5 * (a[..., 0, 1] + a[..., 1, 0]), a[..., 1, 1]
    half = 0.5 * (p - r)
    rad = np.hypot(half, q)
    mid = 0.5 * (p + r)
    w = np.stack([mid - rad, mid + rad], axis=-1)
    c, s = _rotation(half, q, rad)
    v = np.empty(a.shape)
    v[..., 0, 0], v[..., 1, 0] = -s, c
    v[..., 0, 1], v[..., 1, 1] = c, s
    return w, v


def _cross(a: tuple, b: tuple) -> tuple:
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _pick(mask: Array, x: tuple, y: tuple) -> tuple:
    return tuple(np.where(mask, xi, yi) for xi, yi in zip(x, y))


def _shifted_3x3(a: Array):
    """Flat entries of B = (A - qI)/scale, q = tr(A)/3, and by the trigonometric formula the
    eigenvalue of B farthest from the other two (the top one where det B >= 0, else the bottom)."""
    a = np.asarray(a, dtype=float)
    batch = a.shape[:-2]
    e = entries(a.reshape(-1, 3, 3))
    a00, a11, a22 = e[0, 0], e[1, 1], e[2, 2]
    a01 = 0.5 * (e[0, 1] + e[1, 0])
    a02 = 0.5 * (e[0, 2] + e[2, 0])
    a12 = 0.5 * (e[1, 2] + e[2, 1])
    q = (a00 + a11 + a22) / 3.0
    b00, b11, b22 = a00 - q, a11 - q, a22 - q
    scale = np.maximum(np.maximum(np.maximum(np.abs(b00), np.abs(b11)),
                                  np.maximum(np.abs(b22), np.abs(a01))),
                       np.maximum(np.abs(a02), np.abs(a12)))
    zero = scale == 0
    scale = np.where(zero, 1.0, scale)
    b = tuple(c / scale for c in (b00, b11, b22, a01, a02, a12))  # 1/scale overflows if subnormal
    b00, b11, b22, b01, b02, b12 = b
    p = np.sqrt((b00 * b00 + b11 * b11 + b22 * b22
                 + 2.0 * (b01 * b01 + b02 * b02 + b12 * b12)) / 6.0)
    det = (b00 * (b11 * b22 - b12 * b12) - b01 * (b01 * b22 - b12 * b02)
           + b02 * (b01 * b12 - b11 * b02))
    p_safe = np.where(zero, 1.0, p)
    r = np.clip(0.5 * det / (p_safe * p_safe * p_safe), -1.0, 1.0)
    phi = np.arccos(r) / 3.0
    sep_top = r >= 0
    separated = 2.0 * p * np.cos(np.where(sep_top, phi, phi + 2.0 * np.pi / 3.0))
    return batch, b, q, np.where(zero, 0.0, scale), sep_top, separated


def _eigvalsh_3x3(a: Array) -> Array:
    """Eigenvalues (ascending) of symmetric 3x3 matrices.

    The trigonometric formula alone loses half the digits of two nearly equal eigenvalues, so
    the values come from the same deflation as ``_eig_3x3``.
    """
    batch, (x, y, z), _, _ = _eig_3x3(a)
    x, y = np.minimum(x, y), np.maximum(x, y)  # a sorting network: each output is an input
    y, z = np.minimum(y, z), np.maximum(y, z)
    x, y = np.minimum(x, y), np.maximum(x, y)
    return np.stack([x, y, z], axis=-1).reshape(batch + (3,))


def _rotation(half: Array, off: Array, rad: Array) -> tuple[Array, Array]:
    """(cos t, sin t) of the Jacobi rotation whose first column is the top eigenvector of
    [[m + half, off], [off, m - half]], rad = sqrt(half^2 + off^2): the normalised
    (half + rad, off) or (off, rad - half), whichever has no cancellation; (1, 0) when rad = 0."""
    ok = rad > 0
    tiny = rad < 1e-290  # subnormal range: scale exactly by 2^600 first, so rad keeps its digits
    if np.any(tiny):
        half, off = np.where(tiny, half * 2.0**600, half), np.where(tiny, off * 2.0**600, off)
        rad = np.where(tiny, np.hypot(half, off), rad)
    safe = np.where(ok, rad, 1.0)
    half, off = half / safe, off / safe  # scaled to rad = 1: no underflow in tiny matrices
    big = 1.0 + np.abs(half)
    inv = 1.0 / np.sqrt(2.0 * big)
    pos = half >= 0
    cs = np.where(ok, np.where(pos, big, off) * inv, 1.0)
    sn = np.where(ok, np.where(pos, off, big) * inv, 0.0)
    return cs, sn


def _eig_3x3(a: Array):
    """Unsorted eigenpairs of symmetric 3x3 matrices as flat arrays.

    The matrix is shifted by its mean eigenvalue and scaled. The eigenvalue farthest from the
    other two (found by the trigonometric formula) has its eigenvector as the largest cross
    product of two rows of B - lambda I, a well-conditioned rank-2 matrix; the remaining pair is
    the 2x2 problem restricted to the orthogonal complement, solved by a Jacobi rotation, which is
    exact for repeated eigenvalues. Returns (batch, values, vectors, separated_is_top).
    """
    batch, b, q, scale, sep_top, lam = _shifted_3x3(a)
    b00, b11, b22, b01, b02, b12 = b
    r0, r1, r2 = (b00 - lam, b01, b02), (b01, b11 - lam, b12), (b02, b12, b22 - lam)
    c01, c02, c12 = _cross(r0, r1), _cross(r0, r2), _cross(r1, r2)
    n01, n02, n12 = (c[0] * c[0] + c[1] * c[1] + c[2] * c[2] for c in (c01, c02, c12))
    w = _pick(n01 >= n02, c01, c02)
    nw = np.maximum(n01, n02)
    w = _pick(nw >= n12, w, c12)
    nw = np.sqrt(np.maximum(nw, n12))
    ok = nw > 0
    nw = np.where(ok, nw, 1.0)
    w = (np.where(ok, w[0] / nw, 1.0), np.where(ok, w[1] / nw, 0.0), np.where(ok, w[2] / nw, 0.0))
    first_big = np.abs(w[0]) > np.abs(w[1])
    zeros = np.zeros_like(q)
    u = _pick(first_big, (-w[2], zeros, w[0]), (zeros, w[2], -w[1]))
    nu = 1.0 / np.sqrt(u[0] * u[0] + u[1] * u[1] + u[2] * u[2])
    u = (u[0] * nu, u[1] * nu, u[2] * nu)
    v = _cross(w, u)

    def quad(x: tuple, y: tuple) -> Array:
        return (b00 * x[0] * y[0] + b11 * x[1] * y[1] + b22 * x[2] * y[2]
                + b01 * (x[0] * y[1] + x[1] * y[0]) + b02 * (x[0] * y[2] + x[2] * y[0])
                + b12 * (x[1] * y[2] + x[2] * y[1]))

    m00, m01, m11 = quad(u, u), quad(u, v), quad(v, v)
    half, mid = 0.5 * (m00 - m11), 0.5 * (m00 + m11)
    rad = np.hypot(half, m01)  # squares of entries below 1e-154 would lose digits
    cs, sn = _rotation(half, m01, rad)
    hi = tuple(cs * ui + sn * vi for ui, vi in zip(u, v))
    lo = tuple(cs * vi - sn * ui for ui, vi in zip(u, v))
    vals = [quad(w, w), mid + rad, mid - rad]
    vals = [x * scale + q for x in vals]
    return batch, vals, [w, hi, lo], sep_top


def _eigh_3x3(a: Array) -> tuple[Array, Array]:
    """Sorted eigendecomposition of symmetric 3x3 matrices (see ``_eig_3x3``)."""
    batch, (lw, lhi, llo), (w, hi, lo), top = _eig_3x3(a)
    vals = [np.where(top, llo, lw), np.where(top, lhi, llo), np.where(top, lw, lhi)]
    vecs = [_pick(top, lo, w), _pick(top, hi, lo), _pick(top, w, hi)]
    w_out = np.stack(vals, axis=-1)
    v_out = np.stack([np.stack(vec, axis=-1) for vec in vecs], axis=-1)
    return w_out.reshape(batch + (3,)), v_out.reshape(batch + (3, 3))


def _funcm_3x3(a: Array, f: Callable[[Array], Array]) -> tuple[Array, Array]:
    """f(A) = sum_k f(l_k) x_k x_k^T from unsorted closed-form eigenpairs, entry by entry; with
    the (unsorted) eigenvalues."""
    batch, vals, vecs, _ = _eig_3x3(a)
    fv = [f(x) for x in vals]
    out = np.empty((3, 3, len(fv[0])))
    for i in range(3):
        for j in range(i, 3):
            out[i, j] = out[j, i] = (fv[0] * vecs[0][i] * vecs[0][j] + fv[1] * vecs[1][i] * vecs[1][j]
                                     + fv[2] * vecs[2][i] * vecs[2][j])
    return assemble(out).reshape(batch + (3, 3)), np.stack(vals, axis=-1).reshape(batch + (3,))


def _lapack(fn: Callable, a: Array):
    """A batched LAPACK routine, split over threads for large batches."""
    return split_batch(fn, a, core_ndim=2)


#: Closed forms (n = 2, 3) pay a fixed cost of some dozens (n = 2) or hundreds (n = 3) of NumPy
#: calls: below this many 3x3 matrices, and a quarter as many 2x2 ones, LAPACK and batched
#: matmul are faster (measured: 8 SPD(3) eigendecompositions take 170 us in closed form and 12 us
#: in LAPACK, breaking even at 128-512 matrices; the 2x2 logarithm breaks even at 32, 28 us).
CLOSED_FORM_MIN_BATCH = 128


#: Batches of fewer matrices are multiplied by NumPy's stacked matmul directly (measured on
#: SPD(4..8) congruences: 17-26 us against 24-40 us for 100 matrices; 3x3 reconstructions
#: V diag(w) V^T: 12 us against 30 us).
STACKED_MIN_BATCH = 256


def _closed_form(a: Array) -> bool:
    """Whether the n = 2, 3 closed forms pay for themselves on the batch of ``a``."""
    n = a.shape[-1]
    return n in (2, 3) and a.size // (n * n) >= (CLOSED_FORM_MIN_BATCH if n == 3
                                                 else CLOSED_FORM_MIN_BATCH // 4)


#: The closed forms are used where |lambda|_min >= ILL_CONDITIONED * |lambda|_max: their
#: eigenvalues err by about eps |lambda|_max, so a relative error of at most 2e-12 (1e-11 in log)
#: there. Other matrices are recomputed by LAPACK, which keeps tiny eigenvalues of diagonal and
#: graded matrices to full relative accuracy.
ILL_CONDITIONED = 1e-4


def _ill(w: Array) -> Array:
    """Per matrix: eigenvalues spread beyond what the closed forms resolve, or not finite."""
    low, high = extremes(np.abs(w))
    return ~(low >= ILL_CONDITIONED * high)


def _redo(a: Array, out, bad: Array, fn: Callable):
    """Recompute ``fn`` (a batched LAPACK-based function) on the matrices flagged ``bad``, in place
    in ``out`` (an array or a tuple of arrays with the batch shape of ``a`` leading)."""
    if not np.any(bad):
        return out
    fixed = fn(np.asarray(a, dtype=float)[bad])
    for o, f in zip(out if isinstance(out, tuple) else (out,),
                    fixed if isinstance(fixed, tuple) else (fixed,)):
        o[bad] = f
    return out


def eigh(a: Array, symmetric: bool = False) -> tuple[Array, Array]:
    """Eigenvalues (ascending) and orthonormal eigenvectors of the symmetric part of a;
    ``symmetric`` says a is exactly symmetric already (as ``whiten`` returns it), so LAPACK reads
    it as it is, without the pass that symmetrises a copy."""
    a = np.asarray(a, dtype=float)
    n = a.shape[-1]
    if _closed_form(a):
        w, v = _eigh_2x2(a) if n == 2 else _eigh_3x3(a)
        return _redo(a, (w, v), _ill(w), lambda x: np.linalg.eigh(sym(x)))
    return _lapack(np.linalg.eigh, a if symmetric else sym(a))


def eigvalsh(a: Array, symmetric: bool = False) -> Array:
    """Eigenvalues (ascending) of the symmetric part of a (``symmetric``: as for ``eigh``)."""
    a = np.asarray(a, dtype=float)
    n = a.shape[-1]
    if not _closed_form(a):
        return _lapack(np.linalg.eigvalsh, a if symmetric else sym(a))
    if n == 2:
        p, q, r = a[..., 0, 0], 0.5 * (a[..., 0, 1] + a[..., 1, 0]), a[..., 1, 1]
        rad = np.hypot(0.5 * (p - r), q)
        mid = 0.5 * (p + r)
        w = np.stack([mid - rad, mid + rad], axis=-1)
    else:
        w = _eigvalsh_3x3(a)
    return _redo(a, w, _ill(w), lambda x: np.linalg.eigvalsh(sym(x)))


def from_eig(w: Array, v: Array) -> Array:
    """V diag(w) V^T, written entry by entry for batches of ``STACKED_MIN_BATCH`` or more with
    n <= 3 (faster than batched matmul there)."""
    n = v.shape[-1]
    vw = v * w[..., None, :]
    if n > 3 or v.size < STACKED_MIN_BATCH * n * n:
        return vw @ np.swapaxes(v, -1, -2)
    out = np.empty(np.broadcast_shapes(vw.shape, v.shape))
    for i in range(n):
        for j in range(i, n):
            s = vw[..., i, 0] * v[..., j, 0]
            for k in range(1, n):
                s = s + vw[..., i, k] * v[..., j, k]
            out[..., i, j] = s
            out[..., j, i] = s
    return out


def _funcm_2x2(a: Array, f: Callable[[Array], Array]) -> tuple[Array, Array] | None:
    """f(A) = s I + g (A - m I) for symmetric 2x2 A with eigenvalues m +- r, where s is the mean of
    f(m + r) and f(m - r) and g their divided difference; closed forms, stable as r -> 0, for
    exp, log and sqrt (None for other f); with the eigenvalues."""
    ent = entries(a)
    b = 0.5 * (ent[0, 1] + ent[1, 0])
    m, h = 0.5 * (ent[0, 0] + ent[1, 1]), 0.5 * (ent[0, 0] - ent[1, 1])
    r = np.hypot(h, b)
    if f is np.exp:
        cosh_r, sinhc_r = cosh_sinhc(r)
        e = np.exp(m)
        s, g = e * cosh_r, e * sinhc_r
    elif f is np.log:
        z = r / m
        s = np.log(m) + 0.5 * np.log1p(-z * z)
        with np.errstate(divide="ignore", invalid="ignore"):
            g = np.where(z < 1e-4, 1.0 + z * z * (1.0 / 3.0 + z * z / 5.0),
                         0.5 * np.log1p(2.0 * z / (1.0 - z)) / z) / m
    elif f is np.sqrt:
        plus, minus = np.sqrt(m + r), np.sqrt(m - r)
        s, g = 0.5 * (plus + minus), 1.0 / (plus + minus)
    else:
        return None
    out = np.empty((2, 2) + a.shape[:-2])
    out[0, 0], out[1, 1] = s + g * h, s - g * h
    out[0, 1] = out[1, 0] = g * b
    return assemble(out), np.stack([m - r, m + r], axis=-1)


def funcm(a: Array, f: Callable[[Array], Array]) -> Array:
    """Matrix function f(a) of a symmetric matrix through its eigendecomposition (closed forms
    for n = 2 and 3; for f other than exp, matrices whose eigenvalues the closed forms cannot
    resolve are recomputed through LAPACK's eigendecomposition)."""
    a = np.asarray(a, dtype=float)
    n = a.shape[-1]
    with np.errstate(divide="ignore", invalid="ignore"):  # flagged matrices are redone below
        closed = None if not _closed_form(a) else _funcm_3x3(a, f) if n == 3 else _funcm_2x2(a, f)
    if closed is None:
        w, v = eigh(a)
        return from_eig(f(w), v)
    out, w = closed
    if f is np.exp:
        return out
    bad = _ill(w)

    def lapack(x):
        w, v = np.linalg.eigh(sym(x))
        return from_eig(f(w), v)

    return _redo(a, out, bad, lapack)


#: expm_sym uses its Taylor polynomial on matrices whose eigenvalues, shifted by their mean,
#: lie within +-TAYLOR_MAX_RADIUS (bounded by the Frobenius norm): its error there matches the
#: eigendecomposition's (both err by about eps exp(lambda_max) per entry, the limit of a dense
#: result; measured against 60-digit references up to a spread of 30); beyond, the
#: eigendecomposition keeps the behaviour it always had.
TAYLOR_MAX_RADIUS = 8.0
#: Degree of the Taylor polynomial, and the spectral radius TAYLOR_THETA to which matrices are
#: scaled before it: there its remainder relative to exp, theta^17 / 17! e^(2 theta) (a negative
#: eigenvalue is the worst case), is 2^-53, below rounding.
TAYLOR_DEGREE = 16
TAYLOR_THETA = 0.75
#: Paterson-Stockmeyer block size: T_16 as a polynomial of degree 4 in A^4 whose coefficients
#: are cubics in A (Paterson & Stockmeyer 1973; Higham, Functions of Matrices, sec. 4.2).
TAYLOR_BLOCK = 4


def _taylor_expm(a: Array) -> Array:
    """exp(a) = (T_16(a / 2^s))^(2^s), s per matrix, for symmetric a (overwritten).

    The scaling uses the bound rho(a) <= |a^4|_F^(1/4) (within n^(1/8) of the spectral radius,
    where |a|_F can be sqrt(n) above it), so s = ceil(log2(|a^4|_F^(1/4) / TAYLOR_THETA)).
    T_16(x) = B_0 + x^4 (B_1 + x^4 (B_2 + x^4 (B_3 + x^4 / 16!))), B_j = sum_i x^i / (4j + i)!
    for i < 4: six matrix products (a^2, a^4, x^3 and three in Horner's rule on x^4; scaling by
    a power of two is exact, so x^2 and x^4 are the scaled a^2 and a^4), where Horner's rule on
    x takes fifteen. Then s squarings, in rounds that square the matrices still needing one
    (the whole batch, keeping those squares, when they are at least half of it): each matrix
    sees the products it would see alone. Terms accumulate in two reused buffers, since fresh
    megabyte temporaries cost a page fault per 4 KiB."""
    a2 = a @ a
    a4 = a2 @ a2
    with np.errstate(over="ignore"):
        bound = np.sqrt(np.sqrt(np.sqrt(frob(a4, a4))))
    squarings = np.ceil(np.log2(np.maximum(bound, TAYLOR_THETA) / TAYLOR_THETA))
    scale = (0.5**squarings)[..., None, None]
    scale2 = scale * scale
    a *= scale
    a2 *= scale2
    a4 *= scale2 * scale2
    powers = [None, a, a2, a2 @ a]
    c = 1.0 / np.cumprod(np.r_[1.0, np.arange(1.0, TAYLOR_DEGREE + 1)])
    out, spare = np.multiply(a4, c[TAYLOR_DEGREE]), np.empty_like(a)
    for j in range(TAYLOR_DEGREE // TAYLOR_BLOCK - 1, -1, -1):
        if j < TAYLOR_DEGREE // TAYLOR_BLOCK - 1:
            out, spare = np.matmul(a4, out, out=spare), out
        for i in range(TAYLOR_BLOCK - 1, 0, -1):  # out += B_j(x)
            out += np.multiply(powers[i], c[TAYLOR_BLOCK * j + i], out=spare)
        np.einsum("...ii->...i", out)[...] += c[TAYLOR_BLOCK * j]  # a view of the diagonals
    for k in range(int(np.max(squarings, initial=0))):
        more = squarings > k
        if np.all(more):
            out, spare = np.matmul(out, out, out=spare), out
        elif 2 * np.count_nonzero(more) >= more.size:  # square all, keep the squares of most
            np.copyto(out, np.matmul(out, out, out=spare), where=more[..., None, None])
        else:
            out[more] = out[more] @ out[more]
    return out


def _expm_eigh(a: Array) -> Array:
    """exp of exactly symmetric matrices through their eigendecomposition."""
    w, v = eigh(a, symmetric=True)
    return from_eig(np.exp(w), v)


#: Batches of fewer entries than this take the eigendecomposition whole: below it the Taylor
#: route's fixed cost (some 35 NumPy calls) exceeds LAPACK's (measured break-even: 64 SPD(4),
#: 16-30 SPD(8), 4-10 SPD(16) and 2 SPD(28) matrices).
EXPM_EIGH_MAX_ENTRIES = 1024


def expm_sym(a: Array) -> Array:
    """Matrix exponential of symmetric matrices (n > 3): e^c exp(a - c I), c the mean eigenvalue,
    by scaling and squaring of the Taylor polynomial (``_taylor_expm``: matrix products only,
    several times cheaper than an eigendecomposition for n >= 4) where the shifted spectrum lies
    within ``TAYLOR_MAX_RADIUS``; the eigendecomposition elsewhere, and on batches of fewer than
    ``EXPM_EIGH_MAX_ENTRIES`` entries. Beyond that size every choice (route, number of
    squarings) is made per matrix, so blocks over threads (far larger) give the bits of one
    call."""
    a = sym(a)
    if a.size < EXPM_EIGH_MAX_ENTRIES:
        return sym(_expm_eigh(a))
    n = a.shape[-1]
    c = np.trace(a, axis1=-2, axis2=-1) / n
    shifted = a - c[..., None, None] * np.eye(n)
    taylor = frob(shifted, shifted) <= TAYLOR_MAX_RADIUS**2
    if np.all(taylor):
        return sym(_taylor_expm(shifted) * np.exp(c)[..., None, None])
    out = np.empty(a.shape)
    if np.any(taylor):
        out[taylor] = _taylor_expm(shifted[taylor]) * np.exp(c[taylor])[:, None, None]
    out[~taylor] = _expm_eigh(a[~taylor])
    return sym(out)


def _cholesky_entries(ent: Array) -> tuple:
    """Entries l00, l10, l11 (and l20, l21, l22 for n = 3, else None) of the Cholesky factor of the
    symmetric part, from contiguous ``entries``; NaN or non-positive diagonals mark matrices that
    are not positive definite."""
    with np.errstate(invalid="ignore", divide="ignore"):
        l00 = np.sqrt(ent[0, 0])
        l10 = 0.5 * (ent[1, 0] + ent[0, 1]) / l00
        l11 = np.sqrt(ent[1, 1] - l10 * l10)
        if len(ent) == 2:
            return l00, l10, l11, None, None, None
        l20 = 0.5 * (ent[2, 0] + ent[0, 2]) / l00
        l21 = (0.5 * (ent[2, 1] + ent[1, 2]) - l20 * l10) / l11
        l22 = np.sqrt(ent[2, 2] - l20 * l20 - l21 * l21)
    return l00, l10, l11, l20, l21, l22


def is_positive_definite(a: Array) -> Array:
    """Whether the symmetric part of each matrix is positive definite: a closed-form Cholesky
    factorisation for large batches with n = 2, 3; LAPACK's otherwise, the smallest eigenvalues
    only when it fails somewhere."""
    a = np.asarray(a, dtype=float)
    n = a.shape[-1]
    if not _closed_form(a):
        try:  # one batched Cholesky (a quarter of an eigendecomposition) in the common case
            _lapack(np.linalg.cholesky, sym(a))
            return np.ones(a.shape[:-2], dtype=bool)
        except np.linalg.LinAlgError:
            return eigvalsh(a)[..., 0] > 0
    l00, _, l11, _, _, l22 = _cholesky_entries(entries(a))
    ok = (l00 > 0) & (l11 > 0)
    return ok & (l22 > 0) if n == 3 else ok


def cholesky(a: Array) -> tuple[Array, Array]:
    """Lower Cholesky factor L of a (symmetric positive-definite) and its inverse L^-1.

    Closed forms on flat arrays for n = 2, 3 (batched LAPACK ``inv`` is slow on tiny matrices);
    otherwise LAPACK's factor (of the lower triangle of a) and its inverse by blocks
    (``_triangular.inverse_blocked``: LAPACK's ``inv`` factors L again, 2-5x the time). Raises
    ``np.linalg.LinAlgError`` if a is not positive definite.
    """
    a = np.asarray(a, dtype=float)
    n = a.shape[-1]
    if a.ndim == 2:  # one factor (a base point): no blocks to cut, no closed form to pay for
        l = np.linalg.cholesky(sym(a))
        return l, np.linalg.inv(l)
    if not _closed_form(a):
        l = _lapack(np.linalg.cholesky, a)
        return l, _lapack(inverse_blocked, l)
    l00, l10, l11, l20, l21, l22 = _cholesky_entries(entries(a))
    diag = [l00, l11] if n == 2 else [l00, l11, l22]
    if not all(np.all(d > 0) for d in diag):
        raise np.linalg.LinAlgError("Matrix is not positive definite")
    l = np.zeros((n, n) + a.shape[:-2])
    inv = np.zeros((n, n) + a.shape[:-2])
    m00, m11 = 1.0 / l00, 1.0 / l11
    l[0, 0], l[1, 0], l[1, 1] = l00, l10, l11
    inv[0, 0], inv[1, 1] = m00, m11
    inv[1, 0] = -l10 * m00 * m11
    if n == 3:
        m22 = 1.0 / l22
        l[2, 0], l[2, 1], l[2, 2] = l20, l21, l22
        inv[2, 2] = m22
        inv[2, 1] = -l21 * m11 * m22
        inv[2, 0] = (l10 * l21 - l11 * l20) * m00 * m11 * m22
    return assemble(l), assemble(inv)


#: A batch times one matrix on the right runs as one BLAS product on the stacked rows for
#: n up to this; beyond, NumPy's product per matrix is faster (measured with 1.5 MB blocks:
#: n = 4, 0.006 against 0.030 us per matrix; n = 6, even; n = 16, 0.28 against 0.19; n = 32,
#: 1.72 against 1.23).
STACKED_MAX_N = 5


def matmul(a: Array, b: Array) -> Array:
    """a @ b; a batch times a single matrix on the right, for ``STACKED_MIN_BATCH`` matrices or
    more, runs as one BLAS product on the stacked rows where n <= ``STACKED_MAX_N`` (below, the
    copy costs more than it saves), else per matrix with the single matrix made contiguous (NumPy
    multiplies by a transposed view 1.4-2.8x slower). A single matrix on the left stays with
    NumPy's stacked matmul, 1.3-5x faster there than a product on transposed stacked rows
    (n = 4..32, 300 to 20,000 matrices). Fewer matrices than ``STACKED_MIN_BATCH`` are multiplied
    by NumPy's stacked matmul, a single matrix on the right made contiguous there too (the 86
    connectomes times L^-T: 84 instead of 138 us, and the bits of a large batch)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if max(a.size, b.size) < STACKED_MIN_BATCH * a.shape[-1] * b.shape[-1]:
        return a @ (np.ascontiguousarray(b) if b.ndim == 2 else b)
    n = a.shape[-1]
    shape = np.broadcast_shapes(a.shape[:-2], b.shape[:-2]) + (a.shape[-2], b.shape[-1])
    if a.ndim > 2 and a.size == a.shape[-1] * a.shape[-2]:
        return matmul(a.reshape(a.shape[-2:]), b).reshape(shape)
    if b.ndim > 2 and b.size == b.shape[-1] * b.shape[-2]:
        return matmul(a, b.reshape(b.shape[-2:])).reshape(shape)
    if b.ndim == 2 and a.ndim > 2:
        b = np.ascontiguousarray(b)
        if n > STACKED_MAX_N:
            return a @ b
        a = np.ascontiguousarray(a)
        return (a.reshape(-1, n) @ b).reshape(a.shape[:-1] + (b.shape[1],))
    return a @ b


def entries(a: Array) -> Array:
    """The entries a[..., i, j] as contiguous arrays e[i, j] of the batch shape (one transposing
    copy; arithmetic on contiguous entries is several times faster than on strided views)."""
    return np.ascontiguousarray(np.moveaxis(np.asarray(a, dtype=float), (-2, -1), (0, 1)))


def assemble(e: Array) -> Array:
    """Inverse of ``entries``: a C-contiguous (..., n, n) array."""
    return np.ascontiguousarray(np.moveaxis(e, (0, 1), (-2, -1)))


def congruence(l: Array, x: Array, lower: bool = False, exact: bool = True) -> Array:
    """L sym(X) L^T, exactly symmetric; ``lower`` says L is lower triangular (its zeros are skipped).

    For n <= 3, entry by entry on contiguous entries (batched matmul is slow on tiny matrices, and
    BLAS would start its own threads inside ours); larger n as matrix products. ``exact=False``
    (for LAPACK's ``eigh``/``eigvalsh``, which read one triangle) skips the symmetrising pass
    after the products: L X L^T as BLAS computes it, whose triangles agree to rounding for a
    symmetric X.
    """
    l, x = np.asarray(l, dtype=float), np.asarray(x, dtype=float)
    n = l.shape[-1]
    batch = np.broadcast_shapes(l.shape[:-2], x.shape[:-2])
    if n > 3 or math.prod(batch) < 4 * CLOSED_FORM_MIN_BATCH:
        out = matmul(matmul(l, x), np.swapaxes(l, -1, -2))
        return sym(out) if exact else out
    le, xe = entries(l), entries(x)
    xs = [[xe[i, j] if i == j else 0.5 * (xe[i, j] + xe[j, i]) for j in range(n)] for i in range(n)]
    span = (lambda i: range(i + 1)) if lower else (lambda i: range(n))
    lx = [[reduce(np.add, (le[i, k] * xs[k][j] for k in span(i))) for j in range(n)] for i in range(n)]
    out = np.empty((n, n) + batch)
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = out[j, i] = reduce(np.add, (lx[i][k] * le[j, k] for k in span(j)))
    return assemble(out)


def from_triangle(diagonal: Array, upper: Array) -> Array:
    """The symmetric matrices with the given diagonals (..., n) and upper triangles (..., n(n-1)/2,
    row by row, as ``triu(n, 1)`` orders them)."""
    n = diagonal.shape[-1]
    out = np.empty(np.broadcast_shapes(diagonal.shape[:-1], upper.shape[:-1]) + (n, n))
    iu, ju = triu(n, 1)
    out[..., iu, ju] = upper
    out[..., ju, iu] = upper
    np.einsum("...ii->...i", out)[...] = diagonal
    return out


def _pairwise(w: Array, diagonal: Array, pair: Callable[[Array, Array], Array]) -> Array:
    """Symmetric matrix with the given diagonal and pair(w_i, w_j) off it, each pair evaluated once."""
    iu, ju = triu(w.shape[-1], 1)
    return from_triangle(np.broadcast_to(diagonal, w.shape), pair(w[..., iu], w[..., ju]))


def _log_pair(a: Array, b: Array) -> Array:
    """(log a - log b)/(a - b) = log1p(2z/(1 - z))/(a - b), z = (a - b)/(a + b), stable as z -> 0."""
    d, t = a - b, a + b
    z = d / t
    small = np.abs(z) < 1e-5
    zs = np.where(small, 0.5, z)
    exact = np.log1p(2.0 * zs / (1.0 - zs)) / (zs * t)
    return np.where(small, 2.0 / t * (1.0 + z * z / 3.0 + z**4 / 5.0), exact)


def divided_differences_log(w: Array) -> Array:
    """Daleckii-Krein matrix of log: (log a - log b)/(a - b), 1/a on the diagonal."""
    return _pairwise(w, 1.0 / w, _log_pair)


def divided_differences_exp(s: Array) -> Array:
    """Daleckii-Krein matrix of exp: (e^a - e^b)/(a - b) = e^((a+b)/2) sinh(d)/d, d = (a-b)/2."""
    return _pairwise(s, np.exp(s), lambda a, b: np.exp(0.5 * (a + b)) * sinhc(0.5 * (a - b)))


def frechet_derivative(v: Array, gamma: Array, x: Array) -> Array:
    """Daleckii-Krein formula V (Gamma o (V^T X V)) V^T for symmetric X and the divided-difference
    matrix Gamma of a matrix function at V diag(w) V^T."""
    return congruence(v, gamma * congruence(np.swapaxes(v, -1, -2), x))


def sym_to_coords(s: Array) -> Array:
    """Orthonormal coordinates of a symmetric matrix: diagonal, then sqrt(2) * upper triangle."""
    n = s.shape[-1]
    iu = triu(n, 1)
    return np.concatenate([np.diagonal(s, axis1=-2, axis2=-1), np.sqrt(2.0) * s[..., iu[0], iu[1]]],
                          axis=-1)


def coords_to_sym(c: Array, n: int) -> Array:
    """Inverse of ``sym_to_coords``."""
    c = np.asarray(c, dtype=float)
    return from_triangle(c[..., :n], c[..., n:] / np.sqrt(2.0))


#: One factor L with ||L||_F ||L^-1||_F at most this (>= its condition number) whitens a batch
#: by matrix products, X L^-T on the stacked rows and then L^-1 on the left (both release the
#: interpreter, so the pool's threads run them in parallel; SciPy's triangular solve holds it);
#: worse-conditioned factors keep forward substitution. Against 50-digit mpmath on SPD(5)
#: distances, both routes erred alike (1e-15 relative at condition 1e2, 5e-14-9e-14 at 1e4,
#: 1e-9 at 1e8, graded or rotated), so the bound is a margin, not a measured limit.
WELL_CONDITIONED = 1e4


def whiten(l: Array, x: Array, exact: bool = True) -> Array:
    """L^-1 sym(X) L^-T for lower-triangular L, by forward substitution (componentwise backward
    stable, unlike a product with an explicit inverse, which loses digits when L is
    ill-conditioned). Entry by entry for n <= 3 on batches of ``CLOSED_FORM_MIN_BATCH`` or more;
    batched solves otherwise (for one L: sym of L^-1 X^T L^-T, the same matrix, since the
    congruence is linear and commutes with transposes; for one ``WELL_CONDITIONED`` L, products
    with L^-1 and L^-T instead, not symmetrised if not ``exact``, as in ``congruence``)."""
    l, x = np.asarray(l, dtype=float), np.asarray(x, dtype=float)
    n = l.shape[-1]
    batch = np.broadcast_shapes(l.shape[:-2], x.shape[:-2])
    lapack = n > 3 or math.prod(batch) < CLOSED_FORM_MIN_BATCH
    if lapack and l.ndim == 2:
        linv = np.linalg.inv(l)
        if np.linalg.norm(l) * np.linalg.norm(linv) <= WELL_CONDITIONED:  # L^-1 (X L^-T)
            out = linv @ matmul(x, linv.T)
            return sym(out) if exact else out
        z = _solve_right_transposed(l, np.array(x, order="C"))  # X L^-T; its transpose is L^-1 X^T
        return sym(_solve_right_transposed(l, np.ascontiguousarray(np.swapaxes(z, -1, -2))))
    if lapack:
        shape = np.broadcast_shapes(l.shape, x.shape)
        lb = np.broadcast_to(l, shape)
        y = _lapack_solve(lb, np.broadcast_to(sym(x), shape))
        return sym(_lapack_solve(lb, np.swapaxes(y, -1, -2)))
    le, xe = entries(l), entries(x)
    xs = [[xe[i, j] if i == j else 0.5 * (xe[i, j] + xe[j, i]) for j in range(n)] for i in range(n)]

    def forward(cols):
        """L^-1 C column by column, C given as rows cols[i][j]."""
        out = [[None] * n for _ in range(n)]
        for j in range(n):
            for i in range(n):
                acc = cols[i][j]
                for k in range(i):
                    acc = acc - le[i, k] * out[k][j]
                out[i][j] = acc / le[i, i]
        return out

    y = forward(xs)
    z = forward([[y[j][i] for j in range(n)] for i in range(n)])
    out = np.empty((n, n) + batch)
    for i in range(n):
        for j in range(i + 1):
            out[i, j] = out[j, i] = 0.5 * (z[i][j] + z[j][i])
    return assemble(out)


def _solve_right_transposed(l: Array, x: Array) -> Array:
    """X_k L^-T for one lower-triangular L and a batch of C-contiguous X_k, overwritten: the rows
    of all X_k stacked are R (rows x n), and R L^-T = (L^-1 R^T)^T, one BLAS-3 triangular solve
    on R^T, a Fortran-ordered view of R, so no matrix is copied or transposed in memory."""
    from scipy.linalg import solve_triangular

    n = l.shape[-1]
    z = solve_triangular(l, x.reshape(-1, n).T, lower=True, check_finite=False, overwrite_b=True)
    return z.T.reshape(x.shape)


def _lapack_solve(a: Array, b: Array) -> Array:
    return split_batch(np.linalg.solve, a, b, core_ndim=2)
