"""Sample Fréchet (Karcher) mean by Riemannian gradient descent."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from ..chunked import as_sample
from ..manifolds.base import Array, Manifold, manifold_first
from ..manifolds.capabilities import has
from ..privacy.conversions import check_count, check_positive
from ..progress import bar


class NonUniqueMeanWarning(UserWarning):
    """The data are too spread for the Fréchet mean to be certified unique."""


class ConvergenceWarning(UserWarning):
    """The Karcher iteration stopped before its gradient-norm tolerance was met."""


#: Armijo constant of the sufficient-decrease test F(Exp_m(t g)) <= F(m) - ARMIJO t |g|^2.
ARMIJO = 1e-4
#: Relative accuracy assumed of F: below it a decrease cannot be seen, and a step that shrinks
#: the gradient without raising F beyond it is kept (near the minimum, where F is flat).
F_ACCURACY = 1e-10


def sufficient_decrease(new_value: Array, new_gnorm: Array, reference: Array, value: Array,
                        gnorm: Array, decrease: Array) -> Array:
    """Armijo's test of a trial step: F falls below ``reference`` (F now, or the largest of the
    last few values) by ``decrease``; or, where the decrease asked for is below the accuracy of F
    (``F_ACCURACY`` relative), the step does not raise F beyond that accuracy and shrinks the
    gradient, so that rounding in F cannot stall a descent near its minimum."""
    noise = F_ACCURACY * np.abs(value)
    return (new_value <= reference - decrease) | (
        (decrease <= noise) & (new_value <= value + noise) & (new_gnorm < gnorm))


#: Number of past values of F the nonmonotone Armijo test compares against (Grippo, Lampariello
#: & Lucidi 1986): Barzilai-Borwein steps may raise F for a step or two on their way down.
MEMORY = 5
#: Range of the trial steps, as multiples of ``step``.
STEP_RANGE = (1e-8, 4.0)
#: Newton systems are solved to residual <= NEWTON_RTOL min(0.1, |grad F|) |grad F|: a forcing
#: term O(|grad F|) keeps Newton's quadratic convergence (Dembo, Eisenstat & Steihaug 1982); the
#: factor 1e-3 saves a pass on SPD data (2 Newton steps instead of 3 at spread 1, n = 5 to 28),
#: which costs more than the extra conjugate-gradient products.
NEWTON_RTOL = 1e-3


@dataclass(frozen=True)
class FrechetMeanResult:
    """Outcome of ``frechet_mean``; ``mean`` has the batch shape of the input data.

    ``max_radius`` (largest distance from the mean to a data point) is computed when the
    uniqueness check needs it (positive curvature), and is None otherwise.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.statistics import frechet_mean
    >>> m = Sphere(2)
    >>> x = m.exp(m.origin(), 0.2 * np.random.default_rng(0).normal(size=(50, 3)) * [1, 1, 0])
    >>> res = frechet_mean(m, x)
    >>> res.converged, float(res.grad_norm) < 1e-8
    (True, True)
    """

    mean: Array
    iterations: int
    converged: bool
    grad_norm: Array
    max_radius: Array | None


def uniqueness_radius(manifold: Manifold) -> float:
    """r* = min(inj M, pi / (2 sqrt(k))) / 2 of Assumption 1 (Reimherr et al. 2021).

    Data inside a ball of radius r < r* have a unique Fréchet mean; for k <= 0 the only
    limit is the injectivity radius (infinite on Hadamard manifolds).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere, SPD
    >>> from geodp.statistics import uniqueness_radius
    >>> round(float(uniqueness_radius(Sphere(2))), 6), uniqueness_radius(SPD(3))   # pi/4 on the unit sphere
    (0.785398, inf)
    """
    k = manifold.curvature_bounds[1]
    bound = manifold.injectivity_radius
    if k > 0:
        bound = min(bound, np.pi / (2.0 * np.sqrt(k)))
    return 0.5 * bound


def _start_failure(manifold: Manifold, value: Array) -> str:
    """Why the Fréchet function is not finite at the starting point: records at the cut locus of
    others (NaN on a positively curved manifold: the mean is not unique), or overflow."""
    if np.any(np.isnan(value)) and has(manifold, "curvature_bounds") and \
            manifold.curvature_bounds[1] > 0:
        return (f"the Fréchet mean of these data is not unique: some records lie at the cut locus "
                f"of the starting point (e.g. antipodal points on {manifold!r}), where the "
                f"logarithm is not defined; a unique mean needs the data in a ball of radius below "
                f"half the injectivity radius (and pi / (2 sqrt(k)) for curvature k)")
    return ("the Fréchet function of these data overflows double precision at the starting point "
            "(squared distances beyond about 1e308, data spread beyond about 1e154); rescale the data")


def frechet_mean(manifold: Manifold, points: Array, *, weights: Array | None = None,
                 init: Array | None = None, step: float = 1.0, tol: float = 1e-10,
                 max_iter: int = 500, on_spread: str = "warn") -> FrechetMeanResult:
    """Fréchet mean argmin_m sum_i w_i rho(m, x_i)^2 by Riemannian Newton steps where the
    manifold gives the Hessian with the gradient (``newton_mean``: affine-invariant SPD), by
    gradient descent with Barzilai-Borwein steps otherwise; globally convergent.

    m_{k+1} = Exp_{m_k}(t_k g_k), g = sum_i w_i Log_m(x_i) (minus the gradient of
    F(m) = 1/2 sum_i w_i rho(m, x_i)^2): the Karcher iteration of supplement A.1 of Reimherr,
    Bharath & Soto (2021) when t_k = 1. Here t_0 = ``step`` and later trials take the Riemannian
    Barzilai-Borwein step t = <s, s> / <s, y> of the last move (s = t g at m_{k-1}, and
    <s, y> = t ``|g_{k-1}|^2`` + <Log_{m_k}(m_{k-1}), g_k>, which needs no transport; Iannazzo &
    Porcelli 2018 for the matrix geometric mean), within [1e-8, 4] x ``step``. A trial is kept
    when it passes the nonmonotone Armijo test F(m_{k+1}) <= max of the last 5 values of F
    - 1e-4 t ``|g_k|^2`` (Grippo, Lampariello & Lucidi 1986), otherwise the next trial halves t:
    every limit point is stationary, and the geodesically convex F on the data's ball has one.
    On SPD data this takes about half the passes of the fixed step (5-8 instead of 10-30 on
    spreads 0.5-2). F comes with the gradient from the same pass over the data, so a step costs
    one pass. Where the predicted decrease is below the accuracy of F (1e-10 relative), a step
    that shrinks ``|g|`` and does not raise F beyond that accuracy is kept. Stopped when
    ``|g|`` <= ``tol``; a ``ConvergenceWarning`` is issued when ``max_iter`` runs out first. Data
    whose Fréchet function overflows double precision at the start raise a ValueError (no step
    could then pass the test).

    Newton steps (in memory; chunked data keep the gradient steps, since each Hessian product
    would be another pass): the direction d solves Hess F(m_k) [d] = g_k (``MeanHessian``, from
    the pass's own eigendecompositions; to residual ``NEWTON_RTOL`` min(0.1, ``|g|``) ``|g|``), trials
    Exp_{m_k}(t d) from t = ``step``, halved until the same Armijo test with <g_k, d> in place
    of ``|g_k|^2`` passes (d is a descent direction: the Hessian of the geodesically convex F is
    positive definite). Quadratic convergence: 2-4 passes on SPD data of spread 1 (the gradient
    steps take 5-8).

    ``points`` has shape ``(..., n, *point_shape)``; leading dimensions are independent data sets
    solved together. ``points`` may also be a ``dask.array.Array`` ``(n, *point_shape)`` chunked along
    the sample axis: each pass is then one distributed reduction over the chunks on the current
    Dask scheduler (``geodp.chunked``), the update runs on the client, and the iteration starts
    from the manifold's starting point for the first chunk. ``weights`` (..., n) are normalised to
    sum to one. ``on_spread`` ("warn", "raise" or "ignore") decides what happens when the data are
    not certified to lie in a ball of radius below ``uniqueness_radius`` around the mean (positive
    curvature only), i.e. when the mean may not be unique.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import load
    >>> from geodp.statistics import frechet_mean
    >>> ds = load('digits-covariance')                  # 1797 SPD(5) covariance descriptors
    >>> res = frechet_mean(ds.manifold, ds.points)
    >>> res.mean.shape, res.converged, res.iterations <= 10
    ((5, 5), True, True)
    """
    manifold, points = manifold_first("frechet_mean", manifold, points)
    if on_spread not in ("warn", "raise", "ignore"):
        raise ValueError(f"on_spread must be 'warn', 'raise' or 'ignore', got {on_spread!r}")
    if not 0 < step <= 1:
        raise ValueError(f"step must lie in (0, 1], got {step}")
    check_positive("tol", tol)
    check_count("max_iter", max_iter)
    data = as_sample(manifold, points, weights)
    nd, batch = len(manifold.point_shape), data.batch
    m = data.start() if init is None else manifold.check_point(init)
    m = np.broadcast_to(m, batch + manifold.point_shape).copy()

    newton = manifold.newton_mean and not data.chunked

    def evaluate(at: Array) -> tuple[Array, Array, Array, Array, Array]:
        """-grad F, F, |grad F|, the descent direction d at ``at`` and <-grad F, d>: d is the
        Newton direction where the manifold gives the Hessian (to the residual of NEWTON_RTOL;
        not needed once |grad F| <= tol), else -grad F."""
        if newton:
            grad, value, hessian = data.total(lambda xs, ws: manifold.mean_log_value_and_hessian(at, xs, ws))
        else:
            grad, value = data.total(lambda xs, ws: manifold.mean_log_and_value(at, xs, ws))
            hessian = None
        size = manifold.norm(at, grad)
        if hessian is None or np.all(size <= tol):
            return grad, value, size, grad, size**2
        direction = hessian.solve(grad, NEWTON_RTOL * np.minimum(0.1, size))
        return grad, value, size, direction, manifold.inner(at, grad, direction)

    def expand(a: Array) -> Array:
        return a.reshape(a.shape + (1,) * nd)

    with np.errstate(all="ignore"):  # a failure at the start is explained once, below
        grad, value, gnorm, direction, slope = evaluate(m)
    if not np.all(np.isfinite(value)):
        raise ValueError(_start_failure(manifold, value))
    t = np.full(batch, float(step))
    history = [value]
    it = 0
    with bar(None, "Fréchet mean: passes over the chunks", show=None if data.chunked
             else False) as meter:
        while True:
            active = gnorm > tol
            if not np.any(active) or it >= max_iter:
                break
            it += 1
            trial = np.where(expand(active), manifold.exp(m, expand(t) * direction), m)
            new_grad, new_value, new_gnorm, new_direction, new_slope = evaluate(trial)
            ok = active & np.isfinite(new_value) & np.isfinite(new_gnorm) & sufficient_decrease(
                new_value, new_gnorm, np.max(history[-MEMORY:], axis=0), value, gnorm,
                ARMIJO * t * slope)
            if newton:
                t = np.where(ok, step, np.where(active, 0.5 * t, t))
            else:
                back = np.where(expand(ok), manifold.log(trial, m), 0.0)
                ss = t**2 * gnorm**2
                sy = t * gnorm**2 + np.where(ok, manifold.inner(trial, back, new_grad), 0.0)
                bb = np.clip(ss / np.where(sy > 0, sy, 1.0), *(r * step for r in STEP_RANGE))
                t = np.where(ok, np.where(sy > 0, bb, step), np.where(active, 0.5 * t, t))
            m = np.where(expand(ok), trial, m)
            grad = np.where(expand(ok), new_grad, grad)
            direction = np.where(expand(ok), new_direction, direction)
            value = np.where(ok, new_value, value)
            gnorm = np.where(ok, new_gnorm, gnorm)
            slope = np.where(ok, new_slope, slope)
            if np.any(ok):
                history.append(value)
            meter.update(1)
            meter.set_postfix(gradient_norm=f"{float(np.max(gnorm)):.2e}", refresh=False)
            if np.any(active & (t < 1e-30)):
                break
    converged = bool(np.all(gnorm <= tol))
    if not converged:
        warnings.warn(f"the Karcher iteration stopped after {it} iterations with gradient norm "
                      f"{float(np.max(gnorm)):.3g} > tol = {tol:g}: the mean returned is not "
                      f"converged (raise max_iter)", ConvergenceWarning, stacklevel=2)
    radius = None
    if manifold.curvature_bounds[1] > 0 and on_spread != "ignore":
        radius = data.largest(lambda xs: manifold.dist(np.expand_dims(m, -nd - 1), xs))
    r_star = uniqueness_radius(manifold)
    if radius is not None and np.any(radius >= r_star):
        msg = (f"data reach distance {float(np.max(radius)):.4g} from their mean, beyond "
               f"r* = {r_star:.4g} (Assumption 1 of Reimherr et al. 2021): the Fréchet mean on "
               f"{manifold!r} may not be unique")
        if on_spread == "raise":
            raise ValueError(msg)
        warnings.warn(msg, NonUniqueMeanWarning, stacklevel=2)
    return FrechetMeanResult(mean=m, iterations=it, converged=converged, grad_norm=gnorm,
                             max_radius=radius)
