"""A private classifier in the tangent space at a private reference point (what
``geodp.estimators.PrivateTangentSpaceClassifier`` fits).

Privacy argument (n public, labels private, replace-one neighbours)
-------------------------------------------------------------------
A record is a pair (x, y), x in the public ball B_r(c) (or moved onto it, ``clip_data``), y one of
the public ``classes``; neighbours replace one pair by any other. The release is (m, W):

1. Reference point. m = P(M_ref(X)), M_ref = ``private_frechet_mean`` with a pure mechanism
   ("laplace", "wrapped-laplace" or "kng") at epsilon_ref = ``reference_budget`` * epsilon,
   epsilon_ref-DP under replace-one (Reimherr, Bharath & Soto 2021, Theorems 1-2, and the
   theorems ``private_frechet_mean`` cites for the other two), and P the projection onto the ball
   (``into_ball``): post-processing.
2. Features. Given m, phi_m(x) = t / max(1, |t| / B) / B with t = ``to_coords``(m, Log_m x) and
   B = ``feature_bound`` public: a fixed map applied to each record alone, with |phi_m(x)| <= 1.
   When m and x lie in B_r(c) and the ball is within the injectivity radius, |t| = rho(m, x)
   <= 2r, so the default B = 2r never clips a record.
3. Weights. W, of shape (d + 1, k) (a row of intercepts), minimises the multinomial logistic
   loss of (phi_m(x_i), y_i) by DP-SGD (``dp_rsgd`` on ``Euclidean((d + 1) k)``, Abadi et al.
   2016; Han et al., Algorithm 1, with R^(d+1)k flat): each per-record gradient
   g_i = (phi~_i) (p_i - e_(y_i))^T, phi~_i = (phi_i, 1), is clipped to ``clip``; replacing a
   record moves the gradient sum by at most 2 clip at every iterate, and the Gaussian noise is
   calibrated so that the T steps are (epsilon - epsilon_ref, delta)-DP under replace-one: full
   batch by the exact Gaussian composition (GDP), sampling without replacement by RDP. Since
   |p - e_y| <= sqrt 2 and |phi~| <= sqrt 2, |g_i| <= 2: the default clip = 2 never acts.
   Poisson sampling is not offered: it is analysed under add/remove neighbours, with n secret,
   and step 1 is calibrated on the public n.
4. Composition. Step 3 is (epsilon - epsilon_ref, delta)-DP for every value of m, so the pair
   (m, W) is (epsilon, delta)-DP under replace-one by adaptive basic composition (Dwork & Roth
   2014, Theorem 3.16 and its adaptive form). Predictions are post-processing of (m, W, B).

The ledger is charged the whole (epsilon, delta) once, after every check (the reference point's
sampler included) and before any randomness is drawn: two entries would let a limited ledger
spend the reference point and then refuse the weights.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..manifolds import Euclidean, Manifold
from ..manifolds.base import Array, as_generator
from ..privacy import ApproxDP, BudgetLedger, MemoryLedger
from ..privacy.conversions import check_count, check_delta, check_positive
from ..privacy.relation import Relation
from .classes import _encode
from .data_ball import clipped_tangent_coords, enforce_ball, into_ball
from .dp_rgd import dp_rsgd
from .frechet import private_frechet_mean
from .release import Release

REFERENCE_MECHANISMS = ("laplace", "wrapped-laplace", "kng")
GRADIENT_BOUND = 2.0  # |phi~| |p - e_y| <= sqrt 2 * sqrt 2 (module docstring, step 3)

THEOREM = (
    "private reference point by a pure Fréchet-mean mechanism at reference_budget * epsilon "
    "(Reimherr, Bharath & Soto 2021), projected onto the public ball; tangent coordinates at it "
    "clipped to feature_bound; multinomial logistic regression by DP-SGD (Abadi et al. 2016; Han "
    "et al., Algorithm 1 on a flat space) with per-record gradients clipped, (epsilon - "
    "epsilon_ref, delta)-DP under replace-one; adaptive basic composition (Dwork & Roth 2014, "
    "Theorem 3.16)")


def tangent_features(manifold: Manifold, reference: Array, points: Array,
                     feature_bound: float) -> tuple[Array, int]:
    """(phi_m(x_i), how many were clipped): orthonormal coordinates of Log_m(x_i) at the reference
    point m, each of norm above B scaled back to B, divided by B (step 2 of the module docstring).

    Parameters
    ----------
    manifold : Manifold
    reference : array (*point_shape)
    points : array (n, *point_shape)
    feature_bound : float
        The public bound B.

    Returns
    -------
    array (n, dim) of rows of norm <= 1, and the (non-private) count of rows clipped.
    """
    coords, clipped = clipped_tangent_coords(manifold, reference, points, feature_bound)
    return coords / feature_bound, int(clipped.sum())


def softmax(logits: Array) -> Array:
    """Row-wise softmax of logits (n, k)."""
    z = np.exp(logits - logits.max(axis=1, keepdims=True))
    return z / z.sum(axis=1, keepdims=True)


def logistic_gradients(n_classes: int):
    """The per-record gradients of the multinomial logistic loss, for ``dp_rsgd``.

    A record is the row (phi, e_y) (features, then the one-hot label: shape (d + k,)); the weights
    w are W (d + 1, k) flattened, its last row the intercepts. Returns
    ``grad(w, batch) -> (b, (d + 1) k)``, rows (phi, 1) (softmax((phi, 1) W) - e_y)^T flattened.
    """
    def grad(w: Array, batch: Array) -> Array:
        phi = np.hstack([batch[:, :-n_classes], np.ones((len(batch), 1))])
        residual = softmax(phi @ w.reshape(phi.shape[1], n_classes)) - batch[:, -n_classes:]
        return (phi[:, :, None] * residual[:, None, :]).reshape(len(batch), -1)
    return grad


def logistic_loss(n_classes: int):
    """The mean multinomial logistic loss of records (phi, e_y) at w (a non-private diagnostic)."""
    def loss(w: Array, data: Array) -> float:
        phi = np.hstack([data[:, :-n_classes], np.ones((len(data), 1))])
        logits = phi @ w.reshape(phi.shape[1], n_classes)
        top = logits.max(axis=1)
        lse = top + np.log(np.exp(logits - top[:, None]).sum(axis=1))
        return float(np.mean(lse - np.sum(logits * data[:, -n_classes:], axis=1)))
    return loss


def _check_options(epsilon, delta, reference_budget, reference_mechanism, feature_bound, radius,
                   steps, lr, clip, batch_size, n) -> dict:
    """Every option checked before anything is reserved; the budget split and the bound B."""
    epsilon = check_positive("epsilon", epsilon)
    check_delta(delta)
    if not 0 < reference_budget < 1:
        raise ValueError(f"reference_budget (the share of epsilon spent on the reference point) must "
                         f"lie in (0, 1), got {reference_budget}")
    if reference_mechanism not in REFERENCE_MECHANISMS:
        raise ValueError(f"reference_mechanism must be one of {REFERENCE_MECHANISMS} (pure "
                         f"epsilon-DP Fréchet means), got {reference_mechanism!r}")
    check_count("steps", steps, 1)
    check_positive("lr", lr)
    check_positive("clip", clip)
    if batch_size is not None and not (check_count("batch_size", batch_size, 1) <= n):
        raise ValueError(f"batch_size must be at most the number of records (n, public under "
                         f"replace-one), got {batch_size}")
    bound = 2.0 * float(radius) if feature_bound is None else check_positive("feature_bound",
                                                                            feature_bound)
    return {"epsilon_reference": reference_budget * epsilon,
            "epsilon_weights": (1.0 - reference_budget) * epsilon, "feature_bound": bound}


def private_tangent_logistic(manifold: Manifold, points: Array, labels: Array, classes: Sequence,
                             epsilon: float, delta: float, center: Array, radius: float, *,
                             reference_budget: float = 0.2, reference_mechanism: str = "laplace",
                             feature_bound: float | None = None, steps: int = 100, lr: float = 1.0,
                             clip: float = GRADIENT_BOUND, batch_size: int | None = None,
                             clip_data: bool = False,
                             ledger: BudgetLedger | MemoryLedger | None = None,
                             rng: np.random.Generator | int | None = None,
                             allow_approximate: bool = False) -> Release:
    """An (epsilon, delta)-DP multinomial logistic regression in the tangent space at a private
    reference point (the module docstring proves it).

    Parameters
    ----------
    manifold : Manifold
    points : array (n, *point_shape)
        The records; n is public.
    labels : array (n,)
        Each record's class (private).
    classes : sequence (k,)
        Every possible label: public, fixed before seeing the data.
    epsilon, delta : float
        The (epsilon, delta)-DP of the whole release, under replace-one.
    center, radius
        The public data ball B_r(c).
    reference_budget : float
        Share of epsilon spent on the reference point (step 1), in (0, 1).
    reference_mechanism : {"laplace", "wrapped-laplace", "kng"}
        Its pure-DP mechanism (``private_frechet_mean``).
    feature_bound : float, optional
        Public bound B on the tangent coordinates (step 2); default 2 * radius.
    steps, lr, clip, batch_size
        DP-SGD (``dp_rsgd``): T steps of size ``lr`` from W = 0, per-record gradients clipped to
        ``clip`` (default 2: never acts), a full batch or ``batch_size`` records drawn without
        replacement.
    clip_data, ledger, rng, allow_approximate
        As in ``private_frechet_mean``; the ledger is charged (epsilon, delta) once.

    Returns
    -------
    Release with ``value`` {"reference": (*point_shape), "coef": (d + 1, k)}, d = manifold.dim,
    the intercepts in the last row; ``parameters`` hold the split, B and both parts' public
    parameters.
    """
    split = _check_options(epsilon, delta, reference_budget, reference_mechanism, feature_bound,
                           radius, steps, lr, clip, batch_size, len(points))
    center = manifold.check_point(center)
    x = manifold.check_point(points)
    codes, k = _encode(labels, classes, len(x))
    x, moved = enforce_ball(manifold, x, center, radius, clip_data)
    rng, target = as_generator(rng), ApproxDP(epsilon, delta, Relation.REPLACE_ONE)
    whole = None if ledger is None else _WholeFit(ledger, target, (
        f"tangent-space classifier ({target.describe()}: reference "
        f"{split['epsilon_reference']:.4g}-DP + DP-SGD)"))
    ref = private_frechet_mean(manifold, x, split["epsilon_reference"], center, radius,
                               mechanism=reference_mechanism, rng=rng, ledger=whole,
                               allow_approximate=allow_approximate)
    reference = into_ball(manifold, np.asarray(ref.value)[None], center, radius)[0][0]
    phi, clipped = tangent_features(manifold, reference, x, split["feature_bound"])
    records = np.hstack([phi, np.eye(k)[codes]])
    sgd = dp_rsgd(Euclidean((manifold.dim + 1) * k), logistic_gradients(k), records,
                  split["epsilon_weights"], delta, steps, batch_size=batch_size, lr=lr,
                  init=np.zeros((manifold.dim + 1) * k), clip=clip, rng=rng,
                  sampling="without_replacement", loss=logistic_loss(k), progress=False,
                  label="tangent-space logistic regression")
    return _release(ref, sgd, reference, target, split, k, manifold.dim, moved, clipped)


class _WholeFit:
    """The ledger the reference point's release is given: when that release reserves (after its
    own checks, such as the exactness of its sampler, and before its draw), the whole fit's
    guarantee is reserved on ``ledger`` instead. The weights' options were checked before, so a
    refusal charges nothing, and nothing is drawn before the charge."""

    def __init__(self, ledger: BudgetLedger | MemoryLedger, whole: ApproxDP, label: str):
        self.ledger, self.whole, self.label = ledger, whole, label

    def reserve(self, cost, delta: float = 0.0, label: str = ""):
        """Reserve the whole fit's guarantee (the reference point's ``cost`` is part of it)."""
        return self.ledger.reserve(self.whole, label=self.label)


def _release(ref: Release, sgd: Release, reference, target, split, k, dim, moved, clipped
             ) -> Release:
    """The combined release: value, the target guarantee, the parts' public parameters."""
    parameters = {**split, "reference_guarantee": ref.guarantee.describe(),
                  "weights_guarantee": sgd.guarantee.describe(),
                  "reference": ref.public["parameters"], "weights": sgd.public["parameters"]}
    return Release(value={"reference": reference, "coef": np.asarray(sgd.value).reshape(dim + 1, k)},
                   guarantee=target, sensitivity=sgd.sensitivity, scale=sgd.scale,
                   mechanism=f"tangent-space logistic regression ({ref.mechanism}; DP-SGD)",
                   exact_sampler=ref.exact_sampler and sgd.exact_sampler, parameters=parameters,
                   diagnostics={"records_clipped_to_ball": moved, "features_clipped": clipped,
                                "reference": ref.diagnostics, "weights": sgd.diagnostics},
                   theorem=THEOREM)
