"""Adversarial review B1, B7, B6c: what a release does must not depend on one record in a way the
guarantee does not cover.

B1: a record at the cut locus of the public or released center (the sphere's antipode, a rotation
by pi) is a fixed map of that record (``Manifold.log_or_nan``: outside, moved to the center, zero
tangent coordinates), never an error. B7: the private-ball routes decide every refusal (records
outside the public ball, mechanisms the manifold cannot run, a missing delta) before their one
reservation: a refusal charges nothing and draws nothing. B6c: the Fréchet mean after a private
ball runs in B(c, min(r, R, 0.9 r*)) (``frechet_radius_cap``), so Assumption 1 never refuses the
released r.

Each outcome test takes the worst neighbouring pair (a record just before the cut locus on D, at
it on D') and asserts the same outcome (release, or which refusal) and the same ledger charge on
both; its planted-bug twin puts the old code path back and the same comparison must see the
difference. Observed (this commit): honest, identical outcomes on every pair; twin (raising log),
D releases and D' raises on every pair (3 seeds each). Audit (1000 draws a side, claim 1): honest 0.03,
twin 4.76 (D' always refuses). B6c on S^2, R = 1.5, wide data: honest 10/10 released; twin
(no cap) 10/10 ParameterError, each charged 1.0; the class means (``means="frechet"``): honest 4/4
released, twin 4/4 ParameterError charged.
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import geodp.estimators as estimators_module
from geodp import private_frechet_mean
from geodp.audit import audit_mechanism
from geodp.learn.classes import private_class_means
from geodp.learn.data_ball import clipped_tangent_coords, into_ball
from geodp.learn.frechet import check_frechet_mean
from geodp.learn.private_ball import (FRECHET_RADIUS_SHARE, frechet_radius_cap, private_ball,
                                      private_ball_class_means, private_tangent_class_means)
from geodp.learn.release import reserved
from geodp.manifolds import Euclidean, Product, SpecialOrthogonal, Sphere
from geodp.manifolds.capabilities import has
from geodp.privacy import BudgetLedger, MemoryLedger, PureDP
from geodp.statistics import uniqueness_radius

sklearn = pytest.importorskip("sklearn")

S2 = Sphere(2)


def _rotation(n: int, angle: float) -> np.ndarray:
    """The rotation by ``angle`` in the first plane (exactly diag(-1, -1, 1, ...) at pi)."""
    c, s = (-1.0, 0.0) if angle == np.pi else (np.cos(angle), np.sin(angle))
    r = np.eye(n)
    r[:2, :2] = [[c, -s], [s, c]]
    return r


# --- the capability -------------------------------------------------------------------------
@pytest.mark.parametrize("manifold, far", [
    (S2, -S2.origin()), (SpecialOrthogonal(2), -np.eye(2)),
    (SpecialOrthogonal(3), np.diag([-1.0, -1.0, 1.0])),
    (SpecialOrthogonal(4), np.diag([-1.0, -1.0, 1.0, 1.0])),
    (SpecialOrthogonal(5), np.diag([-1.0, -1.0, -1.0, -1.0, 1.0]))])
def test_log_or_nan_is_nan_exactly_at_the_cut_locus(manifold, far):
    c = manifold.origin()
    near = manifold.exp(c, manifold.from_coords(c, 0.3 * np.eye(manifold.dim)[0]))
    v = manifold.log_or_nan(c, np.stack([far, near, c]))
    flat = v.reshape(3, -1)
    assert np.all(np.isnan(flat[0])) and np.all(np.isfinite(flat[1:]))
    assert np.allclose(flat[1:], manifold.log(c, np.stack([near, c])).reshape(2, -1))
    with pytest.raises(ValueError, match="cut locus") as err:
        manifold.log(c, np.stack([far, far, near]))
    assert not any(ch.isdigit() for ch in str(err.value).replace("SO(n)", ""))  # no count
    # the distance is defined there: the largest plane angles, pi in each turned plane
    planes = int(np.sum(np.isclose(np.linalg.eigvalsh(0.5 * (far + far.T)), -1.0))) // 2 \
        if far.ndim == 2 else 1
    assert manifold.dist(c, far) == pytest.approx(np.pi * np.sqrt(planes), rel=1e-12)
    assert has(manifold, "log_or_nan")


def test_log_or_nan_on_a_product_and_by_default():
    m = Product(S2, Euclidean(2))
    c = m.origin()
    q = np.concatenate([-S2.origin(), [1.0, 1.0]])
    v = m.log_or_nan(c, q)
    assert np.all(np.isnan(v[:3])) and np.allclose(v[3:], 1.0)
    e = Euclidean(3)
    assert np.array_equal(e.log_or_nan(np.zeros(3), np.ones(3)), np.ones(3))


def test_the_ball_maps_send_a_cut_locus_record_to_the_center_and_zero():
    c = S2.origin()
    x = np.stack([-c, S2.exp(c, np.array([3.0, 0, 0])), c])
    moved, outside = into_ball(S2, x, c, 0.5)
    assert outside.tolist() == [True, True, False]
    assert np.allclose(moved[0], c) and S2.dist(c, moved[1]) == pytest.approx(0.5)
    coords, _ = clipped_tangent_coords(S2, c, x, 10.0)
    assert np.all(coords[0] == 0.0) and np.linalg.norm(coords[1]) == pytest.approx(3.0)
    so4 = SpecialOrthogonal(4)
    moved, _ = into_ball(so4, np.stack([_rotation(4, np.pi), _rotation(4, 3.0)]), np.eye(4), 0.5)
    assert np.allclose(moved[0], np.eye(4)) and so4.dist(np.eye(4), moved[1]) == pytest.approx(0.5)


# --- B1: the worst pairs, outcome and charge ------------------------------------------------
def _concentrated(manifold, n, spread, seed=0):
    c = manifold.origin()
    z = spread * np.random.default_rng(seed).normal(size=(n, manifold.dim))
    return manifold.exp(c, manifold.from_coords(c, z))


def _sphere_pair():
    x = _concentrated(S2, 60, 0.1)
    return x, S2.exp(S2.origin(), np.array([3.0, 0, 0])), -S2.origin()


def _rotation_pair(n):
    m = SpecialOrthogonal(n)
    return m, _concentrated(m, 40, 0.05), _rotation(n, 3.0), _rotation(n, np.pi)


def _frechet(manifold, clip):
    return lambda x, led, seed: private_frechet_mean(manifold, x, 1.0, manifold.origin(), 0.5,
                                                     clip_data=clip, ledger=led, rng=seed)


def _cases():
    """(name, release(x, ledger, seed), D, D'): D holds a record just before the cut locus of the
    public center, D' the same record at it."""
    x, before, at = _sphere_pair()
    cases = [("sphere, clip_data", _frechet(S2, True), x, before, at),
             ("sphere, private ball R > pi",
              lambda d, led, seed: private_ball(S2, d, 1.0, S2.origin(), 3.2, ledger=led, rng=seed),
              x, before, at),
             ("sphere, PrivateFrechetMean(ball='private') R > pi",
              lambda d, led, seed: estimators_module.PrivateFrechetMean(
                  manifold=S2, epsilon=1.0, center=S2.origin(), radius=3.2, accountant=led,
                  random_state=seed).fit(d).release_, x, before, at),
             ("sphere, PrivateMDM(ball='private') R > pi",
              lambda d, led, seed: estimators_module.PrivateMDM(
                  manifold=S2, epsilon=1.0, center=S2.origin(), radius=3.2, classes=[0, 1],
                  accountant=led, random_state=seed).fit(d, np.arange(len(d)) % 2).release_,
              x, before, at)]
    for n, clip in ((3, True), (4, True), (4, False)):
        m, y, before_r, at_r = _rotation_pair(n)
        cases.append((f"SO({n}), clip_data={clip}", _frechet(m, clip), y, before_r, at_r))
    return cases


CASES = _cases()


def _outcome(release, x, record, seed):
    d = x.copy()
    d[0] = record
    led = MemoryLedger()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            release(d, led, seed)
            kind = "released"
        except Exception as exc:  # the outcome's kind is what is compared
            kind = type(exc).__name__
    return kind, led.spent()


def _differing_outcomes(case, seeds=range(3)):
    _, release, x, before, at = case
    return sum(_outcome(release, x, before, s) != _outcome(release, x, at, s) for s in seeds)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_a_record_at_the_cut_locus_changes_neither_outcome_nor_charge(case):
    assert _differing_outcomes(case) == 0


def _raising_log(monkeypatch):
    """The planted bug: the ball code back on the raising logarithm (and SO(n)'s distance through
    it), as before the fix."""
    monkeypatch.setattr(Sphere, "log_or_nan", Sphere.log)
    monkeypatch.setattr(SpecialOrthogonal, "log_or_nan", SpecialOrthogonal.log)
    honest = SpecialOrthogonal.dist
    monkeypatch.setattr(SpecialOrthogonal, "dist", lambda self, p, q: honest(self, p, q)
                        if self.n == 3 else self.norm(p, self.log(p, q)))


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_the_outcome_comparison_catches_the_raising_log_twin(case, monkeypatch):
    _raising_log(monkeypatch)
    assert _differing_outcomes(case) == 3


def _clip_audit(samples):
    """The sphere's clipped mean at the worst cut-locus pair, statistic the released value's first
    tangent coordinate at the center, or -10 for a refusal (so a refusal on one side only is an
    event the other never hits)."""
    x, before, at = _sphere_pair()
    c = S2.origin()

    def sampler(record):
        d = x.copy()
        d[0] = record

        def draw(k, rng):
            out = []
            for s in rng.integers(2**63, size=k):
                try:
                    v = private_frechet_mean(S2, d, 1.0, c, 0.5, clip_data=True, rng=int(s)).value
                    out.append(S2.log(c, v)[0])
                except ValueError:
                    out.append(-10.0)
            return np.array(out)
        return draw

    return audit_mechanism(sampler(before), sampler(at), lambda v: v, samples, 0.95,
                           rng=1).epsilon_lower


@pytest.mark.slow
def test_audit_clipping_at_the_cut_locus_stays_below_the_claim():
    assert _clip_audit(1000) <= 1.0


@pytest.mark.slow
def test_audit_clipping_at_the_cut_locus_catches_the_raising_log_twin(monkeypatch):
    _raising_log(monkeypatch)
    assert _clip_audit(1000) > 1.0


# --- B7: refusals before the reservation ----------------------------------------------------
def _outside():
    x = 0.1 * np.random.default_rng(0).normal(size=(100, 2))
    x[0] = [5.0, 0.0]  # outside the public ball of radius 1
    return x


INSIDE = 0.1 * np.random.default_rng(0).normal(size=(100, 2))
E2 = Euclidean(2)


def _class_means(manifold, x, labels, radius, **options):
    return lambda led, rng: private_ball_class_means(
        manifold, x, labels, [0, 1], 1.0, manifold.origin(), radius, ledger=led, rng=rng,
        **options)


# (name, the refusal, the route ("mean": PrivateFrechetMean, "classes": the class means), fit)
REFUSALS = [
    ("records outside, PrivateFrechetMean", "RecordsOutsideBound", "mean",
     lambda led, rng: estimators_module.PrivateFrechetMean(
         manifold=E2, epsilon=1.0, center=np.zeros(2), radius=1.0, accountant=led,
         random_state=rng).fit(_outside())),
    ("wrapped-laplace on the sphere", "NotHadamardError", "mean",
     lambda led, rng: estimators_module.PrivateFrechetMean(
         manifold=S2, epsilon=1.0, center=S2.origin(), radius=0.5, mechanism="wrapped-laplace",
         accountant=led, random_state=rng).fit(_concentrated(S2, 50, 0.05))),
    ("wrapped-gaussian without delta", "ParameterError", "mean",
     lambda led, rng: estimators_module.PrivateFrechetMean(
         manifold=E2, epsilon=1.0, center=np.zeros(2), radius=1.0,
         mechanism="wrapped-gaussian", accountant=led, random_state=rng).fit(INSIDE)),
    ("kng with delta", "ParameterError", "mean",
     lambda led, rng: estimators_module.PrivateFrechetMean(
         manifold=E2, epsilon=1.0, delta=1e-6, center=np.zeros(2), radius=1.0,
         mechanism="kng", accountant=led, random_state=rng).fit(INSIDE)),
    ("records outside, PrivateMDM", "RecordsOutsideBound", "classes",
     lambda led, rng: estimators_module.PrivateMDM(
         manifold=E2, epsilon=1.0, center=np.zeros(2), radius=1.0, classes=[0, 1],
         accountant=led, random_state=rng).fit(_outside(), np.arange(100) % 2)),
    ("records outside, PrivateMDM frechet means", "RecordsOutsideBound", "classes",
     lambda led, rng: estimators_module.PrivateMDM(
         manifold=E2, epsilon=1.0, center=np.zeros(2), radius=1.0, classes=[0, 1],
         means="frechet", accountant=led, random_state=rng).fit(_outside(), np.arange(100) % 2)),
    ("class means: wrapped-laplace on the sphere", "NotHadamardError", "classes",
     _class_means(S2, _concentrated(S2, 600, 0.05), np.arange(600) % 2, 0.5, means="frechet",
                  mechanism="wrapped-laplace")),
    ("class means: a label outside the classes", "ValueError", "classes",
     _class_means(E2, INSIDE, np.arange(100) % 3, 1.0)),
]
IDS = [c[0] for c in REFUSALS]


def _refusal(fit, ledger):
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(Exception) as err:
            fit(ledger, rng)
    return type(err.value).__name__, ledger.spent(), rng.bit_generator.state == state


@pytest.mark.parametrize("case", REFUSALS, ids=IDS)
def test_private_ball_refusals_charge_nothing_and_draw_nothing(case):
    _, kind, _, fit = case
    assert _refusal(fit, MemoryLedger()) == (kind, (0.0, 0.0), True)


def test_a_refusal_leaves_no_reserved_entry_in_a_persistent_ledger(tmp_path):
    ledger = BudgetLedger(tmp_path / "ledger.db", 10.0)
    for _, _, _, fit in REFUSALS:
        _refusal(fit, ledger)
    assert BudgetLedger(tmp_path / "ledger.db").history() == []


def _mean_checked_inside(est, X, center, radius, mechanism, ledger, rng):
    """The planted bug for ``PrivateFrechetMean``: the route before the fix, its ball and mean
    (with their checks) run inside the reservation."""
    m, eps = est.manifold_, float(est.epsilon)
    with reserved(ledger, PureDP(eps), "twin"):
        ball = private_ball(m, X, 0.3 * eps, center, radius, clip_data=est.clip_data, rng=rng)
        return private_frechet_mean(m, X, 0.7 * eps, ball.value, ball.parameters["radius"],
                                    mechanism=mechanism, clip_data=True, rng=rng,
                                    delta=est.delta)


def _classes_checked_inside(manifold, points, labels, classes, epsilon, center, radius, *,
                            means="tangent", mechanism="wrapped-laplace", clip_data=False,
                            ledger=None, rng=None, **_):
    """The planted bug for the class means: the same, the ball and the means inside."""
    with reserved(ledger, PureDP(epsilon), "twin"):
        ball = private_ball(manifold, points, 0.3 * epsilon, center, radius, clip_data=clip_data,
                            rng=rng)
        c, r = ball.value, ball.parameters["radius"]
        if means == "tangent":
            return private_tangent_class_means(manifold, points, labels, classes, 0.7 * epsilon,
                                               c, r, rng=rng)
        return private_class_means(manifold, points, labels, classes, 0.7 * epsilon, c, r,
                                   mechanism=mechanism, clip_data=True, rng=rng)


@pytest.mark.parametrize("case", REFUSALS, ids=IDS)
def test_the_refusal_check_catches_the_checks_inside_the_reservation_twin(case, monkeypatch):
    _, kind, route, fit = case
    if route == "mean":
        monkeypatch.setattr(estimators_module, "_mean_in_private_ball", _mean_checked_inside)
    else:
        monkeypatch.setattr(estimators_module, "private_ball_class_means", _classes_checked_inside)
        monkeypatch.setattr(sys.modules[__name__], "private_ball_class_means",
                            _classes_checked_inside)
    kind_found, charged, _ = _refusal(fit, MemoryLedger())
    assert kind_found == kind and charged != (0.0, 0.0)


# --- B6c: the released radius never breaks Assumption 1 -------------------------------------
def _wide_sphere_fits(seeds):
    x = _concentrated(S2, 400, 0.6)
    x = x[S2.dist(S2.origin(), x) < 1.4]
    outcomes, radii = [], []
    for seed in seeds:
        led = MemoryLedger()
        try:
            est = estimators_module.PrivateFrechetMean(
                manifold=S2, epsilon=1.0, center=S2.origin(), radius=1.5, accountant=led,
                random_state=seed).fit(x)
            outcomes.append(("released", led.spent()))
            radii.append(est.release_.parameters["radius"])
        except ValueError as exc:
            outcomes.append((type(exc).__name__, led.spent()))
    return outcomes, radii


def test_frechet_radius_cap_is_public_and_below_r_star():
    assert frechet_radius_cap(S2, 1.5) == pytest.approx(FRECHET_RADIUS_SHARE * np.pi / 4)
    assert frechet_radius_cap(S2, 0.3) == 0.3
    assert frechet_radius_cap(Euclidean(2), 40.0) == 40.0
    assert frechet_radius_cap(S2, 10.0) < uniqueness_radius(S2)
    check_frechet_mean(S2, 100, S2.origin(), frechet_radius_cap(S2, 10.0), mechanism="laplace",
                       epsilon=1.0)


def test_the_mean_in_a_private_ball_is_released_whatever_radius_is_released():
    """S^2 with a public radius 1.5 > r* = pi/4 on data wider than r*: before the fix 10 of 10
    fits refused (ParameterError, Assumption 1 on the released r) after the charge."""
    outcomes, radii = _wide_sphere_fits(range(10))
    assert outcomes == [("released", (1.0, 0.0))] * 10
    assert max(radii) <= frechet_radius_cap(S2, 1.5)


def _wide_sphere_class_means(seeds):
    x = _concentrated(S2, 600, 0.6)
    x = x[S2.dist(S2.origin(), x) < 1.4]
    outcomes = []
    for seed in seeds:
        led = MemoryLedger()
        try:
            rel = private_ball_class_means(S2, x, np.arange(len(x)) % 2, [0, 1], 5.0, S2.origin(),
                                           1.5, means="frechet", mechanism="laplace", ledger=led,
                                           rng=seed)
            assert rel.parameters["radius"] <= rel.parameters["frechet_radius_cap"]
            outcomes.append(("released", led.spent()))
        except ValueError as exc:
            outcomes.append((type(exc).__name__, led.spent()))
    return outcomes


def test_the_class_means_in_a_private_ball_are_released_whatever_radius_is_released():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _wide_sphere_class_means(range(4)) == [("released", (5.0, 1e-6))] * 4


def test_the_class_radius_check_catches_the_uncapped_twin(monkeypatch):
    monkeypatch.setattr(sys.modules["geodp.learn.private_ball"], "frechet_radius_cap",
                        lambda m, radius: np.inf)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert _wide_sphere_class_means(range(4)).count(("released", (5.0, 1e-6))) < 4


def test_the_radius_check_catches_the_uncapped_twin(monkeypatch):
    """The planted bug: the mean on the released r itself (no cap, and so no check at the cap
    before the reservation), as before the fix."""
    monkeypatch.setattr(estimators_module, "frechet_radius_cap", lambda m, radius: np.inf)
    monkeypatch.setattr(estimators_module, "check_frechet_mean", lambda *a, **k: None)
    outcomes, _ = _wide_sphere_fits(range(10))
    assert outcomes.count(("released", (1.0, 0.0))) < 10
