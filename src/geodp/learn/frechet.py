"""Private Fréchet means."""

from __future__ import annotations

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator
from ..mechanisms import RiemannianLaplace
from ..privacy import BudgetLedger, PureDP
from ..statistics import frechet_mean, frechet_mean_sensitivity
from .data_ball import enforce_ball
from .release import Release

MECHANISMS = ("laplace",)


def private_frechet_mean(points: Array, manifold: Manifold, epsilon: float, center: Array,
                         radius: float, mechanism: str = "laplace", clip: bool = False,
                         ledger: BudgetLedger | None = None,
                         rng: np.random.Generator | int | None = None,
                         restrict: bool = False) -> Release:
    """epsilon-DP Fréchet mean of data in the public ball B_radius(center).

    ``mechanism="laplace"``: the Riemannian Laplace mechanism at footpoint the sample Fréchet
    mean, scale Delta/epsilon with Delta of Theorem 2 (Reimherr et al. 2021, Theorems 1-2); with
    ``restrict=True`` the output is conditioned on the data ball and scale = 2 Delta/epsilon
    (Theorem 3). ``center`` and ``radius`` must not depend on the data. Neighbouring data sets
    differ in one record (n is public). With a ``ledger``, epsilon is reserved before any
    randomness is drawn.
    """
    if mechanism not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, got {mechanism!r}")
    epsilon = PureDP(epsilon).epsilon
    rng = as_generator(rng)
    x = manifold.check_point(points)
    center = manifold.check_point(center)
    if x.ndim != len(manifold.point_shape) + 1:
        raise ValueError(f"points must have shape (n, {manifold.point_shape}), got {x.shape}")
    n = len(x)
    sensitivity = frechet_mean_sensitivity(manifold, radius, n)
    x, clipped = enforce_ball(manifold, x, center, radius, clip)
    fit = frechet_mean(manifold, x, init=center, tol=1e-12, max_iter=10_000, on_spread="ignore")
    if not fit.converged:
        raise RuntimeError("the Fréchet mean did not converge; the sensitivity bound needs the "
                           "exact minimiser")
    scale = (2.0 if restrict else 1.0) * sensitivity / epsilon
    mech = RiemannianLaplace(manifold, scale, restrict_to=(center, radius) if restrict else None)
    reservation = ledger.reserve(epsilon, 0.0, label=f"Fréchet mean ({mechanism})") if ledger else None
    value = mech.sample(fit.mean, rng=rng)
    if reservation is not None:
        reservation.done()
    info = mech.last_info
    diagnostics = {"n": n, "clipped": clipped, "frechet_iterations": fit.iterations,
                   "restricted_to_ball": restrict, "sampler": info.as_dict()}
    guarantee = PureDP(epsilon)
    return Release(value=value, guarantee=guarantee, sensitivity=sensitivity, scale=scale,
                   mechanism="Riemannian Laplace (Reimherr et al. 2021)",
                   exact_sampler=info.exact, diagnostics=diagnostics,
                   equivalent={"GDP": guarantee.to_gdp().describe()})
