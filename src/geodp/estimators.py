"""scikit-learn estimators for private statistics on manifolds (extra ``geodp[sklearn]``).

- ``PrivateFrechetMean``: releases a private Fréchet mean; ``transform`` maps records to
  orthonormal coordinates of the tangent space at it (a private ``TangentSpace``).
- ``PrivateMDM``: minimum distance to private class means, the private counterpart of
  pyRiemann's ``MDM`` (SPD under both metrics, spheres, hyperbolic and Kendall data, or any
  manifold with a logarithm).
- ``PrivateGeodesicRegression``: ``private_geodesic_regression`` as a regressor.
- ``PrivateTangentSpaceClassifier``: logistic regression by DP-SGD in the tangent space at a
  private reference point (pyRiemann's ``TangentSpace() + LogisticRegression()``, private).
- ``PrivatePCA``: private principal components (``private_pca`` / ``private_principal_subspace``)
  as a transformer like scikit-learn's ``PCA``.

They drop into scikit-learn and pyRiemann pipelines (``make_pipeline(Covariances(),
PrivateMDM(epsilon=1, radius=r))``), ``clone``, ``GridSearchCV`` and ``cross_val_score``. Every
fit is one private release: ``release_`` holds the full ``Release`` (guarantee, neighbouring
relation, statement, public parameters). Each fit is charged to ``accountant`` (a
``BudgetLedger`` or ``MemoryLedger``), by default ``SHARED_ACCOUNTANT``, one in-memory record for
the process with an unlimited budget: a cross-validation of k folds is k releases on
overlapping data, and the accountant shows what they spent together.

``manifold=`` takes a ``Manifold``, a specification ``"spd:5,metric=log-euclidean"``, or a
family name sized from the records' shape X.shape[1:] (``"spd"``, ``"spd,metric=log-euclidean"``,
``"sphere"``, ``"hyperbolic"``, ``"kendall"``, ``"euclidean"``; see
``geodp.manifolds.spec.manifold_for_data``). ``center`` defaults to the manifold's origin (a
public, data-independent point: the identity on SPD); ``radius`` of the public ball must be
given, or ``clip_data=True`` with it to move records outside onto its boundary.
``PrivateMDM`` and ``PrivateFrechetMean`` default to ``ball="private"``: they spend
``ball_budget`` of epsilon on a ball fitted to the data inside that public one
(``geodp.learn.private_ball``: a private quantile radius and a private center), so no radius is
chosen by looking at the data and the noise scales with the data's spread, not the domain's
(digits-covariance: public radius 30.9, private radius about 1.1). ``ball="public"`` calibrates
on the public ball itself, as before.

``random_state`` follows scikit-learn (None, an int, a ``RandomState``) and also takes a NumPy
``Generator``; it is turned into the Generator every geodp mechanism draws from.

This module imports scikit-learn; ``import geodp`` does not.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted

from .learn import (private_frechet_mean, private_geodesic_regression, private_pca,
                    private_principal_subspace)
from .learn.classes import SmallClassWarning, private_class_means
from .learn.data_ball import ClippingWarning
from .learn.frechet import check_frechet_mean
from .learn.private_ball import (BALL_SHARES, capped_center, draw_ball, frechet_radius_cap,
                                 plan_ball, private_ball_class_means)
from .learn.tangent import private_tangent_logistic, softmax, tangent_features
from .manifolds import Manifold
from .manifolds.spec import manifold_for_data
from .parameters import ParameterError
from .privacy import ApproxDP, BudgetLedger, MemoryLedger, PureDP
from .privacy.conversions import check_count, check_positive
from .learn.release import reserved
from .statistics import frechet_mean
from .statistics.regression import fitted_points

try:  # scikit-learn >= 1.6
    from sklearn.utils.validation import validate_data as _sk_validate
except ImportError:  # pragma: no cover - scikit-learn 1.4-1.5
    def _sk_validate(est, *args, **kwargs):
        return est._validate_data(*args, **kwargs)

__all__ = ["PrivateFrechetMean", "PrivateMDM", "PrivateGeodesicRegression", "SHARED_ACCOUNTANT",
           "DataDependentClassesWarning", "SmallClassWarning", "PrivateTangentSpaceClassifier",
           "PrivatePCA"]

SHARED_ACCOUNTANT = MemoryLedger()
"""The accountant of every estimator built with ``accountant=None``: unlimited, in memory, one
per process; ``SHARED_ACCOUNTANT.spent()`` and ``.history()`` show what its fits released."""


class DataDependentClassesWarning(UserWarning):
    """The set of class labels was read from the data; it must be public (pass ``classes=``).
    Raised when ``classes`` is not given, whatever the data: ``public``."""

    public = True


def as_generator(random_state) -> np.random.Generator:
    """scikit-learn's ``random_state`` (None, int, RandomState) or a Generator, as a Generator."""
    if random_state is None or isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state)
    if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
        return np.random.default_rng(check_count("random_state", random_state))
    if isinstance(random_state, np.random.RandomState):
        return np.random.default_rng(random_state.randint(0, 2**31 - 1, size=4))
    raise ValueError(f"random_state must be None, an int, a numpy RandomState or Generator, got "
                     f"{random_state!r}")


def _ledger(accountant) -> BudgetLedger | MemoryLedger:
    if accountant is None:
        return SHARED_ACCOUNTANT
    if not callable(getattr(accountant, "reserve", None)):
        raise TypeError(f"accountant must be a BudgetLedger or MemoryLedger (or None for the shared "
                        f"in-memory one), got {type(accountant).__name__}")
    return accountant


def _records(est: BaseEstimator, X, reset: bool) -> np.ndarray:
    """X validated (finite floats, at least 2-D: one record per row) and, at fit, the manifold
    resolved from its records' shape (``manifold_``); after fit, records off the fitted manifold
    are refused."""
    X = _sk_validate(est, X, reset=reset, allow_nd=True, dtype=np.float64)
    if reset:
        est.manifold_ = manifold_for_data(est.manifold, X.shape[1:])
    elif tuple(X.shape[1:]) != tuple(est.manifold_.point_shape):
        raise ValueError(f"X has records of shape {X.shape[1:]}, but {type(est).__name__} was "
                         f"fitted on {est.manifold_!r}")
    else:  # at fit the release checks its records; new records are checked here
        est.manifold_.check_point(X)
    return X


def _ball(est: BaseEstimator) -> tuple[np.ndarray, float]:
    """The public ball: ``center`` (default: the manifold's origin) and the required ``radius``."""
    if est.radius is None:
        raise ValueError(f"{type(est).__name__}: radius= (of the public ball containing every "
                         f"possible record, fixed without looking at the data) is required")
    m: Manifold = est.manifold_
    center = m.origin() if est.center is None else m.check_point(np.asarray(est.center, float))
    return center, check_positive("radius", est.radius)


def _labelled_records(est: BaseEstimator, X, y) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """A classifier's fit input checked (records, labels against the public classes), its
    ``manifold_`` and ``classes_`` set, and its public ball."""
    X, y = _sk_validate(est, X, y, reset=True, allow_nd=True, dtype=np.float64)
    _check_targets(est, y)
    est.manifold_ = manifold_for_data(est.manifold, X.shape[1:])
    est.classes_ = _public_classes(est, y)
    return (X, y) + _ball(est)


def _check_targets(est: BaseEstimator, y: np.ndarray) -> None:
    """sklearn's check that the labels are classes, made on the public ``classes`` when given
    (made on y, the check's outcome would depend on the labels' values: one record's label could
    turn a release into a refusal); each label is checked against them when it is encoded."""
    check_classification_targets(y if est.classes is None else np.asarray(est.classes))


def _public_classes(est: BaseEstimator, y: np.ndarray) -> np.ndarray:
    """The public ``classes`` of ``est``, or the labels of y with a
    ``DataDependentClassesWarning`` when none were given."""
    if est.classes is not None:
        return np.unique(np.asarray(est.classes))
    warnings.warn(f"{type(est).__name__}: the set of classes was read from y; it must be public. "
                  f"Pass classes= (every possible label, fixed without the data) to silence this",
                  DataDependentClassesWarning, stacklevel=3)
    return np.unique(y)


def _tags(est: BaseEstimator, tags):
    tags.input_tags.allow_nan = False
    return tags


def _ball_route(est: BaseEstimator) -> str:
    if est.ball not in ("public", "private"):
        raise ValueError(f"ball must be 'public' or 'private', got {est.ball!r}")
    return est.ball


def _mechanism(name: str | None, manifold: Manifold, route: str) -> str:
    """``None``: the route's default, ``"auto"`` in a private ball (whose released center is the
    wrapped mechanisms' footpoint) and the Riemannian ``"laplace"`` in the public ball (the
    behaviour before ``ball="private"`` became the default). ``"auto"``: the wrapped Laplace on
    Hadamard manifolds, the Riemannian Laplace elsewhere."""
    if name is None:
        name = "auto" if route == "private" else "laplace"
    if name != "auto":
        return name
    return "wrapped-laplace" if getattr(manifold, "is_hadamard", False) else "laplace"


def _releasable_radius(manifold, n, center, radius, cap, mechanism, epsilon, delta,
                       max_condition=None) -> float:
    """``radius`` where the mean's release passes its checks there (``check_frechet_mean``, all
    decided from public parameters and the released ball), else ``cap``, where they passed
    before the reservation: a map of the released (c, r), so that the mean never refuses after
    the charge (its checks need not pass more easily on a smaller ball: SPD(6)'s exact plan
    fails at some scales between two that pass)."""
    try:
        check_frechet_mean(manifold, n, center, radius, mechanism=mechanism, epsilon=epsilon,
                           delta=delta, max_condition=max_condition)
    except ValueError:
        return cap
    return radius


def _mean_in_private_ball(est, X, center, radius, mechanism, ledger, rng):
    """``PrivateFrechetMean(ball="private")``: the private ball with ``ball_budget`` of epsilon,
    then the mean of the records clipped into it with the rest; one charge to the ledger."""
    if not 0 < est.ball_budget < 1:
        raise ValueError(f"ball_budget must lie in (0, 1), got {est.ball_budget}")
    m, eps, k = est.manifold_, float(est.epsilon), est.max_condition
    target = PureDP(eps) if est.delta is None else ApproxDP(eps, est.delta)
    # every refusal before the reservation: the cap's (records above it, unless clipped), the
    # ball's (records outside the public ball), then the mean's on public parameters at the cap
    # on the radius it runs in (post-processing of r)
    plan = plan_ball(m, X, est.ball_budget * eps, center, radius, quantile=est.quantile,
                     shares=est.ball_shares, clip_data=est.clip_data, max_condition=k)
    cap = frechet_radius_cap(m, radius)
    check_frechet_mean(m, len(plan.x), plan.center, cap, mechanism=mechanism,
                       epsilon=(1 - est.ball_budget) * eps, delta=est.delta, max_condition=k)
    with reserved(ledger, target, f"Fréchet mean in a private ball ({mechanism}, "
                                  f"{target.describe()})"):
        ball = draw_ball(m, plan, PureDP(est.ball_budget * eps), rng)
        c = capped_center(m, ball.value, k)
        r = float(ball.parameters["radius"])
        inner_radius = _releasable_radius(m, len(plan.x), c, min(r, cap), cap, mechanism,
                                          (1 - est.ball_budget) * eps, est.delta, k)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ClippingWarning)  # the quantile ball clips by design
            inner = private_frechet_mean(m, plan.x, (1 - est.ball_budget) * eps, c, inner_radius,
                                         mechanism=mechanism, clip_data=True, rng=rng,
                                         delta=est.delta, max_condition=k)  # footpoint: c
    return dataclasses.replace(
        inner, guarantee=target,
        parameters={**inner.parameters, "ball": ball.parameters, "ball_center": np.asarray(c).tolist(),
                    "ball_radius": r, "frechet_radius_cap": cap, "epsilon_ball": est.ball_budget * eps,
                    "epsilon_mean": (1 - est.ball_budget) * eps, "outer_radius": float(radius)},
        diagnostics={"ball": ball.diagnostics, "mean": inner.diagnostics},
        mechanism=f"Fréchet mean in a private ball ({inner.mechanism})",
        theorem=f"{ball.theorem}; then {inner.theorem}; composed sequentially")


class PrivateFrechetMean(TransformerMixin, BaseEstimator):
    """A private Fréchet mean, and the tangent space at it.

    ``fit(X)`` releases the mean with ``geodp.private_frechet_mean`` (Reimherr, Bharath & Soto
    2021, Theorems 1-2 for ``"laplace"``; the exponential-wrapped (Theorem 3.1 for
    ``"wrapped-laplace"``), K-norm gradient and DP-RGD mechanisms as documented there). By default
    (``ball="private"``) it first releases a ball fitted to the data inside the public one and
    computes the mean of the records clipped into that ball (see ``ball``); the release's
    ``theorem`` names both steps, composed sequentially. Guarantee: epsilon-DP, or
    (epsilon, delta)-DP with ``delta`` where the mechanism takes it, under replace-one neighbours
    (n public), for either ``ball``. ``transform`` maps records to
    orthonormal coordinates of the tangent space at the private mean (pyRiemann's
    ``TangentSpace`` with a private reference point); ``inverse_transform`` maps back.

    Parameters
    ----------
    manifold : Manifold or str
        See the module docstring (default ``"spd"``, sized from X).
    epsilon, delta : float
        The target guarantee (``delta`` for ``"wrapped-gaussian"`` and ``"dp-rgd"``).
    center, radius
        The public data ball (center default: the manifold's origin).
    clip_data : bool
        Move records outside the ball onto its boundary instead of refusing them.
    mechanism : str or None
        A registered Fréchet-mean mechanism (``geodp.mechanisms.registry``), or ``"auto"``:
        ``"wrapped-laplace"`` on Hadamard manifolds (no normalisability limit; footpoint the
        ball's center), ``"laplace"`` elsewhere. ``None`` (default): ``"auto"`` with
        ``ball="private"`` (SPD, hyperbolic, Euclidean: the wrapped Laplace at the released
        center; spheres, Kendall: the Riemannian Laplace), ``"laplace"`` with ``ball="public"``
        (the public route's former default, unchanged).
    ball : {"private", "public"}
        ``"public"``: the mean is calibrated on the public ball. ``"private"`` (default):
        ``geodp.learn.private_ball.private_ball`` releases a ball B(c, r) holding about
        ``quantile`` of the records with ``ball_budget * epsilon`` (pilot radius and radius by
        the exponential mechanism, center by the L2 Laplace in T_c0; pure DP, replace-one), then
        the mean of the records clipped into B(c, r) is released with the rest of the budget
        (footpoint c for the wrapped mechanisms). Clipping into a released ball maps neighbours
        to neighbours, so the two compose sequentially: epsilon-DP (or (epsilon, delta)-DP with
        ``delta``) under replace-one in total. digits-covariance at epsilon = 1: 0.07-0.09 from
        the non-private mean against 0.32-0.57 with ``"public"`` (3 seeds); at epsilon = 10 the
        quantile ball's clipping bias (about 0.07) is comparable to the public route's noise.
    ball_budget, quantile, ball_shares
        The private ball's share of epsilon (default 0.3), the share of records it aims to hold
        (default 0.75) and the split of its budget between pilot radius, center and radius
        (default (0.2, 0.6, 0.2)).
    max_condition : float, optional
        A public cap K on the condition number of every record (affine-invariant SPD; see
        ``geodp.private_frechet_mean``): records above it are refused, or capped with
        ``clip_data``, and the numerical bounds become worst cases. With ``ball="private"`` the
        released center is capped too (post-processing), so the mean's ball keeps the cap.
    accountant : BudgetLedger or MemoryLedger, optional
        Charged at each fit (default ``SHARED_ACCOUNTANT``).
    random_state : None, int, RandomState or Generator

    Attributes
    ----------
    mean_ : array ``(*point_shape)``
    release_ : Release
    manifold_ : Manifold
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import load
    >>> from geodp.estimators import PrivateFrechetMean
    >>> ds = load('digits-covariance')
    >>> center, radius = ds.public_ball()
    >>> est = PrivateFrechetMean(epsilon=1.0, center=center, radius=radius, random_state=0)
    >>> est = est.fit(ds.points)
    >>> est.mean_.shape, est.transform(ds.points[:3]).shape, est.release_.guarantee.describe()
    ((5, 5), (3, 15), '1-DP (replace-one)')
    """

    def __init__(self, manifold="spd", epsilon=1.0, delta=None, center=None, radius=None,
                 clip_data=False, mechanism=None, accountant=None, random_state=None,
                 ball="private", ball_budget=0.3, quantile=0.75, ball_shares=BALL_SHARES,
                 max_condition=None):
        self.manifold = manifold
        self.epsilon = epsilon
        self.delta = delta
        self.center = center
        self.radius = radius
        self.clip_data = clip_data
        self.mechanism = mechanism
        self.accountant = accountant
        self.random_state = random_state
        self.ball = ball
        self.ball_budget = ball_budget
        self.quantile = quantile
        self.ball_shares = ball_shares
        self.max_condition = max_condition

    def __sklearn_tags__(self):
        return _tags(self, super().__sklearn_tags__())

    def fit(self, X, y=None) -> "PrivateFrechetMean":
        """Release the private Fréchet mean of X, array ``(n, *point_shape)``; y is ignored."""
        X = _records(self, X, reset=True)
        center, radius = _ball(self)
        route = _ball_route(self)
        mechanism = _mechanism(self.mechanism, self.manifold_, route)
        rng, ledger = as_generator(self.random_state), _ledger(self.accountant)
        if route == "public":
            self.release_ = private_frechet_mean(
                self.manifold_, X, self.epsilon, center, radius, mechanism=mechanism,
                clip_data=self.clip_data, ledger=ledger, rng=rng, delta=self.delta,
                max_condition=self.max_condition)
        else:
            self.release_ = _mean_in_private_ball(self, X, center, radius, mechanism, ledger, rng)
        self.mean_ = np.asarray(self.release_.value)
        return self

    def transform(self, X) -> np.ndarray:
        """Coordinates (n, dim) of Log_mean(X) in an orthonormal basis of the tangent space."""
        check_is_fitted(self)
        X = _records(self, X, reset=False)
        return self.manifold_.to_coords(self.mean_, self.manifold_.log(self.mean_, X))

    def inverse_transform(self, X) -> np.ndarray:
        """Records ``(n, *point_shape)`` Exp_mean of the tangent vectors with coordinates X (n, dim)."""
        check_is_fitted(self)
        X = np.asarray(X, dtype=float)
        dim = self.manifold_.dim
        if X.ndim != 2 or X.shape[1] != dim:
            raise ValueError(f"X must hold the {dim} tangent coordinates of each record, shape "
                             f"(n, {dim}), got shape {X.shape}")
        return self.manifold_.exp(self.mean_, self.manifold_.from_coords(self.mean_, X))


class PrivateMDM(ClassifierMixin, TransformerMixin, BaseEstimator):
    """Minimum distance to private class means: the private counterpart of pyRiemann's ``MDM``.

    ``fit`` releases every class's mean; ``predict`` assigns the class of the nearest released
    mean, ``predict_proba`` is the softmax of the negative squared distances (as pyRiemann),
    ``transform`` the distances to the means. Prediction uses released means only, so it costs no
    further budget.

    Privacy (stated in ``release_``: guarantee, relation, ``theorem``):

    - ``ball="private"`` (default; proved in ``geodp.learn.private_ball``,
      ``private_ball_class_means``): neighbours replace one record (x, label) by any other (n
      public; labels private). ``ball_budget * epsilon`` releases a ball B(c, r) fitted to the
      data inside the public one, every record is clipped into it, and the class means are
      released in it with the rest: by default (``means="tangent"``) tangent-space class means
      at c (two-sided geometric class counts, class sums of Log_c(x) with L2 Laplace noise on the
      group-norm sensitivity 2 r). The release's ``theorem`` is the private ball's (exponential
      mechanism for the quantile radii, McSherry & Talwar 2007; L2 Laplace center), then the
      tangent class means' (K-norm mechanism for the group norm, Hardt & Talwar 2010), composed
      sequentially: pure epsilon-DP under replace-one, ``delta`` unused. The means are
      tangent-space (log-Euclidean at c) means, close to the Fréchet means for concentrated
      classes. ``class_sizes="public"`` is refused with it.
    - ``ball="public"`` (proved in ``geodp.learn.classes``, ``private_class_means``): every
      class's Fréchet mean calibrated on the public ball, as follows.
    - ``class_sizes="private"`` (default) with ``ball="public"``: neighbours replace one record
      (x, label) by any other (n public; labels private), so a record may move between classes
      and two class means and two counts change. The class sizes are released by the two-sided
      geometric mechanism with ``count_budget * epsilon`` (L1 sensitivity 2), and each class
      mean is calibrated on
      Theorem 2's sensitivity (Reimherr, Bharath & Soto 2021) at the lower bound L_c = noisy
      count - t, t the geometric tail at beta = delta / 2; a mean's sensitivity under adding or
      removing a record in its class is at most Theorem 2's Delta at the larger size (adding a
      record at the mean leaves it unchanged), so the calibration is valid unless L_c exceeds
      the class's size, which happens with probability <= beta for each of the two classes.
      Each mean takes epsilon_mean = (1 - count_budget) epsilon / 2: (epsilon, delta)-DP under
      replace-one.
    - ``class_sizes="public"`` (``ball="public"`` only): the user declares the class sizes
      public; neighbours replace a record by another of the same class (relation
      ``replace-one-same-class``: a record changing class is not protected), one mean changes,
      epsilon-DP with the whole epsilon.
    - The set of classes is public: pass ``classes=``; without it they are read from y with a
      ``DataDependentClassesWarning`` (as diffprivlib does for bounds).
    - Classes whose released (or declared) size is below ``min_class_size`` get the public
      center as mean, with a ``SmallClassWarning``: a choice made from released values only.

    Parameters
    ----------
    manifold : Manifold or str
        Default ``"spd"`` (affine-invariant, sized from X); see the module docstring.
    epsilon : float
        Total epsilon.
    delta : float
        ``ball="public"`` with private class sizes, or ``means="frechet"``: the delta of the
        (epsilon, delta)-DP guarantee (twice the chance that a class's lower size bound is too
        high). Unused by the default (pure DP) and with public class sizes.
    center, radius, clip_data
        The public data ball (center default: the manifold's origin), clipping into it.
    classes : array-like, optional
        Every possible label (public).
    class_sizes : {"private", "public"}
    count_budget : float, optional
        Share spent on the class sizes (private sizes): of epsilon with the public ball
        (default 0.3), of the budget left after the private ball otherwise (default 0.125 for
        tangent means, 0.3 for Fréchet means).
    mechanism : {"laplace", "wrapped-laplace", "kng", "auto"} or None
        Each Fréchet class mean's mechanism (``geodp.private_frechet_mean``) with
        ``ball="public"`` or ``means="frechet"``; the default tangent means do not use it.
        ``"auto"``: the wrapped Laplace (footpoint the ball's center) on Hadamard manifolds, the
        Laplace elsewhere. ``None`` (default): ``"auto"`` with ``ball="private"`` (footpoint the
        released center), ``"laplace"`` with ``ball="public"`` (that route's former default).
    ball : {"private", "public"}
        ``"public"``: the means are calibrated on the public ball, as above.
        ``"private"`` (default; ``geodp.learn.private_ball``): ``ball_budget * epsilon`` releases
        a ball B(c, r) holding about ``quantile`` of the records inside the public one (a pilot
        radius and the radius by the exponential mechanism for a quantile of the distances, utility
        sensitivity 1; the center by the L2 Laplace on the average of Log_c0 of the records
        clipped to the pilot ball, sensitivity 2 r0 / n; split by ``ball_shares``); every record
        is clipped into B(c, r) (a fixed map of each record given the released ball, so
        neighbours stay neighbours) and the class means are released in it with the rest:
        ``means="tangent"`` (default): two-sided geometric class counts and the class sums of
        Log_c(x_i) with independent L2 Laplace noise of scale 2 r / epsilon_sum (group-norm
        sensitivity 2 r under replace-one), mean = Exp_c(noisy sum / noisy count): pure
        epsilon-DP under replace-one in total, any manifold with a logarithm.
        ``means="frechet"``: the Fréchet-mean route above inside B(c, r): (epsilon, delta)-DP.
        On digits-covariance (5-fold CV) this reaches pyRiemann's accuracy at epsilon = 10 (0.59
        against 0.585; 0.42 at epsilon = 1), where ``"public"`` gives 0.15 (see
        ``geodp.experiments.private_mdm``).
    ball_budget, quantile, ball_shares
        Default 0.3, 0.75 and (0.2, 0.6, 0.2) (pilot radius, center, radius).
    means : {"tangent", "frechet"}
        The class means' estimator with ``ball="private"``.
    max_condition : float, optional
        A public cap K on every record's condition number (``geodp.learn.classes.
        private_class_means``); with ``ball="private"`` for ``means="frechet"`` only (the
        released center is capped too), refused with tangent means, which need no cap.
    min_class_size : int
    accountant : BudgetLedger or MemoryLedger, optional
        Charged the whole release once per fit (default ``SHARED_ACCOUNTANT``).
    random_state : None, int, RandomState or Generator

    Attributes
    ----------
    classes_ : array (k,)
    means_ : array ``(k, *point_shape)``
        The released class means.
    release_ : Release
    manifold_ : Manifold
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import load
    >>> from geodp.estimators import PrivateMDM
    >>> ds = load('digits-covariance')
    >>> center, radius = ds.public_ball()
    >>> clf = PrivateMDM(epsilon=1.0, center=center, radius=radius, classes=range(10), random_state=0)
    >>> clf = clf.fit(ds.points, ds.labels)
    >>> clf.means_.shape, clf.predict(ds.points[:5]).shape
    ((10, 5, 5), (5,))
    """

    def __init__(self, manifold="spd", epsilon=1.0, delta=1e-6, center=None, radius=None,
                 clip_data=False, classes=None, class_sizes="private", count_budget=None,
                 mechanism=None, min_class_size=1, accountant=None, random_state=None,
                 ball="private", ball_budget=0.3, quantile=0.75, ball_shares=BALL_SHARES,
                 means="tangent", max_condition=None):
        self.manifold = manifold
        self.epsilon = epsilon
        self.delta = delta
        self.center = center
        self.radius = radius
        self.clip_data = clip_data
        self.classes = classes
        self.class_sizes = class_sizes
        self.count_budget = count_budget
        self.mechanism = mechanism
        self.min_class_size = min_class_size
        self.accountant = accountant
        self.random_state = random_state
        self.ball = ball
        self.ball_budget = ball_budget
        self.quantile = quantile
        self.ball_shares = ball_shares
        self.means = means
        self.max_condition = max_condition

    def __sklearn_tags__(self):
        return _tags(self, super().__sklearn_tags__())

    def fit(self, X, y) -> "PrivateMDM":
        """Release the class means of X, array ``(n, *point_shape)``, labelled by y, array (n,)."""
        X, y, center, radius = _labelled_records(self, X, y)
        route = _ball_route(self)
        mechanism = _mechanism(self.mechanism, self.manifold_, route)
        if route == "private":
            if self.class_sizes != "private":
                raise ValueError("ball='private' releases the class sizes privately; "
                                 "class_sizes='public' applies to ball='public' only")
            if self.means == "tangent" and self.mechanism is not None:
                raise ParameterError("{mechanism} has no effect with means='tangent' (the "
                                     "default with ball='private'): the tangent class means have "
                                     "their own mechanism; take means='frechet' to choose one",
                                     "mechanism")
            self.release_ = private_ball_class_means(
                self.manifold_, X, y, self.classes_, self.epsilon, center, radius,
                ball_budget=self.ball_budget, quantile=self.quantile, ball_shares=self.ball_shares,
                means=self.means, count_budget=self.count_budget, delta=self.delta,
                mechanism=mechanism, min_class_size=self.min_class_size, clip_data=self.clip_data,
                max_condition=self.max_condition, ledger=_ledger(self.accountant),
                rng=as_generator(self.random_state))
        else:
            self.release_ = private_class_means(
                self.manifold_, X, y, self.classes_, self.epsilon, center, radius, delta=self.delta,
                class_sizes=self.class_sizes,
                count_budget=0.3 if self.count_budget is None else self.count_budget,
                mechanism=mechanism, min_class_size=self.min_class_size, clip_data=self.clip_data,
                max_condition=self.max_condition, ledger=_ledger(self.accountant),
                rng=as_generator(self.random_state))
        self.means_ = np.asarray(self.release_.value)
        return self

    def transform(self, X) -> np.ndarray:
        """Distances (n, k) of each record to each released class mean."""
        check_is_fitted(self)
        X = _records(self, X, reset=False)
        d = np.stack([self.manifold_.dist(X, m) for m in self.means_], axis=-1)
        return np.where(np.isfinite(d), d, np.inf)  # a mean double precision cannot whiten by

    def predict(self, X) -> np.ndarray:
        """The class (n,) of the nearest released mean."""
        d = self.transform(X)
        return self.classes_[np.argmin(d, axis=1)]

    def predict_proba(self, X) -> np.ndarray:
        """softmax(-d^2) (n, k) over the distances to the class means (as pyRiemann's MDM)."""
        d2 = -self.transform(X) ** 2
        d2 -= d2.max(axis=1, keepdims=True)
        p = np.exp(d2)
        return p / p.sum(axis=1, keepdims=True)

    def fit_predict(self, X, y) -> np.ndarray:
        """Fit, then predict the classes of X."""
        return self.fit(X, y).predict(X)


class PrivateGeodesicRegression(RegressorMixin, BaseEstimator):
    """Private geodesic regression of manifold-valued responses on one real covariate.

    ``fit(X, Y)`` releases a footpoint p and shooting vector v with
    ``geodp.private_geodesic_regression`` (K-norm gradient mechanism, Reimherr & Awan 2019, with
    the clipped-residual sensitivities of Kulkarni & Soto, Theorems 3.3 and D.1): epsilon-DP
    under replace-one neighbours (n public). ``predict(X)`` is Exp_p(x v); ``score`` is
    Fletcher's (2011) geodesic R^2, 1 - sum rho(yhat, y)^2 / sum rho(ybar, y)^2 with ybar the
    (non-private) Fréchet mean of the scored responses: an evaluation on the caller's data, not a
    release. With ``manifold="euclidean"`` and a 1-D Y the responses are reals and this is the
    usual R^2.

    Parameters
    ----------
    manifold : Manifold or str
        Default ``"sphere"``, sized from Y.shape[1:].
    epsilon : float
    tau : float
        Residuals are clipped to this norm (Huber-type loss; the sensitivity depends on it).
    x_range : (float, float)
        Public range of the covariate.
    v_max : float
        Public bound on ``|v|``.
    center, radius
        Public footpoint ball; on compact manifolds (spheres, Kendall) radius None means the
        whole space. With a radius and no center, the manifold's origin.
    release : {"joint", "sequential"}
    clip_data : bool
        Clip covariates into ``x_range`` instead of refusing them.
    accountant : BudgetLedger or MemoryLedger, optional
    random_state : None, int, RandomState or Generator
    allow_approximate : bool
        Allow MCMC draws where no exact sampler can draw the release.

    Attributes
    ----------
    footpoint_ : array ``(*point_shape)``
    shooting_vector_ : array ``(*point_shape)``
    release_ : Release
    manifold_ : Manifold
    n_features_in_ : int
        1: one covariate.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.estimators import PrivateGeodesicRegression
    >>> from geodp.manifolds import Sphere
    >>> m = Sphere(2)
    >>> x = np.random.default_rng(0).uniform(0.0, 1.0, 100)
    >>> y = m.exp(m.origin(), x[:, None] * np.array([0.5, 0.0, 0.0]))
    >>> reg = PrivateGeodesicRegression(epsilon=0.4, tau=0.5, v_max=1.0, center=m.origin(), radius=0.5,
    ...                                 random_state=0)
    >>> reg = reg.fit(x, y)
    >>> reg.predict(np.array([0.0, 1.0])).shape, reg.release_.guarantee.describe()
    ((2, 3), '0.4-DP (replace-one)')
    """

    def __init__(self, manifold="sphere", epsilon=1.0, tau=1.0, x_range=(0.0, 1.0), v_max=1.0,
                 center=None, radius=None, release="joint", clip_data=False, accountant=None,
                 random_state=None, allow_approximate=False):
        self.manifold = manifold
        self.epsilon = epsilon
        self.tau = tau
        self.x_range = x_range
        self.v_max = v_max
        self.center = center
        self.radius = radius
        self.release = release
        self.clip_data = clip_data
        self.accountant = accountant
        self.random_state = random_state
        self.allow_approximate = allow_approximate

    def __sklearn_tags__(self):
        return _tags(self, super().__sklearn_tags__())

    def _covariate(self, X, reset: bool) -> np.ndarray:
        X = _sk_validate(self, X, reset=reset, dtype=np.float64, ensure_2d=False)
        X = X[:, None] if X.ndim == 1 else X
        if reset:
            self.n_features_in_ = 1
        if X.ndim != 2 or X.shape[1] != 1:
            raise ValueError(f"PrivateGeodesicRegression takes one covariate per record: X must "
                             f"have shape (n,) or (n, 1), got {X.shape}")
        return X[:, 0]

    def _responses(self, Y) -> np.ndarray:
        Y = np.asarray(Y, dtype=float)
        return Y[:, None] if Y.ndim == 1 else Y

    def fit(self, X, Y) -> "PrivateGeodesicRegression":
        """Release the geodesic of covariates X (n,) or (n, 1) and responses Y ``(n, *point_shape)``
        (or (n,) reals with ``manifold="euclidean"``)."""
        if Y is None:
            raise ValueError("PrivateGeodesicRegression requires y to be passed, but the target y "
                             "is None")
        x = self._covariate(X, reset=True)
        self.scalar_response_ = np.ndim(Y) == 1
        Y = self._responses(Y)
        if len(Y) != len(x) or not np.all(np.isfinite(Y)):
            raise ValueError(f"Y must hold {len(x)} finite responses, one per covariate")
        self.manifold_ = manifold_for_data(self.manifold, Y.shape[1:])
        center = self.center
        if center is None and self.radius is not None:
            center = self.manifold_.origin()
        self.release_ = private_geodesic_regression(
            self.manifold_, x, Y, self.epsilon, self.tau, self.x_range, self.v_max, center,
            self.radius, rng=as_generator(self.random_state), release=self.release,
            clip_data=self.clip_data, ledger=_ledger(self.accountant),
            allow_approximate=self.allow_approximate)
        self.footpoint_ = np.asarray(self.release_.value["footpoint"])
        self.shooting_vector_ = np.asarray(self.release_.value["shooting_vector"])
        return self

    def predict(self, X) -> np.ndarray:
        """Exp_p(x v) for each covariate: ``(n, *point_shape)``, or (n,) for scalar responses."""
        check_is_fitted(self)
        x = self._covariate(X, reset=False)
        out = fitted_points(self.manifold_, self.footpoint_, self.shooting_vector_, x)
        return out[:, 0] if self.scalar_response_ else out

    def score(self, X, Y, sample_weight=None) -> float:
        """Fletcher's geodesic R^2 of the released geodesic on (X, Y) (non-private evaluation)."""
        if sample_weight is not None:
            raise ValueError("PrivateGeodesicRegression.score takes no sample_weight")
        Y = self._responses(Y)
        pred = self._responses(self.predict(X))
        m = self.manifold_
        ybar = frechet_mean(m, Y, on_spread="ignore").mean
        total = float(np.sum(m.dist(ybar, Y) ** 2))
        resid = float(np.sum(m.dist(pred, Y) ** 2))
        return 1.0 - resid / total if total > 0 else (1.0 if resid == 0 else -math.inf)


class PrivateTangentSpaceClassifier(ClassifierMixin, BaseEstimator):
    """Logistic regression in the tangent space at a private reference point: the private
    counterpart of pyRiemann's ``TangentSpace() + LogisticRegression()``.

    ``fit`` releases (``geodp.learn.tangent.private_tangent_logistic``, whose module docstring
    proves the guarantee): (1) a reference point m, ``private_frechet_mean`` at
    ``reference_budget * epsilon`` (pure, replace-one), projected onto the public ball; (2) each
    record's tangent coordinates at m, clipped to the public ``feature_bound`` B and divided by
    it; (3) the weights of a multinomial logistic regression on them, by DP-SGD (``dp_rsgd`` on a
    flat space: per-record gradients clipped to ``clip``, Gaussian noise, a full batch or
    ``batch_size`` records drawn without replacement) at (epsilon - epsilon_ref, delta). The
    two compose (adaptive basic composition) to (epsilon, delta)-DP under replace-one neighbours
    (n public, a record is the pair (x, y)); the accountant is charged the total once. Prediction
    uses the released m and W only, so it costs no budget.

    Parameters
    ----------
    manifold : Manifold or str
        Default ``"spd"`` (affine-invariant, sized from X); see the module docstring.
    epsilon, delta : float
        The (epsilon, delta)-DP of the whole fit.
    center, radius, clip_data
        The public data ball (center default: the manifold's origin), clipping into it.
    classes : array-like, optional
        Every possible label (public); without it they are read from y with a
        ``DataDependentClassesWarning``.
    reference_budget : float
        Share of epsilon spent on the reference point, in (0, 1).
    reference_mechanism : {"laplace", "wrapped-laplace", "kng"}
    feature_bound : float, optional
        Public bound B on the tangent coordinates' norm; default 2 * radius (never clips a record
        of the ball). A smaller B clips far records and scales the features up.
    steps, lr, clip, batch_size
        DP-SGD: steps, step size, per-record gradient clipping norm (default 2, the largest
        gradient norm: never acts), and None (full batch) or a batch size (without replacement).
    accountant : BudgetLedger or MemoryLedger, optional
    random_state : None, int, RandomState or Generator
    allow_approximate : bool
        Allow an MCMC draw of the reference point where no exact sampler can draw it.

    Attributes
    ----------
    classes_ : array (k,)
    reference_ : array ``(*point_shape)``
        The released reference point.
    coef_ : array (k, dim)
        The released weights (dim = ``manifold_``.dim), on the features phi(x) (coordinates / B).
    intercept_ : array (k,)
    release_ : Release
    manifold_ : Manifold
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import load
    >>> from geodp.estimators import PrivateTangentSpaceClassifier
    >>> ds = load('emg-covariance')
    >>> center, radius = ds.public_ball()
    >>> clf = PrivateTangentSpaceClassifier(epsilon=1.0, center=center, radius=radius, steps=20,
    ...                                     classes=np.unique(ds.labels), random_state=0,
    ...                                     reference_mechanism='wrapped-laplace')
    >>> clf.fit(ds.points, ds.labels).predict_proba(ds.points[:2]).shape
    (2, 5)
    """

    def __init__(self, manifold="spd", epsilon=1.0, delta=1e-5, center=None, radius=None,
                 clip_data=False, classes=None, reference_budget=0.2, reference_mechanism="laplace",
                 feature_bound=None, steps=100, lr=1.0, clip=2.0, batch_size=None, accountant=None,
                 random_state=None, allow_approximate=False):
        self.manifold = manifold
        self.epsilon = epsilon
        self.delta = delta
        self.center = center
        self.radius = radius
        self.clip_data = clip_data
        self.classes = classes
        self.reference_budget = reference_budget
        self.reference_mechanism = reference_mechanism
        self.feature_bound = feature_bound
        self.steps = steps
        self.lr = lr
        self.clip = clip
        self.batch_size = batch_size
        self.accountant = accountant
        self.random_state = random_state
        self.allow_approximate = allow_approximate

    def __sklearn_tags__(self):
        return _tags(self, super().__sklearn_tags__())

    def fit(self, X, y) -> "PrivateTangentSpaceClassifier":
        """Release the reference point and weights for X, array ``(n, *point_shape)``, labelled by y,
        array (n,)."""
        X, y, center, radius = _labelled_records(self, X, y)
        self.release_ = private_tangent_logistic(
            self.manifold_, X, y, self.classes_, self.epsilon, self.delta, center, radius,
            reference_budget=self.reference_budget, reference_mechanism=self.reference_mechanism,
            feature_bound=self.feature_bound, steps=self.steps, lr=self.lr, clip=self.clip,
            batch_size=self.batch_size, clip_data=self.clip_data, ledger=_ledger(self.accountant),
            rng=as_generator(self.random_state), allow_approximate=self.allow_approximate)
        self.reference_ = np.asarray(self.release_.value["reference"])
        weights = self.release_.value["coef"]
        self.coef_, self.intercept_ = weights[:-1].T, weights[-1]
        self.feature_bound_ = float(self.release_.parameters["feature_bound"])
        return self

    def _logits(self, X) -> np.ndarray:
        check_is_fitted(self)
        X = _records(self, X, reset=False)
        phi = tangent_features(self.manifold_, self.reference_, X, self.feature_bound_)[0]
        return phi @ self.coef_.T + self.intercept_

    def decision_function(self, X) -> np.ndarray:
        """The logits (n, k); with two classes, the second's minus the first's (n,)."""
        logits = self._logits(X)
        return logits[:, 1] - logits[:, 0] if len(self.classes_) == 2 else logits

    def predict_proba(self, X) -> np.ndarray:
        """The softmax (n, k) of the logits."""
        return softmax(self._logits(X))

    def predict(self, X) -> np.ndarray:
        """The class (n,) of the largest logit."""
        logits = self._logits(X)
        return self.classes_[np.argmax(logits, axis=1)]


def _pca_manifold(spec, columns: int, k: int) -> Manifold:
    """Sphere(D - 1) for one component, Grassmann(D, k) for k, from ``manifold`` (None, a family
    name, a full specification or a Manifold)."""
    if isinstance(spec, Manifold):
        return spec
    spec = ("sphere" if k == 1 else "grassmann") if spec is None else spec
    family = str(spec).split(":")[0].split(",")[0]
    if family not in ("sphere", "grassmann"):
        raise ValueError(f"PrivatePCA: manifold must be 'sphere' (n_components=1) or 'grassmann' "
                         f"(or a full specification of either), got {spec!r}")
    if family == "sphere" and k != 1:
        raise ValueError(f"PrivatePCA: manifold='sphere' releases one component; n_components={k} "
                         f"needs manifold='grassmann' (or None)")
    return manifold_for_data(spec, (columns,) if family == "sphere" else (columns, k))


class PrivatePCA(TransformerMixin, BaseEstimator):
    """Private principal components, as scikit-learn's ``PCA`` without centering at the data.

    ``fit(X)`` releases an orthonormal basis of the top-``n_components`` principal subspace of
    (1/n) sum_i z_i z_i^T, z_i = x_i - center (a public center, default 0: the data mean is not
    released), by DP Riemannian gradient descent (Han, Mishra, Jawanpuria & Gao, Section 5.1):
    ``private_pca`` on Sphere(D - 1) for one component, ``private_principal_subspace`` on
    Grassmann(D, k) for k. Rows are bounded by the public ``norm_bound`` B, so every per-record
    gradient is B^2-Lipschitz: (epsilon, delta)-DP under replace-one neighbours (n public) for
    the full batch.

    Only the basis is released: ``explained_variance_`` and the singular values are statistics of
    the data without noise, so they are not computed (score a held-out or public set with
    ``transform`` for them). The sign, and for k > 1 the rotation within the subspace, of the
    basis are arbitrary.

    Parameters
    ----------
    manifold : None, {"sphere", "grassmann"}, str or Manifold
        Default None: ``"sphere"`` for one component, ``"grassmann"`` for more.
    epsilon, delta : float
    norm_bound : float
        Public bound B on ``|x_i - center|``; rows above raise, or with ``clip_data`` are scaled back.
    n_components : int
        1 <= k < D.
    center : array (D,), optional
        A public center subtracted before projecting (default 0).
    steps, lr, batch_size, sample_rate, output
        As in ``private_pca``.
    clip_data : bool
    accountant : BudgetLedger or MemoryLedger, optional
    random_state : None, int, RandomState or Generator

    Attributes
    ----------
    components_ : array (k, D)
        Orthonormal rows.
    release_ : Release
    manifold_ : Manifold
    n_features_in_ : int
    n_components_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.estimators import PrivatePCA
    >>> z = np.random.default_rng(0).normal(size=(500, 4)) * [3.0, 1.0, 0.5, 0.5]
    >>> pca = PrivatePCA(epsilon=1.0, norm_bound=10.0, n_components=2, clip_data=True, random_state=0)
    >>> pca = pca.fit(z)
    >>> pca.components_.shape, pca.transform(z).shape
    ((2, 4), (500, 2))
    """

    def __init__(self, manifold=None, epsilon=1.0, delta=1e-5, norm_bound=None, n_components=1,
                 center=None, steps=100, lr=None, batch_size=None, sample_rate=None, output="last",
                 clip_data=False, accountant=None, random_state=None):
        self.manifold = manifold
        self.epsilon = epsilon
        self.delta = delta
        self.norm_bound = norm_bound
        self.n_components = n_components
        self.center = center
        self.steps = steps
        self.lr = lr
        self.batch_size = batch_size
        self.sample_rate = sample_rate
        self.output = output
        self.clip_data = clip_data
        self.accountant = accountant
        self.random_state = random_state

    def __sklearn_tags__(self):
        return _tags(self, super().__sklearn_tags__())

    def _centred(self, X, reset: bool, min_samples: int = 1) -> np.ndarray:
        X = _sk_validate(self, X, reset=reset, dtype=np.float64, ensure_min_samples=min_samples)
        return X if self.center is None else X - self._center(X.shape[1])

    def _center(self, width: int) -> np.ndarray:
        """The public ``center`` (width,), refused by name if it has another shape."""
        center = np.asarray(self.center, dtype=float)
        if center.shape != (width,):
            raise ParameterError(f"{{center}} must hold one value per feature, shape ({width},), "
                                 f"got shape {center.shape}", "center")
        return center

    def fit(self, X, y=None) -> "PrivatePCA":
        """Release the components of X, array (n, D); y is ignored. With a ``batch_size``
        (Poisson sampling, add/remove) n = 0 is released from too, as its neighbour {x} is."""
        Z = self._centred(X, reset=True, min_samples=0 if self.batch_size is not None else 1)
        k = self.n_components
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or not 1 <= k < Z.shape[1]:
            raise ValueError(f"n_components must be an integer in [1, n_features) with "
                             f"n_features = {Z.shape[1]}, got {k!r}")
        if self.norm_bound is None:
            raise ValueError("PrivatePCA: norm_bound= (a public bound on each row's norm, fixed "
                             "without looking at the data) is required")
        self.manifold_ = _pca_manifold(self.manifold, Z.shape[1], int(k))
        release = private_pca if len(self.manifold_.point_shape) == 1 else private_principal_subspace
        self.release_ = release(
            self.manifold_, Z, self.epsilon, self.delta, self.norm_bound, steps=self.steps,
            lr=self.lr, clip_data=self.clip_data, batch_size=self.batch_size, output=self.output,
            rng=as_generator(self.random_state), ledger=_ledger(self.accountant), progress=False,
            sample_rate=self.sample_rate)
        basis = np.asarray(self.release_.value).reshape(Z.shape[1], -1)
        self.components_ = np.linalg.qr(basis)[0].T  # orthonormal to rounding: post-processing
        self.n_components_ = int(k)
        return self

    def transform(self, X) -> np.ndarray:
        """Scores (n, k): (X - center) @ ``components_``.T."""
        check_is_fitted(self)
        return self._centred(X, reset=False) @ self.components_.T

    def inverse_transform(self, X) -> np.ndarray:
        """Points (n, D) of the subspace: X @ ``components_`` + center."""
        check_is_fitted(self)
        X = np.asarray(X, dtype=float)
        if X.ndim != 2 or X.shape[1] != self.n_components_:
            raise ValueError(f"X must hold {self.n_components_} scores per row, shape (n, "
                             f"{self.n_components_}), got shape {X.shape}")
        out = X @ self.components_
        return out if self.center is None else out + self._center(self.components_.shape[1])
