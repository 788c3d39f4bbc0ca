"""Geodesic regression (Fletcher 2011): the geodesic t -> Exp_p(t v) closest to data y_i at x_i."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from collections.abc import Callable

from ..chunked import ChunkedSample, is_chunked
from ..manifolds._threads import block_count, map_parts
from ..manifolds.base import Array, Manifold, manifold_first
from .frechet import ARMIJO, ConvergenceWarning, frechet_mean, sufficient_decrease


@dataclass(frozen=True)
class GeodesicRegressionResult:
    """Outcome of ``geodesic_regression``.

    ``r_squared`` is Fletcher's (2011, eq. 9) explained variance 1 - sum rho(yhat_i, y_i)^2 /
    sum rho(ybar, y_i)^2, with ybar the Fréchet mean of the responses; ``energy`` is E at the
    returned parameters (the Huber energy when the fit clipped residuals at tau).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import load
    >>> from geodp.statistics import geodesic_regression
    >>> ds = load('trilobites')        # Kendall shapes with a covariate, log10 centroid size
    >>> res = geodesic_regression(ds.manifold, ds.covariates, ds.points)
    >>> res.footpoint.shape, res.converged, 0 < res.r_squared < 1
    ((16, 2), True, True)
    """

    footpoint: Array
    shooting_vector: Array
    energy: float
    r_squared: float
    iterations: int
    converged: bool
    grad_norm: float


def check_covariates(x: Array, n: int | None = None) -> Array:
    """x as a finite float vector (of length n when given)."""
    x = np.asarray(x, dtype=float)
    if x.ndim != 1 or (n is not None and len(x) != n):
        raise ValueError(f"covariates must be a vector with one value per record ({n}), "
                         f"got shape {x.shape}")
    if not np.all(np.isfinite(x)):
        raise ValueError("covariates contain NaN or infinite values")
    return x


def fitted_points(manifold: Manifold, p: Array, v: Array, x: Array) -> Array:
    """yhat_i = Exp_p(x_i v) for covariates x (n,); p and v may carry leading batch dimensions,
    and the result then has shape (*batch, n, *point_shape)."""
    nd = len(manifold.point_shape)
    xs = np.asarray(x, dtype=float).reshape(np.shape(x) + (1,) * nd)
    return manifold.exp(np.expand_dims(p, -nd - 1), xs * np.expand_dims(v, -nd - 1))


def regression_gradient(manifold: Manifold, p: Array, v: Array, x: Array, y: Array,
                        tau: float | None = None) -> tuple[Array, Array, Array]:
    """(grad_p E, grad_v E, E) of E(p, v) = 1/(2n) sum_i rho(Exp_p(x_i v), y_i)^2.

    Fletcher (2011, eqs. 10-11): grad_p E = -(1/n) sum_i d_pExp(x_i v)^dagger eps_i and
    grad_v E = -(1/n) sum_i x_i d_vExp(x_i v)^dagger eps_i, eps_i = Log_{yhat_i} y_i. With ``tau``
    each residual is clipped to norm tau, eps_i min(1, tau/|eps_i|): the gradient of the Huber
    loss rho^2/2 (rho <= tau), tau rho - tau^2/2 (beyond), whose E is then returned. ``p`` and
    ``v`` may carry leading batch dimensions (several parameter pairs at once).
    """
    p, v = np.asarray(p, dtype=float), np.asarray(v, dtype=float)
    ap, av, rho = manifold.mean_residual_adjoints(p, v, np.asarray(x, dtype=float), y, tau)
    loss = 0.5 * rho**2 if tau is None else np.where(rho <= tau, 0.5 * rho**2,
                                                       tau * rho - 0.5 * tau**2)
    return -ap, -av, np.mean(loss, axis=-1)


def bundle_norm(manifold: Manifold, p: Array, a: Array, b: Array) -> Array:
    """sqrt(|a|_p^2 + |b|_p^2): the product-metric norm of (a, b) in T_p x T_p."""
    return np.sqrt(np.maximum(manifold.inner(p, a, a) + manifold.inner(p, b, b), 0.0))


ROWS_TIMES_PARAMETERS = 2**16
"""On chunked data, a kernel evaluated at a batch of B parameter pairs (MCMC chains, a sampler's
proposals) runs over rows of a chunk in blocks of about this many / B records, so its
temporaries stay small whatever the chunk size. In memory, from this many (record, parameter)
pairs on, the records are cut into equal parts of at most about this many pairs, as many as a
multiple of the CPUs, and the parts run on the thread pool."""


class RegressionSample:
    """Records (x_i, y_i): covariates (n,) and responses (n, *point_shape), in memory or chunked.

    Built once (a distributed pass for chunked data: responses checked on the manifold, covariates
    finite, and their count, sums and range), then read through ``mean(kernel)``: the mean over the
    records of kernel(x_block, y_block), a tuple of block means. Chunked when ``y`` is a
    ``dask.array.Array``; ``x`` is then cut like it (a NumPy or dask vector). ``validate=False``
    skips the responses' check, for records checked already.
    """

    def __init__(self, manifold: Manifold, x: Array, y: Array, validate: bool = True):
        self.manifold = manifold
        if is_chunked(y):
            sample = ChunkedSample(manifold, y, validate=False, covariates=x)

            def summary(ys: Array, ws: Array, xs: Array) -> Array:
                if validate:
                    manifold.check_point(ys)
                check_covariates(xs)
                return np.array([np.sum(xs), np.sum(xs * xs), np.min(xs), np.max(xs)])

            sums = sample.reduce(summary, lambda a, b: np.array(
                [a[0] + b[0], a[1] + b[1], min(a[2], b[2]), max(a[3], b[3])]))
            self.n, self.x, self.y, self._chunked = sample.n, x, y, sample
        else:
            y = manifold.check_point(y) if validate else y
            if y.ndim != len(manifold.point_shape) + 1:
                raise ValueError(f"responses must have shape (n, *{manifold.point_shape}), got {y.shape}")
            x = check_covariates(x, len(y))
            sums = np.array([np.sum(x), np.sum(x * x), np.min(x), np.max(x)])
            self.n, self.x, self.y, self._chunked = len(y), x, y, None
        self.x_mean, self.x2_mean = sums[0] / self.n, sums[1] / self.n
        self.x_min, self.x_max = float(sums[2]), float(sums[3])

    @property
    def chunked(self) -> bool:
        return self._chunked is not None

    def mean(self, kernel: Callable[[Array, Array], tuple], batch: int = 1) -> tuple:
        """(1/n) sum over records, from kernel(x_block, y_block) = block means (a tuple).
        ``batch``: the number of parameter pairs the kernel evaluates at once (chunks are then
        read in blocks of ``ROWS_TIMES_PARAMETERS / batch`` records; in memory, that many
        records per part on the thread pool once there are more than one part's worth)."""
        n, rows = self.n, max(1, ROWS_TIMES_PARAMETERS // max(1, batch))
        if self._chunked is None:
            if n * max(1, batch) < ROWS_TIMES_PARAMETERS:
                return kernel(self.x, self.y)
            cut = np.linspace(0, n, block_count(n, rows) + 1).astype(int)
            parts = map_parts(lambda i: kernel(self.x[cut[i]:cut[i + 1]], self.y[cut[i]:cut[i + 1]]),
                              list(range(len(cut) - 1)))
            share = np.diff(cut) / n
            return tuple(sum(np.asarray(m) * w for m, w in zip(column, share)) for column in zip(*parts))

        def on_chunk(ys: Array, ws: Array, xs: Array) -> tuple:
            parts = [tuple(np.asarray(m) * (len(xs[lo:lo + rows]) / n)
                           for m in kernel(xs[lo:lo + rows], ys[lo:lo + rows]))
                     for lo in range(0, len(ys), rows)]
            return tuple(sum(column) for column in zip(*parts))

        return self._chunked.reduce(on_chunk, lambda a, b: tuple(u + v for u, v in zip(a, b)))

    def responses(self) -> Array | ChunkedSample:
        """The responses alone, for their Fréchet mean."""
        return self.y if self._chunked is None else ChunkedSample(self.manifold, self.y, validate=False)

    def covariates_outside(self, lo: float, hi: float) -> int:
        """How many covariates lie outside [lo, hi] (no pass over the records when their range
        lies inside)."""
        if lo <= self.x_min and self.x_max <= hi:
            return 0
        if self._chunked is None:
            return int(np.sum((self.x < lo) | (self.x > hi)))
        return int(self._chunked.reduce(lambda ys, ws, xs: np.sum((xs < lo) | (xs > hi)), np.add))

    def clipped(self, lo: float, hi: float) -> RegressionSample:
        """The records with covariates clipped into [lo, hi] (lazily when chunked); the responses
        are not checked again."""
        return RegressionSample(self.manifold, np.clip(self.x, lo, hi), self.y, validate=False)

    def preconditioner(self, ridge: float = 0.0) -> Array:
        """M^-1 for M = [[1, mean x], [mean x, mean x^2]], the Hessian's covariate structure in the
        flat case: -M^-1 (grad_p, grad_v) is a Gauss-Newton direction that stays a descent
        direction. ``ridge`` times its trace is added to M's diagonal, so that equal covariates
        (M singular: the shooting vector is not identified) leave it invertible."""
        m = np.array([[1.0, self.x_mean], [self.x_mean, self.x2_mean]])
        return np.linalg.inv(m + ridge * np.trace(m) * np.eye(2))


def _initial_guess(manifold: Manifold, data: RegressionSample) -> tuple[Array, Array]:
    """Least squares in the tangent space at the Fréchet mean m of the responses: Log_m y_i ~ a +
    x_i b, then p = Exp_m(a) and v = b transported to p."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = frechet_mean(manifold, data.responses(), max_iter=50, on_spread="ignore").mean

    def moments(xs: Array, ys: Array) -> tuple[Array, Array]:
        z = manifold.log(m, ys)
        return np.mean(z, axis=0), np.tensordot(xs, z, axes=(0, 0)) / len(xs)

    z_mean, xz_mean = data.mean(moments)
    b = (xz_mean - data.x_mean * z_mean) / (data.x2_mean - data.x_mean**2)
    a = z_mean - data.x_mean * b
    a, b = manifold.to_tangent(m, a), manifold.to_tangent(m, b)
    p = manifold.exp(m, a)
    return p, manifold.to_tangent(p, manifold.transport(m, p, b))


def geodesic_regression(manifold: Manifold, x: Array, y: Array, *,
                        init: tuple[Array, Array] | None = None,
                        tol: float = 1e-9, max_iter: int = 1000, tau: float | None = None
                        ) -> GeodesicRegressionResult:
    """Least-squares geodesic regression of points y_i on real covariates x_i (Fletcher 2011).

    Minimises E(p, v) = 1/(2n) sum_i rho(Exp_p(x_i v), y_i)^2 (with ``tau``: the Huber loss of
    ``regression_gradient``) by Riemannian gradient descent on the tangent bundle: p moves to
    Exp_p(-t d_p) and v is parallel transported along that move after its own step, with the
    Gauss-Newton preconditioner of the covariates and Armijo backtracking on E, so every accepted
    step decreases E (or, where the decrease is below the accuracy of E, keeps E to that accuracy
    and shrinks the gradient: ``sufficient_decrease``). Stops when the norm of the gradient falls
    below ``tol`` times max(1, sqrt(2 E)); returns unconverged with a ``ConvergenceWarning``
    otherwise.

    Parameters
    ----------
    manifold : Manifold
    x : array (n,)
        Real covariates; they must not all be equal.
    y : array ``(n, *point_shape)``
        Responses on the manifold. A ``dask.array.Array`` chunked along the records works too
        (``x`` is then cut like it): every sum over the records is a distributed reduction
        (``RegressionSample``).
    init : (p, v), optional
        Starting footpoint and shooting vector (default: least squares in the tangent space at
        the Fréchet mean of y).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.statistics import geodesic_regression
    >>> m = Sphere(2)
    >>> x = np.linspace(0.0, 1.0, 20)
    >>> y = m.exp(m.origin(), x[:, None] * np.array([0.5, 0.0, 0.0]))   # points on one geodesic
    >>> res = geodesic_regression(m, x, y)
    >>> res.shooting_vector.round(4), round(res.r_squared, 6)
    (array([0.5, 0. , 0. ]), 1.0)
    """
    manifold, x, y = manifold_first("geodesic_regression", manifold, x, y)
    return fit_regression(manifold, RegressionSample(manifold, x, y), init, tol, max_iter, tau)


def fit_regression(manifold: Manifold, data: RegressionSample, init: tuple[Array, Array] | None = None,
                   tol: float = 1e-9, max_iter: int = 1000, tau: float | None = None
                   ) -> GeodesicRegressionResult:
    """``geodesic_regression`` on records checked already (a ``RegressionSample``)."""
    if data.x_max == data.x_min:
        raise ValueError("the covariates are all equal: the shooting vector is not identifiable")
    if init is None:
        p, v = _initial_guess(manifold, data)
    else:
        p = manifold.check_point(init[0])
        v = manifold.check_tangent(p, init[1])
    minv = data.preconditioner()

    def gradient(p: Array, v: Array) -> tuple[Array, Array, Array]:
        return data.mean(lambda xs, ys: regression_gradient(manifold, p, v, xs, ys, tau))

    gp, gv, energy = gradient(p, v)
    energy = float(energy)
    step, it, converged = 1.0, 0, False
    gnorm = bundle_norm(manifold, p, gp, gv)
    for it in range(1, max_iter + 1):
        if gnorm <= tol * max(1.0, np.sqrt(2.0 * energy)):
            converged = True
            break
        dp = minv[0, 0] * gp + minv[0, 1] * gv
        dv = minv[1, 0] * gp + minv[1, 1] * gv
        slope = float(manifold.inner(p, gp, dp) + manifold.inner(p, gv, dv))
        while True:
            p_new = manifold.exp(p, -step * dp)
            v_new = manifold.to_tangent(p_new, manifold.transport(p, p_new, v - step * dv))
            gp_new, gv_new, e_new = gradient(p_new, v_new)
            gnorm_new = bundle_norm(manifold, p_new, gp_new, gv_new)
            if step < 1e-12 or sufficient_decrease(e_new, gnorm_new, energy, energy, gnorm,
                                                   ARMIJO * step * slope):
                break
            step *= 0.5
        if step < 1e-12:
            break
        p, v, gp, gv, energy, gnorm = p_new, v_new, gp_new, gv_new, float(e_new), gnorm_new
        step = min(1.0, 2.0 * step)
    converged = converged or gnorm <= tol * max(1.0, np.sqrt(2.0 * energy))
    if not converged:
        warnings.warn(f"geodesic regression stopped after {it} iterations with gradient norm "
                      f"{gnorm:.3g} (tolerance {tol:g})", ConvergenceWarning, stacklevel=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ybar = frechet_mean(manifold, data.responses(), on_spread="ignore").mean

    def spreads(xs: Array, ys: Array) -> tuple[Array, Array]:
        return (np.mean(manifold.dist(ybar, ys) ** 2),
                np.mean(manifold.dist(fitted_points(manifold, p, v, xs), ys) ** 2))

    total, residual = (float(s) for s in data.mean(spreads))
    r2 = 1.0 - residual / total if total > 0 else 1.0
    return GeodesicRegressionResult(p, v, float(energy), r2, it, converged, gnorm)
