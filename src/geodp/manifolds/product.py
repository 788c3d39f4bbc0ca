"""Products M_1 x ... x M_m of manifolds with the product metric."""

from __future__ import annotations

import numpy as np

from .base import Array, Manifold
from .capabilities import MissingCapability, has


class Product(Manifold):
    """M_1 x ... x M_m with the product metric g = g_1 + ... + g_m.

    A point (and a tangent vector) is one flat array of shape (..., N), N = sum_i prod(point_shape_i):
    the factors' points flattened and concatenated in order (``join``; ``split`` undoes it). Every
    map acts factor-wise and batches like the factors' maps; ``to_coords`` concatenates the
    factors' orthonormal coordinates, so dim = sum_i dim_i.

    An optional capability is present only when every factor has it: ``capabilities.has`` asks
    ``provides`` (so ``has(Product(Sphere(2), Stiefel(4, 2)), "log")`` is False), and calling a
    capability that a factor lacks raises ``MissingCapability`` naming the product, the method
    and that factor.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Euclidean, Product, Sphere
    >>> m = Product(Sphere(2), Euclidean(1))       # a direction and a real number
    >>> p = np.array([0.0, 0.0, 1.0, 0.0])           # the factors' points, concatenated
    >>> q = np.array([1.0, 0.0, 0.0, 1.0])
    >>> round(float(m.dist(p, q)), 6)   # sqrt((pi/2)^2 + 1^2)
    1.862096
    >>> m.point_shape, m.dim
    ((4,), 3)
    """

    blockwise = False

    def __init__(self, *factors: Manifold):
        if not factors or not all(isinstance(f, Manifold) for f in factors):
            raise TypeError(f"Product takes one or more Manifold instances (on the command line: "
                            f"product:sphere:2+euclidean:3), got {factors!r}")
        self.factors = tuple(factors)
        self.sizes = tuple(int(np.prod(f.point_shape, dtype=int)) for f in self.factors)
        self._bounds = np.cumsum((0,) + self.sizes)
        self._dims = np.cumsum((0,) + tuple(f.dim for f in self.factors))
        self.dim = int(self._dims[-1])
        self.point_shape = (int(self._bounds[-1]),)
        self.tolerance = min(f.tolerance for f in self.factors)
        self.symmetric_space = all(f.symmetric_space for f in self.factors)

    def __repr__(self) -> str:
        return f"Product({', '.join(map(repr, self.factors))})"

    # ----------------------------------------------------------------- representation
    def split(self, x: Array) -> list[Array]:
        """The factors' parts of x (..., N): a list of arrays ``(..., *point_shape_i)`` (views)."""
        x = np.asarray(x, dtype=float)
        return [x[..., lo:hi].reshape(x.shape[:-1] + f.point_shape)
                for f, lo, hi in zip(self.factors, self._bounds[:-1], self._bounds[1:])]

    def join(self, parts: list[Array]) -> Array:
        """The flat array (..., N) of the factors' parts ``(..., *point_shape_i)``; their batch
        shapes broadcast."""
        flat = [np.asarray(a, dtype=float).reshape(np.shape(a)[:np.ndim(a) - len(f.point_shape)] + (-1,))
                for f, a in zip(self.factors, parts)]
        batch = np.broadcast_shapes(*(a.shape[:-1] for a in flat))
        return np.concatenate([np.broadcast_to(a, batch + a.shape[-1:]) for a in flat], axis=-1)

    def _split_coords(self, c: Array) -> list[Array]:
        c = np.asarray(c, dtype=float)
        return [c[..., lo:hi] for lo, hi in zip(self._dims[:-1], self._dims[1:])]

    def _map(self, method: str, *arrays: Array) -> list:
        """[factor_i.method(*(array split)_i)] for every factor."""
        parts = [self.split(a) for a in arrays]
        return [getattr(f, method)(*(p[i] for p in parts)) for i, f in enumerate(self.factors)]

    # ----------------------------------------------------------------- capabilities
    def provides(self, name: str) -> bool:
        """Whether every factor has the optional capability ``name`` (``capabilities.has``);
        ``eigenvalue_range`` and ``norm_rounding``: whether any factor has it (the others hold
        no matrices, or resolve their norms everywhere)."""
        if name in ("eigenvalue_range", "norm_rounding"):
            return any(has(f, name) for f in self.factors)
        return all(has(f, name) for f in self.factors)

    def eigenvalue_range(self, center: Array, radius: float) -> tuple[float, float]:
        """The widest of the matrix factors' ranges: a product ball of radius r lies in the
        product of the factors' balls of radius r."""
        ranges = [f.eigenvalue_range(c, radius) for f, c in zip(self.factors, self.split(center))
                  if has(f, "eigenvalue_range")]
        return min(lo for lo, _ in ranges), max(hi for _, hi in ranges)

    def norm_rounding(self, center: Array, radius: float) -> float:
        """The worst of the factors' estimates: a product ball of radius r lies in the product
        of the factors' balls of radius r, and the product's norm is their root sum of squares."""
        return max(f.norm_rounding(c, radius) for f, c in zip(self.factors, self.split(center))
                   if has(f, "norm_rounding"))

    def _require(self, name: str) -> None:
        lacking = [f for f in self.factors if not has(f, name)]
        if lacking:
            raise MissingCapability(f"{self!r} provides no '{name}': its factor {lacking[0]!r} "
                                    f"does not (an optional capability of geodp's manifolds)")

    # ----------------------------------------------------------------- required core
    def origin(self) -> Array:
        return self.join([f.origin() for f in self.factors])

    def inner(self, p: Array, u: Array, v: Array) -> Array:
        """g_p(u, v) = sum_i g_i(u_i, v_i), shape (...)."""
        return sum(self._map("inner", p, u, v))

    def exp(self, p: Array, v: Array) -> Array:
        """(Exp_{p_1}(v_1), ..., Exp_{p_m}(v_m)): geodesics of a product metric are products of
        geodesics."""
        return self.join(self._map("exp", p, v))

    def project(self, x: Array) -> Array:
        return self.join(self._map("project", x))

    def to_tangent(self, p: Array, x: Array) -> Array:
        return self.join(self._map("to_tangent", p, x))

    def to_coords(self, p: Array, v: Array) -> Array:
        """(to_coords_1(p_1, v_1), ..., to_coords_m(p_m, v_m)), shape (..., dim): an isometry, as
        the factors' tangent spaces are orthogonal."""
        parts = self._map("to_coords", p, v)
        batch = np.broadcast_shapes(*(c.shape[:-1] for c in parts))
        return np.concatenate([np.broadcast_to(c, batch + c.shape[-1:]) for c in parts], axis=-1)

    def from_coords(self, p: Array, c: Array) -> Array:
        cs = self._split_coords(c)
        return self.join([f.from_coords(q, ci) for f, q, ci in zip(self.factors, self.split(p), cs)])

    def _point_defect(self, x: Array) -> Array:
        """max_i defect_i(x_i) tol / tol_i: each factor judged at its own tolerance."""
        return np.max([self.tolerance / f.tolerance * f._point_defect(xi)
                       for f, xi in zip(self.factors, self.split(x))], axis=0)

    def _tangent_defect(self, p: Array, v: Array) -> Array:
        return np.max([self.tolerance / f.tolerance * f._tangent_defect(pi, vi)
                       for f, pi, vi in zip(self.factors, self.split(p), self.split(v))], axis=0)

    def gradient_rounding(self, center: Array, radius: float) -> float:
        """sqrt(sum_i rounding_i^2) over the factors, each on the ball of the same radius around
        its part of the center (the product ball lies in the product of those balls)."""
        return float(np.sqrt(sum(f.gradient_rounding(c, radius)**2
                                 for f, c in zip(self.factors, self.split(center)))))

    # ----------------------------------------------------------------- optional capabilities
    def log(self, p: Array, q: Array) -> Array:
        self._require("log")
        return self.join(self._map("log", p, q))

    def log_or_nan(self, p: Array, q: Array) -> Array:
        """Factor-wise: NaN in the parts of the factors at whose cut locus the pair lies."""
        self._require("log")
        return self.join(self._map("log_or_nan", p, q))

    def dist(self, p: Array, q: Array) -> Array:
        """rho(p, q) = sqrt(sum_i rho_i(p_i, q_i)^2)."""
        self._require("dist")
        return np.sqrt(sum(d * d for d in self._map("dist", p, q)))

    def transport(self, p: Array, q: Array, v: Array) -> Array:
        self._require("transport")
        return self.join(self._map("transport", p, q, v))

    def exp_adjoints(self, p: Array, v: Array, e: Array) -> tuple[Array, Array]:
        """Factor-wise: d Exp of a product map is block diagonal."""
        self._require("exp_adjoints")
        pairs = self._map("exp_adjoints", p, v, e)
        return self.join([a for a, _ in pairs]), self.join([b for _, b in pairs])

    def egrad_to_rgrad(self, p: Array, g: Array) -> Array:
        self._require("egrad_to_rgrad")
        return self.join(self._map("egrad_to_rgrad", p, g))

    def volume_density(self, p: Array, v: Array) -> Array:
        """prod_i J_i(p_i, v_i): d Exp_p(v) is block diagonal in orthonormal product frames."""
        self._require("volume_density")
        return np.prod(np.broadcast_arrays(*self._map("volume_density", p, v)), axis=0)

    def max_volume_density(self, radius: float) -> float:
        """prod_i max_volume_density_i(radius): ``|v|`` <= r bounds every ``|v_i|`` by r."""
        return float(np.prod([f.max_volume_density(radius) for f in self.factors]))

    @property
    def curvature_bounds(self) -> tuple[float, float]:
        """(min(0, a_1, ..., a_m), max(0, b_1, ..., b_m)) when M_i has curvature in [a_i, b_i].

        The curvature tensor of the product metric is R = R_1 + ... + R_m, acting factor-wise.
        For an orthonormal pair u = (u_i), w = (w_i), Lambda^2 of the direct sum splits
        orthogonally into the Lambda^2 of the factors and the mixed parts (u_i w_j - w_i u_j,
        i != j), so 1 = ``|u ^ w|^2`` = sum_i s_i + (mixed), s_i = ``|u_i ^ w_i|^2``, and
        K(u, w) = <R(u, w) w, u> = sum_i K_i(u_i, w_i) s_i with s_i >= 0, sum_i s_i <= 1: a
        combination of the K_i and of 0 with non-negative weights summing to one. Hence
        K lies in [min(0, a_i), max(0, b_i)]; the bounds are attained (a plane inside one factor
        gives K_i, a plane spanned by one vector of each of two factors gives 0), so 0 must be
        included once there are two factors of positive dimension.
        """
        self._require("curvature_bounds")
        lows, highs = zip(*(f.curvature_bounds for f in self.factors))
        if len(self.factors) == 1:
            return lows[0], highs[0]
        return min(0.0, *lows), max(0.0, *highs)

    @property
    def injectivity_radius(self) -> float:
        """min_i inj(M_i): a geodesic inside one factor stops minimising where it does there,
        and Exp_p is injective on the ball of radius min_i inj_i (it is so factor-wise)."""
        self._require("injectivity_radius")
        return float(min(f.injectivity_radius for f in self.factors))
