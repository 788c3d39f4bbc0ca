"""Symmetric positive-definite matrices with the affine-invariant or the log-Euclidean metric."""

from __future__ import annotations

from functools import reduce

import numpy as np

from . import _condition as cond
from . import _matrix as mx
from . import _triangular as tri
from ._special import cosh_sinhc, log_sinhc
from ._threads import map_parts, split_batch, threaded
from .base import (Array, InvalidPoints, Manifold, integer_size, rowdot, weighted_sum,
                   zero_where_not_finite)

METRICS = ("affine", "log-euclidean")


class SPD(Manifold):
    """SPD(n): symmetric positive-definite n x n matrices, points of shape (..., n, n).

    ``metric="affine"``: the affine-invariant (Rao-Fisher) metric g_P(U, V) = tr(P^-1 U P^-1 V),
    sectional curvature in [-1/2, 0] (for n >= 2). ``metric="log-euclidean"``: the pull-back of the
    Frobenius metric by the matrix logarithm, a flat metric. Tangent vectors are symmetric matrices.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import SPD
    >>> m = SPD(2)
    >>> p, q = np.eye(2), np.diag([np.e, 1.0])
    >>> round(float(m.dist(p, q)), 6)   # |log(e)| = 1 under the affine-invariant metric
    1.0
    >>> SPD(2, metric='log-euclidean').curvature_bounds
    (0.0, 0.0)
    """

    symmetric_space = True

    def eigenvalue_range(self, center: Array, radius: float) -> tuple[float, float]:
        """lambda_min(C) e^-r and lambda_max(C) e^r: under either metric the distance bounds the
        differences of the sorted log-eigenvalues, ``|log lambda_i(X) - log lambda_i(C)|`` <= rho(C, X)
        (affine-invariant: Bhatia, Positive Definite Matrices, Thm 6.1.4; log-Euclidean: Weyl's
        inequality for log X - log C and the Frobenius norm)."""
        w = np.linalg.eigvalsh(mx.sym(np.asarray(center, dtype=float)))
        with np.errstate(over="ignore", under="ignore"):
            return float(w[0] * np.exp(-radius)), float(w[-1] * np.exp(radius))

    def __new__(cls, n: int, metric: str = "affine"):
        if cls is SPD:
            if metric not in METRICS:
                raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
            cls = AffineInvariantSPD if metric == "affine" else LogEuclideanSPD
        return super().__new__(cls)

    def __init__(self, n: int, metric: str = "affine"):
        self.n = integer_size(n, "n")
        self.metric = metric
        self.dim = self.n * (self.n + 1) // 2
        self.point_shape = (self.n, self.n)

    def __repr__(self) -> str:
        return f"SPD({self.n}, metric={self.metric!r})"

    def __getnewargs__(self) -> tuple[int, str]:
        """The arguments ``__new__`` needs to unpickle (worker processes receive manifolds)."""
        return self.n, self.metric

    @property
    def injectivity_radius(self) -> float:
        return float("inf")

    def origin(self) -> Array:
        """The identity matrix."""
        return np.eye(self.n)

    def to_ambient(self, x: Array) -> Array:
        """vech: the upper triangle (its l2 norm is at most the Frobenius norm, so a Frobenius
        sensitivity bounds it)."""
        iu = np.triu_indices(self.n)
        return np.asarray(x, dtype=float)[..., iu[0], iu[1]]

    def from_ambient(self, y: Array) -> Array:
        y = np.asarray(y, dtype=float)
        iu = np.triu_indices(self.n)
        out = np.zeros(y.shape[:-1] + (self.n, self.n))
        out[..., iu[0], iu[1]] = y
        out[..., iu[1], iu[0]] = y
        return out

    def off_manifold(self, x: Array) -> Array:
        """Not positive definite."""
        return np.linalg.eigvalsh(x)[..., 0] <= 0

    def project(self, x: Array) -> Array:
        """Symmetric part with eigenvalues floored at 1e-12 times the largest one."""
        w, v = mx.eigh(mx.sym(x))
        floor = 1e-12 * np.max(np.abs(w), axis=-1, keepdims=True)
        return mx.from_eig(np.maximum(w, floor), v)

    def to_tangent(self, p: Array, x: Array) -> Array:
        """sym(x) + 0 p (broadcast to p's batch), in place on one fresh array where the shapes
        allow: the same values as ``mx.sym(x) + 0.0 * p`` without two more batch-sized
        temporaries (DP-RGD projects every per-record gradient each step)."""
        x = np.asarray(x, dtype=float)
        zero = 0.0 * np.asarray(p)
        out = x + np.swapaxes(x, -1, -2)
        out *= 0.5
        if zero.dtype == out.dtype and np.broadcast_shapes(out.shape, zero.shape) == out.shape:
            out += zero
            return out
        return out + zero

    def _point_defect(self, x: Array) -> Array:
        """|X - X^T| / (1 + |X|), computed on X / max(1, max |X_ij|) so that records near the
        overflow threshold neither overflow the norms nor make Python print a warning."""
        big = np.maximum(np.max(np.abs(x), axis=(-2, -1)), 1.0)
        with np.errstate(invalid="ignore"):  # a non-finite entry: NaN, refused by check_point
            y = x / big[..., None, None]
            asym = np.linalg.norm(y - np.swapaxes(y, -1, -2), axis=(-2, -1))
            return asym / (1.0 / big + np.linalg.norm(y, axis=(-2, -1)))

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        asym = np.linalg.norm(v - np.swapaxes(v, -1, -2), axis=(-2, -1))
        return asym / (1.0 + np.linalg.norm(v, axis=(-2, -1)))

    def check_point(self, x: Array) -> Array:
        x = super().check_point(x)
        bad = ~mx.is_positive_definite(x)
        if np.any(bad):  # neither which nor how far: an error quotes no statistic of the data
            raise InvalidPoints(f"{'one or more matrices are' if bad.ndim else 'the matrix is'} not "
                                f"positive definite; SPD.project floors the eigenvalues", bad)
        return x

    def _defect_hint(self) -> str:
        return " (SPD points must be symmetric: relative asymmetry |X - X^T| / (1 + |X|))"


def _from_eig_folded(l: Array, v: Array, fw: Array, spare: Array | None = None) -> Array:
    """M diag(fw) M^T with M = L V, exactly symmetric: M^T = V^T L^T (a product of transposed
    operands, which BLAS reads in place), then H = M diag(fw / 2) M^T (one product, with M as the
    transpose of the contiguous M^T) and H + H^T, which equals sym(M diag(fw) M^T) to the last
    bit (halving is exact). v (overwritten) and ``spare`` (an array no longer needed, of the
    result's shape) hold the intermediate results: fewer fresh batch-sized arrays, which cost
    cache misses or page faults."""
    shape = np.broadcast_shapes(v.shape, l.shape)
    if spare is None or spare.shape != shape or v.shape != shape:
        spare, v = np.empty(shape), np.array(np.broadcast_to(v, shape))
    mt = np.matmul(np.swapaxes(v, -1, -2), np.swapaxes(l, -1, -2), out=spare)
    scaled = np.multiply(mt, (0.5 * fw)[..., :, None], out=v)
    half = np.swapaxes(mt, -1, -2) @ scaled
    return np.add(half, np.swapaxes(half, -1, -2), out=mt)


def _log_norm(lam: Array) -> Array:
    logs = np.log(lam)
    return np.sqrt(rowdot(logs, logs))


def _diag_ratio(l: Array) -> Array:
    """max L_ii / min L_ii, infinite for a failed (NaN) factor."""
    low, high = mx.extremes(np.diagonal(l, axis1=-2, axis2=-1))
    return np.nan_to_num(high / low, nan=np.inf)


def _cholesky_or_nan(x: Array) -> Array:
    """Cholesky factors, NaN for the matrices that are not numerically positive definite (draws
    near the Laplace's critical scale can be; the pair is then reduced by the other matrix)."""
    try:
        return mx.cholesky(x)[0]
    except np.linalg.LinAlgError:
        if x.shape[-1] <= 3:
            ok = mx.is_positive_definite(x)
            out = np.full(x.shape, np.nan)
            out[ok] = mx.cholesky(x[ok])[0]
            return out
    out = np.full(x.shape, np.nan)
    for i in np.ndindex(x.shape[:-2]):  # LAPACK refused the batch: the few failures one by one
        try:
            out[i] = np.linalg.cholesky(x[i])
        except np.linalg.LinAlgError:
            pass
    return out


def _reduction_swap(rp: Array, rq: Array, p: Array, q: Array) -> Array:
    """Per pair, whether the pencil is reduced by Q's factor rather than P's: the one with the
    smaller diagonal ratio max L_ii / min L_ii (``rp``, ``rq``, infinite for a failed factor),
    ties broken by the first differing entry; a rule symmetric in P and Q."""
    swap = rq < rp
    tie = rq == rp
    if np.any(tie):  # rare: equal condition estimates, broken by the first differing entry
        swap = np.where(tie, _lexicographically_less(q, p), swap)
    return swap


def _pair_distances_lapack(p: Array, q: Array) -> Array:
    """rho(P_i, Q_i) for broadcast batches, by LAPACK: both Cholesky factors, the pencil reduced
    by the better-conditioned one (``_reduction_swap``) through batched solves."""
    lp, lq = _cholesky_or_nan(p), _cholesky_or_nan(q)
    sw = _reduction_swap(_diag_ratio(lp), _diag_ratio(lq), p, q)[..., None, None]
    return _log_norm(mx.eigvalsh(mx.whiten(np.where(sw, lq, lp), np.where(sw, p, q)), symmetric=True))


#: Two-batch distances of SPD(n) with n at most this, in batches of at least ENTRYWISE_MIN_PAIRS
#: pairs, reduce the pencils entry by entry (``_pair_distances_entrywise``); larger n, in
#: batches of at least INVERSE_MIN_PAIRS, by an inverse factor (``_pair_distances_inverse``);
#: smaller batches by LAPACK solves (``_pair_distances_lapack``), which call NumPy least often.
ENTRYWISE_MAX_N = 7
ENTRYWISE_MIN_PAIRS = 64
INVERSE_MIN_PAIRS = 16


def _pair_distances_entrywise(p: Array, q: Array) -> Array:
    """rho(P_i, Q_i) from the eigenvalues of C C^T, C = L_P^-1 L_Q (the pencil (Q, P) reduced
    by the Cholesky factor of P, whose eigenvalues are the squared singular values of C), or of
    its inverse with P and Q exchanged by ``_reduction_swap``: two Cholesky factors, a
    triangular solve with a triangular right-hand side and a product of triangles, entry by
    entry (``_triangular``), then one batched ``eigvalsh``. Pairs with a matrix that is not
    numerically positive definite are recomputed by ``_pair_distances_lapack``."""
    n = p.shape[-1]
    ep, eq = tri.lower_entries(p), tri.lower_entries(q)  # two buffers for the whole reduction
    lp, lq = tri.cholesky_lower(ep, out=ep), tri.cholesky_lower(eq, out=eq)
    dp, dq = [lp[i, i] for i in range(n)], [lq[i, i] for i in range(n)]
    low_p, high_p = reduce(np.minimum, dp), reduce(np.maximum, dp)
    low_q, high_q = reduce(np.minimum, dq), reduce(np.maximum, dq)
    with np.errstate(invalid="ignore", divide="ignore"):
        swap = _reduction_swap(np.nan_to_num(high_p / low_p, nan=np.inf),
                               np.nan_to_num(high_q / low_q, nan=np.inf), p, q)
    c = tri.solve_lower(lp, lq, swap, out=lq)
    z = np.moveaxis(tri.gram_lower(c, upper=n <= 3, out=lp), (0, 1), (-2, -1))
    bad = ~((low_p > 0) & (low_q > 0) & np.isfinite(high_p) & np.isfinite(high_q))
    if not np.any(bad):
        return _log_norm(mx.eigvalsh(z, symmetric=True))
    out = _log_norm(mx.eigvalsh(np.where(bad[..., None, None], np.eye(n), z), symmetric=True))
    out[bad] = _pair_distances_lapack(p[bad], q[bad])
    return out


def _cholesky_lapack(x: Array, upper: bool = False) -> Array:
    """LAPACK's Cholesky factors of a batch (read from its lower triangles; ``upper``: their
    transposes), NaN for the matrices that are not numerically positive definite."""
    def factor(a: Array) -> Array:
        return np.linalg.cholesky(a, upper=upper)

    try:
        return split_batch(factor, x, core_ndim=2)
    except np.linalg.LinAlgError:
        out = np.full(x.shape, np.nan)
        for i in np.ndindex(x.shape[:-2]):  # LAPACK refused the batch: one by one
            try:
                out[i] = factor(x[i])
            except np.linalg.LinAlgError:
                pass
        return out


def _first_of_pair(p: Array, q: Array) -> Array:
    """Per pair, whether Q comes before P in an order of matrices (by X_00 + X_01 / 2, then by
    their first differing entry): a choice symmetric in P and Q."""
    kp, kq = p[..., 0, 0] + 0.5 * p[..., 0, 1], q[..., 0, 0] + 0.5 * q[..., 0, 1]
    first = kq < kp
    tie = kq == kp
    if np.any(tie):
        first = np.where(tie, _lexicographically_less(q, p), first)
    return first


def _ordered(p: Array, q: Array, swap: Array) -> tuple[Array, Array]:
    """(F, G): (P, Q) for each pair, exchanged where ``swap`` (copies of whole matrices)."""
    idx = np.nonzero(swap)
    if not idx[0].size:
        return p, q
    f, g = p.copy(), q.copy()
    f[idx], g[idx] = q[idx], p[idx]
    return f, g


def _pair_distances_inverse(p: Array, q: Array) -> Array:
    """rho(P_i, Q_i) from the eigenvalues of U^T G U, with F, G the pair ordered by
    ``_first_of_pair`` (symmetric in P and Q) and U = R^-1 for F = R^T R (R = L^T, the upper
    Cholesky factor), inverted by blocks (``_triangular.inverse_blocked``): one Cholesky
    factor, the inverse and two matrix products, on contiguous operands. Pairs whose factor is
    not ``mx.WELL_CONDITIONED`` (|R|_F |R^-1|_F, above which a product with an explicit inverse
    loses digits that forward substitution keeps; |R|_F^2 is the trace of F), or not positive
    definite, are recomputed by ``_pair_distances_lapack``. The inverse takes the factor's place
    and the products those of the ordered copies: no batch-sized array beyond the factor and
    the copies (fresh ones cost cache misses or page faults)."""
    f, g = _ordered(p, q, _first_of_pair(p, q))
    u = tri.inverse_blocked(_cholesky_lapack(f, upper=True), lower=False, overwrite=True)
    with np.errstate(invalid="ignore", over="ignore"):
        ok = np.trace(f, axis1=-2, axis2=-1) * _squared_frobenius(u) <= mx.WELL_CONDITIONED**2
        ug = np.matmul(np.swapaxes(u, -1, -2), g, out=f if f is not p else None)
        z = np.matmul(ug, u, out=g if g is not q else None)
    if np.all(ok):
        return _log_norm(mx.eigvalsh(z, symmetric=True))
    out = _log_norm(mx.eigvalsh(np.where(ok[..., None, None], z, np.eye(p.shape[-1])), symmetric=True))
    out[~ok] = _pair_distances_lapack(p[~ok], q[~ok])
    return out


def _squared_frobenius(a: Array) -> Array:
    """|A|_F^2 per matrix, as the dot product of each flattened matrix with itself (a BLAS dot:
    a third to a half of einsum's time for n = 16..32)."""
    flat = a.reshape(a.shape[:-2] + (1, -1))
    return (flat @ np.swapaxes(flat, -1, -2))[..., 0, 0]


def _lexicographically_less(a: Array, b: Array) -> Array:
    """Per matrix: a < b in the order of their first differing entry (a deterministic tie-break)."""
    a = a.reshape(a.shape[:-2] + (-1,))
    b = b.reshape(b.shape[:-2] + (-1,))
    differ = a != b
    first = np.argmax(differ, axis=-1)[..., None]
    return np.take_along_axis(a, first, -1)[..., 0] < np.take_along_axis(b, first, -1)[..., 0]


def _side_by_side(a: Array) -> Array:
    """(..., N, n, n) -> (..., n, N n): the records' matrices side by side, so that
    sum_i A_i B_i^T is one product of two of them."""
    a = np.swapaxes(a, -3, -2)
    return a.reshape(a.shape[:-2] + (-1,))


def _hessian_coefficients(lam: Array, logs: Array) -> Array:
    """h(s_j - s_k) = ((s_j - s_k) / 2) coth((s_j - s_k) / 2) for eigenvalues lam = e^s, from
    coth((s_j - s_k) / 2) = (l_j + l_k) / (l_j - l_k) (divisions, no tanh); the series
    1 + x^2 / 12 where |s_j - s_k| < 1e-4."""
    gap = logs[..., :, None] - logs[..., None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = (lam[..., :, None] + lam[..., None, :]) / (lam[..., :, None] - lam[..., None, :])
        return np.where(np.abs(gap) < 1e-4, 1.0 + gap * gap / 12.0, 0.5 * gap * ratio)


#: Largest n for which ``MeanHessian.solve`` forms the Hessian as a matrix and solves exactly;
#: beyond it conjugate gradients cost less (a Fréchet mean of 2000 records took 1.1x as long with
#: the matrix at n = 4, 3x at n = 6, 10x at n = 12).
EXPLICIT_MAX = 3


class MeanHessian:
    """The Riemannian Hessian of F(P) = 1/2 sum_i w_i rho(P, X_i)^2 at P = L L^T, in whitened
    coordinates Z = L^-1 xi L^-T (where the metric is the Frobenius product).

    On a locally symmetric space the Hessian of 1/2 rho(., X)^2 at P is diagonal in the
    eigenbasis of the Jacobi operator R(., S) S along S = Log_P X, with eigenvalue
    sqrt(-k) coth(sqrt(-k)) on an eigenspace of eigenvalue k < 0 (1 where k = 0), from the Jacobi
    fields along the geodesic (Ferreira, Xavier, Costeira & Barroso 2013, Newton algorithms for
    Riemannian distance related problems on connected locally symmetric manifolds). On SPD, with
    the whitened record V diag(e^s) V^T, R(Z, S) S = -[[Z, S], S] / 4 has eigenvalue -(s_j - s_k)^2 / 4 on the
    symmetric elementary matrix E_jk of the basis V, so
    Hess F [Z] = sum_i w_i V_i (h(s_ij - s_ik) o V_i^T Z V_i) V_i^T with h(x) = (x/2) coth(x/2) >= 1:
    positive definite, and near the identity for concentrated data. Blocks of records add (+);
    a product runs the blocks on the thread pool.
    """

    def __init__(self, l: Array, linv: Array, terms: list[tuple[Array, Array, Array, Array]]):
        """``terms``: blocks of records as (eigenvalues l_i, their logs s_i, eigenvectors V_i,
        weights w_i) of the whitened records."""
        self.l, self.linv, self.terms = l, linv, terms
        self._ready: list[tuple[Array, Array, Array] | None] = [None] * len(terms)

    def __add__(self, other: MeanHessian) -> MeanHessian:
        return MeanHessian(self.l, self.linv, self.terms + other.terms)

    def _term(self, i: int, z: Array) -> Array:
        if self._ready[i] is None:
            lam, logs, vecs, w = self.terms[i]
            coef = w[..., None, None] * _hessian_coefficients(lam, logs)
            self._ready[i] = vecs, coef, np.swapaxes(_side_by_side(vecs), -1, -2)
        vecs, coef, stacked_t = self._ready[i]
        y = coef * (np.swapaxes(vecs, -1, -2) @ np.expand_dims(z, -3) @ vecs)
        return _side_by_side(vecs @ y) @ stacked_t

    def __call__(self, z: Array) -> Array:
        """Hess F applied to whitened tangent vectors z (..., n, n)."""
        return mx.sym(sum(map_parts(lambda i: self._term(i, z), list(range(len(self.terms))))))

    def matrix(self) -> Array:
        """Hess F as a (dim x dim) matrix in the orthonormal coordinates of ``mx.sym_to_coords``
        (whitened): sum_i sum_{j <= k} w_i h(s_ij - s_ik) c_ijk c_ijk^T, c_ijk the coordinates of
        the unit basis matrix (v_j v_k^T + v_k v_j^T) / |.| of record i. Cheap for small n only."""
        n = self.l.shape[-1]
        j, k = mx.triu(n)
        a, b = mx.triu(n, 1)
        size = np.where(j == k, 2.0, np.sqrt(2.0))
        total = 0.0
        for lam, logs, vecs, w in self.terms:
            vj, vk = np.swapaxes(vecs[..., j], -1, -2), np.swapaxes(vecs[..., k], -1, -2)
            off = np.sqrt(2.0) * (vj[..., a] * vk[..., b] + vk[..., a] * vj[..., b])
            c = np.concatenate([2.0 * vj * vk, off], axis=-1) / size[:, None]
            h = (w[..., None, None] * _hessian_coefficients(lam, logs))[..., j, k]
            rows = c.shape[:-3] + (-1, c.shape[-1])
            total = total + np.swapaxes((h[..., None] * c).reshape(rows), -1, -2) @ c.reshape(rows)
        return total

    def solve(self, g: Array, rtol: Array) -> Array:
        """The Newton direction Hess F^-1 g for a tangent vector g at P (..., n, n), in whitened
        coordinates: for n <= 3 exactly, from ``matrix``; otherwise by conjugate gradients from
        0, stopped at residual <= rtol |g| (per data set) or after dim steps."""
        b = mx.congruence(self.linv, g, lower=True)
        n = b.shape[-1]
        if n <= EXPLICIT_MAX:
            z = mx.coords_to_sym(np.linalg.solve(self.matrix(), mx.sym_to_coords(b)[..., None])[..., 0], n)
            return mx.congruence(self.l, z, lower=True)
        z, r, d = np.zeros_like(b), b.copy(), b.copy()
        rr = mx.frob(r, r)
        goal = np.asarray(rtol) ** 2 * mx.frob(b, b)
        for _ in range(n * (n + 1) // 2):
            if np.all(rr <= goal):
                break
            hd = self(d)
            dhd = mx.frob(d, hd)
            alpha = np.where(dhd > 0, rr / np.where(dhd > 0, dhd, 1.0), 0.0)[..., None, None]
            z, r = z + alpha * d, r - alpha * hd
            rr, rr_old = mx.frob(r, r), rr
            d = r + np.where(rr_old > 0, rr / np.where(rr_old > 0, rr_old, 1.0), 0.0)[..., None, None] * d
        return mx.congruence(self.l, z, lower=True)


class AffineInvariantSPD(SPD):
    """SPD(n) with g_P(U, V) = tr(P^-1 U P^-1 V); computations whiten by the Cholesky factor of P."""

    @property
    def eigen_laplace_size(self) -> int:
        return self.n

    def condition_numbers(self, x: Array) -> Array:
        return cond.condition_numbers(x)

    def cap_condition(self, x: Array, max_condition: float, margin: bool = True) -> Array:
        """Log-eigenvalues clipped to a window of width log K (``_condition.cap_condition``)."""
        return cond.cap_condition(x, max_condition, margin)

    def capped_gradient_rounding(self, center: Array, radius: float,
                                 max_condition: float) -> float:
        """eps n^2 (4 kappa + 2 r K), kappa = min(min(K, cond(C) e^(sqrt 2 r))^2, e^(2 sqrt 2 r))
        (derived in ``_condition.capped_gradient_rounding``)."""
        return cond.capped_gradient_rounding(self.n, center, radius, max_condition)

    def ambient_radius(self, center: Array, radius: float) -> float:
        """lambda_max(center) (e^r - 1) (Reimherr et al. 2021, supplement A.2.2, Proposition 1,
        moved from I to the center by congruence)."""
        return float(np.linalg.eigvalsh(center)[-1] * np.expm1(radius))

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        return (-0.5 if self.n > 1 else 0.0, 0.0)

    @staticmethod
    def _factor(p: Array) -> tuple[Array, Array]:
        return mx.cholesky(p)

    @staticmethod
    def _whiten(linv: Array, x: Array, exact: bool = True) -> Array:
        """L^-1 X L^-T (``exact=False``: for an eigendecomposition, ``mx.congruence``)."""
        return mx.congruence(linv, x, lower=True, exact=exact)

    def _unwhiten(self, l: Array, z: Array, f) -> Array:
        """L f(Z) L^T (Z from ``_whiten``). For n > 3 from one eigendecomposition
        Z = V diag(w) V^T as (L V) f(w) (L V)^T, which folds the congruence into the
        reconstruction (``_from_eig_folded``)."""
        if self.n <= 3:
            return mx.congruence(l, mx.funcm(z, f), lower=True)
        w, v = mx.eigh(z, symmetric=True)
        return _from_eig_folded(l, v, f(w), spare=z)

    @threaded
    def exp(self, p: Array, v: Array) -> Array:
        """Exp_P(V) = L expm(L^-1 V L^-T) L^T with P = L L^T (for n > 3 expm by scaling and
        squaring where it is accurate, ``expm_sym``)."""
        l, linv = self._factor(p)
        z = self._whiten(linv, v)
        if self.n <= 3:
            return self._unwhiten(l, z, np.exp)
        return mx.congruence(l, mx.expm_sym(z), lower=True)

    @threaded
    def log(self, p: Array, q: Array) -> Array:
        """Log_P(Q) = L logm(L^-1 Q L^-T) L^T."""
        l, linv = self._factor(p)
        return self._unwhiten(l, self._whiten(linv, q, exact=self.n <= 3), np.log)

    def karcher_start(self, x: Array, weights: Array) -> Array:
        """The arithmetic mean sum_i w_i X_i (positive definite)."""
        return weighted_sum(x, weights, 2)

    newton_mean = True

    def mean_log_and_value(self, p: Array, x: Array, weights: Array) -> tuple[Array, Array]:
        """L (sum_i w_i logm(L^-1 X_i L^-T)) L^T (the sum taken before mapping back), and
        1/2 sum_i w_i |logm(L^-1 X_i L^-T)|_F^2; closed forms for n <= 3."""
        if self.n > 3:
            return self.mean_log_value_and_hessian(p, x, weights)[:2]
        l, linv = self._factor(p)
        logs = mx.funcm(self._whiten(np.expand_dims(linv, -3), x), np.log)
        weights = np.asarray(weights, dtype=float)
        value = 0.5 * np.sum(weights * mx.frob(logs, logs), axis=-1)
        return mx.congruence(l, weighted_sum(logs, weights, 2), lower=True), value

    def mean_log_value_and_hessian(self, p: Array, x: Array, weights: Array
                                   ) -> tuple[Array, Array, MeanHessian]:
        """``mean_log_and_value`` from one eigendecomposition V_i diag(l_i) V_i^T per whitened
        record (sum_i w_i V_i diag(log l_i) V_i^T as one product of the stacked eigenvectors),
        and the Hessian of F at p (``MeanHessian``) from the same eigendecompositions."""
        l, linv = self._factor(p)
        lam, vecs = mx.eigh(self._whiten(np.expand_dims(linv, -3), x, exact=False), symmetric=True)
        logs = np.log(lam)
        weights = np.asarray(weights, dtype=float)
        value = 0.5 * np.sum(weights * rowdot(logs, logs), axis=-1)
        total = _side_by_side(vecs * (weights[..., None] * logs)[..., None, :]) @ np.swapaxes(
            _side_by_side(vecs), -1, -2)
        return (mx.congruence(l, total, lower=True), value,
                MeanHessian(l, linv, [(lam, logs, vecs, weights)]))

    @threaded
    def dist(self, p: Array, q: Array) -> Array:
        """rho(P, Q) = |logm(P^-1/2 Q P^-1/2)|_F, from the generalised eigenvalues of (Q, P).

        The pencil is reduced by forward substitution with a Cholesky factor, chosen by a rule
        symmetric in P and Q, so that rho(P, Q) and rho(Q, P) agree to the last bit: the factor of
        the argument that is one matrix against a batch of the other (one factorisation); for
        batches of equal size, per pair, the factor with the smaller diagonal ratio
        max L_ii / min L_ii (a condition estimate: the more accurate reduction).
        """
        p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
        if p.shape[:-2] != q.shape[:-2] and min(p.ndim, q.ndim) == 2:
            base, other = (p, q) if p.ndim == 2 else (q, p)
            l = np.linalg.cholesky(mx.sym(base))  # whiten forms its inverse itself
            return _log_norm(mx.eigvalsh(mx.whiten(l, other, exact=False), symmetric=True))
        p, q = np.broadcast_arrays(p, q)
        pairs = p.size // self.n**2
        if self.n <= ENTRYWISE_MAX_N and pairs >= ENTRYWISE_MIN_PAIRS:
            return _pair_distances_entrywise(p, q)
        if self.n > ENTRYWISE_MAX_N and pairs >= INVERSE_MIN_PAIRS:
            return _pair_distances_inverse(p, q)
        return _pair_distances_lapack(p, q)

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        _, linv = self._factor(p)
        return mx.frob(self._whiten(linv, u), self._whiten(linv, v))

    def norm(self, p: Array, v: Array) -> Array:
        """|V|_P = |L^-1 V L^-T|_F: ``inner(p, v, v)`` whitening v once instead of twice (the
        same values; DP-RGD clips every per-record gradient by it each step)."""
        _, linv = self._factor(p)
        z = self._whiten(linv, v)
        return np.sqrt(np.maximum(mx.frob(z, z), 0.0))

    @threaded
    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """Gamma(V) = E V E^T with E = L sqrtm(L^-1 Q L^-T) L^-1. For n > 3, from
        L^-1 Q L^-T = U diag(w) U^T, as E^T = (L^-T U) diag(sqrt w) (U^T L^T): three products
        whose operands BLAS reads in place, then Gamma(V) = (E^T)^T V E^T (in the buffers of the
        whitened Q and of (L^-T U) diag(sqrt w): fewer fresh batch-sized arrays)."""
        l, linv = self._factor(p)
        if self.n <= 3:
            e = mx.matmul(mx.matmul(l, mx.funcm(self._whiten(linv, q), np.sqrt)), linv)
            return mx.congruence(e, v)
        z = self._whiten(linv, q, exact=False)
        w, u = mx.eigh(z, symmetric=True)
        nt = np.ascontiguousarray(np.swapaxes(linv, -1, -2)) @ u
        nt *= np.sqrt(w)[..., None, :]
        if z.shape != u.shape:  # broadcast shapes: no buffer to reuse
            z = np.empty(u.shape)
        et = np.matmul(nt, np.matmul(np.swapaxes(u, -1, -2), np.swapaxes(l, -1, -2), out=z), out=u)
        spare = (z, nt) if np.broadcast_shapes(et.shape, np.shape(v)) == et.shape else (None, None)
        return mx.sym(np.matmul(np.matmul(np.swapaxes(et, -1, -2), v, out=spare[0]), et, out=spare[1]))

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """In the frame whitened by P = L L^T, with L^-1 V L^-T = U diag(l) U^T: transport e back
        (Z = U^T L^-1 e L^-T U, entry (i, j) times exp(-(l_i + l_j)/2)); the Jacobi operator has
        eigenvalues -(l_i - l_j)^2/4 on E_ij, so d_p scales entry (i, j) by cosh(g_ij) and d_v by
        sinh(g_ij)/g_ij, g_ij = |l_i - l_j|/2; then map back by L U . U^T L^T."""
        l, linv = self._factor(p)
        lam, vecs = mx.eigh(self._whiten(linv, v), symmetric=True)
        lu = mx.matmul(l, vecs)
        z = mx.congruence(np.swapaxes(vecs, -1, -2), self._whiten(linv, e))
        z = z * np.exp(-0.5 * (lam[..., :, None] + lam[..., None, :]))
        cosh, sinhc = cosh_sinhc(0.5 * np.abs(lam[..., :, None] - lam[..., None, :]))
        return mx.congruence(lu, cosh * z), mx.congruence(lu, sinhc * z)

    def _record_frame(self, p: Array, v: Array, x: Array, a: Array) -> tuple[Array, tuple]:
        """The frame of the geodesics t -> Exp_p(t x_i v): with P = L L^T and L^-1 V L^-T =
        U diag(l) U^T (one eigendecomposition for every record, as x_i V has the same
        eigenvectors), the symmetric a_i in T_{Exp_p(x_i v)} as D_i M a_i M^T D_i, M = U^T L^-1,
        D_i = diag(exp(-x_i l/2)) (transported back to p, in the frame); and what ``_mean_back``
        needs."""
        l, linv = self._factor(p)
        lam, vecs = mx.eigh(self._whiten(linv, v), symmetric=True)
        x = np.asarray(x, dtype=float)
        xs = x.reshape(x.shape + (1,) * len(self.point_shape))
        frame = mx.matmul(np.swapaxes(vecs, -1, -2), linv)
        total = np.expand_dims(lam[..., :, None] + lam[..., None, :], -3)
        iu, ju = mx.triu(self.n, 1)
        gaps = np.expand_dims(np.abs(lam[..., iu] - lam[..., ju]), -2)
        moved = mx.congruence(np.expand_dims(frame, -3), a) * np.exp(-0.5 * xs * total)
        return moved, (xs[..., 0], gaps, mx.matmul(l, vecs))

    @staticmethod
    def _mean_back(z: Array, frame: tuple) -> tuple[Array, Array]:
        """The Jacobi fields' adjoints on E_jk are cosh and sinhc(x_i |l_j - l_k|/2) (one on the
        diagonal): their means over the records, on the diagonal and the upper triangle only (the
        fields are symmetric), mapped back by L U . U^T L^T."""
        xs, gaps, lu = frame
        n = z.shape[-1]
        iu, ju = mx.triu(n, 1)
        off, diag = z[..., iu, ju], np.diagonal(z, axis1=-2, axis2=-1)
        cosh, sinhc = cosh_sinhc(0.5 * np.abs(xs) * gaps)
        return (mx.congruence(lu, mx.from_triangle(np.mean(diag, axis=-2), np.mean(cosh * off, axis=-2))),
                mx.congruence(lu, mx.from_triangle(np.mean(xs * diag, axis=-2),
                                                   np.mean(xs * sinhc * off, axis=-2))))

    def mean_exp_adjoints(self, p: Array, v: Array, x: Array, e: Array) -> tuple[Array, Array]:
        """``exp_adjoints`` averaged over records with shooting vectors x_i v, in the records'
        shared frame (``_record_frame``): one congruence and entrywise scalings per record."""
        return self._mean_back(*self._record_frame(p, v, x, e))

    def mean_residual_adjoints(self, p: Array, v: Array, x: Array, y: Array,
                               tau: float | None = None) -> tuple[Array, Array, Array]:
        """In the records' frame: yhat_i = F_i F_i^T with F_i = L U D_i^-1, so
        Log_{yhat_i}(y_i) = F_i E_i F_i^T with E_i = logm(D_i M y_i M^T D_i), rho_i = |E_i|_F,
        and that residual carried back to p by the transport of ``exp_adjoints`` is E_i itself.
        Per record: one congruence by the shared M, one symmetric logarithm, entrywise scalings;
        no exponential, no second factorisation."""
        w, frame = self._record_frame(p, v, x, y)
        e = mx.funcm(w, np.log)
        rho = np.sqrt(mx.frob(e, e))
        if tau is not None:
            with np.errstate(invalid="ignore"):
                clipped = e * np.minimum(1.0, tau / np.maximum(rho, 1e-300))[..., None, None]
            e = zero_where_not_finite(clipped, 2)
        return (*self._mean_back(e, frame), rho)

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        """P sym(G) P."""
        p = np.asarray(p, dtype=float)
        return mx.sym(p @ mx.sym(g) @ p)

    def to_coords(self, p: Array, v: Array) -> Array:
        """Orthonormal coordinates of L^-1 V L^-T (basis L E_ij L^T)."""
        _, linv = self._factor(p)
        return mx.sym_to_coords(self._whiten(linv, v))

    def from_coords(self, p: Array, c: Array) -> Array:
        l, _ = self._factor(p)
        return mx.congruence(l, mx.coords_to_sym(c, self.n), lower=True)

    def volume_density(self, p: Array, v: Array) -> Array:
        """prod_{i<j} sinh(|l_i - l_j|/2) / (|l_i - l_j|/2), l the eigenvalues of L^-1 V L^-T.

        The Jacobi operator in direction V has eigenvalues -(l_i - l_j)^2/4 (Hajri et al. 2016).
        """
        _, linv = self._factor(p)
        lam = mx.eigvalsh(self._whiten(linv, v), symmetric=True)
        iu = mx.triu(self.n, 1)
        gaps = 0.5 * np.abs(lam[..., iu[0]] - lam[..., iu[1]])
        return np.exp(np.einsum("...i->...", log_sinhc(gaps)))

    def max_volume_density(self, radius: float) -> float:
        """Each gap |l_i - l_j|/2 is at most radius/sqrt(2) when sum l_i^2 <= radius^2."""
        pairs = self.n * (self.n - 1) // 2
        return float(np.exp(pairs * log_sinhc(radius / np.sqrt(2.0))))


class LogEuclideanSPD(SPD):
    """SPD(n) with g_P(U, V) = <D log_P(U), D log_P(V)>_F (Arsigny et al. 2007), a flat metric.

    Fréchet derivatives of log and exp use the Daleckii-Krein divided differences.
    """

    def radial_volume(self) -> tuple[str, float, float]:
        return "flat", 0.0, np.inf

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        return (0.0, 0.0)

    @staticmethod
    def _dlog(p: Array) -> tuple[Array, Array, Array]:
        """Eigenvalues, eigenvectors and log divided differences of P."""
        w, u = mx.eigh(p)
        return w, u, mx.divided_differences_log(w)

    def _log_coords(self, p: Array, v: Array) -> Array:
        """D log_P[V]."""
        _, u, g = self._dlog(p)
        return mx.frechet_derivative(u, g, mx.sym(v))

    @staticmethod
    def _in_basis(u: Array, x: Array) -> Array:
        return mx.congruence(np.swapaxes(u, -1, -2), x)

    @threaded
    def exp(self, p: Array, v: Array) -> Array:
        """Exp_P(V) = expm(logm P + D log_P[V]) = expm(U A U^T), A = diag(log w) + G o (U^T V U);
        for n > 3 as U expm(A) U^T = (U Y) diag(e^a) (U Y)^T from A = Y diag(a) Y^T
        (``_from_eig_folded``: no congruence before the eigendecomposition)."""
        w, u, g = self._dlog(p)
        inner = g * self._in_basis(u, v)
        idx = np.arange(self.n)
        inner[..., idx, idx] += np.log(w)
        if self.n <= 3:
            return mx.funcm(mx.congruence(u, inner), np.exp)
        a, y = mx.eigh(inner, symmetric=True)
        return _from_eig_folded(u, y, np.exp(a), spare=inner)

    def _dexp_at_log(self, p: Array, s: Array, minus: Array | float | None = None) -> Array:
        """D exp_{logm P}[S - minus logm P] (D exp_{logm P} is the inverse of D log_P), computed in
        the eigenbasis U of P, where logm P is diagonal."""
        w, u = mx.eigh(p)
        diff = self._in_basis(u, s)
        if minus is not None:
            idx = np.arange(self.n)
            diff[..., idx, idx] -= np.asarray(minus)[..., None] * np.log(w)
        return mx.congruence(u, mx.divided_differences_exp(np.log(w)) * diff)

    @threaded
    def log(self, p: Array, q: Array) -> Array:
        """Log_P(Q) = D exp_{logm P}[logm Q - logm P]; for n > 3 with logm Q = V diag(log l) V^T
        taken to P's eigenbasis U in one step, U^T logm Q U = (U^T V) diag(log l) (U^T V)^T
        (``_from_eig_folded``), instead of forming logm Q first."""
        if self.n <= 3:
            return self._dexp_at_log(p, mx.funcm(q, np.log), 1.0)
        lam, vq = mx.eigh(q)
        w, u = mx.eigh(p)
        diff = _from_eig_folded(np.swapaxes(u, -1, -2), vq, np.log(lam))
        idx = np.arange(self.n)
        diff[..., idx, idx] -= np.log(w)
        return mx.congruence(u, mx.divided_differences_exp(np.log(w)) * diff)

    def mean_log_and_value(self, p: Array, x: Array, weights: Array) -> tuple[Array, Array]:
        """D exp_{logm P}[sum_i w_i logm X_i - (sum_i w_i) logm P] (one matrix logarithm per point)
        and 1/2 sum_i w_i |logm X_i - logm P|_F^2."""
        logs = mx.funcm(x, np.log)
        diff = logs - np.expand_dims(mx.funcm(p, np.log), -3)
        value = 0.5 * np.sum(np.asarray(weights) * mx.frob(diff, diff), axis=-1)
        return self._dexp_at_log(p, weighted_sum(logs, weights, 2), np.sum(weights, axis=-1)), value

    @threaded
    def dist(self, p: Array, q: Array) -> Array:
        return np.linalg.norm(mx.funcm(q, np.log) - mx.funcm(p, np.log), axis=(-2, -1))

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        _, vecs, g = self._dlog(p)
        du = mx.frechet_derivative(vecs, g, mx.sym(u))
        dv = mx.frechet_derivative(vecs, g, mx.sym(v))
        return mx.frob(du, dv)

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """D exp_{log Q}[D log_P[V]]: translation in log coordinates."""
        return self._dexp_at_log(q, self._log_coords(p, v))

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """The metric is flat: both adjoints transport e back to P."""
        return (self.transport(self.exp(p, v), p, e),) * 2

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        """(D log_P)^-2 applied to sym(G), as D log_P is self-adjoint for the Frobenius product."""
        return self._dexp_at_log(p, self._dexp_at_log(p, mx.sym(g)))

    def to_coords(self, p: Array, v: Array) -> Array:
        return mx.sym_to_coords(self._log_coords(p, v))

    def from_coords(self, p: Array, c: Array) -> Array:
        return self._dexp_at_log(p, mx.coords_to_sym(c, self.n))

    def volume_density(self, p: Array, v: Array) -> Array:
        return np.ones(np.broadcast_shapes(np.shape(p), np.shape(v))[:-2])
