"""The Grassmann manifold Gr(n, k) of k-dimensional subspaces of R^n, with its canonical metric.

A subspace is represented by any n x k matrix Y with orthonormal columns (Y^T Y = I) spanning it;
Y and Y W (W in O(k)) are the same point. Tangent vectors at Y are horizontal lifts: n x k
matrices U with Y^T U = 0, and the metric is g_Y(U, V) = tr(U^T V) (Edelman, Arias & Smith 1998,
Section 2.5; Absil, Mahony & Sepulchre 2008; Bendokat, Zimmermann & Absil 2024, "A Grassmann
manifold handbook"). Horizontal lifts at two bases of one subspace are related by U_{YW} = U_Y W.
"""

from __future__ import annotations

import numpy as np

from ._special import acos_ratio, sinc
from ._threads import threaded
from .base import Array, Manifold, integer_size


def _t(x: Array) -> Array:
    """The transpose of the last two axes."""
    return np.swapaxes(x, -1, -2)


def _frobenius(x: Array) -> Array:
    return np.sqrt(np.einsum("...ij,...ij->...", x, x))


def _aligned(p: Array, q: Array) -> tuple[Array, Array, Array, Array]:
    """(P Q_s, c, R_s, Q_s) for bases p and q (..., n, k), with p^T q = R_s diag(c) Q_s^T (SVD).

    c are the cosines of the principal angles between the subspaces, P = q - p p^T q the part of q
    orthogonal to span(p), and q Q_s R_s^T the basis of span(q) closest to p (orthogonal
    Procrustes), whose columns P Q_s R_s^T and p R_s diag(c) R_s^T show the angles: the columns of
    P Q_s are orthogonal with norms sin(theta_i) (Bjorck & Golub 1973).
    """
    pq = np.matmul(_t(p), q)
    r, c, qt = np.linalg.svd(pq)
    perp = q - np.matmul(p, pq)
    return np.matmul(perp, _t(qt)), np.clip(c, 0.0, 1.0), r, _t(qt)


class Grassmann(Manifold):
    """Gr(n, k): the k-dimensional subspaces of R^n, of dimension k (n - k).

    Points are arrays of shape (..., n, k) with orthonormal columns; ``check_point`` accepts any
    orthonormal basis of a subspace, and every method treats two bases of one subspace as the same
    point (``dist`` between them is 0, ``log`` does not depend on the basis of its second
    argument). Tangent vectors at Y are n x k arrays U with Y^T U = 0 (horizontal lifts at the
    basis Y given), with the canonical metric tr(U^T V).

    For min(k, n - k) >= 2 the sectional curvature ranges over [0, 2] (Wong 1968); for k = 1 or
    n - k = 1, Gr(n, k) is isometric to the real projective space RP^(n-1), of constant curvature
    1 (flat when n = 2, a circle of length pi). The injectivity radius is pi/2: the subspaces with
    a principal angle pi/2 to Y form its cut locus.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Grassmann
    >>> m = Grassmann(3, 1)                        # lines through the origin of R^3
    >>> x, y = np.array([[1.0], [0.0], [0.0]]), np.array([[1.0], [1.0], [0.0]]) / np.sqrt(2)
    >>> round(float(m.dist(x, y)), 6)   # the angle between the lines, pi/4
    0.785398
    >>> round(float(m.dist(x, -x)), 6)  # a basis and its negative span the same line
    0.0
    """

    symmetric_space = True

    def __init__(self, n: int, k: int):
        n, k = integer_size(n, "n", minimum=0), integer_size(k, "k", minimum=0)
        if not 1 <= k < n:
            raise ValueError(f"Grassmann(n, k) needs integers 1 <= k < n, got n = {n}, k = {k}")
        self.ambient, self.k = n, k
        self.dim = k * (n - k)
        self.point_shape = (n, k)

    def __repr__(self) -> str:
        return f"Grassmann({self.ambient}, {self.k})"

    def origin(self) -> Array:
        """The span of the first k coordinate vectors: the first k columns of I_n."""
        return np.eye(self.ambient, self.k)

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        """(0, 2) for min(k, n - k) >= 2; (1, 1) for RP^(n-1) (k = 1 or n - k = 1, n > 2);
        (0, 0) for the circle Gr(2, 1)."""
        if self.dim == 1:
            return (0.0, 0.0)
        if min(self.k, self.ambient - self.k) == 1:
            return (1.0, 1.0)
        return (0.0, 2.0)

    @property
    def injectivity_radius(self) -> float:
        return float(np.pi / 2)

    @property
    def diameter(self) -> float:
        """(pi/2) sqrt(min(k, n - k)): two subspaces at right angles in every principal angle."""
        return float(0.5 * np.pi * np.sqrt(min(self.k, self.ambient - self.k)))

    def before_cut_locus(self, p: Array, v: Array) -> Array:
        """Whether the largest singular value of V, the largest principal angle between span(Y)
        and Exp_Y(V), is below pi/2: bool, shape the batch shape of v.

        Exp_Y(V) = Y W cos(S) W^T + U sin(S) W^T has Y^T Exp_Y(V) = W cos(S) W^T, so its principal
        angles to Y are the singular values theta_i of V while they stay below pi/2: rho = ``|V|``
        there, and ``log`` inverts Exp. The subspaces with a principal angle pi/2 to Y (a null
        set) form the cut locus (Wong 1968; Sakai 1977, "On cut loci of compact symmetric
        spaces"); ``volume_density`` is positive before it (theta_i +- theta_j in (-pi, pi)).
        """
        return np.linalg.norm(np.asarray(v, dtype=float), 2, axis=(-2, -1)) < 0.5 * np.pi

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        """tr(u^T v) over the last two axes."""
        return np.einsum("...ij,...ij->...", u, v)

    @threaded
    def exp(self, p: Array, v: Array) -> Array:
        """Exp_Y(V) = Y W cos(S) W^T + U sin(S) W^T for the thin SVD V = U S W^T (Edelman et al.
        1998, Theorem 2.3): an orthonormal basis of the subspace reached, shape (..., n, k)."""
        u, s, wt = np.linalg.svd(v, full_matrices=False)
        moved = np.matmul(p, _t(wt)) * np.cos(s)[..., None, :] + u * np.sin(s)[..., None, :]
        return np.matmul(moved, wt)

    @threaded
    def log(self, p: Array, q: Array) -> Array:
        """Log_Y1(Y2) = P Q_s diag(theta_i / sin(theta_i)) R_s^T, with Y1^T Y2 = R_s diag(cos(theta))
        Q_s^T and P = (I - Y1 Y1^T) Y2 (``_aligned``): the lift at Y1 of the velocity of the
        geodesic to span(Y2), for any basis Y2 of it.

        The geodesic from Y1 with this velocity ends at the Procrustes basis Y2 Q_s R_s^T (Exp's
        formula with the columns of P Q_s / sin(theta_i) as U), and Y2 -> Y2 W maps Q_s to W^T Q_s
        and P to P W, leaving the result unchanged. The ratio theta/sin(theta) is taken from
        cos(theta) (``acos_ratio``, analytic at theta = 0), so no angle is read from a cosine near
        1, and the length comes from P, exact to rounding near Y1: the Procrustes-aligned logarithm
        of Bendokat, Zimmermann & Absil (2024) without its second SVD. Where a principal angle
        is pi/2 (the cut locus) the result is one of the shortest geodesics' velocities.
        """
        perp, c, r, _ = _aligned(p, q)
        return np.matmul(perp * acos_ratio(c)[..., None, :], _t(r))

    @threaded
    def dist(self, p: Array, q: Array) -> Array:
        """sqrt(sum_i theta_i^2) over the principal angles theta_i, as ``|Log_Y1(Y2)|``."""
        perp, c, _, _ = _aligned(p, q)
        return _frobenius(perp * acos_ratio(c)[..., None, :])

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """Parallel transport along the geodesic from span(p) to span(q) (Edelman et al. 1998,
        Theorem 2.4): for H = Log_p(q) = U diag(theta) W^T (thin SVD),
        tau V = V + (-p W sin(theta) + U (cos(theta) - I)) U^T V, a lift at the Procrustes basis
        q Q_s R_s^T that the geodesic reaches, then carried to the basis q given (times R_s Q_s^T).
        """
        perp, c, r, qs = _aligned(p, q)
        h = np.matmul(perp * acos_ratio(c)[..., None, :], _t(r))
        u, theta, wt = np.linalg.svd(h, full_matrices=False)
        along = np.matmul(_t(u), v)
        turn = (np.matmul(p, _t(wt)) * -np.sin(theta)[..., None, :]
                + u * (np.cos(theta) - 1.0)[..., None, :])
        moved = v + np.matmul(turn, along)
        return np.matmul(moved, np.matmul(r, _t(qs)))

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """(d_p Exp_p(v)^dagger e, d_v Exp_p(v)^dagger e), e a lift at the basis ``exp(p, v)``.

        Exp_p(t v) = G(t) p with G(t) = expm(t [[0, -A^T], [A, 0]]) in the basis [p, Y_perp],
        v = Y_perp A, a one-parameter group of isometries whose differential is the parallel
        transport along the geodesic (beyond the cut locus too): e goes back as G(1)^T e. The
        Jacobi operator is constant in that parallel frame (a symmetric space): R(X, v)v =
        X A^T A + A A^T X - 2 A X^T A for X = Y_perp C. In the singular bases A = P diag(s) W^T
        (C' = P^T C W) it has eigenvalues (s_i - s_j)^2 on the symmetric and (s_i + s_j)^2 on the
        antisymmetric part of the leading m x m block (m = min(k, n - k)) and s_i^2 (s_j^2)
        on the remaining rows (columns): the Jacobi fields scale each by cos(sqrt(lambda)) (d_p,
        J(0) = delta, J'(0) = 0) and sinc(sqrt(lambda)) (d_v), self-adjoint maps.
        """
        p, v, e = (np.asarray(a, dtype=float) for a in (p, v, e))
        comp = self._complement(p)
        pr, s, wt = np.linalg.svd(np.matmul(_t(comp), v), full_matrices=True)
        back = self._transport_back(p, np.matmul(comp, pr[..., :, :s.shape[-1]]), s, wt, e)
        c = np.matmul(np.matmul(_t(pr), np.matmul(_t(comp), back)), _t(wt))

        def lift(x: Array) -> Array:
            return np.matmul(comp, np.matmul(np.matmul(pr, x), wt))
        return lift(self._jacobi(c, s, np.cos)), lift(self._jacobi(c, s, sinc))

    @staticmethod
    def _transport_back(p: Array, u: Array, s: Array, wt: Array, e: Array) -> Array:
        """G(1)^T e for v = u diag(s) W^T (W the first m rows of wt, transposed), with
        G(1) = I + u (cos(s) - 1) u^T + p W (cos(s) - 1) W^T p^T - p W sin(s) u^T + u sin(s) W^T p^T."""
        w = _t(wt[..., :s.shape[-1], :])
        pw, ue, pe = np.matmul(p, w), np.matmul(_t(u), e), np.matmul(_t(w), np.matmul(_t(p), e))
        cos1, sin = (np.cos(s) - 1.0)[..., :, None], np.sin(s)[..., :, None]
        return e + np.matmul(u, cos1 * ue - sin * pe) + np.matmul(pw, cos1 * pe + sin * ue)

    def _jacobi(self, c: Array, s: Array, f) -> Array:
        """f(sqrt(lambda)) applied to C' (..., n - k, k) along the Jacobi operator's eigenspaces."""
        m = s.shape[-1]
        rows = np.zeros(c.shape[:-2] + (self.ambient - self.k,))
        cols = np.zeros(c.shape[:-2] + (self.k,))
        rows[..., :m], cols[..., :m] = s, s
        out = f(rows[..., :, None] + cols[..., None, :]) * c
        block = c[..., :m, :m]
        sym, anti = 0.5 * (block + _t(block)), 0.5 * (block - _t(block))
        gap = np.abs(s[..., :, None] - s[..., None, :])
        out[..., :m, :m] = f(gap) * sym + f(s[..., :, None] + s[..., None, :]) * anti
        return out

    def project(self, x: Array) -> Array:
        """The nearest orthonormal basis (polar factor U W^T of the thin SVD U S W^T of x)."""
        u, _, wt = np.linalg.svd(np.asarray(x, dtype=float), full_matrices=False)
        return np.matmul(u, wt)

    def to_tangent(self, p: Array, x: Array) -> Array:
        """(I - Y Y^T) X, the horizontal part of X."""
        p = np.asarray(p, dtype=float)
        return x - np.matmul(p, np.matmul(_t(p), x))

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        """(I - Y Y^T) G: the canonical metric is the Euclidean one on horizontal vectors."""
        return self.to_tangent(p, g)

    def _complement(self, p: Array) -> Array:
        """Y_perp (..., n, n - k): the last n - k columns of the complete Householder QR of Y, an
        orthonormal basis of the orthogonal complement of span(Y), deterministic in Y."""
        full, _ = np.linalg.qr(np.asarray(p, dtype=float), mode="complete")
        return full[..., :, self.k:]

    def to_coords(self, p: Array, v: Array) -> Array:
        """vec(Y_perp^T V) (row-major, shape (..., (n - k) k)): the horizontal space is
        {Y_perp B}, and ``|Y_perp B|_F`` = ``|B|_F``, so these coordinates are orthonormal."""
        b = np.matmul(_t(self._complement(p)), v)
        return b.reshape(b.shape[:-2] + (self.dim,))

    def from_coords(self, p: Array, c: Array) -> Array:
        c = np.asarray(c, dtype=float)
        b = c.reshape(c.shape[:-1] + (self.ambient - self.k, self.k))
        return np.matmul(self._complement(p), b)

    def volume_density(self, p: Array, v: Array) -> Array:
        """prod_{i<j} sinc(theta_i - theta_j) sinc(theta_i + theta_j) prod_i sinc(theta_i)^``|n-2k|``
        over the m = min(k, n - k) largest singular values theta_i of V, sinc(x) = sin(x)/x.

        Gr(n, k) = SO(n)/S(O(k) x O(n-k)) is a compact symmetric space of rank m whose restricted
        roots are theta_i +- theta_j (multiplicity 1) and theta_i (multiplicity ``|n - 2k|``); the
        Jacobian of Exp on such a space is prod over positive roots (sin(alpha)/alpha)^(m_alpha)
        (Helgason 1984, Groups and Geometric Analysis, Ch. I, Section 5). k = 1 gives the
        sphere's sinc(``|v|``)^(n-2); the invariant tests check the formula against finite
        differences of Exp.
        """
        m = min(self.k, self.ambient - self.k)
        theta = np.linalg.svd(np.asarray(v, dtype=float), compute_uv=False)[..., :m]
        i, j = np.triu_indices(m, 1)
        pairs = sinc(theta[..., i] - theta[..., j]) * sinc(theta[..., i] + theta[..., j])
        return (np.prod(pairs, axis=-1)
                * np.prod(sinc(theta), axis=-1) ** abs(self.ambient - 2 * self.k))

    def _point_defect(self, x: Array) -> Array:
        """|Y^T Y - I|_F: zero for every orthonormal basis of any subspace."""
        return _frobenius(np.matmul(_t(x), x) - np.eye(self.k))

    def _defect_hint(self) -> str:
        return " (points must have orthonormal columns, Y^T Y = I)"

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        """|Y^T V|_F: the vertical part of V."""
        return _frobenius(np.matmul(_t(p), v))
