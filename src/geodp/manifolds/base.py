"""The manifold protocol shared by every geometry in geodp.

Every method is vectorised over leading batch dimensions: a point array has shape
``(..., *point_shape)`` and the batch dimensions of the arguments broadcast against each other.
Tangent vectors are stored in the same ambient representation as points.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from ._special import cosh_sinhc, sinc
from .capabilities import optional

Array = np.ndarray


def size_tuple(size: int | tuple[int, ...] | None) -> tuple[int, ...]:
    """A sample ``size`` (None, an int or a tuple) as a shape tuple."""
    if size is None:
        return ()
    return (int(size),) if np.isscalar(size) else tuple(int(s) for s in size)


def integer_size(value: object, name: str, minimum: int = 1) -> int:
    """A manifold's size argument checked to be an integer >= ``minimum``.

    Parameters
    ----------
    value : object
        What the caller passed: a Python or NumPy integer (a bool, a float such as 2.5 or 2.0 and a
        string are refused rather than rounded, so ``Sphere(2.5)`` cannot silently become S^2).
    name : str
        The constructor's keyword, named in the error.
    minimum : int
        The smallest size the family allows.

    Returns
    -------
    int
        ``value`` as a Python int.
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, got {value!r} ({type(value).__name__})")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def rowdot(a: Array, b: Array) -> Array:
    """sum_i a_i b_i over the last axis; written out for vectors of length <= 4, where that beats
    einsum's inner loop."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape[-1] > 4:
        return np.einsum("...i,...i->...", a, b)
    out = a[..., 0] * b[..., 0]
    for i in range(1, a.shape[-1]):
        out = out + a[..., i] * b[..., i]
    return out


def weighted_sum(x: Array, weights: Array, point_ndim: int) -> Array:
    """sum_i w_i x_i over the sample axis of x (..., n, *point_shape), as one matrix product."""
    x = np.asarray(x, dtype=float)
    shape = x.shape[x.ndim - point_ndim:]
    flat = x.reshape(x.shape[:x.ndim - point_ndim] + (-1,))
    total = np.matmul(np.asarray(weights, dtype=float)[..., None, :], flat)[..., 0, :]
    return total.reshape(total.shape[:-1] + shape)


def space_form_mean_log(p: Array, x: Array, weights: Array, dual_p: Array,
                        ratio: Callable[[Array], Array], sign: float,
                        radius: float) -> tuple[Array, Array]:
    """(sum_i w_i Log_p(x_i), 1/2 sum_i w_i rho(p, x_i)^2) on a sphere (sign = 1) or hyperboloid
    (sign = -1) of radius R, where Log_p(x) = ratio(c) (x - c p) with c = cos(theta) =
    <x, dual_p> (or cosh(theta)) and ratio(c) = theta/sin(theta) (or theta/sinh(theta)). Two
    matrix-vector products over the data: sum_i a_i x_i - (sum_i a_i c_i) p with
    a_i = w_i ratio(c_i); rho = R theta = R ratio(c) sqrt(sign (1 - c^2)), no second
    transcendental."""
    c = np.matmul(x, dual_p[..., :, None])[..., 0]
    w = np.asarray(weights, dtype=float)
    r = ratio(c)
    a = w * r
    grad = np.matmul(a[..., None, :], x)[..., 0, :] - np.sum(a * c, axis=-1)[..., None] * p
    theta2 = r * r * np.maximum(sign * (1.0 - c * c), 0.0)
    return grad, 0.5 * radius**2 * np.sum(w * theta2, axis=-1)


def space_form_exp_adjoints(p: Array, v: Array, e: Array, sign: float, radius: float,
                            inner: Callable[[Array, Array], Array]) -> tuple[Array, Array]:
    """``Manifold.exp_adjoints`` on a sphere (sign = 1) or hyperboloid (sign = -1) of radius R.

    With t = |v|/R and u = v/|v|, the geodesic's unit velocity at Exp_p(v) is
    e1 = -sign sn(t) p/R + cs(t) u (sn, cs = sin, cos or sinh, cosh); parallel transport back to p
    maps e1 to u and fixes the rest of e (orthogonal to p and u). In a parallel frame the Jacobi
    fields scale the part orthogonal to the geodesic by cs(t) (d_p) and sn(t)/t (d_v) and leave
    the parallel part as it is, so each adjoint is that same scaling of the transported e.
    """
    p, v, e = (np.asarray(a, dtype=float) for a in (p, v, e))
    size, u = _length_and_direction(p, v, inner)
    sn, cs, snc = _space_form_jacobi(size / radius, sign)
    e1 = (-sign * sn / radius)[..., None] * p + cs[..., None] * u
    b = inner(p, e1, e)
    perp = e - b[..., None] * e1
    par = b[..., None] * u
    return (_onto_tangent(p, par + cs[..., None] * perp, sign, radius, inner),
            _onto_tangent(p, par + snc[..., None] * perp, sign, radius, inner))


def _length_and_direction(p: Array, v: Array, inner: Callable) -> tuple[Array, Array]:
    """|v| and v/|v| (0 where v = 0)."""
    size = np.sqrt(np.maximum(inner(p, v, v), 0.0))
    return size, v / np.where(size > 0, size, 1.0)[..., None]


def _space_form_jacobi(t: Array, sign: float) -> tuple[Array, Array, Array]:
    """sn(t), cs(t) and sn(t)/t: sin, cos on a sphere (sign = 1), sinh, cosh on a hyperboloid."""
    if sign > 0:
        return np.sin(t), np.cos(t), sinc(t)
    cs, snc = cosh_sinhc(t)
    return snc * t, cs, snc


def _onto_tangent(p: Array, r: Array, sign: float, radius: float, inner: Callable) -> Array:
    """r with its component along p removed: rounding at a far Exp_p(v), amplified by cs, would
    otherwise leave T_p."""
    return r - (sign * inner(p, p, r) / radius**2)[..., None] * p


def space_form_mean_exp_adjoints(p: Array, v: Array, x: Array, e: Array, sign: float, radius: float,
                                 inner: Callable[[Array, Array], Array]
                                 ) -> tuple[Array, Array]:
    """``Manifold.mean_exp_adjoints`` on a sphere (sign = 1) or hyperboloid (sign = -1): the
    record-by-record formula of ``space_form_exp_adjoints`` averaged in closed form.

    For the record x_i (v_i = x_i v, t_i = |x_i| |v| / R, u_i = sign(x_i) u, u = v/|v|), with
    b_i = <e1_i, e_i> and e1_i = a_i p + cs_i u_i (a_i = -sign sn_i / R), the adjoints are
    cs_i e_i + (1 - cs_i^2) b_i u_i - cs_i a_i b_i p and snc_i e_i + (1 - snc_i cs_i) b_i u_i -
    snc_i a_i b_i p. As p and u are shared, their means are weighted sums of the e_i plus a
    multiple of u, and of p, which the final projection onto T_p removes: two products over the
    records instead of a dozen per-record vector operations.
    """
    p, v, e = (np.asarray(a, dtype=float) for a in (p, v, e))
    x = np.asarray(x, dtype=float)
    n = x.shape[-1]
    size, u = _length_and_direction(p, v, inner)
    sn, cs, snc = _space_form_jacobi(np.abs(x) * size[..., None] / radius, sign)
    a = -sign * sn / radius
    s = np.sign(x)
    b = a * inner(p[..., None, :], p[..., None, :], e) + cs * s * inner(p[..., None, :], u[..., None, :], e)
    w = np.full(n, 1.0 / n)

    def mean_of(c_e: Array, c_u: Array) -> Array:
        return (np.matmul((w * c_e)[..., None, :], e)[..., 0, :]
                + np.sum(w * c_u, axis=-1)[..., None] * u)

    dp = mean_of(cs, (1.0 - cs * cs) * b * s)
    dv = mean_of(x * snc, x * (1.0 - snc * cs) * b * s)
    return (_onto_tangent(p, dp, sign, radius, inner), _onto_tangent(p, dv, sign, radius, inner))


#: ``random_ball`` gives up (after 10^6 proposals) when it keeps fewer than this share of them.
BALL_MIN_RATE = 1e-4


class InvalidPoints(ValueError):
    """Points that are not on the manifold, or hold NaN or infinite values. The message names
    neither how many nor which (the points may be records: their positions are data
    statistics); ``bad``, the boolean mask over the batch (None for a single point), says so for
    the data curator."""

    def __init__(self, message: str, bad: Array | None = None):
        super().__init__(message)
        self.bad = None if bad is None or not np.ndim(bad) else np.asarray(bad)

    def __reduce__(self):
        return type(self), (str(self), self.bad), self.__dict__


def zero_where_not_finite(e: Array, nd: int) -> Array:
    """``e`` ``(..., *point_shape)`` (nd point dimensions) with every point that is not finite
    set to 0. A record's clipped residual that double precision cannot form (an SPD record of
    condition near 1e16 whitened by a footpoint) then contributes nothing, so every record's term
    of a clipped-residual gradient stays within its sensitivity bound whatever the rounding: a map
    of the record and the evaluation point alone, never of the other records."""
    ok = np.isfinite(e).reshape(e.shape[:e.ndim - nd] + (-1,)).all(axis=-1)
    return np.where(ok.reshape(ok.shape + (1,) * nd), e, 0.0)


class Manifold(ABC):
    """A complete Riemannian manifold, vectorised over leading batch dimensions.

    The required core (abstract here): ``dim``, ``point_shape``, ``inner``, ``exp``, ``project``,
    ``to_tangent``, ``to_coords``/``from_coords`` (an isometry T_p -> R^dim), ``origin`` and the
    point/tangent defects behind ``check_point``/``check_tangent``. Everything else is an
    optional capability (``@optional``: ``log`` and ``dist``, ``transport``, ``exp_adjoints``,
    ``volume_density``, ``curvature_bounds``, ``injectivity_radius``, ``egrad_to_rgrad``,
    ``radial_volume``, ``eigen_laplace_size``, ``diameter``, ``before_cut_locus``,
    ``eigenvalue_range``, ``norm_rounding``, ``condition_numbers``, ``cap_condition``,
    ``capped_gradient_rounding``): a manifold without it raises ``MissingCapability`` naming
    itself and the method, and ``capabilities.has`` says so up front.
    ``tolerance`` is the distance from the manifold (in the ambient representation) that
    ``check_point`` and ``check_tangent`` accept.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> p, q = m.origin(), m.random_point(0)
    >>> v = m.log(p, q)
    >>> bool(np.allclose(m.exp(p, v), q)), bool(np.isclose(m.norm(p, v), m.dist(p, q)))
    (True, True)
    >>> m.curvature_bounds, m.injectivity_radius
    ((1.0, 1.0), 3.141592653589793)
    """

    dim: int
    point_shape: tuple[int, ...]
    tolerance: float = 1e-8
    blockwise: bool = True
    """Whether large batches are evaluated in cache-sized blocks on geodp's threads; False where
    the work is in BLAS/LAPACK calls that thread themselves (their threads would compete)."""
    symmetric_space: bool = False
    """Riemannian symmetric space (every manifold of geodp: space forms, SPD, Kendall's CP^(k-2)).
    The geodesic symmetry at the midpoint of p and q = Exp_p(xi) is an isometry exchanging them,
    so J_p(xi) = J_q(Log_q p): a random walk's volume (Hastings) factor is exactly one."""

    # ----------------------------------------------------------------- geometry facts
    @property
    @optional
    def curvature_bounds(self) -> tuple[float, float]:
        """Lower and upper bounds (k_min, k_max) of the sectional curvature."""

    @property
    @optional
    def injectivity_radius(self) -> float:
        """Infimum over points of the injectivity radius (``inf`` for Hadamard manifolds)."""

    @property
    def is_hadamard(self) -> bool:
        """True when the manifold is complete, simply connected and non-positively curved
        (Exp_p is then a global diffeomorphism and the injectivity radius is infinite); False
        when its curvature or injectivity radius is not known."""
        from .capabilities import has

        if not (has(self, "curvature_bounds") and has(self, "injectivity_radius")):
            return False
        return self.curvature_bounds[1] <= 0.0 and not np.isfinite(self.injectivity_radius)

    @abstractmethod
    def origin(self) -> Array:
        """A fixed, data-independent point of the manifold (the identity, a pole, an origin)."""

    def random_point(self, rng: np.random.Generator | int | None = None) -> Array:
        """A random point: Exp at ``origin()`` of a standard normal tangent vector (not uniform;
        for tests and starting points that must not depend on data)."""
        o = self.origin()
        return self.exp(o, self.from_coords(o, as_generator(rng).standard_normal(self.dim)))

    def to_ambient(self, x: Array) -> Array:
        """Ambient coordinates (..., D) of points or tangent vectors: the representation
        flattened (SPD: the upper triangle, vech)."""
        x = np.asarray(x, dtype=float)
        return x.reshape(x.shape[: x.ndim - len(self.point_shape)] + (-1,))

    def from_ambient(self, y: Array) -> Array:
        """Inverse of ``to_ambient`` (an ambient array, not necessarily on the manifold)."""
        y = np.asarray(y, dtype=float)
        return y.reshape(y.shape[:-1] + self.point_shape)

    def off_manifold(self, x: Array) -> Array:
        """Whether each ambient array x ``(..., *point_shape)`` lies off the manifold (beyond
        ``tolerance``, or where its defect cannot be computed)."""
        try:
            return self._point_defect(x) > self.tolerance
        except (ValueError, FloatingPointError):
            return np.ones(x.shape[: x.ndim - len(self.point_shape)], dtype=bool)

    @optional
    def ambient_radius(self, center: Array, radius: float) -> float:
        """Radius of a ball of the ambient coordinates (``to_ambient``) that contains the
        geodesic ball B_radius(center): the Euclidean baseline's sensitivity needs it."""

    @optional
    def radial_volume(self) -> tuple[str, float, float]:
        """(family, c, largest radius) of an isotropic manifold, whose volume in geodesic polar
        coordinates is r^(d-1) times a function of r alone: "flat" (c = 0), "sphere" (sin(c r) /
        (c r))^(d-1), "hyperbolic" (sinh(c r)/(c r))^(d-1), or "kendall" (CP^m of holomorphic
        curvature 4). The Riemannian Laplace's exact polar sampler needs it."""

    @property
    @optional
    def diameter(self) -> float:
        """The largest distance between two points (``inf`` on a non-compact manifold)."""

    @optional
    def before_cut_locus(self, p: Array, v: Array) -> Array:
        """Whether each tangent vector v at p lies in the open domain D_p inside the tangent cut
        locus of p: bool, shape the broadcast batch shape of p and v.

        D_p = {v : the geodesic Exp_p(t v), t in [0, 1], minimises past t = 1}. Exp_p maps D_p
        diffeomorphically onto M minus the cut locus of p, a set of full measure, and
        rho(p, Exp_p v) = ``|v|`` on D_p (Chavel 2006, Riemannian Geometry, Sec. III.2; Sakai 1996,
        Riemannian Geometry, Sec. III.4): integrals over M pull back to D_p with the weight
        ``volume_density``. The exact tangent-rejection sampler of the Riemannian Laplace needs
        it (with ``diameter``, which bounds ``|v|`` on D_p).
        """

    @property
    @optional
    def eigen_laplace_size(self) -> int:
        """n of affine-invariant SPD(n), whose Riemannian Laplace factorises over a Haar
        rotation and eigenvalues (Hajri et al. 2016): the exact SPD sampler needs it."""

    @optional
    def eigenvalue_range(self, center: Array, radius: float) -> tuple[float, float]:
        """Bounds (lo, hi) on the eigenvalues of every point of B_radius(center), on manifolds of
        matrices whose magnitudes double precision must hold (SPD): a public ball is refused
        where they leave ``data_ball.EIGENVALUE_RANGE``."""

    @optional
    def norm_rounding(self, center: Array, radius: float) -> float:
        """An estimate of the relative rounding error of tangent norms (and so of distances and
        gradient norms) computed at the points of B_radius(center), on models whose precision
        degrades away from an origin (the hyperboloid): a public ball is refused where it
        exceeds ``data_ball.MAX_NORM_ROUNDING``."""

    @optional
    def condition_numbers(self, x: Array) -> Array:
        """The condition number of each point of ``x`` ``(..., *point_shape)``, on manifolds whose
        points have one and on which the set {cond <= K} is geodesically convex (affine-invariant
        SPD): the records' public cap ``max_condition`` is checked with it."""

    @optional
    def cap_condition(self, x: Array, max_condition: float, margin: bool = True) -> Array:
        """The metric projection of each point of ``x`` onto {cond <= max_condition}: the
        per-record map of ``clip_data`` under a condition cap (``margin``: a little below it, so
        that a capped record's recomputed condition stays within the cap), and the certified
        mean's (``margin=False``)."""

    @optional
    def capped_gradient_rounding(self, center: Array, radius: float,
                                 max_condition: float) -> float:
        """A worst-case bound on the rounding error that ``gradient_rounding`` estimates, over
        the points of B_radius(center) of condition at most ``max_condition``."""

    # ----------------------------------------------------------------- maps
    @abstractmethod
    def exp(self, p: Array, v: Array) -> Array:
        """Riemannian exponential map Exp_p(v)."""

    @optional
    def log(self, p: Array, q: Array) -> Array:
        """Riemannian logarithm Log_p(q): the initial velocity of the minimising geodesic."""

    def log_or_nan(self, p: Array, q: Array) -> Array:
        """Log_p(q), NaN where q lies on the cut locus of p and no single shortest geodesic
        joins them (the sphere's antipode, a rotation by pi), where ``log`` raises.

        A total map of each pair, for callers that must not branch on a record (clipping into a
        public or released ball, ``learn.data_ball``): what to do with a NaN row is theirs to
        fix. Manifolds whose ``log`` is defined everywhere (or, like the Grassmannian, picks one
        geodesic at the cut locus) inherit ``log`` itself; those whose ``log`` raises there
        override it.
        """
        return self.log(p, q)

    @abstractmethod
    def inner(self, p: Array, u: Array, v: Array) -> Array:
        """Riemannian inner product g_p(u, v)."""

    #: Whether ``mean_log_value_and_hessian`` gives the Fréchet function's Hessian with its
    #: gradient pass (``frechet_mean`` then takes Newton steps).
    newton_mean = False

    def mean_log_and_value(self, p: Array, x: Array, weights: Array) -> tuple[Array, Array]:
        """(sum_i w_i Log_p(x_i), F(p) = 1/2 sum_i w_i rho(p, x_i)^2): minus the Riemannian gradient
        of the Fréchet function F, and F itself, in one pass over the data.

        ``x`` has shape ``(..., n, *point_shape)``, ``weights`` (..., n) and ``p`` ``(..., *point_shape)``.
        """
        nd = len(self.point_shape)
        p = np.expand_dims(np.asarray(p, dtype=float), -nd - 1)
        logs = self.log(p, x)
        w = np.asarray(weights, dtype=float)
        grad = np.sum(w.reshape(w.shape + (1,) * nd) * logs, axis=-nd - 1)
        return grad, 0.5 * np.sum(w * self.inner(p, logs, logs), axis=-1)

    def gradient_rounding(self, center: Array, radius: float) -> float:
        """A public bound, up to a modest constant, on the double-precision rounding error of the
        computed sum_i w_i Log_p(x_i) (in the norm at p) for p and every x_i in the ball
        B_radius(center): machine epsilon times the dimension, the size of the ball's ambient
        coordinates and 1 + radius. ``statistics.mean_tolerance`` sets the Fréchet mean's
        stopping tolerance from it. Manifolds whose coordinates or conditioning grow across the
        ball (SPD, the hyperboloid) override it."""
        size = float(np.max(np.abs(self.to_ambient(center)), initial=0.0))
        return float(np.finfo(float).eps * self.dim * (1.0 + radius) * (1.0 + size + radius))

    def karcher_start(self, x: Array, weights: Array) -> Array:
        """Starting point of the Karcher iteration for the data x ``(..., n, *point_shape)``: the first
        data point here; manifolds with a cheap extrinsic mean override it (fewer iterations)."""
        return np.take(np.asarray(x, dtype=float), 0, axis=-len(self.point_shape) - 1)

    def norm(self, p: Array, v: Array) -> Array:
        """Riemannian norm ``|v|_p``."""
        return np.sqrt(np.maximum(self.inner(p, v, v), 0.0))

    def dist(self, p: Array, q: Array) -> Array:
        """Geodesic distance rho(p, q) = ``|Log_p(q)|_p``."""
        return self.norm(p, self.log(p, q))

    @optional
    def transport(self, p: Array, q: Array, v: Array) -> Array:
        """Parallel transport of v in T_p along the minimising geodesic from p to q."""

    @optional
    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """(d_p Exp_p(v)^dagger e, d_v Exp_p(v)^dagger e) in T_p, for e in T_{Exp_p(v)}.

        d_p Exp_p(v) moves p with v parallel transported along the move; both differentials are
        Jacobi fields along gamma(t) = Exp_p(t v) evaluated at t = 1 (J(0) = delta, J'(0) = 0 and
        J(0) = 0, J'(0) = delta), and their adjoints carry e back along gamma (Fletcher 2011,
        Section 4.1), which the geodesic-regression gradients need.
        """

    def mean_exp_adjoints(self, p: Array, v: Array, x: Array, e: Array) -> tuple[Array, Array]:
        """((1/n) sum_i d_p Exp_p(x_i v)^dagger e_i, (1/n) sum_i x_i d_v Exp_p(x_i v)^dagger e_i):
        the sums in Fletcher's (2011) regression gradients, for covariates x (n,) and e ``(..., n,
        *point_shape)`` with e_i in T_{Exp_p(x_i v)}; p and v ``(..., *point_shape)`` may carry batch
        dimensions. Space forms, Kendall's shapes and SPD override this with a closed form of
        the mean."""
        nd = len(self.point_shape)
        x = np.asarray(x, dtype=float)
        xs = x.reshape(x.shape + (1,) * nd)
        ap, av = self.exp_adjoints(np.expand_dims(p, -nd - 1), xs * np.expand_dims(v, -nd - 1), e)
        return np.mean(ap, axis=-nd - 1), np.mean(xs * av, axis=-nd - 1)

    def mean_residual_adjoints(self, p: Array, v: Array, x: Array, y: Array,
                               tau: float | None = None) -> tuple[Array, Array, Array]:
        """The residuals of the geodesic t -> Exp_p(t v) at covariates x (n,) carried back to p:
        ``mean_exp_adjoints`` of eps_i = Log_{yhat_i}(y_i), yhat_i = Exp_p(x_i v), each scaled to
        norm at most ``tau`` when given, and rho_i = ``|Log_{yhat_i}(y_i)|`` (..., n). With ``tau``,
        a residual that cannot be formed (cut locus: ``log_or_nan``; overflow) is 0
        (``zero_where_not_finite``), so each record's term keeps its bound. The regression
        gradient's one pass over the records; SPD overrides it."""
        nd = len(self.point_shape)
        x = np.asarray(x, dtype=float)
        xs = x.reshape(x.shape + (1,) * nd)
        yhat = self.exp(np.expand_dims(p, -nd - 1), xs * np.expand_dims(v, -nd - 1))
        eps = self.log(yhat, y) if tau is None else self.log_or_nan(yhat, y)
        rho = self.norm(yhat, eps)
        if tau is not None:
            factor = np.minimum(1.0, tau / np.maximum(rho, 1e-300))
            with np.errstate(invalid="ignore"):
                eps = zero_where_not_finite(eps * factor.reshape(factor.shape + (1,) * nd), nd)
        return (*self.mean_exp_adjoints(p, v, x, eps), rho)

    # ----------------------------------------------------------------- projections
    @abstractmethod
    def project(self, x: Array) -> Array:
        """Nearest point (or canonical retraction) of an ambient array onto the manifold."""

    @abstractmethod
    def to_tangent(self, p: Array, x: Array) -> Array:
        """Orthogonal projection of an ambient array onto T_p."""

    @optional
    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        """Riemannian gradient at p from the Euclidean (ambient) gradient g."""

    # ----------------------------------------------------------------- coordinates
    @abstractmethod
    def to_coords(self, p: Array, v: Array) -> Array:
        """Coordinates (..., dim) of v in the orthonormal basis ``tangent_basis(p)``."""

    @abstractmethod
    def from_coords(self, p: Array, c: Array) -> Array:
        """Tangent vector at p with orthonormal coordinates c (inverse of ``to_coords``)."""

    def tangent_basis(self, p: Array) -> Array:
        """Orthonormal basis of T_p, shape ``(..., dim, *point_shape)``."""
        p = np.asarray(p, dtype=float)
        p_b = np.expand_dims(p, -len(self.point_shape) - 1)
        return self.from_coords(p_b, np.eye(self.dim))

    # ----------------------------------------------------------------- volume
    @optional
    def volume_density(self, p: Array, v: Array) -> Array:
        """Jacobian determinant of Exp_p at v, in orthonormal frames at p and Exp_p(v).

        The Riemannian volume in geodesic polar coordinates around p is
        ``volume_density(p, v) * dv`` with dv the Lebesgue measure of T_p.
        """

    def max_volume_density(self, radius: float) -> float:
        """An upper bound of ``volume_density(p, v)`` over all p and ``|v|`` <= radius."""
        return 1.0

    # ----------------------------------------------------------------- checks
    def _batch_shape(self, x: Array, what: str) -> tuple[int, ...]:
        nd = len(self.point_shape)
        if x.ndim < nd or x.shape[x.ndim - nd:] != self.point_shape:
            raise ValueError(
                f"{what} must have trailing shape {self.point_shape} for {self!r}, "
                f"got an array of shape {x.shape}"
            )
        batch = x.shape[: x.ndim - nd]
        finite = np.isfinite(x).reshape(batch + (int(np.prod(self.point_shape)),)).all(axis=-1)
        if not np.all(finite):
            which = f"one or more {what}s contain" if batch else f"the {what} contains"
            raise InvalidPoints(f"{which} NaN or infinite values", ~finite)
        return batch

    @abstractmethod
    def _point_defect(self, x: Array) -> Array:
        """Distance-like measure of how far each x is from the manifold (0 on it)."""

    @abstractmethod
    def _tangent_defect(self, p: Array, v: Array) -> Array:
        """Distance-like measure of how far v is from T_p (0 when tangent)."""

    def check_point(self, x: Array) -> Array:
        """Return x as a float64 array, or raise ``InvalidPoints`` (a ``ValueError``) if it is not
        on the manifold (which points: its ``bad`` mask, never its message).

        Points given in a lower precision (float32, float16) are cast to float64, judged
        against a tolerance scaled to that precision (``precision_tolerance``; their rounding
        alone exceeds the float64 tolerance) and then projected onto the manifold, each record
        on its own, so that later float64 checks accept them.
        """
        tolerance = self.precision_tolerance(x)
        x = np.asarray(x, dtype=float)
        self._batch_shape(x, "point")
        defect = self._point_defect(x)
        bad = ~(defect <= tolerance)
        if np.any(bad):
            raise InvalidPoints(
                f"{'one or more points are' if bad.ndim else 'the point is'} not on {self!r}: "
                f"the defect exceeds the tolerance {tolerance:g}{self._defect_hint()}", bad)
        return x if tolerance == self.tolerance else self.project(x)

    def precision_tolerance(self, x: Array) -> float:
        """The tolerance ``check_point`` applies to ``x``: ``tolerance``, or 64 units in the last
        place of x's floating-point type where that is coarser than float64 (float32: 7.6e-6)."""
        dtype = getattr(x, "dtype", None)
        if dtype is None or not np.issubdtype(dtype, np.floating):
            return self.tolerance
        return max(self.tolerance, 64 * float(np.finfo(dtype).eps))

    def _defect_hint(self) -> str:
        return ""

    def check_tangent(self, p: Array, v: Array) -> Array:
        """Return v as a float array, or raise ``ValueError`` if it is not tangent at p."""
        v = np.asarray(v, dtype=float)
        self._batch_shape(v, "tangent vector")
        defect = self._tangent_defect(np.asarray(p, dtype=float), v)
        bad = ~(defect <= self.tolerance)
        if np.any(bad):
            raise ValueError(
                f"{int(np.sum(bad))} of {bad.size} vectors are not tangent to {self!r}: "
                f"largest defect {float(np.max(defect)):.3g} exceeds the tolerance "
                f"{self.tolerance:g}"
            )
        return v

    # ----------------------------------------------------------------- sampling helpers
    def random_direction(self, p: Array, size: int | tuple[int, ...] | None,
                         rng: np.random.Generator) -> Array:
        """Unit tangent vectors at p, uniform on the unit sphere of T_p.

        The result has shape ``size + batch(p) + point_shape``.
        """
        p = np.asarray(p, dtype=float)
        batch = p.shape[: p.ndim - len(self.point_shape)]
        size = size_tuple(size)
        c = rng.standard_normal(size + batch + (self.dim,))
        c /= np.sqrt(rowdot(c, c))[..., None]
        return self.from_coords(p, c)

    def random_ball(self, center: Array, radius: float,
                    size: int | tuple[int, ...] | None = None,
                    rng: np.random.Generator | None = None, *, give_up: bool = True) -> Array:
        """Points uniform (for the Riemannian volume) in the geodesic ball B_radius(center).

        Geodesic polar coordinates: a uniform direction u and a radius t are accepted with
        probability ``volume_density(center, t u) / max_volume_density(radius)``, with t drawn
        from the Euclidean law t^(dim-1) on [0, radius]. After 10^6 proposals keeping fewer than
        ``BALL_MIN_RATE`` of them it raises a RuntimeError, unless ``give_up=False`` (a caller
        whose batch sizes depend on data, which must not turn them into a refusal).
        """
        if not (0.0 < radius <= self.injectivity_radius):
            raise ValueError(
                f"radius must lie in (0, injectivity radius {self.injectivity_radius:g}], "
                f"got {radius}"
            )
        rng = as_generator(rng)
        center = self.check_point(center)
        if center.ndim != len(self.point_shape):
            raise ValueError("random_ball takes a single center point")
        size = size_tuple(size)
        total = int(np.prod(size, dtype=int))
        bound = self.max_volume_density(radius)
        out = np.empty((total,) + self.point_shape)
        filled, proposed = 0, 0
        while filled < total:
            if give_up and proposed >= 10**6 and filled < BALL_MIN_RATE * proposed:
                raise RuntimeError(
                    f"uniform sampling of a ball of radius {radius:g} on {self!r} accepts fewer "
                    f"than {BALL_MIN_RATE:g} of its proposals (the volume density grows too "
                    f"fast); use a smaller radius")
            m = min(max(2 * (total - filled), 64), 10**6)
            proposed += m
            c = rng.standard_normal((m, self.dim))
            c *= (radius * rng.random(m) ** (1.0 / self.dim) / np.sqrt(rowdot(c, c)))[:, None]
            v = self.from_coords(center, c)
            keep = rng.random(m) * bound <= self.volume_density(center, v)
            accepted = self.exp(center, v[keep])[: total - filled]
            out[filled: filled + len(accepted)] = accepted
            filled += len(accepted)
        return out.reshape(size + self.point_shape)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dim})"


def manifold_first(function: str, *args):
    """geodp's one argument order for estimators: the manifold, then the data. Returns ``args``
    unchanged, or raises a TypeError that shows the expected call (the data-first order of
    earlier, unreleased versions included)."""
    if isinstance(args[0], Manifold) and not any(isinstance(a, Manifold) for a in args[1:]):
        return args
    raise TypeError(f"{function} takes a Manifold first and then the data: {function}(manifold, "
                    f"data, ...); got {', '.join(type(a).__name__ for a in args)}")


def represents_distance(manifold: Manifold, point: Array, distance: float) -> bool:
    """Whether double precision holds the points at ``distance`` from ``point`` (probed along
    the first coordinate direction; far hyperbolic and SPD points overflow)."""
    with np.errstate(over="ignore", invalid="ignore"):
        probe = manifold.exp(point, manifold.from_coords(point, distance * np.eye(manifold.dim)[0]))
    return bool(np.all(np.isfinite(probe)))


def reproject(manifold: Manifold, x: Array) -> Array:
    """x projected back onto the model where its representation drifts from itself by rounding
    far from an origin (manifolds with ``norm_rounding``: Exp far out on the hyperboloid misses
    the sheet by more than ``check_point``'s tolerance), x itself elsewhere: other projections
    are not rounding-sized moves (``SPD.project`` floors eigenvalues at 1e-12 of the largest,
    which moved a certified mean and clipped records of an accepted ball out of it)."""
    from .capabilities import has

    return manifold.project(x) if has(manifold, "norm_rounding") else x


def as_generator(rng: np.random.Generator | int | None) -> np.random.Generator:
    """A ``numpy.random.Generator`` from a generator, a seed, or fresh OS entropy."""
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or (isinstance(rng, (int, np.integer)) and not isinstance(rng, bool) and rng >= 0):
        return np.random.default_rng(rng)
    from ..parameters import ParameterError

    raise ParameterError(f"{{rng}} must be a non-negative integer seed (or, from Python, a "
                         f"numpy.random.Generator or None), got {rng!r}", "rng")
