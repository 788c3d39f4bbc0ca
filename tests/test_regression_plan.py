"""The geodesic regression decides whether its draws are exact from public parameters alone
(``kng.exact_plan``): a release is refused, or drawn exactly, the same way for every data set of
the public size n, and a refusal comes before the ledger reserves anything.

The worst pair for that decision: the regression audit's neighbours (``kng_regression_neighbours``:
n records at one point, and the same with one response moved to the antipode), where the exact
sampler's acceptance differs the most between neighbours (8.4e-3 against 1.2e-2 on S^1 at
n = 23, epsilon = 2). Had a pilot on the data decided (the planted bug below, the rule before the
fix, with a threshold between the two acceptances), whether a release happens would say which
of the two data sets it ran on.
"""

from __future__ import annotations

import numpy as np
import pytest

import geodp
from geodp.audit import audit_mechanism, kng_regression_neighbours
from geodp.manifolds import Sphere
from geodp.mechanisms import ApproximateSamplerRefused
from geodp.mechanisms import kng
from geodp.mechanisms.kng import BundleDomain, KNormGradient, exact_plan, sample_bundle
from geodp.privacy import BudgetLedger
from geodp.statistics.regression import regression_gradient
from geodp.statistics.sensitivity import regression_sensitivity

SPACE, CENTER = Sphere(1), np.array([1.0, 0.0])
TAU, V_MAX, X_BOUND = 0.3, 1.0, 1.0
#: between the exact sampler's acceptances on the pair at n = 23, epsilon = 2
THRESHOLD = 1.02e-2


def _released(x: np.ndarray, y: np.ndarray, epsilon: float, n: int,
              rng: np.random.Generator) -> np.ndarray:
    """n releases on (x, y) as 0/1: 1 where an exact draw was published, 0 where refused."""
    out = np.zeros(n)
    for i in range(n):
        try:
            rel = geodp.private_geodesic_regression(SPACE, x, y, epsilon, TAU, (0.0, X_BOUND), V_MAX,
                                                    rng=rng)
        except ApproximateSamplerRefused:
            continue
        out[i] = rel.exact_sampler
    return out


def _pilot_decides(x: np.ndarray, y: np.ndarray, epsilon: float, n: int,
                   rng: np.random.Generator) -> np.ndarray:
    """The planted bug: a pilot on the data decides (refusing below ``THRESHOLD``; the test runs
    it with 10 000 uniform proposals, so that the decision is sharp)."""
    scale = KNormGradient(regression_sensitivity(SPACE, len(x), TAU, X_BOUND, V_MAX)["joint"],
                          epsilon).scale
    domain = BundleDomain(SPACE, CENTER, None, V_MAX)
    gradient = lambda p, v: regression_gradient(SPACE, p, v, x, y, TAU)[:2]  # noqa: E731
    out = np.zeros(n)
    for i in range(n):
        try:
            sample_bundle(domain, gradient, np.stack([CENTER, 0 * CENTER]), scale, rng,
                          exact_only=True, min_acceptance=THRESHOLD)
        except ValueError:
            continue
        out[i] = 1.0
    return out


def _audit(rule, records: int, epsilon: float, n: int):
    """``rule``'s outcomes (0/1) audited on the worst pair at n records."""
    x, y, y_prime = kng_regression_neighbours(SPACE, CENTER, records, X_BOUND)
    return audit_mechanism(*(lambda k, rng, r=r: rule(x, r, epsilon, k, rng) for r in (y, y_prime)),
                           lambda z: z, n, rng=5).epsilon_lower


@pytest.mark.parametrize("records, epsilon", [(23, 2.0), (24, 2.0)])
def test_whether_a_regression_is_released_exactly_does_not_depend_on_the_data(records, epsilon):
    """n epsilon = 46 (exact for both data sets) and 48 (refused for both): the outcome's audited
    privacy loss on the worst pair is 0 <= epsilon."""
    assert _audit(_released, records, epsilon, 200) <= epsilon


def test_the_planted_pilot_on_the_data_is_caught(monkeypatch):
    """The same audit catches the rule before the fix (a pilot on the data decides) on the same
    pair at n epsilon = 46, above epsilon."""
    monkeypatch.setattr(kng, "PILOT", 10_000)
    assert _audit(_pilot_decides, 23, 2.0, 100) > 2.0


def test_the_plan_refuses_before_the_ledger_reserves_and_says_why(tmp_path):
    """n epsilon = 48 > 46.05: refused by name, no reservation, nothing quoted of the data; with
    allow_approximate the release runs and publishes exact_sampler=False."""
    x, y, _ = kng_regression_neighbours(SPACE, CENTER, 24, X_BOUND)
    ledger = BudgetLedger(tmp_path / "l.db", 10.0)
    with pytest.raises(ApproximateSamplerRefused, match=r"n \* epsilon <= 46\.05.*allow_approximate"):
        geodp.private_geodesic_regression(SPACE, x, y, 2.0, TAU, (0.0, X_BOUND), V_MAX, rng=0,
                                          ledger=ledger)
    assert ledger.history() == []
    rel = geodp.private_geodesic_regression(SPACE, x, y, 2.0, TAU, (0.0, X_BOUND), V_MAX, rng=0,
                                            ledger=ledger, allow_approximate=True)
    assert not rel.exact_sampler and len(ledger.history()) == 1


def test_the_plan_bounds_every_data_sets_acceptance():
    """The public bound exp(-n epsilon / 4) holds on the data set that attains it most nearly (all
    residuals clipped and aligned: records at the antipode of the footpoint ball's center, the
    domain a small ball around it), measured with 20 000 uniform proposals."""
    n, epsilon = 40, 1.0
    x = np.full(n, X_BOUND)
    y = np.tile(-CENTER, (n, 1))
    domain = BundleDomain(SPACE, CENTER, 0.1, 0.05)
    scale = KNormGradient(regression_sensitivity(SPACE, n, TAU, X_BOUND, 0.05)["joint"],
                          epsilon).scale
    s = domain.uniform(20_000, np.random.default_rng(0))
    g = regression_gradient(SPACE, s[:, 0], s[:, 1], x, y, TAU)[:2]
    norm = np.sqrt(sum(SPACE.inner(s[:, 0], gi, gi) for gi in g))
    acceptance = np.exp(-norm / scale)
    assert np.all(acceptance >= kng.uniform_acceptance_bound(n, epsilon) * (1 - 1e-12))
    assert np.mean(acceptance) < 1e3 * kng.uniform_acceptance_bound(n, epsilon)


def test_the_sequential_plan_takes_the_larger_share():
    """Each step of the sequential release is one draw: the plan holds when the larger share does."""
    assert exact_plan(40, {"epsilon_footpoint": 0.5, "epsilon_shooting_vector": 1.1}, True)
    assert not exact_plan(40, {"epsilon_footpoint": 0.5, "epsilon_shooting_vector": 1.2}, True)
    with pytest.raises(ApproximateSamplerRefused, match="epsilon_shooting_vector"):
        exact_plan(40, {"epsilon_footpoint": 0.5, "epsilon_shooting_vector": 1.2}, False)
