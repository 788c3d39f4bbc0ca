"""Private leading eigenvector (PCA) on the sphere, and private principal subspace on the
Grassmann manifold, by DP Riemannian gradient descent.

Section 5.1 of Han, Mishra, Jawanpuria & Gao: minimise F(w) = -(1/n) sum_i (w^T z_i)^2 over the
unit sphere S^(D-1). The per-record Riemannian gradient is
grad f_i(w) = -2 c_i (z_i - c_i w), c_i = w^T z_i, of norm 2 |c_i| sqrt(|z_i|^2 - c_i^2) <= |z_i|^2
(arithmetic-geometric mean), so a public bound |z_i| <= B gives the geodesic Lipschitz constant
L0 = B^2 for every w: no clipping is needed and the guarantee holds for all data within the bound.
The same argument on Gr(D, k) bounds the principal subspace's gradients (``subspace_gradients``).

The releases nevertheless pass ``clip=B^2`` to ``dp_rsgd``, not ``lipschitz=B^2``: the clipping
never acts in exact arithmetic, and a stated bound checked at the start could fail by rounding on
rows at norm B and so refuse on the data (a refusal its neighbour need not share).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..manifolds import Grassmann, Manifold, Sphere
from ..manifolds.base import Array, as_generator, manifold_first
from ..privacy import BudgetLedger
from ..privacy.conversions import check_delta, check_positive
from .data_ball import RecordsOutsideBound
from .dp_rgd import dp_rsgd
from .release import LargeDeltaWarning, Release, delta_caveat


def pca_gradients(w: Array, z: Array) -> Array:
    """Riemannian gradients -2 c_i (z_i - c_i w) of f_i(w) = -(w^T z_i)^2 on the unit sphere."""
    c = z @ w
    g = c[:, None] * w
    np.subtract(z, g, out=g)  # z - c w and then -2 c (z - c w), in one temporary
    g *= -2.0 * c[:, None]
    return g


def pca_euclidean_gradients(w: Array, z: Array) -> Array:
    """Euclidean gradients -2 c_i z_i, c_i = w^T z_i, of f_i(w) = -(w^T z_i)^2: ``dp_rsgd``'s
    projection onto T_w (``euclidean_grad=True``) makes them ``pca_gradients``, without a
    projection of its own first (issue 31: a fifth less time per step at n = 50,000)."""
    c = z @ w
    c *= -2.0
    return z * c[:, None]


def pca_loss(w: Array, z: Array) -> float:
    """F(w) = -(1/n) sum_i (w^T z_i)^2."""
    return float(-np.mean((z @ w) ** 2))


def finite_rows(data: Array, add_remove: bool = False) -> Array:
    """The records z_i as a float array (n, D), D >= 2, every value finite (raises otherwise).
    No records are refused unless ``add_remove`` (Poisson sampling: n is private, and the empty
    data set is the neighbour of every one-record data set, so it is released from too)."""
    z = np.asarray(data, dtype=float)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"data must be an (n, D) array of vectors with D >= 2, got shape {z.shape}")
    if not len(z) and not add_remove:
        raise ValueError("data is empty: a full-batch release (replace-one neighbours, n public) "
                         "needs at least one record")
    if not np.all(np.isfinite(z)):
        raise ValueError("data contain NaN or infinite values")
    return z


def check_manifold(function: str, manifold: Manifold, expected: str, fits: bool, columns: int,
                   releases: str) -> None:
    """Refuse a ``manifold`` other than ``expected`` (a repr) for data with ``columns`` columns;
    ``fits``: whether its points have the shape ``function`` releases, ``releases`` what that is.
    The comparison asks the manifold's own description, not its class."""
    if repr(manifold) == expected:
        return
    if fits:
        raise ValueError(f"manifold is {manifold!r}, but {function} releases {releases}: pass "
                         f"{expected} for data with {columns} columns")
    raise ValueError(f"manifold is {manifold!r} but data have {columns} columns: pass {expected}")


def _delta_caveat(delta: float, n: int, batch_size: int | None) -> tuple[LargeDeltaWarning, ...]:
    """The ``LargeDeltaWarning`` of a full-batch release (replace-one: n is public) whose delta
    is at least 1/n, warned and returned for the release's caveats; () otherwise."""
    caveat = delta_caveat(check_delta(delta), n) if batch_size is None else None
    return () if caveat is None else (caveat,)


def rows_within_bound(z: Array, norm_bound: float, clip_data: bool) -> tuple[Array, float, int]:
    """(the rows z_i, each of norm <= B, B, how many were scaled back to B) for finite rows z
    (n, D).

    Rows above the public bound B raise ``RecordsOutsideBound``, or with ``clip_data`` are scaled
    back to norm B (rows within rounding of B are scaled too, by a factor ~1).
    """
    bound = check_positive("norm_bound", norm_bound)
    norms = np.linalg.norm(z, axis=1)
    beyond = norms > bound * (1 + 1e-12)  # rows normalised to the bound round a little above it
    if np.any(beyond) and not clip_data:
        raise RecordsOutsideBound(int(beyond.sum()), len(z),
                                  f"rows have norms above {{norm_bound}} = {bound:g}",
                                  "scale them back to it", "choose a larger public bound (fixed "
                                  "without looking at the data)")
    over = norms > bound
    z = np.where(over[:, None], z * (bound / np.where(over, norms, 1.0))[:, None], z)
    return z, bound, int(beyond.sum())


def private_pca(manifold: Manifold, data: Array, epsilon: float, delta: float, norm_bound: float,
                *, steps: int = 100, lr: float | None = None, init: Array | None = None,
                clip_data: bool = False, batch_size: int | None = None, output: str = "last",
                rng: np.random.Generator | int | None = None, ledger: BudgetLedger | None = None,
                progress: bool | None = None, secure: bool = False,
                sample_rate: float | None = None) -> Release:
    """An (epsilon, delta)-DP leading eigenvector of (1/n) sum_i z_i z_i^T, a unit vector.

    Neighbouring relation: replace-one (n public) for the full batch (the default) and for
    add/remove with a ``batch_size`` and a public ``sample_rate`` (Poisson sampling, see
    ``dp_rsgd``). One record's gradient changes by at most 2 B^2 under replacement.

    Parameters
    ----------
    manifold : Manifold
        ``Sphere(D - 1)``, the unit sphere of R^D where the eigenvector lives; another manifold
        (or another D) raises ``ValueError`` naming the one to pass.
    data : array (n, D)
        The records z_i, every value finite; n = 0 only with a ``batch_size`` (add/remove: the
        release is then noise alone).
    epsilon, delta : float
        The target (epsilon, delta)-DP.
    norm_bound : float
        A public bound B on ``|z_i|`` (not computed from the data): rows above it raise, or with
        ``clip_data=True`` are scaled back to norm B (their count is in the diagnostics).
    steps, lr, init, batch_size, output, rng, ledger, progress, sample_rate
        As in ``dp_rsgd``; ``lr`` defaults to 1 / (2 B^2), ``init`` (public) to a uniform random
        unit vector drawn from ``rng``.
    clip_data : bool
        Scale rows above ``norm_bound`` back to it instead of refusing them.
    secure : bool
        Draw discrete Gaussian noise from the operating system (see ``dp_rsgd``).

    Returns
    -------
    Release with ``value`` of shape (D,) (its sign is arbitrary), ``parameters["norm_bound"]``
    and ``parameters["clip"]`` = B^2 (the gradients' bound, which the clipping never exceeds in
    exact arithmetic).

    Examples
    --------
    >>> from geodp.manifolds import Sphere
    >>> z = np.random.default_rng(0).normal(size=(500, 3)) * [3.0, 1.0, 0.5]
    >>> rel = private_pca(Sphere(2), z, 1.0, 1e-5, norm_bound=10.0, clip_data=True, rng=0)
    >>> rel.value.shape, rel.guarantee.relation.value
    ((3,), 'replace-one')
    """
    manifold, data = manifold_first("private_pca", manifold, data)
    z = finite_rows(data, add_remove=batch_size is not None)
    check_manifold("private_pca", manifold, repr(Sphere(z.shape[1] - 1)),
                   manifold.point_shape == z.shape[1:], z.shape[1], "a unit vector")
    z, bound, beyond = rows_within_bound(z, norm_bound, clip_data)
    large_delta = _delta_caveat(delta, len(z), batch_size)
    rng = as_generator(rng)
    if init is None:
        init = manifold.project(rng.standard_normal(z.shape[1]))
    rel = dp_rsgd(manifold, pca_euclidean_gradients, z, epsilon, delta, steps,
                  euclidean_grad=True, batch_size=batch_size,
                  lr=1.0 / (2.0 * bound**2) if lr is None else lr, init=init, output=output,
                  rng=rng, clip=bound**2, loss=pca_loss, ledger=ledger, progress=progress,
                  label="private PCA", secure=secure, sample_rate=sample_rate)
    rel.parameters.update(norm_bound=bound)
    rel.diagnostics.update(rows_scaled_to_bound=beyond)
    return replace(rel, caveats=rel.caveats + large_delta)


def subspace_gradients(y: Array, z: Array) -> Array:
    """Riemannian gradients -2 (z_i - Y a_i) a_i^T, a_i = Y^T z_i, of f_i(Y) = -|Y^T z_i|^2 on
    Gr(D, k): (I - Y Y^T) times the Euclidean gradient -2 z_i z_i^T Y. Shape (n, D, k)."""
    a = z @ y
    return -2.0 * (z - a @ y.T)[:, :, None] * a[:, None, :]


def subspace_loss(y: Array, z: Array) -> float:
    """F(Y) = -(1/n) sum_i |Y^T z_i|^2: minus the variance captured by span(Y)."""
    return float(-np.mean(np.sum((z @ y) ** 2, axis=1)))


def private_principal_subspace(manifold: Manifold, data: Array, epsilon: float, delta: float,
                               norm_bound: float, *, steps: int = 100, lr: float | None = None,
                               init: Array | None = None, clip_data: bool = False,
                               batch_size: int | None = None, output: str = "last",
                               rng: np.random.Generator | int | None = None,
                               ledger: BudgetLedger | None = None, progress: bool | None = None,
                               secure: bool = False, sample_rate: float | None = None) -> Release:
    """An (epsilon, delta)-DP top-k principal subspace of (1/n) sum_i z_i z_i^T, a point of
    Gr(D, k) (an orthonormal basis, shape (D, k)): ``private_pca`` for k directions.

    DP-RGD (``dp_rsgd``; Han, Mishra, Jawanpuria & Gao, Section 5.1 with the sphere replaced by
    the Grassmann manifold) minimises F(Y) = -(1/n) sum_i ``|Y^T z_i|^2`` over Gr(D, k). With
    a_i = Y^T z_i, the per-record Riemannian gradient is g_i = -2 (z_i - Y a_i) a_i^T, a rank-one
    matrix of norm ``|g_i|_F`` = 2 ``|z_i - Y a_i|`` ``|a_i|``. As z_i - Y a_i and Y a_i are orthogonal and
    ``|Y a_i|`` = ``|a_i|``, ``|z_i - Y a_i|^2`` + ``|a_i|^2`` = ``|z_i|^2``, and 2 x y <= x^2 + y^2 gives
    ``|g_i|_F`` <= ``|z_i|^2`` <= B^2 at every Y: B^2 is the geodesic Lipschitz constant of every f_i, so
    no clipping acts and the guarantee holds for all data within the bound.

    Neighbouring relation, ``norm_bound``, ``clip_data``, ``batch_size``, ``sample_rate``,
    ``secure`` and ``output`` as in ``private_pca``; ``lr`` defaults to 1 / (2 B^2) and ``init``
    (public) to a random point of Gr(D, k) drawn from ``rng``. The basis returned is one of many
    of the subspace (compare subspaces with ``manifold.dist``).

    Parameters
    ----------
    manifold : Manifold
        ``Grassmann(D, k)``: the k-dimensional subspaces of R^D, 1 <= k < D (k = 1 is
        ``private_pca`` up to the sign). Another manifold (or another D) raises ``ValueError``
        naming the one to pass.
    data : array (n, D)
        The records z_i, every value finite.
    epsilon, delta, norm_bound
        As in ``private_pca``.

    Returns
    -------
    Release with ``value`` of shape (D, k) and ``parameters["k"]``.

    Examples
    --------
    >>> from geodp.manifolds import Grassmann
    >>> z = np.random.default_rng(0).normal(size=(500, 4)) * [3.0, 2.0, 0.5, 0.5]
    >>> rel = private_principal_subspace(Grassmann(4, 2), z, 1.0, 1e-5, norm_bound=10.0,
    ...                                  clip_data=True, rng=0)
    >>> rel.value.shape, rel.guarantee.relation.value
    ((4, 2), 'replace-one')
    """
    manifold, data = manifold_first("private_principal_subspace", manifold, data)
    z = finite_rows(data, add_remove=batch_size is not None)
    columns, shape = z.shape[1], manifold.point_shape
    fits = len(shape) == 2 and shape[0] == columns and 1 <= shape[1] < columns
    check_manifold("private_principal_subspace", manifold,
                   repr(Grassmann(columns, shape[1])) if fits else
                   f"Grassmann({columns}, k) with 1 <= k < {columns}", fits, columns,
                   "a subspace of R^D (a point of Grassmann(D, k))")
    z, bound, beyond = rows_within_bound(z, norm_bound, clip_data)
    large_delta = _delta_caveat(delta, len(z), batch_size)
    rng = as_generator(rng)
    if init is None:
        init = manifold.random_point(rng)
    rel = dp_rsgd(manifold, subspace_gradients, z, epsilon, delta, steps, batch_size=batch_size,
                  lr=1.0 / (2.0 * bound**2) if lr is None else lr, init=init, output=output,
                  rng=rng, clip=bound**2, loss=subspace_loss, ledger=ledger,
                  progress=progress, label="private principal subspace", secure=secure,
                  sample_rate=sample_rate)
    rel.parameters.update(norm_bound=bound, k=shape[1])
    rel.diagnostics.update(rows_scaled_to_bound=beyond)
    return replace(rel, caveats=rel.caveats + large_delta)
