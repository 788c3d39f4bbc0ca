"""Fuzzing the public API: random shapes, NaN/inf, negative and huge parameters, strings. The
only acceptable failures are ValueError/TypeError (or a refusal the library names); never a NaN
result, a hang, or a release charged to a ledger but not returned."""

from __future__ import annotations

import math
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import geodp
from geodp.mechanisms import NotNormalisableError, RiemannianLaplace, WrappedGaussian
from geodp.manifolds import Euclidean, Hyperbolic, Sphere
from geodp.privacy import (GDP, ApproxDP, BudgetExceededError, BudgetLedger, PureDP,
                           analytic_gaussian_sigma, gdp_epsilon, laplace_scale, noise_multiplier_for)
from geodp.statistics import frechet_mean

numbers = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**6, 10**6),
                    st.just("1"), st.just(None), st.booleans())
SETTINGS = settings(max_examples=40, deadline=None)
ALLOWED = (ValueError, TypeError, NotNormalisableError, BudgetExceededError)


@SETTINGS
@given(st.sampled_from([Sphere(2), Hyperbolic(2), Euclidean(3)]),
       st.integers(0, 6), st.sampled_from([None, np.nan, np.inf, 1e300]), st.integers(0, 2))
@example(Euclidean(3), 6, 1e300, 0)  # F overflowed: 100 halved steps, then an unconverged mean
@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.filterwarnings("error::geodp.statistics.ConvergenceWarning")
def test_frechet_mean_refuses_or_returns_finite(manifold, n, poison, extra_dim):
    base = {Sphere: np.array([0.0, 0.0, 1.0]), Hyperbolic: np.array([1.0, 0.0, 0.0]),
            Euclidean: np.zeros(3)}[type(manifold)]
    x = np.tile(base, (n,) + (1,) * extra_dim + (1,)) if extra_dim < 2 else np.ones((n, 2, 2))
    if poison is not None and n:
        x = x.copy()
        x.flat[0] = poison
    try:
        res = frechet_mean(manifold, x)
    except ALLOWED:
        return
    assert np.all(np.isfinite(res.mean))


@SETTINGS
@given(numbers, numbers, st.sampled_from(["laplace", "wrapped-laplace", "wrapped-gaussian",
                                          "dp-rgd", "nonsense"]), numbers)
@example(0.0625, 229, "dp-rgd", 0.0625)  # noise stepped iterates out of double precision: charged,
@example(0.25, 225, "dp-rgd", 0.25)      # then raised; or released NaN (found in a fresh clone)
def test_private_mean_refuses_or_releases_and_never_charges_without_releasing(
        epsilon, radius, mechanism, delta):
    m = Hyperbolic(2)
    x = m.random_ball(np.array([1.0, 0, 0]), 0.3, 20, np.random.default_rng(0))
    path = Path(tempfile.mkdtemp()) / "l.db"
    ledger = BudgetLedger(path, 1e9, 0.5)
    try:
        rel = geodp.private_frechet_mean(m, x, epsilon, np.array([1.0, 0, 0]), radius,
                                         mechanism=mechanism, delta=delta, ledger=ledger, rng=0)
    except ALLOWED:
        assert BudgetLedger(path).history() == [], "charged without a release"
        return
    assert np.all(np.isfinite(rel.value))
    assert len(BudgetLedger(path).history()) == 1


@SETTINGS
@given(numbers)
def test_mechanism_constructors_refuse_bad_scales(scale):
    for make in (lambda: RiemannianLaplace(Sphere(2), scale),
                 lambda: WrappedGaussian(Hyperbolic(2), scale, np.array([1.0, 0, 0]))):
        try:
            mech = make()
            draw = mech.sample(np.array([1.0, 0, 0]) if isinstance(mech, WrappedGaussian)
                               else np.array([0.0, 0, 1.0]), 5, rng=0)
        except ALLOWED:
            continue
        assert np.all(np.isfinite(draw))


@SETTINGS
@given(numbers, numbers)
def test_privacy_values_and_calibrations(a, b):
    calls = [lambda: PureDP(a), lambda: ApproxDP(a, b), lambda: GDP(a), lambda: laplace_scale(a, b),
             lambda: analytic_gaussian_sigma(a, b), lambda: gdp_epsilon(a, b)]
    for call in calls:
        try:
            out = call()
        except ALLOWED:
            continue
        if isinstance(out, float):
            assert not math.isnan(out)


@pytest.mark.parametrize("steps", [0, -1, 2.5, "3", True])
def test_noise_multiplier_refuses_bad_steps(steps):
    with pytest.raises(ALLOWED):
        noise_multiplier_for(1.0, 1e-5, 0.01, steps)
