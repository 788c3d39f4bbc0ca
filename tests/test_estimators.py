"""geodp.estimators (issue 30): scikit-learn estimators, private class means, their privacy.

The privacy argument of ``PrivateMDM`` is in ``geodp.learn.classes``; here: its lemma checked
numerically (adding a point at the mean leaves it unchanged, so add/remove within a class moves
the mean by at most Theorem 2's Delta at the larger size), the geometric tail bound, what the
release states, the fallback for tiny classes, refusals, the sklearn and pyRiemann contracts,
and a distinguishing attack (with its planted-bug twin)."""

from __future__ import annotations

import functools
import subprocess
import sys
import warnings

import numpy as np
import pytest

sklearn = pytest.importorskip("sklearn")

from sklearn.base import clone  # noqa: E402
from sklearn.model_selection import cross_val_score  # noqa: E402
from sklearn.utils.estimator_checks import parametrize_with_checks  # noqa: E402

import geodp.learn.classes as classes_module  # noqa: E402
from geodp.audit import audit_mechanism  # noqa: E402
from geodp.datasets import load  # noqa: E402
from geodp.estimators import (DataDependentClassesWarning, PrivateFrechetMean,  # noqa: E402
                              PrivateGeodesicRegression, PrivateMDM, SmallClassWarning)
from geodp.learn.classes import private_class_means  # noqa: E402
from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere  # noqa: E402
from geodp.mechanisms.geometric import geometric_tail, two_sided_geometric  # noqa: E402
from geodp.privacy import BudgetExceededError, MemoryLedger, PureDP  # noqa: E402
from geodp.privacy.relation import Relation  # noqa: E402
from geodp.statistics import frechet_mean, frechet_mean_sensitivity  # noqa: E402

ONE_COVARIATE = ("PrivateGeodesicRegression regresses on one real covariate (X of shape (n,) or "
                 "(n, 1)); this check fits X with several features")
REGRESSION_XFAIL = {name: ONE_COVARIATE for name in (
    "check_dict_unchanged", "check_dont_overwrite_parameters", "check_dtype_object",
    "check_estimators_dtypes", "check_estimators_fit_returns_self", "check_estimators_nan_inf",
    "check_estimators_overwrite_params", "check_estimators_pickle",
    "check_f_contiguous_array_estimator", "check_fit2d_1sample", "check_fit_check_is_fitted",
    "check_fit_idempotent", "check_fit_score_takes_y", "check_methods_sample_order_invariance",
    "check_methods_subset_invariance", "check_n_features_in", "check_n_features_in_after_fitting",
    "check_pipeline_consistency", "check_positive_only_tag_during_fit",
    "check_readonly_memmap_input", "check_regressor_data_not_an_array", "check_regressors_int",
    "check_regressors_no_decision_function", "check_regressors_train", "check_supervised_y_2d",
    "check_fit2d_predict1d")}
REGRESSION_XFAIL["check_fit2d_1feature"] = (
    "the check's random covariates and responses are unrelated, so the K-norm gradient law is "
    "too concentrated for exact rejection sampling and the release is refused "
    "(ApproximateSamplerRefused), as it must be without allow_approximate")


def expected_failed_checks(estimator) -> dict[str, str]:
    return REGRESSION_XFAIL if isinstance(estimator, PrivateGeodesicRegression) else {}


CHECKED = [PrivateMDM(manifold="euclidean", epsilon=1e4, radius=50.0, clip_data=True, random_state=0),
           PrivateFrechetMean(manifold="euclidean", epsilon=1e4, radius=50.0, clip_data=True,
                              random_state=0),
           PrivateGeodesicRegression(manifold="euclidean", epsilon=1e4, radius=50.0, x_range=(-10, 10),
                                     v_max=50.0, tau=50.0, clip_data=True, random_state=0)]


@parametrize_with_checks(CHECKED, expected_failed_checks=expected_failed_checks)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataDependentClassesWarning)
        check(estimator)


def test_import_geodp_does_not_import_sklearn():
    code = "import sys, geodp, geodp.learn, geodp.privacy; sys.exit('sklearn' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


# --- the lemma behind calibrating on the larger size --------------------------------------

@pytest.mark.parametrize("manifold,radius", [(Sphere(2), 0.5), (SPD(3), 1.5)])
def test_adding_the_mean_leaves_it_and_add_remove_is_within_delta(manifold, radius):
    rng = np.random.default_rng(3)
    center = manifold.origin()
    worst = 0.0
    for m in (2, 5, 20):
        for _ in range(10):
            d_prime = manifold.random_ball(center, radius, m - 1, rng=rng)
            mu = frechet_mean(manifold, d_prime, tol=1e-13, max_iter=10_000).mean
            padded = frechet_mean(manifold, np.concatenate([d_prime, mu[None]]), tol=1e-13,
                                  max_iter=10_000).mean
            assert manifold.dist(mu, padded) < 1e-7
            # adversarial new record: on the boundary, opposite the mean
            v = -manifold.log(center, mu)
            norm = float(manifold.norm(center, v))
            if norm < 1e-12:
                v, norm = manifold.random_direction(center, None, rng), 1.0
            x = manifold.exp(center, radius * (1 - 1e-9) * v / norm)
            mean_d = frechet_mean(manifold, np.concatenate([d_prime, x[None]]), tol=1e-13,
                                  max_iter=10_000).mean
            ratio = float(manifold.dist(mu, mean_d)) / frechet_mean_sensitivity(manifold, radius, m)
            assert ratio <= 1 + 1e-9
            worst = max(worst, ratio)
    assert worst > 0.3  # the adversarial records do move the means: the check has teeth


def test_geometric_tail_is_the_smallest_valid_offset():
    for eps, beta in [(0.3, 5e-7), (1.0, 1e-3), (5.0, 1e-6), (1e4, 1e-6)]:
        t = geometric_tail(eps, 2, beta)
        a = np.exp(-eps / 2)
        assert a ** (t + 1) / (1 + a) <= beta
        assert t == 0 or a ** t / (1 + a) > beta
    z = two_sided_geometric(np.zeros(200_000, dtype=int), 1.0, 2, np.random.default_rng(0))
    t = geometric_tail(1.0, 2, 0.01)
    assert np.mean(z > t) <= 0.01 + 3 * np.sqrt(0.01 / 200_000)
    assert abs(np.mean(z == 0) - np.tanh(0.25)) < 0.005  # (1 - a)/(1 + a), a = e^-1/2


# --- what a release states ----------------------------------------------------------------

def _two_classes(n=60, seed=0):
    rng = np.random.default_rng(seed)
    m = Sphere(2)
    center = np.array([0.0, 0.0, 1.0])
    x = m.random_ball(center, 0.4, n, rng=rng)
    return m, center, x, np.arange(n) % 2


def test_private_sizes_release_states_replace_one_and_delta():
    m, center, x, y = _two_classes()
    rel = private_class_means(m, x, y, [0, 1], 20.0, center, 0.5, delta=1e-6, rng=1)
    assert rel.guarantee.describe() == "(20, 1e-06)-DP (replace-one)"
    p = rel.parameters
    assert p["epsilon_count"] + 2 * p["epsilon_mean"] == pytest.approx(20.0)
    assert p["beta"] == 5e-7 and p["class_counts"] is None
    assert p["sensitivity_sizes"] == [c - p["tail_t"] for c in p["noisy_class_counts"]]
    assert "2 beta" in rel.theorem and rel.value.shape == (2, 3)


def test_public_sizes_release_states_the_weaker_relation():
    m, center, x, y = _two_classes()
    rel = private_class_means(m, x, y, [0, 1], 2.0, center, 0.5, class_sizes="public", rng=1)
    assert rel.guarantee == PureDP(2.0, Relation.REPLACE_ONE_SAME_CLASS)
    assert "NOT protected" in rel.statement
    assert rel.parameters["class_counts"] == [30, 30]


def test_same_class_relation_is_never_mixed_or_converted():
    g = PureDP(1.0, Relation.REPLACE_ONE_SAME_CLASS)
    with pytest.raises(ValueError, match="implies nothing"):
        g.to_replace_one()
    ledger = MemoryLedger(10.0, 1e-5)
    ledger.reserve(PureDP(1.0))
    with pytest.raises(BudgetExceededError, match="replace-one-same-class"):
        ledger.reserve(g)


def test_tiny_class_falls_back_to_the_center_from_released_values():
    m, center, x, y = _two_classes()
    y = np.where(np.arange(len(y)) < 2, 2, y)  # class 2 has 2 records
    with pytest.warns(SmallClassWarning):
        rel = private_class_means(m, x, y, [0, 1, 2], 1.0, center, 0.5, delta=1e-6, rng=0)
    assert 2 in rel.parameters["fallback_classes"]
    assert np.allclose(rel.value[2], center)


def test_refusals_name_the_parameter():
    m, center, x, y = _two_classes()
    with pytest.raises(ValueError, match="delta"):
        private_class_means(m, x, y, [0, 1], 1.0, center, 0.5, delta=None)
    with pytest.raises(ValueError, match="mechanism"):
        private_class_means(m, x, y, [0, 1], 1.0, center, 0.5, mechanism="dp-rgd")
    with pytest.raises(ValueError, match="classes"):
        private_class_means(m, x, y, [0], 1.0, center, 0.5)
    with pytest.raises(ValueError, match="count_budget"):
        private_class_means(m, x, y, [0, 1], 1.0, center, 0.5, count_budget=1.0)


@pytest.mark.parametrize("ball,spent", [("public", (6.0, 2e-6)), ("private", (6.0, 0.0))])
def test_accountant_is_charged_once_per_fit(ball, spent):
    # public ball: (epsilon, delta)-DP class means; private ball (the default): pure epsilon-DP
    m, center, x, y = _two_classes(400)
    ledger = MemoryLedger()
    est = PrivateMDM(m, epsilon=3.0, delta=1e-6, center=center, radius=0.5, classes=[0, 1],
                     accountant=ledger, random_state=0, ball=ball).fit(x, y)
    clone(est).fit(x, y)
    assert ledger.spent() == pytest.approx(spent)
    assert len(ledger.history()) == 2


@pytest.mark.parametrize("ball", ["public", "private"])
@pytest.mark.parametrize("manifold,radius", [
    (SPD(3), 1.0), (SPD(3, metric="log-euclidean"), 1.0), (Sphere(2), 0.5),
    (Hyperbolic(2), 1.0), (KendallShape(4), 0.3)])
def test_private_mdm_on_every_family(manifold, radius, ball):
    rng = np.random.default_rng(0)
    center = manifold.origin()
    far = manifold.exp(center, 0.6 * radius * manifold.random_direction(center, None, rng))
    x0 = manifold.random_ball(center, 0.3 * radius, 40, rng=rng)
    x1 = manifold.random_ball(far, 0.3 * radius, 40, rng=rng)
    x1 = x1[manifold.dist(center, x1) < radius]
    x, y = np.concatenate([x0, x1]), np.r_[np.zeros(40), np.ones(len(x1))]
    est = PrivateMDM(manifold, epsilon=200.0, radius=radius, classes=[0, 1], random_state=0,
                     ball=ball).fit(x, y)
    assert est.predict_proba(x).shape == (len(x), 2)
    assert np.allclose(est.predict_proba(x).sum(axis=1), 1)
    assert est.transform(x).shape == (len(x), 2)
    assert est.score(x, y) > 0.8


def test_manifold_family_names_are_sized_from_the_data():
    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    est = PrivateFrechetMean("spd", epsilon=50.0, radius=radius, random_state=0).fit(ds.points)
    assert est.manifold_ == SPD(5) or repr(est.manifold_) == repr(SPD(5))
    coords = est.transform(ds.points[:10])
    assert coords.shape == (10, 15)
    assert np.allclose(est.inverse_transform(coords), ds.points[:10], atol=1e-9)
    e2 = PrivateMDM("euclidean", epsilon=1e3, radius=5.0, classes=[0, 1], random_state=0)
    e2.fit(np.random.default_rng(0).normal(size=(40, 3)), np.arange(40) % 2)
    assert e2.manifold_.point_shape == (3,)


def test_random_state_reproduces_and_differs():
    m, center, x, y = _two_classes()
    a = PrivateMDM(m, epsilon=5.0, center=center, radius=0.5, classes=[0, 1], random_state=3)
    b = clone(a)
    assert np.array_equal(a.fit(x, y).means_, b.fit(x, y).means_)
    assert not np.array_equal(a.means_, b.set_params(random_state=4).fit(x, y).means_)


def test_classes_read_from_the_data_warn():
    m, center, x, y = _two_classes()
    with pytest.warns(DataDependentClassesWarning):
        PrivateMDM(m, epsilon=5.0, center=center, radius=0.5, random_state=0).fit(x, y)


def test_geodesic_regression_estimator_on_the_sphere():
    m = Sphere(2)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 100)
    y = m.exp(np.array([0.0, 0, 1]), x[:, None] * np.array([0.5, 0, 0]))
    est = PrivateGeodesicRegression(m, epsilon=0.4, tau=0.5, x_range=(0, 1), v_max=1.0,
                                    random_state=0).fit(x, y)
    assert est.predict(x).shape == y.shape
    assert est.predict(x[:, None]).shape == y.shape
    assert -np.inf < est.score(x, y) <= 1.0
    assert est.release_.guarantee.describe() == "0.4-DP (replace-one)"


# --- pyRiemann ------------------------------------------------------------------------------

def _digit_signals():
    """The per-pixel features of the shipped covariance descriptors as (n, 5, 64) signals, so a
    pyRiemann ``Covariances()`` step recomputes the descriptors."""
    digits = pytest.importorskip("sklearn.datasets").load_digits()
    images = digits.images.astype(float)
    dy, dx = np.gradient(images, axis=(1, 2))
    feats = np.stack([images, np.abs(dx), np.abs(dy), np.abs(np.gradient(dx, axis=2)),
                      np.abs(np.gradient(dy, axis=1))], axis=1)
    return feats.reshape(len(images), 5, 64), digits.target


def test_pyriemann_pipeline_runs_unchanged_in_cross_val_score():
    pyriemann = pytest.importorskip("pyriemann")
    from pyriemann.classification import MDM
    from pyriemann.estimation import Covariances
    from sklearn.pipeline import make_pipeline
    X, y = _digit_signals()
    center, radius = load("digits-covariance").public_ball()
    private = make_pipeline(Covariances("lwf"), PrivateMDM(epsilon=1e3, center=center, radius=radius,
                                                           clip_data=True, classes=range(10),
                                                           random_state=0))
    public = make_pipeline(Covariances("lwf"), MDM())
    acc_private = cross_val_score(private, X, y, cv=3).mean()
    acc_public = cross_val_score(public, X, y, cv=3).mean()
    assert pyriemann is not None
    assert acc_private > 0.3  # chance is 0.1
    assert acc_private > acc_public - 0.1  # sanity bound at a large epsilon only


@pytest.mark.parametrize("ball", ["public", "private"])
def test_accuracy_near_pyriemann_mdm_at_large_epsilon(ball):
    from pyriemann.classification import MDM
    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    private = PrivateMDM(epsilon=1e4, center=center, radius=radius, classes=range(10), random_state=0,
                         ball=ball)
    acc_private = cross_val_score(private, ds.points, ds.labels, cv=3).mean()
    acc_public = cross_val_score(MDM(), ds.points, ds.labels, cv=3).mean()
    assert acc_private > acc_public - 0.05


# --- the attack ---------------------------------------------------------------------------
# Worst neighbouring pair for PrivateMDM under replace-one: on R^1 with the public ball [-1, 1],
# class a holds N - 1 records at -1 and one at +1, class b holds N at -1; in D' the record at +1
# (at the ball's edge, as far as possible from every other record) moves to class b. Both class
# means move by exactly Theorem 2's Delta = 2r/N (= Delta at the larger size) in opposite
# directions, and both counts change: the statistic mean_b - mean_a adds the two shifts.
# Observed (8000 draws a side, seed 1): honest lower bound 1.87 <= claim 3.5; planted twin (each
# class's noise scale halved, by calibrating on twice the lower size bound) 3.91 > 3.5.
AUDIT_N, AUDIT_EPS, AUDIT_DELTA, AUDIT_COUNT_SHARE = 400, 3.5, 1e-3, 0.5 / 3.5


def _audit_lower_bound(samples: int) -> float:
    m = Euclidean(1)
    x = np.concatenate([-np.ones(AUDIT_N - 1), [1.0], -np.ones(AUDIT_N)])[:, None]
    y_d = np.r_[np.zeros(AUDIT_N), np.ones(AUDIT_N)].astype(int)
    y_d_prime = y_d.copy()
    y_d_prime[AUDIT_N - 1] = 1

    def sampler(y):
        def draw(k, rng):
            return np.stack([private_class_means(
                m, x, y, [0, 1], AUDIT_EPS, np.zeros(1), 1.0, delta=AUDIT_DELTA,
                count_budget=AUDIT_COUNT_SHARE, rng=int(s)).value[:, 0]
                for s in rng.integers(2**63, size=k)])
        return draw

    result = audit_mechanism(sampler(y_d), sampler(y_d_prime), lambda v: v[:, 1] - v[:, 0],
                             samples, 0.95, rng=1, delta=AUDIT_DELTA)
    return result.epsilon_lower


@pytest.mark.slow
def test_audit_record_moving_between_classes_stays_below_the_claim():
    assert _audit_lower_bound(8000) <= AUDIT_EPS


@pytest.mark.slow
def test_audit_catches_the_halved_noise_twin(monkeypatch):
    honest = classes_module.private_frechet_mean

    def halved(*args, sensitivity_size=None, **kwargs):
        return honest(*args, sensitivity_size=2 * sensitivity_size, **kwargs)

    monkeypatch.setattr(classes_module, "private_frechet_mean", functools.partial(halved))
    assert _audit_lower_bound(8000) > AUDIT_EPS


def test_mdm_refuses_a_mechanism_its_tangent_means_ignore():
    """With ball='private' the default tangent class means have their own mechanism: a
    mechanism= given there would have no effect, so it is refused by name; means='frechet'
    takes it."""
    m, center, x, y = _two_classes()
    est = PrivateMDM(m, epsilon=50.0, center=center, radius=0.5, classes=[0, 1], random_state=0,
                     mechanism="laplace")
    with pytest.raises(ValueError, match="mechanism.*no effect.*means='tangent'"):
        est.fit(x, y)
    est.set_params(means="frechet").fit(x, y)
    assert est.means_.shape == (2, 3)


def _capped_fits(max_condition: float) -> int:
    """PrivateFrechetMean(ball="private", max_condition) on 200 SPD(2) records of condition <=
    max_condition, 16 seeds at epsilon 0.3: how many fits raised after the ledger charged them
    (a fit that releases publishes the cap)."""
    m, rng = SPD(2), np.random.default_rng(0)
    x = m.cap_condition(m.exp(np.eye(2), m.from_coords(np.eye(2), 0.3 * rng.standard_normal(
        (200, 3)))), max_condition)
    after_charge = 0
    for seed in range(16):
        ledger = MemoryLedger(100.0)
        try:
            est = PrivateFrechetMean(manifold=m, epsilon=0.3, center=np.eye(2), radius=1.5,
                                     max_condition=max_condition, random_state=seed,
                                     accountant=ledger).fit(x)
        except ValueError:
            after_charge += ledger.spent()[0] > 0
            continue
        assert est.release_.parameters["max_condition"] == max_condition
    return after_charge


@pytest.mark.filterwarnings("ignore")
def test_private_ball_route_keeps_the_condition_cap_without_refusing_after_the_charge(monkeypatch):
    """The private ball's released center can exceed the cap K = 1.5 (condition up to 2.3 here);
    it is capped (post-processing) so that the mean's own checks, which need the center within
    the cap, pass after the charge too. Planted bug: the center left uncapped, 2 of the 16 fits
    raise after the ledger charged them, a refusal that depends on the data."""
    import geodp.estimators as estimators

    assert _capped_fits(1.5) == 0
    monkeypatch.setattr(estimators, "capped_center", lambda m, c, k: c)
    assert _capped_fits(1.5) > 0


def test_condition_cap_refuses_records_above_it_before_any_charge():
    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    for ball in ("public", "private"):
        ledger = MemoryLedger(10.0)
        with pytest.raises(ValueError, match="clip_data=True"):
            PrivateFrechetMean(epsilon=1.0, center=center, radius=radius, ball=ball,
                               max_condition=100.0, accountant=ledger, random_state=0).fit(ds.points)
        assert ledger.spent() == (0.0, 0.0)


def test_mdm_takes_the_condition_cap_on_the_public_ball():
    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    clf = PrivateMDM(epsilon=1.0, center=center, radius=radius, classes=range(10), ball="public",
                     max_condition=100.0, clip_data=True, random_state=0,
                     accountant=MemoryLedger(10.0, 1e-5)).fit(ds.points, ds.labels)
    assert clf.release_.parameters["max_condition"] == 100.0
    with pytest.raises(ValueError, match="max_condition applies to means='frechet'"):
        PrivateMDM(epsilon=1.0, center=center, radius=radius, classes=range(10),
                   max_condition=100.0).fit(ds.points, ds.labels)
    private = PrivateMDM(epsilon=1.0, center=center, radius=radius, classes=range(10),
                         means="frechet", max_condition=100.0, clip_data=True, random_state=0,
                         accountant=MemoryLedger(10.0, 1e-5)).fit(ds.points, ds.labels)
    assert private.release_.parameters["max_condition"] == 100.0


def _mdm_capped_fits() -> int:
    """PrivateMDM(ball="private", means="frechet", max_condition=1.5) on 200 SPD(2) records in two
    classes, 16 seeds at epsilon 0.3: how many fits raised after the ledger charged them."""
    m, rng = SPD(2), np.random.default_rng(0)
    x = m.cap_condition(m.exp(np.eye(2), m.from_coords(np.eye(2), 0.3 * rng.standard_normal(
        (200, 3)))), 1.5)
    after_charge = 0
    for seed in range(16):
        ledger = MemoryLedger(100.0, 1e-3)
        try:
            PrivateMDM(manifold=m, epsilon=0.3, center=np.eye(2), radius=1.5, classes=[0, 1],
                       means="frechet", max_condition=1.5, random_state=seed,
                       accountant=ledger).fit(x, np.arange(200) % 2)
        except ValueError:
            after_charge += ledger.spent()[0] > 0
    return after_charge


@pytest.mark.filterwarnings("ignore")
def test_private_ball_class_means_keep_the_condition_cap_without_refusing_after_the_charge(
        monkeypatch):
    """As for the mean: the released center is capped; planted bug (left uncapped): 2 of 16 fits
    raise after the charge."""
    import geodp.learn.private_ball as private_ball

    assert _mdm_capped_fits() == 0
    monkeypatch.setattr(private_ball, "capped_center", lambda m, c, k: c)
    assert _mdm_capped_fits() > 0
