"""Global sensitivities: the Fréchet mean (Reimherr, Bharath & Soto 2021, Theorem 2), the
K-norm gradient of the Fréchet function, and the geodesic-regression gradients (Kulkarni & Soto)."""

from __future__ import annotations

import numpy as np

from ..manifolds import Manifold
from ..parameters import ParameterError
from ..privacy.conversions import check_count
from .frechet import uniqueness_radius


def curvature_factor(radius: float, k: float) -> float:
    """h(r, k) = 2 r sqrt(k) cot(2 r sqrt(k)) for k > 0, and 1 for k <= 0.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.statistics import curvature_factor
    >>> curvature_factor(0.5, -1.0), round(curvature_factor(np.pi / 8, 1.0), 6)   # 1, (pi/4) cot(pi/4)
    (1.0, 0.785398)
    """
    if k <= 0:
        return 1.0
    x = 2.0 * radius * np.sqrt(k)
    return float(x / np.tan(x))


def smoothness_factor(radius: float, k: float) -> float:
    """H(r, k) = 2 r sqrt(-k) coth(2 r sqrt(-k)) for k < 0, and 1 for k >= 0: the largest
    eigenvalue of the Hessian of rho(., x)^2 / 2 at distance <= 2r from x under sectional
    curvature >= k (Hessian comparison), so the smoothness of the Fréchet function on a ball of
    radius r; also the factor zeta of Zhang & Sra's (2016, Lemma 5) law of cosines for triangles
    with a side <= 2r.

    Examples
    --------
    >>> from geodp.statistics.sensitivity import smoothness_factor
    >>> smoothness_factor(1.0, 0.0), round(smoothness_factor(0.5, -1.0), 6)   # 1, coth(1)
    (1.0, 1.313035)
    """
    if k >= 0:
        return 1.0
    x = 2.0 * radius * np.sqrt(-k)
    return float(x / np.tanh(x))


def check_assumption_1(manifold: Manifold, radius: float) -> None:
    """Raise unless 0 < radius < r* = min(inj M, pi/(2 sqrt(k)))/2 (Assumption 1).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import Sphere
    >>> from geodp.statistics import check_assumption_1
    >>> check_assumption_1(Sphere(2), 0.5)        # fine: below pi/4
    >>> check_assumption_1(Sphere(2), 1.0)
    Traceback (most recent call last):
        ...
    geodp.parameters.ParameterError: the data radius must satisfy 0 < radius < r* = min(inj, pi/(2 sqrt(k))...
    """
    r_star = uniqueness_radius(manifold)
    if not (np.isfinite(radius) and 0 < radius < r_star):
        k = manifold.curvature_bounds[1]
        raise ParameterError(
            f"the data {{radius}} must satisfy 0 < radius < r* = min(inj, pi/(2 sqrt(k)))/2 = "
            f"{r_star:.6g} on {manifold!r} (Assumption 1 of Reimherr et al. 2021, with injectivity "
            f"radius {manifold.injectivity_radius:.6g} and curvature bound k = {k:g}); got {radius}",
            "radius")


def frechet_mean_sensitivity(manifold: Manifold, radius: float, n: int) -> float:
    """Delta = 2 r (2 - h) / (n h), h = h(r, k) with k the upper curvature bound (Theorem 2).

    Bounds rho(mean(D), mean(D')) for data sets of size n in a ball of radius r that differ in
    one point. Flat and negatively curved spaces give 2r/n.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.manifolds import SPD, Sphere
    >>> from geodp.statistics import frechet_mean_sensitivity
    >>> frechet_mean_sensitivity(SPD(5), radius=2.0, n=100)     # 2r/n where curvature <= 0
    0.04
    >>> round(frechet_mean_sensitivity(Sphere(2), radius=np.pi / 8, n=100), 5)   # larger on the sphere
    0.01215
    """
    n = check_count("n", n, 1)
    radius = float(radius)
    check_assumption_1(manifold, radius)
    h = curvature_factor(radius, manifold.curvature_bounds[1])
    return 2.0 * radius * (2.0 - h) / (n * h)


def kng_mean_sensitivity(manifold: Manifold, radius: float, n: int) -> float:
    """sup over m in B_r(c) of |grad F_D(m) - grad F_D'(m)|, F_D(m) = 1/(2n) sum_i rho(m, x_i)^2,
    for neighbouring data in B_r(c): the K-norm gradient sensitivity of the Fréchet mean.

    grad F_D(m) = -(1/n) sum_i Log_m(x_i), so the difference is |Log_m x - Log_m x'| / n. Along the
    geodesic from x to x' (inside the convex ball, within 2r of m) the differential of Log_m is
    the inverse of d Exp_m, whose norm is at most 1 when the curvature is <= 0 (Exp_m does not
    shrink distances) and t / sin t, t = 2 r sqrt(k), under curvature <= k (Rauch comparison).
    Hence Delta = (2r/n) max(1, t/sin t), and never more than the triangle bound 4r/n.
    """
    n = check_count("n", n, 1)
    radius = float(radius)
    check_assumption_1(manifold, radius)
    k = manifold.curvature_bounds[1]
    lip = 1.0
    if k > 0:
        t = 2.0 * radius * np.sqrt(k)
        lip = min(2.0, t / np.sin(t))
    return 2.0 * radius * lip / n


def regression_sensitivity(manifold: Manifold, n: int, tau: float, x_bound: float,
                           v_max: float) -> dict[str, float]:
    """Gradient sensitivities of the geodesic-regression energy with residuals clipped to tau.

    One record's term in the gradient is -(1/n) (d_pExp(x v)^dagger eps, x d_vExp(x v)^dagger eps)
    with |eps| <= tau and |x| <= X = ``x_bound``; replacing the record changes the gradient by at
    most twice the largest such term, for every (p, v) with |v| <= V = ``v_max``. In a parallel
    frame along the geodesic (Rauch comparison, curvature >= -kappa) the adjoints scale the part
    of eps parallel to v by 1 and the rest by at most cosh(sqrt(kappa) L) (d_p) and
    sinh(sqrt(kappa) L)/(sqrt(kappa) L) (d_v), L = |x| V; on manifolds of curvature >= 0 both
    factors are at most 1 (|cos|, |sin t / t| <= 1, at every length). With s = sqrt(kappa) X V:

    - footpoint (Theorem 3.3 of Kulkarni & Soto): Delta_p = (2 tau / n) cosh(s);
    - shooting vector (their Theorem D.1): Delta_v = (2 tau X / n) sinh(s)/s;
    - joint, for the product norm on T_p x T_p: the largest |a|^2 + x^2 |b|^2 over one direction,
      Delta = (2 tau / n) sqrt(cosh(s)^2 + X^2 (sinh(s)/s)^2), = (2 tau / n) sqrt(1 + X^2) when
      kappa = 0 (both factors increase with |x| and kappa, and are simultaneously diagonal).

    kappa = -k_min from ``manifold.curvature_bounds`` (1/2 on affine-invariant SPD, whose
    whitened shooting vector has eigenvalue gaps |l_i - l_j| <= sqrt(2) |v|).
    """
    n = check_count("n", n, 1)
    for name, value in (("tau", tau), ("x_bound", x_bound)):
        if not (np.isfinite(value) and value > 0):
            raise ValueError(f"{name} must be positive and finite, got {value}")
    if not (np.isfinite(v_max) and v_max >= 0):
        raise ValueError(f"v_max must be non-negative and finite, got {v_max}")
    kappa = max(0.0, -manifold.curvature_bounds[0])
    s = np.sqrt(kappa) * x_bound * v_max
    cosh, sinhc = float(np.cosh(s)), float(np.sinh(s) / s) if s > 0 else 1.0
    base = 2.0 * tau / n
    return {"footpoint": base * cosh, "shooting_vector": base * x_bound * sinhc,
            "joint": base * float(np.hypot(cosh, x_bound * sinhc))}
