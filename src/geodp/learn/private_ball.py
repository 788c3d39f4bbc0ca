"""A private data ball, and class means in the tangent space at its center (issue 30).

A public ball B(c0, R) fixed from the measurement domain alone is usually far larger than the
data (digits-covariance: R = 30.9 around the identity, the records within 1.2 of their mean),
and every Fréchet-mean sensitivity grows with the radius. ``private_ball`` spends a small budget
on a ball that fits the data, and ``private_tangent_class_means`` releases class means inside it.
Neighbours replace one record (n public); the labels are private.

``private_ball(epsilon_ball)``: three steps, each epsilon-DP for its share, composed
sequentially (each takes the previous releases as public parameters):

1. Pilot radius r0: the exponential mechanism for the ``quantile`` q of rho(c0, x_i) over the
   public grid ``geometric_grid(R)`` (``mechanisms.quantile``: utility sensitivity 1).
2. Center: every record clipped into B(c0, r0) along its geodesic from c0 (a fixed map of each
   record, so clipped neighbours are still replace-one neighbours), v_i = Log_c0(x_i) in
   orthonormal coordinates (|v_i| <= r0); their average (n public) moves by at most 2 r0 / n
   in the Euclidean norm of T_c0 when one record is replaced. Adding noise of density
   proportional to exp(-|z| / b), b = 2 r0 / (n epsilon_center) (the L2 Laplace: |z| ~
   Gamma(d, b), direction uniform) is epsilon_center-DP. The noisy vector is projected onto
   the ball |v| <= r0 (which holds the true average; post-processing) and c = Exp_c0(v) is
   released. If c is not numerically usable (far SPD or hyperbolic points at a tiny budget),
   c0 is used instead: a decision on released values only.
3. Radius r: the exponential mechanism for the q-quantile of rho(c, x_i) over
   ``geometric_grid(R + rho(c0, c))`` (every record lies within that distance of c).

Total: epsilon_ball = epsilon_pilot + epsilon_center + epsilon_radius, pure, replace-one.

``private_tangent_class_means(epsilon)`` in the ball B(c, r) (public: released above, or given):

1. Counts: the class histogram has L1 sensitivity 2 under replace-one; two-sided geometric noise
   with ``epsilon_count`` (``mechanisms.geometric``).
2. Sums: every record clipped into B(c, r) (a fixed map), v_i = Log_c(x_i) (|v_i| <= r),
   S_a = sum of v_i over class a. Replacing (x, a) by (x', b) moves S_a by -v and S_b by +v'
   (or S_a by v' - v when a = b), so sum_a |S_a - S'_a| <= 2 r (the group norm, L2 within a
   class, L1 across classes). Independent L2 Laplace noise of scale b = 2 r / epsilon_sum on each
   S_a has density proportional to exp(-sum_a |z_a| / b), whose ratio under a shift of group
   norm at most 2 r is at most e^epsilon_sum: epsilon_sum-DP (the K-norm mechanism of Hardt &
   Talwar 2010 for the group norm).
3. Post-processing: mean_a = Exp_c(P_r((S_a + z_a) / max(n~_a, 1))), P_r the projection onto
   |v| <= r (which holds the true tangent mean), and onto the outer public ball when one is
   given; classes with noisy count below ``min_class_size`` get c.

Total: epsilon_count + epsilon_sum, pure epsilon-DP under replace-one (labels private). The
released means are tangent-space (log-Euclidean at c) means, Exp_c of the average of Log_c(x_i):
close to the Fréchet means when the classes are concentrated relative to the curvature (their
distance to the Fréchet mean is O(K r^2) for curvature bounded by K), and defined on any manifold
with a logarithm, with no normalisability limit on the noise (it lives in the tangent space). The
noise on each mean is about d * 2r / (n_a epsilon_sum): half the Fréchet-mean route's (which
pays Delta = 2r/n_a for each of two changed means, on a lower bound of n_a), with no lower-bound
tail and no delta.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator, reproject
from ..mechanisms.euclidean import l2_laplace
from ..mechanisms.geometric import two_sided_geometric
from ..mechanisms.registry import lookup
from ..mechanisms.quantile import geometric_grid, private_quantile
from ..privacy import BudgetLedger, MemoryLedger, PureDP
from ..parameters import ParameterError
from ..privacy.conversions import check_count, check_delta, check_positive
from ..statistics import uniqueness_radius
from .classes import MEAN_MECHANISMS, SmallClassWarning, _encode, private_class_means
from .data_ball import (ClippingWarning, check_condition_cap, check_representable,
                        clip_margin, clipped_tangent_coords, enforce_ball, enforce_condition,
                        into_ball)
from .release import Release, reserved

FRECHET_RADIUS_SHARE = 0.9
"""The Fréchet-mean release after a private ball runs in B(c, min(r, R, 0.9 r*))
(``frechet_radius_cap``): Theorem 2's sensitivity grows without bound as the radius nears r*, so the cap stays a tenth
below it (on the unit sphere, 0.707 against r* = pi/4: 8 times the flat 2r/n)."""

BALL_SHARES = (0.2, 0.6, 0.2)
"""Default split of the ball's budget: pilot radius, center, radius. The center's noise scales
with the pilot radius over n, the radii's count errors with 1 / epsilon (against q n): the
center gets the largest share."""

COUNT_SENSITIVITY = 2  # L1 sensitivity of the class histogram under replace-one

THEOREM_BALL = (
    "private data ball: pilot radius and radius by the exponential mechanism for a quantile of "
    "the distances (utility sensitivity 1, McSherry & Talwar 2007), center by the L2 Laplace on "
    "the average of Log_c0 of the records clipped to the pilot ball (sensitivity 2 r0 / n); "
    "sequential composition (geodp.learn.private_ball)")
THEOREM_TANGENT = (
    "class counts by the two-sided geometric mechanism (L1 sensitivity 2); class sums of Log_c of "
    "the records clipped to the ball B(c, r) by independent L2 Laplace noise of scale 2 r / "
    "epsilon_sum (K-norm mechanism for the group norm, sensitivity 2 r under replace-one); "
    "sequential composition (geodp.learn.private_ball)")


def _project(v: Array, radius: float) -> Array:
    """Each row of v moved onto the Euclidean ball of ``radius`` (rows inside are unchanged)."""
    norms = np.linalg.norm(v, axis=-1, keepdims=True)
    return v * np.minimum(1.0, radius / np.maximum(norms, 1e-300))


def _usable(manifold: Manifold, p: Array, other: Array) -> bool:
    """Whether double precision handles p as a base point (its log towards ``other`` is finite)."""
    try:
        with np.errstate(all="ignore"):
            return bool(np.all(np.isfinite(p)) and np.all(np.isfinite(manifold.log(p, other))))
    except (np.linalg.LinAlgError, ValueError, FloatingPointError):
        return False


def _shares(shares: Sequence[float]) -> tuple[float, float, float]:
    s = tuple(float(v) for v in shares)
    if len(s) != 3 or min(s) <= 0 or abs(sum(s) - 1) > 1e-9:
        raise ValueError(f"ball_shares must be three positive shares (pilot radius, center, "
                         f"radius) summing to 1, got {shares}")
    return s


@dataclass(frozen=True)
class BallPlan:
    """A private ball's checked request (``plan_ball``): the records inside the public outer ball
    (clipped into it when asked), how many were clipped (a diagnostic), the outer ball, the
    budget split, the quantile and the grid size."""

    x: Array
    clipped: int
    center: Array
    radius: float
    epsilons: dict
    quantile: float
    grid_size: int


def plan_ball(manifold: Manifold, points: Array, epsilon: float, center: Array, radius: float,
              *, quantile: float = 0.75, shares: Sequence[float] = BALL_SHARES,
              clip_data: bool = False, grid_size: int = 400,
              max_condition: float | None = None) -> BallPlan:
    """Every refusal of ``private_ball``, before any reservation or draw: its public parameters,
    then the records against a condition cap ``max_condition`` (``enforce_condition``) and the
    public ball (``enforce_ball``): refused, or capped and clipped with ``clip_data``. The routes
    that release a ball and then a statistic in it call this first, so that no refusal comes
    after their single reservation."""
    epsilon = check_positive("epsilon", epsilon)
    if not 0 < quantile < 1:
        raise ValueError(f"quantile must lie in (0, 1), got {quantile}")
    s_pilot, s_center, s_radius = _shares(shares)
    grid_size = check_count("grid_size", grid_size, 2)
    center, radius = manifold.check_point(center), check_positive("radius", radius)
    # the released ball B(c, r) has c within radius of center and the inner releases run with
    # r <= radius: checked here at reach 2 radius, their own checks of (c, r) pass after the charge
    check_representable(manifold, center, radius, reach=2.0 * radius)
    check_condition_cap(manifold, center, max_condition)
    x = enforce_condition(manifold, manifold.check_point(points), max_condition, clip_data)[0]
    x, clipped = enforce_ball(manifold, x, center, radius, clip_data)
    eps = {"pilot_radius": s_pilot * epsilon, "center": s_center * epsilon,
           "radius": s_radius * epsilon}
    return BallPlan(x, clipped, center, radius, eps, quantile, grid_size)


def frechet_radius_cap(manifold: Manifold, radius: float) -> float:
    """The public bound min(R, ``FRECHET_RADIUS_SHARE`` r*) on the radius of the ball in which a
    Fréchet-mean release runs after a private ball: the released radius r is capped at it
    (post-processing), so Assumption 1 (r < r*, ``statistics.uniqueness_radius``) holds whatever
    r is released, and the inner release's other public refusals can be decided at the cap before
    any reservation. On Hadamard manifolds r* is infinite and the cap is the outer radius R."""
    return min(float(radius), FRECHET_RADIUS_SHARE * uniqueness_radius(manifold))


def draw_ball(manifold: Manifold, plan: BallPlan, target: PureDP,
              rng: np.random.Generator) -> Release:
    """The three noisy steps of ``private_ball`` on a checked plan (no check, no reservation:
    the caller holds one)."""
    center, radius, eps, x, n = plan.center, plan.radius, plan.epsilons, plan.x, len(plan.x)
    grid_size, quantile = plan.grid_size, plan.quantile
    r0, _ = private_quantile(manifold.dist(center, x), quantile, geometric_grid(radius, grid_size),
                             eps["pilot_radius"], rng)
    v = clipped_tangent_coords(manifold, center, x, r0)[0].mean(axis=0)
    scale = 2.0 * r0 / (n * eps["center"])
    # post-processing of the noisy v: kept a public margin (``clip_margin``) inside B(center, r0)
    # and reprojected onto the model, so that the inner releases' checks of (c, r), which
    # ``plan_ball`` made at reach 2 radius, pass after the charge despite the rounding of
    # dist(center, c) and of Exp (far out on the hyperboloid both exceed check_point's tolerance)
    v = _project(v + l2_laplace(manifold.dim, scale, (), rng),
                 r0 * (1.0 - clip_margin(manifold, center, radius)))
    with np.errstate(all="ignore"):
        c = reproject(manifold, manifold.exp(center, manifold.from_coords(center, v)))
    fallback = not _usable(manifold, c, center)  # decided on released and public points
    if fallback:
        c = center
    top = radius + float(manifold.dist(center, c))
    with np.errstate(all="ignore"):
        distances = manifold.dist(c, x)
    r, _ = private_quantile(distances, quantile, geometric_grid(top, grid_size), eps["radius"], rng)
    return Release(value=c, guarantee=target, sensitivity=2.0 * r0 / n, scale=scale,
                   mechanism="private data ball (quantile radii, L2 Laplace tangent center)",
                   exact_sampler=True, theorem=THEOREM_BALL,
                   parameters={"n": n, "radius": r, "pilot_radius": r0, "quantile": quantile,
                               "epsilons": eps, "outer_radius": radius, "grid_size": grid_size,
                               "center_fallback_to_outer": fallback},
                   diagnostics={"records_clipped_to_outer": plan.clipped})


def private_ball(manifold: Manifold, points: Array, epsilon: float, center: Array, radius: float,
                 *, quantile: float = 0.75, shares: Sequence[float] = BALL_SHARES,
                 clip_data: bool = False, grid_size: int = 400,
                 ledger: BudgetLedger | MemoryLedger | None = None,
                 rng: np.random.Generator | int | None = None) -> Release:
    """A private ball B(c, r) holding about a ``quantile`` of the records (module docstring).

    Parameters
    ----------
    manifold : Manifold
    points : array (n, *point_shape)
        The records; n is public.
    epsilon : float
        The ball's whole budget, split by ``shares`` (pilot radius, center, radius).
    center, radius
        The public outer ball B(c0, R), fixed from the domain alone; records outside it are
        refused unless ``clip_data``.
    quantile : float in (0, 1)
        The share of records the released ball aims to hold.
    grid_size : int
        Candidates of each radius, from 1e-6 of the grid's top to the top, on a log scale.

    Returns
    -------
    Release with ``value`` the center c and ``parameters["radius"]`` the radius r (both
    released), ``parameters["pilot_radius"]`` r0 and the budget split; epsilon-DP under
    replace-one. Every refusal comes before the ledger reserves anything (``plan_ball``).
    """
    plan = plan_ball(manifold, points, epsilon, center, radius, quantile=quantile, shares=shares,
                     clip_data=clip_data, grid_size=grid_size)
    rng, target = as_generator(rng), PureDP(float(epsilon))
    with reserved(ledger, target, f"private data ball ({target.describe()})"):
        return draw_ball(manifold, plan, target, rng)


def private_tangent_class_means(manifold: Manifold, points: Array, labels: Array,
                                classes: Sequence, epsilon: float, center: Array, radius: float,
                                *, count_budget: float = 0.125, min_class_size: int = 1,
                                outer: tuple[Array, float] | None = None,
                                ledger: BudgetLedger | MemoryLedger | None = None,
                                rng: np.random.Generator | int | None = None) -> Release:
    """Class means in the tangent space at ``center``, records clipped to B(center, radius):
    epsilon-DP under replace-one, labels private (module docstring).

    Parameters
    ----------
    manifold : Manifold
    points : array (n, *point_shape)
        n public; records are always clipped into B(center, radius) (the ball is meant to be a
        released quantile ball, which some records leave).
    labels : array (n,)
    classes : sequence (k,)
        Every possible label (public).
    epsilon : float
        Split as ``count_budget * epsilon`` on the counts and the rest on the sums.
    center, radius
        The ball (public or released).
    min_class_size : int
        Classes whose noisy count is below it get ``center`` (``SmallClassWarning``).
    outer : (center, radius), optional
        A public ball the means are projected onto (post-processing; keeps them representable).

    Returns
    -------
    Release with ``value`` (k, *point_shape) in the order of ``classes``; ``parameters`` hold the
    noisy counts, the budget split and the noise scale.
    """
    epsilon = check_positive("epsilon", epsilon)
    if not 0 < count_budget < 1:
        raise ValueError(f"count_budget must lie in (0, 1), got {count_budget}")
    min_class_size = check_count("min_class_size", min_class_size, 1)
    center, radius = manifold.check_point(center), check_positive("radius", radius)
    if outer is None:
        check_representable(manifold, center, radius)
    else:  # a released ball inside ``outer``: the check ``plan_ball`` made, so it passes again
        check_representable(manifold, manifold.check_point(outer[0]), float(outer[1]),
                            reach=2.0 * float(outer[1]))
    x = manifold.check_point(points)
    codes, k = _encode(labels, classes, len(x))
    rng = as_generator(rng)
    eps_count, eps_sum = count_budget * epsilon, (1.0 - count_budget) * epsilon
    scale = 2.0 * radius / eps_sum
    target = PureDP(epsilon)
    with reserved(ledger, target, f"tangent class means ({target.describe()})"):
        v = clipped_tangent_coords(manifold, center, x, radius)[0]
        clipped = int(np.sum(manifold.dist(center, x) > radius))
        noisy = two_sided_geometric(np.bincount(codes, minlength=k), eps_count, COUNT_SENSITIVITY, rng)
        sums = np.zeros((k, manifold.dim))
        np.add.at(sums, codes, v)
        sums += l2_laplace(manifold.dim, scale, (k,), rng)
    # post-processing of the released counts and sums
    tangent = _project(sums / np.maximum(noisy, 1)[:, None], radius)
    small = noisy < min_class_size
    tangent[small] = 0.0
    means = manifold.exp(center, manifold.from_coords(center, tangent))
    if outer is not None:
        means = into_ball(manifold, means, manifold.check_point(outer[0]), float(outer[1]))[0]
    bad = [c for c in range(k) if not _usable(manifold, means[c], center)]
    means[bad] = center
    fallback = sorted(set(np.flatnonzero(small).tolist()) | set(bad))
    if np.any(small):
        warnings.warn(f"{int(small.sum())} of {k} classes have a released size below "
                      f"min_class_size = {min_class_size}: their mean is the ball's center",
                      SmallClassWarning, stacklevel=2)
    classes_arr = np.asarray(classes)
    return Release(value=means, guarantee=target, sensitivity=2.0 * radius, scale=scale,
                   mechanism="tangent-space class means (geometric counts, L2 Laplace sums)",
                   exact_sampler=True, theorem=THEOREM_TANGENT,
                   parameters={"n": len(x), "classes": classes_arr.tolist(), "radius": float(radius),
                               "center": np.asarray(center).tolist(),
                               "epsilon_count": eps_count, "epsilon_sum": eps_sum,
                               "noisy_class_counts": [int(c) for c in noisy],
                               "fallback_classes": [classes_arr[c].item() for c in fallback]},
                   diagnostics={"records_clipped": clipped})


MEANS = ("tangent", "frechet")


def capped_center(manifold: Manifold, center: np.ndarray, max_condition: float | None) -> np.ndarray:
    """Under a condition cap K the released center is capped too, with the records' margin (its
    recomputed condition then stays <= K): post-processing, and clipping the records into
    B(c, r) keeps their condition <= K, as the mean's checks require."""
    return center if max_condition is None else manifold.cap_condition(center, max_condition)


def _check_class_means(manifold: Manifold, plan: BallPlan, labels: Array, classes: Sequence,
                       means: str, mechanism: str, count_budget: float,
                       min_class_size: int) -> float:
    """The class means' refusals on public parameters and labels, before the reservation of
    ``private_ball_class_means``; returns the public cap on the Fréchet means' radius
    (``frechet_radius_cap``; the outer radius for tangent means, which need no cap)."""
    if not 0 < count_budget < 1:
        raise ValueError(f"count_budget must lie in (0, 1), got {count_budget}")
    check_count("min_class_size", min_class_size, 1)
    _encode(labels, classes, len(plan.x))
    if means == "tangent":
        return plan.radius
    if mechanism not in MEAN_MECHANISMS:
        raise ValueError(f"mechanism must be one of {MEAN_MECHANISMS} for class means (pure DP, "
                         f"calibrated on the Fréchet-mean sensitivity), got {mechanism!r}")
    lookup(mechanism).check(manifold)
    return frechet_radius_cap(manifold, plan.radius)


def private_ball_class_means(manifold: Manifold, points: Array, labels: Array, classes: Sequence,
                             epsilon: float, center: Array, radius: float, *,
                             ball_budget: float = 0.3, quantile: float = 0.75,
                             ball_shares: Sequence[float] = BALL_SHARES, means: str = "tangent",
                             count_budget: float | None = None, delta: float | None = 1e-6,
                             mechanism: str = "wrapped-laplace", min_class_size: int = 1,
                             clip_data: bool = False, max_condition: float | None = None,
                             ledger: BudgetLedger | MemoryLedger | None = None,
                             rng: np.random.Generator | int | None = None) -> Release:
    """Class means in a private ball: ``private_ball`` with ``ball_budget * epsilon``, then the
    class means in B(c, r) with the rest, charged to ``ledger`` once (``PrivateMDM(ball=
    "private")``).

    ``means="tangent"`` (default): ``private_tangent_class_means``, ``count_budget`` (default
    0.125) of the rest on the counts; pure epsilon-DP under replace-one in total.
    ``means="frechet"``: ``geodp.learn.classes.private_class_means`` in B(c, r) with the records
    clipped into it, ``mechanism`` for each Fréchet mean (``"wrapped-laplace"``: footpoint c,
    no normalisability limit on Hadamard manifolds; ``"laplace"`` elsewhere), ``count_budget``
    (default 0.3) of the rest on the counts; (epsilon, delta)-DP under replace-one in total.
    Composition is sequential: the ball is a released value, and clipping every record into it
    maps replace-one neighbours to replace-one neighbours (or equal data sets). The Fréchet means
    run in B(c, min(r, cap)), cap = ``frechet_radius_cap`` (public, published as
    ``frechet_radius_cap``): Assumption 1 then holds whatever r is released. ``max_condition``
    (``means="frechet"``, affine-invariant SPD): a public cap K on every record's condition
    (records above it refused, or capped with ``clip_data``), the released center capped too
    (``capped_center``), and each Fréchet class mean released under the cap. Every refusal on
    the public parameters, the labels or the records outside the public ball comes before the
    ledger reserves anything.
    """
    epsilon = check_positive("epsilon", epsilon)
    if not 0 < ball_budget < 1:
        raise ValueError(f"ball_budget (the share of epsilon spent on the private ball) must lie in "
                         f"(0, 1), got {ball_budget}")
    if means not in MEANS:
        raise ValueError(f"means must be one of {MEANS}, got {means!r}")
    if count_budget is None:
        count_budget = 0.125 if means == "tangent" else 0.3
    eps_ball, eps_means = ball_budget * epsilon, (1.0 - ball_budget) * epsilon
    if means == "tangent":  # pure epsilon-DP: delta takes no part, but is not left unchecked
        if delta is not None:
            check_delta(delta)
        target = PureDP(epsilon)
    else:
        from .classes import class_guarantee
        target = class_guarantee(epsilon, delta, "private", count_budget)[0]
    # every refusal before the reservation (the cap's, the ball's, the class means' on public
    # parameters)
    if means == "tangent" and max_condition is not None:
        raise ParameterError("{max_condition} applies to means='frechet' (the tangent class "
                             "means compute no certified mean and need no cap)", "max_condition",
                             "means")
    plan = plan_ball(manifold, points, eps_ball, center, radius, quantile=quantile,
                     shares=ball_shares, clip_data=clip_data, max_condition=max_condition)
    cap = _check_class_means(manifold, plan, labels, classes, means, mechanism, count_budget,
                             min_class_size)
    center, x = plan.center, plan.x
    rng = as_generator(rng)
    with reserved(ledger, target, f"class means in a private ball ({means}, {target.describe()})"):
        ball = draw_ball(manifold, plan, PureDP(eps_ball), rng)
        c, r = capped_center(manifold, ball.value, max_condition), float(ball.parameters["radius"])
        if means == "tangent":
            inner = private_tangent_class_means(manifold, x, labels, classes, eps_means, c, r,
                                                count_budget=count_budget,
                                                min_class_size=min_class_size,
                                                outer=(center, radius), rng=rng)
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ClippingWarning)  # the quantile ball clips by design
                inner = private_class_means(manifold, x, labels, classes, eps_means, c,
                                            min(r, cap), delta=delta, count_budget=count_budget,
                                            mechanism=mechanism, min_class_size=min_class_size,
                                            clip_data=True, rng=rng, refuse_unreleasable=False,
                                            max_condition=max_condition)
    value = np.asarray(inner.value)
    if means == "frechet":
        value = into_ball(manifold, value, center, radius)[0]
        bad = [i for i in range(len(value)) if not _usable(manifold, value[i], c)]
        value[bad] = c
    parameters = {**inner.parameters, "ball": {k: v for k, v in ball.parameters.items()},
                  "ball_center": np.asarray(c).tolist(), "ball_radius": r,
                  "epsilon_ball": eps_ball, "epsilon_means": eps_means, "means": means,
                  "outer_radius": float(radius)}
    if means == "frechet":
        parameters["frechet_radius_cap"] = cap
    return Release(value=value, guarantee=target, sensitivity=inner.sensitivity, scale=inner.scale,
                   mechanism=f"class means in a private ball ({inner.mechanism})",
                   exact_sampler=inner.exact_sampler, parameters=parameters,
                   diagnostics={"ball": ball.diagnostics, "means": inner.diagnostics},
                   theorem=f"{THEOREM_BALL}; then {inner.theorem}; composed sequentially")
