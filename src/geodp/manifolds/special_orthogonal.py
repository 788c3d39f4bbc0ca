"""The rotation group SO(n) with its bi-invariant metric.

Metric and representation
-------------------------
Points are rotation matrices R, shape (..., n, n), R^T R = I, det R = 1. Tangent vectors at R are
stored as ambient n x n matrices V = R A with A skew-symmetric (A = R^T V lies in the Lie
algebra so(n)). The metric is

    g_R(U, V) = (1/2) tr(U^T V),

normalised so that a rotation by the angle theta in one plane, expm(theta (e_j e_i^T - e_i e_j^T)),
lies at distance theta from the identity: on SO(3) the distance between R and R' is the rotation
angle of R^T R' in [0, pi], and SpecialOrthogonal(2) is the unit circle (length 2 pi).

Geometry (Cheeger & Ebin 1975, Ch. 3; Milnor 1976, Section 7): the metric is invariant under
left and right multiplication, its geodesics are R expm(t A), the Levi-Civita connection of
left-invariant fields is nabla_X Y = [X, Y]/2 and the curvature R(X, Y)Z = -[[X, Y], Z]/4, so
the sectional curvature of orthonormal X, Y is |[X, Y]|^2 / 4.
"""

from __future__ import annotations

import numpy as np

from ._special import acos_ratio, sinc
from .base import Array, Manifold, integer_size, weighted_sum
from .capabilities import MissingCapability


def hat(w: Array) -> Array:
    """The skew matrix [w]_x of w (..., 3), with [w]_x y = w x y."""
    w = np.asarray(w, dtype=float)
    z = np.zeros_like(w[..., 0])
    return np.stack([np.stack([z, -w[..., 2], w[..., 1]], -1),
                     np.stack([w[..., 2], z, -w[..., 0]], -1),
                     np.stack([-w[..., 1], w[..., 0], z], -1)], -2)


def vee_skew(m: Array) -> Array:
    """w (..., 3) with [w]_x = (m - m^T)/2, the skew part of m (..., 3, 3)."""
    return 0.5 * np.stack([m[..., 2, 1] - m[..., 1, 2], m[..., 0, 2] - m[..., 2, 0],
                           m[..., 1, 0] - m[..., 0, 1]], -1)


def skew_basis(n: int) -> Array:
    """An orthonormal basis (dim, n, n) of so(n) for g(A, B) = tr(A^T B)/2: the hat matrices of
    e_1, e_2, e_3 for n = 3 (coordinates are then the rotation vector), else e_j e_i^T - e_i e_j^T
    for i < j in row order."""
    if n == 3:
        return hat(np.eye(3))
    i, j = np.triu_indices(n, 1)
    basis = np.zeros((len(i), n, n))
    k = np.arange(len(i))
    basis[k, j, i], basis[k, i, j] = 1.0, -1.0
    return basis


def _mT(a: Array) -> Array:
    return np.swapaxes(a, -1, -2)


def _rodrigues(w: Array) -> Array:
    """expm([w]_x) = I + sinc(t) [w]_x + (1/2) sinc(t/2)^2 [w]_x^2, t = |w| (Rodrigues)."""
    t = np.sqrt(np.sum(w * w, axis=-1))
    k = hat(w)
    a, b = sinc(t), 0.5 * sinc(0.5 * t) ** 2
    return np.eye(3) + a[..., None, None] * k + b[..., None, None] * (k @ k)


def _rotation_vector(m: Array) -> tuple[Array, Array]:
    """The rotation vector w (..., 3) of m (..., 3, 3) in SO(3), expm([w]_x) = m, |w| <= pi, and
    the mask (...) of the rotations by pi, where w is NaN.

    The angle is theta = atan2(|s|, (tr m - 1)/2), s = vee((m - m^T)/2) = sin(theta) u, accurate at
    every angle. Up to a right angle w = (theta / sin theta) s. Beyond it the axis u comes from
    the symmetric part, (m + m^T)/2 - cos(theta) I = (1 - cos theta) u u^T (its largest column),
    and only its sign from s, so the axis stays accurate up to theta = pi; at theta = pi exactly
    (s = 0) both signs are minimising (the cut locus, as the sphere's antipode).
    """
    s = vee_skew(m)
    sin_t = np.sqrt(np.sum(s * s, axis=-1))
    cos_t = 0.5 * (np.trace(m, axis1=-2, axis2=-1) - 1.0)
    theta = np.arctan2(sin_t, cos_t)
    near = cos_t < 0.0
    w = (np.where(near, 1.0, acos_ratio(np.where(near, 1.0, cos_t))))[..., None] * s
    cut = near & (sin_t == 0.0)
    if not np.any(near):
        return w, cut
    b = 0.5 * (m + _mT(m)) - cos_t[..., None, None] * np.eye(3)
    col = np.argmax(np.diagonal(b, axis1=-2, axis2=-1), axis=-1)
    u = np.take_along_axis(b, col[..., None, None], axis=-1)[..., 0]
    with np.errstate(invalid="ignore", divide="ignore"):  # rows with cos_t >= 0 keep w
        u *= np.sign(np.sum(u * s, axis=-1))[..., None] / np.sqrt(np.sum(u * u, axis=-1))[..., None]
    w = np.where(near[..., None], theta[..., None] * u, w)
    return np.where(cut[..., None], np.nan, w), cut


def _expm_skew(a: Array) -> Array:
    """expm(a) of skew a (..., n, n): cos(Theta) + sinc(Theta) a, Theta = sqrt(-a^2) (a = Theta J
    with J a complex structure commuting with Theta), both as functions of the symmetric -a^2.

    Only the skew part of a is used: R^T V is skew to rounding only (R itself is orthogonal to
    rounding), and a symmetric remainder, amplified by the product with R, made the defect of
    repeated steps grow geometrically (a random walk of 50 steps on SO(4) left the group by 2e-6;
    with the skew part, 5000 steps stay within 3e-13)."""
    a = 0.5 * (a - _mT(a))
    lam, q = np.linalg.eigh(-(a @ a))
    t = np.sqrt(np.maximum(lam, 0.0))
    cos_part = (q * np.cos(t)[..., None, :]) @ _mT(q)
    sinc_part = (q * sinc(t)[..., None, :]) @ _mT(q)
    return cos_part + sinc_part @ a


def _logm_rotation(m: Array) -> tuple[Array, Array, Array]:
    """The principal logarithm of rotations m (..., n, n): g(S) K with S, K the symmetric and skew
    parts of m and g(c) = arccos(c)/sqrt(1 - c^2) (m = cos Theta + sin Theta J, so log m =
    Theta J = (Theta / sin Theta) K). S's eigendecomposition is a matrix function, unaffected by
    repeated angles; the error near the angle pi grows like 1e-16 / sin(theta).

    Also returns the mask (...) of the rotations by pi in some plane (the cut locus: the
    logarithm is NaN there) and S's eigenvalues cos(theta_j), clipped to [-1, 1]."""
    sym, skew = 0.5 * (m + _mT(m)), 0.5 * (m - _mT(m))
    lam, q = np.linalg.eigh(sym)
    lam = np.clip(lam, -1.0, 1.0)
    cut = lam[..., 0] == -1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        a = ((q * acos_ratio(lam)[..., None, :]) @ _mT(q)) @ skew
    a = 0.5 * (a - _mT(a))
    return np.where(cut[..., None, None], np.nan, a), cut, lam


class SpecialOrthogonal(Manifold):
    """SO(n), n >= 2, with the bi-invariant metric g_R(U, V) = (1/2) tr(U^T V).

    Points: rotation matrices (..., n, n). Tangent vectors at R: ambient matrices V = R A, A skew
    (``to_tangent`` projects onto them). ``to_coords`` gives the coordinates of A in
    ``skew_basis(n)``, an isometry T_R -> R^(n(n-1)/2); on SO(3) they are the rotation vector of
    R^T Exp_R(V). The distance between R and R' is the norm of the principal logarithm of R^T R'
    (on SO(3), its rotation angle in [0, pi]).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import SpecialOrthogonal
    >>> m = SpecialOrthogonal(3)
    >>> c, s = np.cos(0.3), np.sin(0.3)
    >>> r = np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])
    >>> round(float(m.dist(np.eye(3), r)), 6)   # the rotation angle
    0.3
    """

    symmetric_space = True

    def __init__(self, n: int):
        self.n = integer_size(n, "n", minimum=2)
        self.dim = self.n * (self.n - 1) // 2
        self.point_shape = (self.n, self.n)
        self._basis = skew_basis(self.n)

    def __repr__(self) -> str:
        return f"SpecialOrthogonal({self.n})"

    def origin(self) -> Array:
        """The identity."""
        return np.eye(self.n)

    # ----------------------------------------------------------------- geometry facts
    @property
    def curvature_bounds(self) -> tuple[float, float]:
        """(0, ``|[X, Y]|^2`` / 4 at most): 0 on the circle SO(2), 1/4 on SO(3) (``|[X, Y]| = |x x y|``),
        1/2 for n >= 4 (``|[X, Y]|_F <= |X|_F |Y|_F`` for skew X, Y, Ge 2014, Adv. Math. 251; attained
        on the self-dual so(3) of so(4))."""
        return (0.0, {2: 0.0, 3: 0.25}.get(self.n, 0.5))

    @property
    def injectivity_radius(self) -> float:
        """pi for every n: half the shortest closed geodesic (a full turn in one plane, 2 pi), below
        the conjugate radius pi / sqrt(k_max) >= sqrt(2) pi."""
        return float(np.pi)

    @property
    def diameter(self) -> float:
        """pi sqrt(floor(n/2)): the rotation by pi in floor(n/2) orthogonal planes is farthest from
        the identity (its principal logarithm has every plane angle pi, of norm sqrt(sum theta_i^2))."""
        return float(np.pi * np.sqrt(self.n // 2))

    def before_cut_locus(self, p: Array, v: Array) -> Array:
        """Whether every plane angle of A = R^T V is below pi, i.e. its spectral norm
        sqrt(max eig(-A^2)) < pi: bool, shape the broadcast batch shape of p and v.

        On this domain expm(A) has no eigenvalue -1 and A is its principal logarithm, the only
        logarithm with eigenvalues in the strip ``|Im z|`` < pi (Higham 2008, Functions of Matrices,
        Thm 1.31) and the shortest one (the eigenvalues of any logarithm are i(+-theta_j + 2 pi k)),
        so rho(R, R expm(A)) = ``|A|`` and Exp_R is injective on the domain; its image, the rotations
        R' with det(R^T R' + I) != 0, has a null complement (a proper algebraic subset). The
        ``volume_density`` is positive there: its roots (theta_i +- theta_j)/2 and theta_i/2 lie
        in (-pi, pi).
        """
        a = _mT(np.asarray(p, dtype=float)) @ np.asarray(v, dtype=float)
        return np.linalg.eigvalsh(-(a @ a))[..., -1] < np.pi**2

    def provides(self, name: str) -> bool:
        """Instance-dependent capabilities (``capabilities.has``): the radial volume exists on
        SO(2) and SO(3) only."""
        return name != "radial_volume" or self.n <= 3

    def radial_volume(self) -> tuple[str, float, float]:
        """SO(2) is the unit circle ("sphere", 1, pi); SO(3) is RP^3 = S^3(radius 2)/{+-1}:
        density (sin(r/2)/(r/2))^2 = "sphere" with c = 1/2, d = 3, cut at pi. SO(n >= 4) is not
        isotropic."""
        if self.n > 3:
            raise MissingCapability(f"{self!r} is not isotropic: its volume in polar coordinates "
                                    f"depends on the direction")
        return ("sphere", 1.0, float(np.pi)) if self.n == 2 else ("sphere", 0.5, float(np.pi))

    # ----------------------------------------------------------------- metric and maps
    def inner(self, p: Array, u: Array, v: Array) -> Array:
        return 0.5 * np.sum(np.asarray(u) * np.asarray(v), axis=(-2, -1))

    def _expm(self, a: Array) -> Array:
        if self.n == 3:
            return _rodrigues(vee_skew(a))
        return _expm_skew(a)

    def _logm_or_nan(self, m: Array) -> tuple[Array, Array]:
        """(the principal logarithm of m, NaN at the cut locus; the mask of the cut locus)."""
        if self.n == 3:
            w, cut = _rotation_vector(m)
            return hat(w), cut
        return _logm_rotation(m)[:2]

    def _logm(self, m: Array) -> Array:
        a, cut = self._logm_or_nan(m)
        if np.any(cut):
            raise ValueError("rotation by the angle pi: the logarithm of SO(n) is not defined at "
                             "the cut locus (both senses of rotation in that plane are shortest "
                             "geodesics)")
        return a

    def exp(self, p: Array, v: Array) -> Array:
        """Exp_R(V) = R expm(R^T V) (Rodrigues' formula on SO(3))."""
        p = np.asarray(p, dtype=float)
        return p @ self._expm(_mT(p) @ v)

    def log(self, p: Array, q: Array) -> Array:
        """Log_R(R') = R logm(R^T R'), the principal logarithm; raises at rotation angle pi
        (``log_or_nan`` gives NaN there instead)."""
        p = np.asarray(p, dtype=float)
        return p @ self._logm(_mT(p) @ np.asarray(q, dtype=float))

    def log_or_nan(self, p: Array, q: Array) -> Array:
        """``log``, with NaN where R^T R' turns some plane by pi, instead of raising."""
        p = np.asarray(p, dtype=float)
        return p @ self._logm_or_nan(_mT(p) @ np.asarray(q, dtype=float))[0]

    def dist(self, p: Array, q: Array) -> Array:
        """On SO(3) the rotation angle atan2(``|vee(K)|``, (tr M - 1)/2) of M = R^T R' (K its skew
        part), accurate at every angle; elsewhere ``|Log_R(R')|``, and at the cut locus (a plane
        turned by pi, where the logarithm is not unique but its norm is) sqrt(sum_j theta_j^2 / 2)
        over the eigenvalues cos(theta_j) of M's symmetric part (each plane angle appears twice)."""
        m = _mT(np.asarray(p, dtype=float)) @ np.asarray(q, dtype=float)
        if self.n != 3:
            a, cut, lam = _logm_rotation(m)
            d = np.array(self.norm(p, a))
            d[cut] = np.sqrt(0.5 * np.sum(np.arccos(lam[cut]) ** 2, axis=-1))
            return d
        s = vee_skew(m)
        return np.arctan2(np.sqrt(np.sum(s * s, axis=-1)),
                          0.5 * (np.trace(m, axis1=-2, axis2=-1) - 1.0))

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """R' expm(-A/2) B expm(A/2) for V = R B and R' = R expm(A), A = logm(R^T R').

        A field V(t) = gamma(t) B(t) along gamma(t) = R expm(t A) is parallel when
        B' + [A, B]/2 = 0 (nabla_X Y = [X, Y]/2 for left-invariant fields of a bi-invariant
        metric, Milnor 1976, Section 7), so B(t) = expm(-t A/2) B expm(t A/2).
        """
        p = np.asarray(p, dtype=float)
        a = self._logm(_mT(p) @ np.asarray(q, dtype=float))
        half = self._expm(0.5 * a)
        return np.asarray(q, dtype=float) @ _mT(half) @ (_mT(p) @ v) @ half

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """(R (E + Ad_expm(A) E)/2, R phi(ad_A) E) for V = R A and e = Exp_R(V) E, with
        phi(X) = (e^X - 1)/X = sinc(Theta) + (1 - cos Theta)/Theta^2 X, Theta^2 = -X^2.

        Moving R to R expm(s B) with V parallel transported makes Exp equal to
        R expm(sB/2) expm(A) expm(sB/2) (``transport``), of derivative Exp_R(V) (1 + e^(-ad_A)) B / 2;
        d_V Exp_R(V) R B = Exp_R(V) ((1 - e^(-ad_A))/ad_A) B (the differential of expm, Hall 2015,
        Thm 5.4). ad_A is skew for the bi-invariant metric, so the adjoints replace ad_A by
        -ad_A. Both are evaluated in the coordinates of ``skew_basis`` (on SO(3), ad_A = [a]_x and
        phi(ad_A) is the left Jacobian of SO(3)).
        """
        p = np.asarray(p, dtype=float)
        x = self._ad(_mT(p) @ np.asarray(v, dtype=float))
        eps = self.to_coords(self.exp(p, v), e)[..., None]
        lam, q = np.linalg.eigh(-(x @ x))
        t = np.sqrt(np.maximum(lam, 0.0))
        qt_eps, qt_x_eps = _mT(q) @ eps, _mT(q) @ (x @ eps)
        turned = q @ (np.cos(t)[..., None] * qt_eps + sinc(t)[..., None] * qt_x_eps)
        phi = q @ (sinc(t)[..., None] * qt_eps + 0.5 * sinc(0.5 * t)[..., None] ** 2 * qt_x_eps)
        return (self.from_coords(p, 0.5 * (eps + turned)[..., 0]), self.from_coords(p, phi[..., 0]))

    def _ad(self, a: Array) -> Array:
        """The matrix (..., dim, dim) of ad_A = [A, .] in the coordinates of ``skew_basis``."""
        if self.n == 3:
            return hat(vee_skew(a))
        bracket = a[..., None, :, :] @ self._basis - self._basis @ a[..., None, :, :]
        return 0.5 * np.einsum("kij,...lij->...kl", self._basis, bracket)

    def karcher_start(self, x: Array, weights: Array) -> Array:
        """The projection of the weighted arithmetic mean onto SO(n)."""
        return self.project(weighted_sum(x, weights, 2))

    # ----------------------------------------------------------------- projections
    def project(self, x: Array) -> Array:
        """The nearest rotation in the Frobenius norm: U D W^T from the SVD x = U Sigma W^T, with
        D = diag(1, ..., 1, det(U W^T)) (Umeyama 1991)."""
        u, _, wt = np.linalg.svd(np.asarray(x, dtype=float))
        u[..., -1] *= np.sign(np.linalg.det(u @ wt))[..., None]
        return u @ wt

    def to_tangent(self, p: Array, x: Array) -> Array:
        """R skew(R^T X), skew(a) = (a - a^T)/2: the orthogonal projection onto T_R."""
        p = np.asarray(p, dtype=float)
        a = _mT(p) @ np.asarray(x, dtype=float)
        return p @ (0.5 * (a - _mT(a)))

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        """2 R skew(R^T G): the factor 2 undoes the metric's 1/2."""
        return 2.0 * self.to_tangent(p, g)

    # ----------------------------------------------------------------- coordinates
    def to_coords(self, p: Array, v: Array) -> Array:
        """c_k = g(R B_k, V) = tr(B_k^T R^T V)/2 for the basis B_k of ``skew_basis``."""
        a = _mT(np.asarray(p, dtype=float)) @ np.asarray(v, dtype=float)
        return 0.5 * np.einsum("kij,...ij->...k", self._basis, a)

    def from_coords(self, p: Array, c: Array) -> Array:
        """R sum_k c_k B_k."""
        a = np.tensordot(np.asarray(c, dtype=float), self._basis, axes=(-1, 0))
        return np.asarray(p, dtype=float) @ a

    # ----------------------------------------------------------------- volume
    def volume_density(self, p: Array, v: Array) -> Array:
        """prod over the eigenvalues mu of -ad_A^2 (A = R^T V) of sinc(sqrt(mu)/2): the Jacobi fields
        along R expm(t A) solve J'' = ad_A^2 J / 4. The eigenvalues are (theta_i +- theta_j)^2 and
        (n odd) theta_i^2, each twice, for the plane angles theta_i of A: the product over positive
        roots of (sin(alpha/2)/(alpha/2))^2 (Helgason 1978, Ch. IV, Thm 4.1). On SO(3):
        (sin(theta/2)/(theta/2))^2 = 2 (1 - cos theta)/theta^2, theta = ``|V|``."""
        a = _mT(np.asarray(p, dtype=float)) @ np.asarray(v, dtype=float)
        if self.n == 3:
            w = vee_skew(a)
            return sinc(0.5 * np.sqrt(np.sum(w * w, axis=-1))) ** 2
        ad = self._ad(a)
        mu = np.linalg.eigvalsh(_mT(ad) @ ad)
        return np.prod(sinc(0.5 * np.sqrt(np.maximum(mu, 0.0))), axis=-1)

    # ----------------------------------------------------------------- checks
    def _point_defect(self, x: Array) -> Array:
        eye_defect = np.linalg.norm(_mT(x) @ x - np.eye(self.n), axis=(-2, -1))
        return eye_defect + np.abs(np.linalg.det(x) - 1.0)

    def _defect_hint(self) -> str:
        return " (points must be rotation matrices: R^T R = I, det R = 1)"

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        a = _mT(p) @ v
        return np.linalg.norm(0.5 * (a + _mT(a)), axis=(-2, -1))
