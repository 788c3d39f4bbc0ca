"""The geodesic regression decides whether its draws are exact from public parameters alone
(``kng.exact_plan``): a release is refused, or drawn exactly, the same way for every data set of
the public size n, and a refusal comes before the ledger reserves anything.

The worst pair for that decision is one whose exact acceptance straddles the old threshold of
1e-5: on S^1, a small footpoint ball (radius 0.1) and v_max 0.05, n = 24 records at the antipode
of its center with covariate 1 (every residual clipped and aligned: the public bound
exp(-n epsilon / 4) nearly attained), against the same with one record moved to the center
(acceptances 8.8e-6 and 1.6e-5 at epsilon 1.94, n epsilon = 46.6). The rule before the fix (a
1000-proposal pilot on the data, refusing below 1e-5, the planted twin) tells them apart.
"""

from __future__ import annotations

import numpy as np
import pytest

import geodp
import geodp.manifolds.base as manifold_base
import geodp.learn.regression as regression_module
import geodp.manifolds.spd as spd_module
from geodp.audit import audit_mechanism
from geodp.manifolds import SPD, Hyperbolic, Sphere
from geodp.mechanisms import ApproximateSamplerRefused
from geodp.mechanisms import kng
from geodp.mechanisms.kng import BundleDomain, KNormGradient, exact_plan
from geodp.privacy import BudgetLedger
from geodp.statistics.regression import regression_gradient
from geodp.statistics.sensitivity import regression_sensitivity

SPACE, CENTER = Sphere(1), np.array([1.0, 0.0])
TAU, X_BOUND, RADIUS, V_MAX, N = 0.3, 1.0, 0.1, 0.05, 24
X = np.full(N, X_BOUND)
D = np.tile(-CENTER, (N, 1))
D_PRIME = np.concatenate([D[:-1], CENTER[None]])


def _release(y: np.ndarray, epsilon: float, rng, **options):
    return geodp.private_geodesic_regression(SPACE, X, y, epsilon, TAU, (0.0, X_BOUND), V_MAX,
                                             CENTER, RADIUS, rng=rng, **options)


def _released(y: np.ndarray, epsilon: float):
    """k releases on y as 0/1: 1 where an exact draw was published, 0 where refused."""
    def draw(k: int, rng: np.random.Generator) -> np.ndarray:
        out = np.zeros(k)
        for i in range(k):
            try:
                out[i] = _release(y, epsilon, rng).exact_sampler
            except ApproximateSamplerRefused:
                pass
        return out
    return draw


def _pilot_decides(y: np.ndarray, epsilon: float):
    """The planted bug, the rule before the fix: a pilot of ``kng.PILOT`` uniform proposals on
    the data (stopped after a quarter below ``kng.PILOT_STOP``), refusing where it accepts less
    than 1e-5 (``FALLBACK_ACCEPTANCE``); only its decision is drawn here."""
    scale = KNormGradient(regression_sensitivity(SPACE, N, TAU, X_BOUND, V_MAX)["joint"],
                          epsilon).scale
    domain = BundleDomain(SPACE, CENTER, RADIUS, V_MAX)

    def acceptance(k: int, rng: np.random.Generator) -> float:
        s = domain.uniform(k, rng)
        g = regression_gradient(SPACE, s[:, 0], s[:, 1], X, y, TAU)[:2]
        return float(np.mean(np.exp(-np.sqrt(sum(SPACE.inner(s[:, 0], gi, gi) for gi in g)) / scale)))

    def draw(k: int, rng: np.random.Generator) -> np.ndarray:
        out = np.zeros(k)
        quarter = kng.PILOT // 4
        for i in range(k):
            rate = acceptance(quarter, rng)
            if rate >= kng.PILOT_STOP:
                rate = (rate * quarter + acceptance(kng.PILOT - quarter, rng) * (kng.PILOT - quarter)) / kng.PILOT
            out[i] = rate >= kng.FALLBACK_ACCEPTANCE
        return out
    return draw


def test_exact_up_to_n_epsilon_46_and_refused_beyond_on_the_straddling_pair(tmp_path):
    """n epsilon = 45.6: both data sets released exactly; 46.6: both refused, nothing reserved."""
    rng = np.random.default_rng(0)
    for y in (D, D_PRIME):
        assert all(_release(y, 1.9, rng).exact_sampler for _ in range(3))
        ledger = BudgetLedger(tmp_path / f"l{len(y)}{y[-1, 0]}.db", 10.0)
        with pytest.raises(ApproximateSamplerRefused, match="n \\* epsilon <= 46.05"):
            _release(y, 1.94, rng, ledger=ledger)
        assert ledger.history() == []


def test_the_old_pilot_rule_is_caught_on_the_straddling_pair():
    """At n epsilon = 46.6 the outcome audits at 0 <= epsilon (refused for both); the rule before
    the fix audits above epsilon on the same pair and the same test."""
    audits = {rule: audit_mechanism(rule(D, 1.94), rule(D_PRIME, 1.94), lambda z: z, 200,
                                    rng=5).epsilon_lower for rule in (_released, _pilot_decides)}
    assert audits[_released] <= 1.94 < audits[_pilot_decides]


def test_the_plan_refuses_before_the_ledger_reserves_and_says_why(tmp_path):
    """n epsilon = 48 > 46.05: refused by name, no reservation, nothing quoted of the data; with
    allow_approximate the release runs and publishes exact_sampler=False."""
    ledger = BudgetLedger(tmp_path / "l.db", 10.0)
    with pytest.raises(ApproximateSamplerRefused, match=r"n \* epsilon <= 46\.05.*allow_approximate"):
        _release(D, 2.0, 0, ledger=ledger)
    assert ledger.history() == []
    rel = _release(D, 2.0, 0, ledger=ledger, allow_approximate=True)
    assert not rel.exact_sampler and len(ledger.history()) == 1


def test_the_plan_bounds_every_data_sets_acceptance():
    """The public bound exp(-n epsilon / 4) holds at every uniform proposal on the pair that
    nearly attains it, within a factor 10 of its mean acceptance there."""
    epsilon = 1.0
    domain = BundleDomain(SPACE, CENTER, RADIUS, V_MAX)
    scale = KNormGradient(regression_sensitivity(SPACE, N, TAU, X_BOUND, V_MAX)["joint"],
                          epsilon).scale
    s = domain.uniform(20_000, np.random.default_rng(0))
    bound = kng.uniform_acceptance_bound(N, epsilon)
    for y in (D, D_PRIME):
        g = regression_gradient(SPACE, s[:, 0], s[:, 1], X, y, TAU)[:2]
        acceptance = np.exp(-np.sqrt(sum(SPACE.inner(s[:, 0], gi, gi) for gi in g)) / scale)
        assert np.all(acceptance >= bound * (1 - 1e-12)) and np.mean(acceptance) < 10 * bound


def _spd_pair():
    """SPD(2), 20 records near I, and the same with record 0 replaced by diag(1, 1e-17): valid,
    but whitened by most footpoints its logarithm is not finite in double precision."""
    x = np.linspace(0, 1, 20)
    d = np.tile(np.eye(2), (20, 1, 1)) * np.exp(0.3 * x)[:, None, None]
    d_prime = d.copy()
    d_prime[0] = np.diag([1.0, 1e-17])
    return SPD(2), x, d, d_prime


def _unformable(m, x, record):
    """1 where ``record``'s unclipped residual is not finite at the released (p, v)."""
    def statistic(z: np.ndarray) -> np.ndarray:
        rho = m.mean_residual_adjoints(z[:, 0], z[:, 1], x[:1], record[None], None)[2]
        return (~np.isfinite(rho)).astype(float).ravel()
    return statistic


def _spd_releases(m, x, y):
    def draw(k: int, rng: np.random.Generator) -> np.ndarray:
        return np.array([np.stack(list(geodp.private_geodesic_regression(
            m, x, y, 1.0, 0.5, (0.0, 1.0), 1.0, np.eye(2), 1.0, rng=rng).value.values()))
            for _ in range(k)])
    return draw


def test_a_record_double_precision_cannot_whiten_contributes_nothing(monkeypatch):
    """Every record's term stays finite and within its bound, so the KNG law's support does not
    depend on such a record: the region where its residual cannot be formed (about half the
    domain) is released from as often on D' as on D. The planted bug (the term left NaN, which
    the exact sampler rejects) never releases there on D', and the same audit catches it."""
    m, x, d, d_prime = _spd_pair()
    audit = lambda: audit_mechanism(_spd_releases(m, x, d), _spd_releases(m, x, d_prime),  # noqa: E731
                                    _unformable(m, x, d_prime[0]), 150, rng=7).epsilon_lower
    assert audit() <= 1.0
    monkeypatch.setattr(spd_module, "zero_where_not_finite", lambda e, nd: e)
    monkeypatch.setattr(manifold_base, "zero_where_not_finite", lambda e, nd: e)
    assert audit() > 1.0


def test_the_sequential_plan_takes_the_larger_share():
    """Each step of the sequential release is one draw: the plan holds when the larger share does."""
    assert exact_plan(40, {"epsilon_footpoint": 0.5, "epsilon_shooting_vector": 1.1}, True)
    assert not exact_plan(40, {"epsilon_footpoint": 0.5, "epsilon_shooting_vector": 1.2}, True)
    with pytest.raises(ApproximateSamplerRefused, match="epsilon_shooting_vector"):
        exact_plan(40, {"epsilon_footpoint": 0.5, "epsilon_shooting_vector": 1.2}, False)


def _far_covariate_pair():
    """H^2, 10 records at the origin with covariate 0.1 (D), and the same with one covariate at
    the public bound 400 (D'): Exp_p(400 v) overflows for |v| >~ 0.88."""
    m = Hyperbolic(2)
    c = m.origin()
    x = np.full(10, 0.1)
    x_prime = x.copy()
    x_prime[-1] = 400.0
    return m, c, np.stack([c] * 10), x, x_prime


def test_a_domain_whose_fitted_points_overflow_is_refused_before_the_charge(monkeypatch):
    """The public domain (radius 1, x_range (0, 400), v_max 1) reaches 401 from its center: refused
    before the ledger reserves, for both data sets. The planted bug (no such check) releases, and
    D' never lands where its far record's term overflows (|v| > 0.9), so the same audit on the
    share of releases there exceeds epsilon."""
    m, c, y, x, x_prime = _far_covariate_pair()
    run = dict(epsilon=1.0, tau=0.5, x_range=(0.0, 400.0), v_max=1.0, center=c, radius=1.0)
    for covariates in (x, x_prime):
        with pytest.raises(ValueError, match="x_range"):
            geodp.private_geodesic_regression(m, covariates, y, rng=0, **run)

    def releases(covariates):
        return lambda k, rng: np.array([float(m.norm(r.value["footpoint"], r.value["shooting_vector"]))
                                        for r in (geodp.private_geodesic_regression(
                                            m, covariates, y, rng=rng, **run) for _ in range(k))])
    monkeypatch.setattr(regression_module, "_check_reach", lambda *args: None)
    far = lambda z: (z > 0.9).astype(float)  # noqa: E731
    assert audit_mechanism(releases(x), releases(x_prime), far, 150, rng=3).epsilon_lower > 1.0
