"""Private class-conditional Fréchet means (what ``geodp.estimators.PrivateMDM`` fits).

Privacy argument (n public, labels private, replace-one neighbours)
-------------------------------------------------------------------
Replacing one record (x, a) by (x', b) removes a record from class a and adds one to class b:
within each class the change is add/remove, and at most two class means and two class counts
change (one of each when a = b).

1. Counts. The class histogram has L1 sensitivity 2 under replace-one. Adding two-sided
   geometric noise with a = exp(-epsilon_count / 2) to each count is epsilon_count-DP
   (``mechanisms.geometric``). With t the smallest integer such that P(Z > t) <= beta,
   L_c = noisy_c - t is a lower bound on n_c except with probability at most beta.
2. Means under add/remove within a class. Let D' have m - 1 records and D = D' u {x}. Adding a
   record at mu' = mean(D') leaves the mean unchanged (it contributes Log_mu'(mu') = 0 to the
   gradient of the Fréchet function, whose minimiser is unique inside a ball below the radius of
   Assumption 1 of Reimherr, Bharath & Soto 2021, and mu' lies in the ball), so
   rho(mean(D'), mean(D)) = rho(mean(D' u {mu'}), mean(D' u {x})) <= Delta(m), Theorem 2's
   sensitivity at the larger size m (the two sets are replace-one neighbours of size m). Delta
   decreases in m, so calibrating on Delta(L_c) is valid whenever L_c <= m.
3. Composition. Given the released counts, each changed class's mean is epsilon_mean-DP for
   the pair whenever L_c <= max(|D_c|, |D'_c|); the bound fails for class c with probability
   at most beta under either data set, hence for one of the two changed classes with
   probability at most 2 beta. Adaptive composition over the event where both bounds hold gives
   (epsilon_count + 2 epsilon_mean, 2 beta)-DP under replace-one: epsilon = epsilon_count +
   2 epsilon_mean, delta = 2 beta.

With ``class_sizes="public"`` the user declares the class sizes (and so the labels' histogram)
public: neighbours replace one record by another *of the same class* (relation
``replace-one-same-class``), exactly one class mean changes, and calibrating each mean on
Delta(n_c) with the whole epsilon is epsilon-DP, pure. A record moving between classes is not
protected under that relation; the release says so.

Classes with L_c < ``min_class_size`` (or no record under public sizes) are not estimated: their
mean is the public center, with a ``SmallClassWarning``. That choice depends on released
quantities only. In the event of probability at most beta where a class's true count is 0 but
L_c >= 1, the class's release is the noise law around the center (no record to average).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from functools import lru_cache

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array, as_generator
from ..mechanisms.geometric import geometric_tail, two_sided_geometric
from ..privacy import ApproxDP, BudgetLedger, Guarantee, MemoryLedger, PureDP
from ..privacy.conversions import check_count, check_positive
from ..privacy.relation import Relation
from ..statistics import frechet_mean_sensitivity
from .data_ball import check_condition_cap, enforce_ball, enforce_condition
from .frechet import check_frechet_mean, condition_parameters, private_frechet_mean
from .release import Release, reserved

CLASS_SIZE_ROUTES = ("private", "public")
MEAN_MECHANISMS = ("laplace", "wrapped-laplace", "kng")
COUNT_SENSITIVITY = 2  # L1 sensitivity of the class histogram under replace-one

THEOREM_PRIVATE = (
    "class counts by the two-sided geometric mechanism (L1 sensitivity 2 under replace-one); each "
    "class mean by the chosen Fréchet-mean mechanism calibrated on Theorem 2's sensitivity "
    "(Reimherr, Bharath & Soto 2021) at the lower bound L_c = noisy count - t, valid for "
    "add/remove within a class because adding a record at the mean leaves it unchanged; "
    "P(L_c > n_c) <= beta for each of the two classes a replacement changes, so (epsilon_count + "
    "2 epsilon_mean, 2 beta)-DP (geodp.learn.classes)")
THEOREM_PUBLIC = (
    "class sizes declared public: one class mean changes when a record is replaced by another of "
    "the same class; each mean by the chosen Fréchet-mean mechanism at Theorem 2's sensitivity "
    "Delta(n_c) (Reimherr, Bharath & Soto 2021) with the whole epsilon (geodp.learn.classes)")


class SmallClassWarning(UserWarning):
    """A class too small (by its released or declared size) to estimate: its mean is the public
    center. Raised from released or public values only: ``public``."""

    public = True


def class_guarantee(epsilon: float, delta: float | None, class_sizes: str,
                    count_budget: float) -> tuple[Guarantee, dict[str, float]]:
    """The release's guarantee and the budget split (see the module docstring).

    Returns the guarantee and ``{"epsilon_count", "epsilon_mean", "beta"}`` (the first and last 0
    under public class sizes).
    """
    epsilon = check_positive("epsilon", epsilon)
    if class_sizes not in CLASS_SIZE_ROUTES:
        raise ValueError(f"class_sizes must be one of {CLASS_SIZE_ROUTES}, got {class_sizes!r}")
    if class_sizes == "public":
        return (PureDP(epsilon, Relation.REPLACE_ONE_SAME_CLASS),
                {"epsilon_count": 0.0, "epsilon_mean": epsilon, "beta": 0.0})
    if delta is None or not 0 < delta < 1:
        raise ValueError(f"delta must lie in (0, 1) when class sizes are private (it bounds the "
                         f"chance that a class's released lower size bound is too high); got {delta}")
    if not 0 < count_budget < 1:
        raise ValueError(f"count_budget (the share of epsilon spent on the class sizes) must lie in "
                         f"(0, 1), got {count_budget}")
    split = {"epsilon_count": count_budget * epsilon,
             "epsilon_mean": (1.0 - count_budget) * epsilon / 2.0, "beta": delta / 2.0}
    return ApproxDP(epsilon, delta, Relation.REPLACE_ONE), split


def _encode(labels: Array, classes: Sequence, n: int) -> tuple[np.ndarray, int]:
    """Class indices of ``labels`` in the public ``classes``."""
    classes = np.asarray(classes)
    if classes.ndim != 1 or len(classes) == 0 or len(np.unique(classes)) != len(classes):
        raise ValueError("classes must be a non-empty list of distinct labels")
    labels = np.asarray(labels)
    if labels.shape != (n,):
        raise ValueError(f"labels must have shape ({n},), one per record, got {labels.shape}")
    order = np.argsort(classes)
    pos = np.searchsorted(classes[order], labels).clip(0, len(classes) - 1)
    if not np.array_equal(classes[order][pos], labels):
        raise ValueError("some labels are not among the public classes; pass every possible label "
                         "in classes=")
    return order[pos], len(classes)


def _lower_bounds(codes: np.ndarray, k: int, split: dict, public: bool,
                  rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray | None, int]:
    """(L_c for every class, the noisy counts or None, the tail t): the true counts when they are
    public, else noisy counts minus t."""
    counts = np.bincount(codes, minlength=k)
    if public:
        return counts, None, 0
    noisy = two_sided_geometric(counts, split["epsilon_count"], COUNT_SENSITIVITY, rng)
    t = geometric_tail(split["epsilon_count"], COUNT_SENSITIVITY, split["beta"])
    return noisy - t, noisy, t


def _class_mean(manifold, data, lower, public, mechanism, split, center, radius, rng,
                allow_approximate, max_condition=None) -> Release:
    """One class's release (``private_frechet_mean``), calibrated on L_c under private sizes.
    An empty class (possible only in the event the lower bound failed) releases the noise law
    around the center."""
    if len(data) == 0:
        data = center[None]
    return private_frechet_mean(manifold, data, split["epsilon_mean"], center, radius,
                                mechanism=mechanism, rng=rng, allow_approximate=allow_approximate,
                                sensitivity_size=None if public else int(lower),
                                max_condition=max_condition)


def releasable(manifold: Manifold, center: Array, radius: float, epsilon: float, mechanism: str,
               allow_approximate: bool, max_condition: float | None = None) -> Callable[..., bool]:
    """``passes(L, raising=False)``: whether a class mean calibrated on size L
    (``private_frechet_mean`` with ``sensitivity_size=L`` and ``epsilon``) passes every check of
    its release (normalisable, representable, exact or allowed chains): ``check_frechet_mean``,
    a dry run of the release that draws nothing, cached per L. The answer need not be monotone
    in L (SPD(6)'s eigenvalue samplers pass at 9-13 and
    from 24 on, not at 17-21). ``raising`` re-raises the refusal instead of returning False."""
    @lru_cache(maxsize=None)
    def check(size: int) -> ValueError | None:
        try:
            check_frechet_mean(manifold, size, center, radius, mechanism=mechanism,
                               epsilon=epsilon, allow_approximate=allow_approximate,
                               max_condition=max_condition)
        except ValueError as exc:
            return exc
        return None

    def passes(size: int, raising: bool = False) -> bool:
        refusal = check(int(size))
        if refusal is not None and raising:
            raise refusal
        return refusal is None
    return passes


def private_class_means(manifold: Manifold, points: Array, labels: Array, classes: Sequence,
                        epsilon: float, center: Array, radius: float, *,
                        delta: float | None = 1e-6, class_sizes: str = "private",
                        count_budget: float = 0.3, mechanism: str = "laplace",
                        min_class_size: int = 1, clip_data: bool = False,
                        ledger: BudgetLedger | MemoryLedger | None = None,
                        rng: np.random.Generator | int | None = None,
                        allow_approximate: bool = False,
                        max_condition: float | None = None,
                        refuse_unreleasable: bool = True) -> Release:
    """Differentially private Fréchet means of every class (the module docstring proves it).

    Parameters
    ----------
    manifold : Manifold
    points : array (n, *point_shape)
        The records; n is public.
    labels : array (n,)
        Each record's class (private).
    classes : sequence (k,)
        Every possible label: public, fixed before seeing the data.
    epsilon : float
        Total epsilon of the release.
    center, radius
        The public data ball.
    delta : float
        Private class sizes only: the release is (epsilon, delta)-DP under replace-one, delta =
        2 beta with beta the chance that one class's lower size bound exceeds its size.
    class_sizes : {"private", "public"}
        ``"private"``: sizes released by the two-sided geometric mechanism with
        ``count_budget * epsilon``, each mean at epsilon_mean = (1 - count_budget) epsilon / 2 on
        the lower bound L_c. ``"public"``: the user declares the sizes public; epsilon-DP under
        replace-one-same-class neighbours (a record changing class is not protected).
    mechanism : {"laplace", "wrapped-laplace", "kng"}
        The pure-DP Fréchet-mean mechanism of each class (``private_frechet_mean``).
    min_class_size : int
        Classes with L_c (or, public, n_c) below it get the center as mean, with a
        ``SmallClassWarning``; so do classes whose size the mechanism cannot release at
        epsilon_mean (``releasable``, from public parameters and the released size: the
        mechanism would refuse them, not normalisable, not representable or with no exact
        sampler, after the budget is charged).
    clip_data, ledger, rng, allow_approximate, max_condition
        As in ``private_frechet_mean``; the ledger is charged the whole release once. A record
        above ``max_condition`` is refused (or capped, with ``clip_data``) before anything is
        charged.
    refuse_unreleasable : bool
        Refuse, before anything is charged, a release whose mechanism cannot release even a
        class of all n records (default); False makes every class fall back to the center
        instead (for a caller whose ball is itself a released value, inside its reservation).

    Returns
    -------
    Release with ``value`` of shape (k, *point_shape), the class means in the order of
    ``classes``; ``parameters`` hold the released counts and bounds, the budget split and the
    classes that fell back to the center.

    Raises
    ------
    ValueError
        Bad parameters, labels outside ``classes``, records outside the ball (without
        ``clip_data``), or a mechanism other than the three above; before anything is charged.
    """
    if mechanism not in MEAN_MECHANISMS:
        raise ValueError(f"mechanism must be one of {MEAN_MECHANISMS} for class means (pure DP, "
                         f"calibrated on the Fréchet-mean sensitivity), got {mechanism!r}")
    target, split = class_guarantee(epsilon, delta, class_sizes, count_budget)
    min_class_size = check_count("min_class_size", min_class_size, 1)
    if center is None or radius is None:
        raise ValueError("center and radius of the public data ball are required")
    center = manifold.check_point(center)
    frechet_mean_sensitivity(manifold, radius, 1)  # Assumption 1, before anything is charged
    x = manifold.check_point(points)
    if x.ndim != len(manifold.point_shape) + 1:
        raise ValueError(f"points must have shape (n, {', '.join(map(str, manifold.point_shape))}) "
                         f"(one point per record), got {x.shape}")
    codes, k = _encode(labels, classes, len(x))
    check_condition_cap(manifold, center, max_condition)
    x, capped = enforce_condition(manifold, x, max_condition, clip_data)
    x, clipped = enforce_ball(manifold, x, center, radius, clip_data)
    passes = releasable(manifold, center, radius, split["epsilon_mean"], mechanism,
                        allow_approximate, max_condition)
    passes(len(x), raising=refuse_unreleasable)  # a refusal every class meets: before the charge
    rng, public = as_generator(rng), class_sizes == "public"
    releases, fallback = [], []
    with reserved(ledger, target, f"class means ({mechanism}, {class_sizes} sizes, "
                                  f"{target.describe()})"):
        lower, noisy, t = _lower_bounds(codes, k, split, public, rng)
        for c in range(k):
            if lower[c] < min_class_size or not passes(lower[c]):
                fallback.append(c)
                releases.append(None)
                continue
            releases.append(_class_mean(manifold, x[codes == c], lower[c], public, mechanism, split,
                                        center, radius, rng, allow_approximate, max_condition))
    if fallback:
        warnings.warn(f"{len(fallback)} of {k} classes have a {'declared' if public else 'released'} "
                      f"size below min_class_size = {min_class_size} or one the mechanism "
                      f"cannot release at epsilon_mean: their mean is the public "
                      f"center (classes {[classes[c] for c in fallback][:10]})", SmallClassWarning,
                      stacklevel=2)
    return _release(releases, center, target, split, lower, noisy, t, fallback, classes, mechanism,
                    class_sizes, {"n": len(x), "radius": float(radius),
                                  **condition_parameters(manifold, max_condition)},
                    {"clipped": clipped, "capped": capped} if capped else clipped)


def _release(releases, center, target, split, lower, noisy, t, fallback, classes, mechanism,
             class_sizes, parameters, clipped) -> Release:
    """The combined release of the class means."""
    done = [r for r in releases if r is not None]
    value = np.stack([center if r is None else r.value for r in releases])
    route = ("private: two-sided geometric counts, means calibrated on L_c = noisy count - t"
             if noisy is not None else "public: declared by the user")
    parameters.update(
        classes=np.asarray(classes).tolist(), class_sizes=route, mechanism=mechanism,
        epsilon_mean=split["epsilon_mean"], epsilon_count=split["epsilon_count"],
        beta=split["beta"], tail_t=t, fallback_classes=[np.asarray(classes)[c].item() for c in fallback],
        sensitivity_sizes=[int(v) for v in lower] if noisy is not None else None,
        noisy_class_counts=None if noisy is None else [int(v) for v in noisy],
        class_counts=[int(v) for v in lower] if noisy is None else None,
        sensitivities=[None if r is None else r.sensitivity for r in releases],
        scales=[None if r is None else r.scale for r in releases])
    return Release(value=value, guarantee=target,
                   sensitivity=max((r.sensitivity for r in done), default=0.0),
                   scale=max((r.scale for r in done), default=0.0),
                   mechanism=f"class-conditional Fréchet means ({mechanism})",
                   exact_sampler=all(r.exact_sampler for r in done),
                   parameters=parameters,
                   diagnostics={"records_clipped": clipped,
                                "per_class": [None if r is None else r.diagnostics for r in releases]},
                   theorem=THEOREM_PUBLIC if noisy is None else THEOREM_PRIVATE)
