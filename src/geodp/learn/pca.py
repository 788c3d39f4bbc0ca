"""Private leading eigenvector (PCA) on the sphere by DP Riemannian gradient descent.

Section 5.1 of Han, Mishra, Jawanpuria & Gao: minimise F(w) = -(1/n) sum_i (w^T z_i)^2 over the
unit sphere S^(D-1). The per-record Riemannian gradient is
grad f_i(w) = -2 c_i (z_i - c_i w), c_i = w^T z_i, of norm 2 |c_i| sqrt(|z_i|^2 - c_i^2) <= |z_i|^2
(arithmetic-geometric mean), so a public bound |z_i| <= B gives the geodesic Lipschitz constant
L0 = B^2 for every w: no clipping is needed and the guarantee holds for all data within the bound.
"""

from __future__ import annotations

import numpy as np

from ..manifolds import Sphere
from ..manifolds.base import Array, as_generator
from ..privacy import BudgetLedger
from ..privacy.conversions import check_positive
from .dp_rgd import dp_rsgd
from .release import Release


def pca_gradients(w: Array, z: Array) -> Array:
    """Riemannian gradients -2 c_i (z_i - c_i w) of f_i(w) = -(w^T z_i)^2 on the unit sphere."""
    c = z @ w
    return -2.0 * c[:, None] * (z - c[:, None] * w)


def pca_loss(w: Array, z: Array) -> float:
    """F(w) = -(1/n) sum_i (w^T z_i)^2."""
    return float(-np.mean((z @ w) ** 2))


def private_pca(data: Array, epsilon: float, delta: float, norm_bound: float,
                steps: int = 100, lr: float | None = None, init: Array | None = None,
                clip_data: bool = False, batch_size: int | None = None,
                output: str = "last", rng: np.random.Generator | int | None = None, *,
                ledger: BudgetLedger | None = None, progress: bool | None = None,
                secure: bool = False, sample_rate: float | None = None) -> Release:
    """An (epsilon, delta)-DP leading eigenvector of (1/n) sum_i z_i z_i^T, a unit vector.

    Neighbouring relation: replace-one (n public) for the full batch (the default) and for
    add/remove with a ``batch_size`` and a public ``sample_rate`` (Poisson sampling, see
    ``dp_rsgd``). One record's gradient changes by at most 2 B^2 under replacement.

    ``norm_bound`` is a public bound B on |z_i| (not computed from the data): rows above it raise,
    or with ``clip_data=True`` are scaled back to norm B (their count is in the release).
    ``lr`` defaults to 1 / (2 B^2); ``init`` (public) defaults to a uniform random unit vector.
    The sign of the eigenvector is arbitrary. ``secure=True`` draws discrete Gaussian noise from
    the operating system (see ``dp_rsgd``).
    """
    z = np.asarray(data, dtype=float)
    if z.ndim != 2 or z.shape[1] < 2:
        raise ValueError(f"data must be an (n, D) array with D >= 2, got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("data contain NaN or infinite values")
    bound = check_positive("norm_bound", norm_bound)
    norms = np.linalg.norm(z, axis=1)
    beyond = norms > bound * (1 + 1e-12)  # rows normalised to the bound round a little above it
    if np.any(beyond) and not clip_data:
        raise ValueError(f"{int(beyond.sum())} row(s) have norm above norm_bound = {bound:g}; "
                         f"the sensitivity assumes the bound. Pass clip_data=True to scale them "
                         f"back to it")
    over = norms > bound  # those within rounding of the bound are scaled too, by a factor ~1
    z = np.where(over[:, None], z * (bound / np.where(over, norms, 1.0))[:, None], z)
    sphere = Sphere(z.shape[1] - 1)
    rng = as_generator(rng)
    if init is None:
        init = sphere.project(rng.standard_normal(z.shape[1]))
    rel = dp_rsgd(sphere, pca_gradients, z, epsilon, delta, steps, batch_size=batch_size,
                  lr=1.0 / (2.0 * bound**2) if lr is None else lr, init=init, output=output,
                  rng=rng, lipschitz=bound**2, loss=pca_loss, ledger=ledger, progress=progress,
                  label="private PCA", secure=secure, sample_rate=sample_rate)
    rel.parameters.update(norm_bound=bound)
    rel.diagnostics.update(rows_scaled_to_bound=int(beyond.sum()))
    return rel
