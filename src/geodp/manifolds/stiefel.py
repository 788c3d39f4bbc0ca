"""The Stiefel manifold St(n, k) of orthonormal k-frames in R^n, with the embedded metric."""

from __future__ import annotations

import numpy as np

from .base import Array, Manifold, integer_size

#: Coefficients b_0..b_13 of the [13/13] Pade approximant of exp and the 1-norm up to which it
#: is accurate to double precision (Higham 2005, Table 2.3 and eq. 2.3 / Table 10.4).
_PADE13 = (64764752532480000.0, 32382376266240000.0, 7771770303897600.0, 1187353796428800.0,
           129060195264000.0, 10559470521600.0, 670442572800.0, 33522128640.0, 1323241920.0,
           40840800.0, 960960.0, 16380.0, 182.0, 1.0)
_THETA13 = 5.371920351148152


def _t(x: Array) -> Array:
    """The transpose of the last two axes."""
    return np.swapaxes(x, -1, -2)


def _sym(x: Array) -> Array:
    return 0.5 * (x + _t(x))


def _skew(x: Array) -> Array:
    return 0.5 * (x - _t(x))


def expm(x: Array) -> Array:
    """Matrix exponential of a stack (..., m, m) by scaling and squaring with the [13/13] Pade
    approximant (Higham 2005, Algorithm 2.3), each matrix scaled by its own 2^-s_i with
    |x_i|_1 / 2^s_i <= theta_13: six batched products and one batched solve, then s_i squarings
    of each (one batched product per step over the matrices that still need it)."""
    shape = np.shape(x)
    x = np.asarray(x, dtype=float).reshape((-1,) + shape[-2:])
    norm = np.max(np.sum(np.abs(x), axis=-2), axis=-1)
    s = np.maximum(0, np.ceil(np.log2(np.maximum(norm, 1e-300) / _THETA13))).astype(int)
    a = x * np.exp2(-s)[..., None, None]
    b = _PADE13
    eye = np.eye(x.shape[-1])
    a2 = a @ a
    a4 = a2 @ a2
    a6 = a4 @ a2
    u = a @ (a6 @ (b[13] * a6 + b[11] * a4 + b[9] * a2) + b[7] * a6 + b[5] * a4 + b[3] * a2
             + b[1] * eye)
    v = a6 @ (b[12] * a6 + b[10] * a4 + b[8] * a2) + b[6] * a6 + b[4] * a4 + b[2] * a2 + b[0] * eye
    r = np.linalg.solve(v - u, v + u)
    for step in range(int(np.max(s, initial=0))):
        todo = s > step
        r[todo] = r[todo] @ r[todo]
    return r.reshape(shape)


class Stiefel(Manifold):
    """St(n, k) = {Y in R^(n x k) : Y^T Y = I_k}, 1 <= k <= n, points of shape (..., n, k).

    The metric is the EMBEDDED (Euclidean) one, g_Y(U, V) = tr(U^T V), induced by R^(n x k)
    (Edelman, Arias & Smith 1998, Section 2.2); the canonical metric, which weighs the Y A part
    of a tangent vector by 1/2, is the alternative and is not implemented. The tangent space is
    T_Y = {V : sym(Y^T V) = 0} = {Y A + Y_perp B : A skew (k x k), B (n-k) x k}, of dimension
    dim = k(k-1)/2 + (n-k)k.

    There is no closed-form logarithm (nor distance): ``log`` and ``dist`` stay missing
    capabilities, so a mechanism that needs a distance refuses with ``MissingCapability``
    naming 'log'. Curvature bounds, injectivity radius, transport and volume density are not
    provided either.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Stiefel
    >>> m = Stiefel(4, 2)
    >>> y = m.random_point(0)
    >>> bool(np.allclose(y.T @ y, np.eye(2))), m.dim
    (True, 5)
    """

    blockwise = False

    def __init__(self, n: int, k: int):
        n, k = integer_size(n, "n", minimum=0), integer_size(k, "k", minimum=0)
        if not 1 <= k <= n:
            raise ValueError(f"Stiefel(n, k) needs 1 <= k <= n, got n={n}, k={k}")
        self.n, self.k = n, k
        self.point_shape = (n, k)
        self.dim = k * (k - 1) // 2 + (n - k) * k
        self._upper = np.triu_indices(k, 1)

    def __repr__(self) -> str:
        return f"Stiefel({self.n}, {self.k})"

    def origin(self) -> Array:
        """The first k columns of I_n."""
        return np.eye(self.n, self.k)

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        """g(U, V) = tr(U^T V), shape (...)."""
        return np.sum(np.asarray(u, dtype=float) * v, axis=(-2, -1))

    def exp(self, p: Array, v: Array) -> Array:
        """The geodesic of the embedded metric at t = 1 (Edelman, Arias & Smith 1998, eq. 2.7):

        Exp_Y(V) = [Y, V] expm([[A, -S], [I, A]]) I_{2k,k} expm(-A), A = Y^T V, S = V^T V,

        with one 2k x 2k and one k x k matrix exponential per point (``expm``, batched).
        A is taken as the skew part of Y^T V (equal to it for a tangent V).

        Parameters
        ----------
        p : array (..., n, k)
        v : array (..., n, k), tangent at p

        Returns
        -------
        array (..., n, k)
        """
        p, v = np.broadcast_arrays(np.asarray(p, dtype=float), np.asarray(v, dtype=float))
        k = self.k
        a = _skew(_t(p) @ v)
        block = np.empty(p.shape[:-2] + (2 * k, 2 * k))
        block[..., :k, :k] = a
        block[..., :k, k:] = -(_t(v) @ v)
        block[..., k:, :k] = np.eye(k)
        block[..., k:, k:] = a
        e = expm(block)[..., :k] @ expm(-a)
        return p @ e[..., :k, :] + v @ e[..., k:, :]

    def project(self, x: Array) -> Array:
        """The nearest point of St(n, k) in the Frobenius norm: the polar factor U W^T of
        x = U Sigma W^T (for x of full rank k)."""
        u, _, wt = np.linalg.svd(np.asarray(x, dtype=float), full_matrices=False)
        return u @ wt

    def to_tangent(self, p: Array, x: Array) -> Array:
        """The orthogonal projection onto T_Y of the embedded metric: X - Y sym(Y^T X)."""
        p = np.asarray(p, dtype=float)
        return x - p @ _sym(_t(p) @ x)

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        """For the embedded metric the Riemannian gradient is the tangent projection of the
        Euclidean gradient, G - Y sym(Y^T G)."""
        return self.to_tangent(p, g)

    def _complement(self, p: Array) -> Array:
        """Y_perp (..., n, n-k): an orthonormal basis of range(Y)^perp, the last n - k columns
        of the complete (Householder) QR factor of Y; deterministic."""
        return np.linalg.qr(np.asarray(p, dtype=float), mode="complete")[0][..., self.k:]

    def to_coords(self, p: Array, v: Array) -> Array:
        """Coordinates (..., dim) of V = Y A + Y_perp B: sqrt(2) a_ij (i < j, row-major) of
        A = skew(Y^T V), then the entries of B = Y_perp^T V (row-major).

        ``|V|^2`` = tr(A^T A) + tr(B^T B) = 2 sum_{i<j} a_ij^2 + sum b_ij^2, so the map is an
        isometry onto R^dim (the normal part Y sym(Y^T V) of a non-tangent V is dropped).
        """
        p = np.asarray(p, dtype=float)
        a = _skew(_t(p) @ v)[..., self._upper[0], self._upper[1]]
        b = _t(self._complement(p)) @ v
        return np.concatenate([np.sqrt(2.0) * a, b.reshape(b.shape[:-2] + (-1,))], axis=-1)

    def from_coords(self, p: Array, c: Array) -> Array:
        """The tangent vector Y A + Y_perp B with coordinates c (..., dim); inverse of
        ``to_coords``."""
        p, c = np.asarray(p, dtype=float), np.asarray(c, dtype=float)
        m = len(self._upper[0])
        a = np.zeros(c.shape[:-1] + (self.k, self.k))
        a[..., self._upper[0], self._upper[1]] = c[..., :m] / np.sqrt(2.0)
        b = c[..., m:].reshape(c.shape[:-1] + (self.n - self.k, self.k))
        return p @ (a - _t(a)) + self._complement(p) @ b

    def _point_defect(self, x: Array) -> Array:
        """|Y^T Y - I|_F."""
        return np.linalg.norm(_t(x) @ x - np.eye(self.k), axis=(-2, -1))

    def _defect_hint(self) -> str:
        return f" (points must be {self.n} x {self.k} matrices with orthonormal columns)"

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        """|sym(Y^T V)|_F."""
        return np.linalg.norm(_sym(_t(p) @ v), axis=(-2, -1))
