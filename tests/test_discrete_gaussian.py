"""Secure tangent noise: the exact discrete Gaussian sampler, its zCDP bound, grid rounding, release."""

from __future__ import annotations

import doctest
import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from geodp.manifolds import SPD, Euclidean, Sphere
from geodp.mechanisms import discrete_gaussian
from geodp.mechanisms.discrete_gaussian import (GRID_FRACTION, SecureTangentGaussian, bernoulli_exp,
                                                discrete_gaussian_rho, grid_sensitivity,
                                                round_to_grid, sample_discrete_gaussian,
                                                secure_sigma_for_rho, secure_zcdp_rho)
from geodp.privacy import ZCDP

P_MIN = 1e-4
N_DRAWS = 20_000


def _pmf(sigma2: float) -> tuple[np.ndarray, np.ndarray]:
    """Support [-K, K] (K = 14 sigma + 2, the rest has mass below 1e-40) and the pmf on it."""
    k = math.ceil(14 * math.sqrt(sigma2)) + 2
    xs = np.arange(-k, k + 1)
    w = np.exp(-xs.astype(float) ** 2 / (2 * sigma2))
    return xs, w / w.sum()


def _bins(expected: np.ndarray, min_count: float = 10.0) -> list[slice]:
    """Consecutive support points grouped so that every bin expects at least ``min_count`` draws."""
    bins, start, acc = [], 0, 0.0
    for i, e in enumerate(expected):
        acc += e
        if acc >= min_count:
            bins.append(slice(start, i + 1))
            start, acc = i + 1, 0.0
    bins[-1] = slice(bins[-1].start, len(expected))
    return bins


@pytest.mark.parametrize("num,den", [(0, 1), (1, 3), (1, 1), (5, 2), (7, 1)])
def test_bernoulli_exp_matches_exp(num, den):
    hits = sum(bernoulli_exp(num, den) for _ in range(N_DRAWS))
    p = math.exp(-num / den)
    if num == 0:
        assert hits == N_DRAWS
    else:
        assert stats.binomtest(hits, N_DRAWS, p).pvalue > P_MIN


@pytest.mark.parametrize("sigma2", [Fraction(1, 2), 2, 25, 400])
def test_sampler_matches_pmf(sigma2):
    draws = sample_discrete_gaussian(sigma2, N_DRAWS)
    assert draws.shape == (N_DRAWS,) and draws.dtype == np.int64
    xs, pmf = _pmf(float(sigma2))
    assert np.all(np.abs(draws) <= xs[-1])
    observed = np.bincount(draws - xs[0], minlength=len(xs))
    bins = _bins(N_DRAWS * pmf)
    obs = np.array([observed[b].sum() for b in bins])
    exp = np.array([N_DRAWS * pmf[b].sum() for b in bins])
    assert stats.chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > P_MIN

    var = float(np.sum(xs**2 * pmf))
    m4 = float(np.sum(xs.astype(float) ** 4 * pmf))
    assert abs(draws.mean()) <= 5 * math.sqrt(var / N_DRAWS)
    assert abs(np.mean(draws.astype(float) ** 2) - var) <= 5 * math.sqrt((m4 - var**2) / N_DRAWS)


def test_sampler_shapes_and_arguments():
    assert isinstance(sample_discrete_gaussian("9/4"), int)
    assert sample_discrete_gaussian(3.0, (2, 5)).shape == (2, 5)
    for bad in (0, -1, 2**80):
        with pytest.raises(ValueError):
            sample_discrete_gaussian(bad)


def _exact_renyi(alpha: float, s: float, shift: int) -> mpmath.mpf:
    """D_alpha(N_Z(0, s^2) || N_Z(shift, s^2)) summed term by term at 60 digits."""
    with mpmath.workdps(60):
        a, s2 = mpmath.mpf(alpha), mpmath.mpf(s) ** 2
        reach = int(abs(1 - alpha) * abs(shift) + abs(shift) + 40 * s + 10)
        xs = range(-reach, reach + 1)
        log_z = mpmath.log(mpmath.fsum(mpmath.exp(-x**2 / (2 * s2)) for x in xs))
        terms = mpmath.fsum(mpmath.exp(-(a * x**2 + (1 - a) * (x - shift) ** 2) / (2 * s2) - log_z)
                            for x in xs)
        return mpmath.log(terms) / (a - 1)


ORDERS = [float(a) for a in range(2, 21)] + [2.5, 7.3, 13.7]


@pytest.mark.parametrize("s,shift", [(0.5, 1), (1.0, 1), (1.0, 2), (2.0, 3), (0.7, 2), (5.0, 1)])
def test_rho_bounds_exact_renyi(s, shift):
    rho = discrete_gaussian_rho(shift, s)
    for alpha in ORDERS:
        exact = _exact_renyi(alpha, s, shift)
        assert exact <= alpha * rho
        if alpha.is_integer():  # (1 - alpha) shift is an integer: the bound is attained
            assert exact >= alpha * rho * (1 - 1e-9)


@pytest.mark.parametrize("delta,s", [(0.3, 1.0), (1.5, 2.0), (2.2, 0.8), (0.05, 3.0)])
def test_secure_rho_bounds_worst_rounded_pair(delta, s):
    """In one dimension the pair q = 1/2 - eps, q' = q + Delta (grid units) rounds floor(Delta) + 1
    apart; the release's exact divergence there stays below alpha * secure_zcdp_rho."""
    q = np.array([0.5 - 1e-9])
    shift = int(round_to_grid(q + delta, 1)[0] - round_to_grid(q, 1)[0])
    assert shift == math.floor(delta) + 1
    rho = secure_zcdp_rho(delta, s, 1, 1)
    for alpha in ORDERS:
        assert _exact_renyi(alpha, s, shift) <= alpha * rho


def test_round_to_grid_is_exact():
    rng = np.random.default_rng(3)
    grid = Fraction(3, 7)
    x = np.concatenate([rng.standard_normal(500) * 10, [0.5 * 3 / 7, -1.5 * 3 / 7, 0.0, -0.0]])
    expected = [math.floor(Fraction(v) / grid + Fraction(1, 2)) for v in x.tolist()]
    assert round_to_grid(x, grid).tolist() == expected
    with pytest.raises(ValueError):
        round_to_grid([np.nan], grid)
    with pytest.raises(ValueError):
        round_to_grid([1e300], grid)


@pytest.mark.parametrize("dim", [1, 2, 5, 50])
@pytest.mark.parametrize("ratio", [0.01, 0.7, 3.0, 40.0])
def test_rounding_sensitivity_bound(dim, ratio):
    """|round(q/gamma) - round(q'/gamma)| <= Delta/gamma + sqrt(d) whenever |q - q'| <= Delta."""
    rng = np.random.default_rng(dim * 100 + int(10 * ratio))
    gamma = 0.37
    delta = ratio * gamma
    q = rng.uniform(-5, 5, size=(2000, dim))
    u = rng.standard_normal((2000, dim))
    u *= delta * rng.uniform(0, 1, (2000, 1)) ** (1 / dim) / np.linalg.norm(u, axis=1, keepdims=True)
    moved = np.linalg.norm(round_to_grid(q + u, gamma) - round_to_grid(q, gamma), axis=1)
    assert np.all(moved <= grid_sensitivity(delta, gamma, dim))
    # the near-worst pair (1/2 -+ eps) gamma 1 moves by sqrt(d) while Delta -> 0
    eps = 1e-6
    a, b = (0.5 - eps) * gamma * np.ones(dim), (0.5 + eps) * gamma * np.ones(dim)
    jump = np.linalg.norm(round_to_grid(b, gamma) - round_to_grid(a, gamma))
    assert jump == pytest.approx(math.sqrt(dim))
    assert jump <= grid_sensitivity(np.linalg.norm(b - a), gamma, dim)


@pytest.mark.parametrize("rho,delta,dim", [(0.5, 1.0, 3), (0.01, 2.0, 100), (2.0, 0.3, 1000)])
def test_secure_sigma_for_rho(rho, delta, dim):
    sigma = secure_sigma_for_rho(rho, delta, dim)
    got = secure_zcdp_rho(delta, sigma, sigma * GRID_FRACTION, dim)
    assert rho * (1 - 1e-9) <= got <= rho
    assert (delta + sigma * GRID_FRACTION * math.sqrt(dim)) ** 2 / (2 * sigma**2) <= rho
    noise = SecureTangentGaussian(Euclidean(dim), sigma)
    assert noise.sigma2_grid == 1024**2
    assert noise.rho(delta) == got and noise.guarantee(delta) == ZCDP(got)


def test_accounting_refusals():
    for bad in (-0.1, math.nan, math.inf):
        with pytest.raises(ValueError, match="sensitivity"):
            secure_zcdp_rho(bad, 1.0, 0.01, 3)
    with pytest.raises(ValueError):
        grid_sensitivity(1.0, 0.0, 3)


def test_secure_sigma_for_rho_refusals():
    with pytest.raises(ValueError, match="grid alone"):
        secure_sigma_for_rho(1e-8, 1.0, 1000)
    with pytest.raises(ValueError, match="2\\^-k"):
        secure_sigma_for_rho(0.5, 1.0, 3, grid_fraction=0.001)


@pytest.mark.parametrize("manifold", [Sphere(2), SPD(3)], ids=["sphere2", "spd3"])
def test_release_law(manifold):
    """Releases are tangent at w, on the grid around round(c/gamma), with the noise's moments."""
    rng = np.random.default_rng(7)
    w = manifold.project(rng.standard_normal(manifold.point_shape)) if isinstance(manifold, Sphere) \
        else np.eye(3) + 0.1 * np.ones((3, 3))
    value = manifold.from_coords(w, rng.standard_normal(manifold.dim))
    sigma, n = 0.8, 3000
    noise = SecureTangentGaussian(manifold, sigma)
    out = noise.sample_around(w, value, size=n)
    assert out.shape == (n,) + manifold.point_shape
    coords = manifold.to_coords(w, out) / float(noise.grid)
    assert np.allclose(coords, np.round(coords), atol=1e-6)
    center = round_to_grid(manifold.to_coords(w, value), noise.grid)
    z = (np.round(coords) - center) / 1024  # in units of sigma
    assert np.all(np.abs(z.mean(axis=0)) <= 5 / math.sqrt(n))
    assert np.all(np.abs(z.var(axis=0) - 1) <= 5 * math.sqrt(2 / n))
    assert noise.sample_around(w, value).shape == manifold.point_shape


def test_release_batches_and_grid():
    m = Euclidean(4)
    w = np.zeros((3, 4))
    v = np.arange(12.0).reshape(3, 4)
    noise = SecureTangentGaussian(m, 1.0, grid=Fraction(1, 8))
    assert noise.sigma2_grid == 64
    out = noise.sample_around(w, v, size=(2,))
    assert out.shape == (2, 3, 4)
    assert np.array_equal(out * 8, np.round(out * 8))
    assert noise.rho(1.0) == pytest.approx((1.0 + 2 / 8) ** 2 / 2)


def test_release_ignores_numpy_seed():
    """Secure draws come from ``secrets``: the same numpy seed gives different noise, and numpy's
    global state is not advanced (secure mode is not reproducible by seed, on purpose)."""
    m = Euclidean(20)
    noise = SecureTangentGaussian(m, 1.0)
    np.random.seed(0)
    state = np.random.get_state()[1].copy()
    a = noise.sample_around(np.zeros(20), np.zeros(20))
    assert np.array_equal(np.random.get_state()[1], state)
    np.random.seed(0)
    b = noise.sample_around(np.zeros(20), np.zeros(20))
    assert not np.array_equal(a, b)


def test_docstring_example():
    result = doctest.testmod(discrete_gaussian)
    assert result.attempted > 0 and result.failed == 0
