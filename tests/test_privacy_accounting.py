"""Conversions, calibration and RDP accounting against published values and quadrature."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from geodp.privacy import (GDP, RDP, ApproxDP, PureDP, RDPAccountant, ZCDP, analytic_gaussian_sigma,
                           classic_gaussian_sigma, compose, compose_gdp, gdp_delta, gdp_epsilon,
                           gdp_sigma, gdp_to_pure_equivalent, laplace_scale,
                           pure_to_gdp, rdp_sigma, subsampled_gaussian_rdp)
from geodp.privacy.rdp import ORDERS, _poisson_integer


def gaussian_profile_by_quadrature(mu: float, eps: float) -> float:
    """delta(eps) = int max(0, p(x) - e^eps q(x)) dx for p = N(mu, 1), q = N(0, 1)."""
    # p > e^eps q  <=>  x > eps/mu + mu/2
    t = eps / mu + mu / 2.0
    f = lambda x: stats.norm.pdf(x, mu) - np.exp(eps) * stats.norm.pdf(x)
    val, err = integrate.quad(f, t, np.inf, epsabs=1e-15, epsrel=1e-12)
    return val


def test_published_reference_values():
    assert analytic_gaussian_sigma(1.0, 1e-5, 1.0) == pytest.approx(3.730632, abs=1e-6)
    assert analytic_gaussian_sigma(0.1, 1e-5, 1.0) == pytest.approx(30.74957, abs=1e-5)
    assert gdp_delta(1.0, 1.0) == pytest.approx(0.126937, abs=1e-6)
    assert pure_to_gdp(1.0) == pytest.approx(1.23204, abs=1e-5)
    assert gdp_epsilon(12.5, 1e-5) == pytest.approx(130.58, abs=0.01)


@pytest.mark.parametrize("mu,eps", [(0.5, 0.1), (1.0, 1.0), (2.0, 3.0), (4.0, 0.5), (0.2, 2.0)])
def test_gdp_profile_equals_quadrature(mu, eps):
    assert gdp_delta(mu, eps) == pytest.approx(gaussian_profile_by_quadrature(mu, eps), rel=1e-9)


@pytest.mark.parametrize("eps,delta", [(0.1, 1e-5), (1.0, 1e-5), (5.0, 1e-8), (0.5, 1e-3)])
def test_analytic_gaussian_attains_delta_by_quadrature(eps, delta):
    sigma = analytic_gaussian_sigma(eps, delta, sensitivity=2.0)
    assert gaussian_profile_by_quadrature(2.0 / sigma, eps) == pytest.approx(delta, rel=1e-8)
    # one part in 1e6 less noise breaks the guarantee
    assert gaussian_profile_by_quadrature(2.0 / (sigma * (1 - 1e-6)), eps) > delta


def test_gdp_epsilon_inverts_gdp_delta_and_large_mu_does_not_overflow():
    for mu in (0.3, 1.0, 5.0, 50.0):
        eps = gdp_epsilon(mu, 1e-6)
        assert gdp_delta(mu, eps) == pytest.approx(1e-6, rel=1e-9)
    assert np.isfinite(gdp_delta(200.0, 1.0)) and gdp_delta(200.0, 1.0) > 0.99
    assert gdp_epsilon(0.01, 0.5) == 0.0


def test_pure_to_gdp_inverse_and_dominance():
    for eps in (0.01, 0.5, 1.0, 3.0, 40.0):
        mu = pure_to_gdp(eps)
        assert gdp_to_pure_equivalent(mu) == pytest.approx(eps, rel=1e-10)
        # f_{eps,0} >= G_mu: the pure-DP profile dominates, delta_mu(e) >= delta_eps(e)
        for e in (0.0, 0.5 * eps):
            pure_profile = max(0.0, 1 - np.exp(e - eps)) * (1 / (1 + np.exp(-eps)))
            assert gdp_delta(mu, e) >= pure_profile - 1e-12


def test_classic_gaussian_refuses_large_epsilon():
    assert classic_gaussian_sigma(0.5, 1e-5) == pytest.approx(np.sqrt(2 * np.log(1.25e5)) / 0.5)
    with pytest.raises(ValueError, match="not \\(eps, delta\\)-DP for eps >= 1"):
        classic_gaussian_sigma(1.0, 1e-5)


def test_simple_calibrations():
    assert gdp_sigma(0.5, 2.0) == 4.0
    assert rdp_sigma(2.0, 1.0, 1.0) == pytest.approx(1.0)
    assert laplace_scale(0.5, 3.0) == 6.0
    with pytest.raises(ValueError, match="epsilon must be positive"):
        laplace_scale(0.0)


@pytest.mark.parametrize("z,q,steps,ref", [(1.1, 0.01, 1000, 1.71177017), (2.0, 0.1, 1000, 8.94695680)])
def test_rdp_accountant_poisson_reference(z, q, steps, ref):
    # dp-accounting's RDP values; ours are exact at every order, so never above them
    eps = RDPAccountant().compose_gaussian(z, steps=steps, sample_rate=q).epsilon(1e-5)
    assert ref * 0.99 <= eps <= ref * (1 + 1e-8)


def test_rdp_full_batch_reference_and_gdp():
    eps = RDPAccountant().compose_gaussian(0.8, steps=100).epsilon(1e-5)
    assert eps == pytest.approx(136.06, rel=1e-3)
    exact = GDP(np.sqrt(100) / 0.8).to_approx(1e-5).epsilon
    assert exact == pytest.approx(130.58, abs=0.01) and exact < eps


def log_moment_by_quadrature(q: float, z: float, alpha: float) -> float:
    """log E_{N(0, z^2)}[((1 - q) + q N(1, z^2)/N(0, z^2))^alpha], integrand in log space."""
    def log_f(x):
        log_mix = np.logaddexp(np.log1p(-q), np.log(q) + (2 * x - 1) / (2 * z * z))
        return stats.norm.logpdf(x, scale=z) + alpha * log_mix

    xs = np.linspace(-40 * z, 40 * z + alpha / z, 20001)
    shift = np.max(log_f(xs))
    val, _ = integrate.quad(lambda x: np.exp(log_f(x) - shift), xs[0], xs[-1], epsabs=0,
                            epsrel=1e-12, limit=500, points=[xs[np.argmax(log_f(xs))]])
    return float(np.log(val) + shift)


@pytest.mark.parametrize("alpha", [2, 3, 7, 20])
@pytest.mark.parametrize("q,z", [(0.01, 1.1), (0.2, 0.7), (0.5, 2.0)])
def test_poisson_integer_rdp_equals_quadrature(alpha, q, z):
    val = log_moment_by_quadrature(q, z, alpha)
    assert _poisson_integer(q, z, alpha) == pytest.approx(val / (alpha - 1), rel=1e-8)


def test_without_replacement_bound_is_monotone_and_valid():
    a = subsampled_gaussian_rdp(1.0, 0.01, "without_replacement")
    b = subsampled_gaussian_rdp(2.0, 0.01, "without_replacement")
    assert np.all(b <= a) and np.all(np.diff(a[ORDERS >= 2]) >= -1e-12)
    full = subsampled_gaussian_rdp(1.0, 1.0, "without_replacement")
    assert np.all(a <= full + 1e-12)
    with pytest.raises(ValueError, match="batch size"):
        RDPAccountant().compose_gaussian(1.0, 1, 0.0105, "without_replacement", n=1000)


def test_composition_rules():
    assert compose_gdp([GDP(3.0), GDP(4.0)]).mu == pytest.approx(5.0)
    assert compose([PureDP(0.5), PureDP(0.25)], 0.0) == ApproxDP(0.75, 0.0)
    mixed = compose([PureDP(1.0), GDP(1.0), ApproxDP(0.5, 1e-6)], 1e-5)
    assert mixed.delta == 1e-5
    gdp_route = compose_gdp([PureDP(1.0).to_gdp(), GDP(1.0)]).to_approx(9e-6).epsilon + 0.5
    assert mixed.epsilon <= gdp_route + 1e-12
    assert mixed.epsilon <= 1.0 + GDP(1.0).to_approx(9e-6 / 2).epsilon + 0.5
    assert ZCDP(0.5).to_approx(1e-5).epsilon == pytest.approx(
        RDP(ORDERS, 0.5 * ORDERS).to_approx(1e-5).epsilon)


@pytest.mark.parametrize("bad", [lambda: PureDP(0), lambda: PureDP(np.inf), lambda: GDP(-1),
                                 lambda: ApproxDP(1.0, 1.0), lambda: RDP([0.5], [1.0])])
def test_guarantees_validate(bad):
    with pytest.raises(ValueError):
        bad()


def test_against_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting import rdp as dpa_rdp

    for z, q, steps in [(1.1, 0.01, 1000), (2.0, 0.1, 1000), (0.8, 1.0, 100), (1.5, 0.05, 300)]:
        theirs = dpa_rdp.RdpAccountant()
        theirs.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
        ref = theirs.get_epsilon(1e-5)
        ours = RDPAccountant().compose_gaussian(z, steps, q).epsilon(1e-5)
        assert ref * 0.9 <= ours <= ref * (1 + 1e-9)
        integer_orders = np.arange(2.0, 257.0)
        theirs = dpa_rdp.RdpAccountant(list(integer_orders))
        theirs.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
        mine = RDPAccountant(integer_orders).compose_gaussian(z, steps, q).epsilon(1e-5)
        assert mine == pytest.approx(theirs.get_epsilon(1e-5), rel=1e-9)


def test_one_calibration_for_every_noise_family():
    """privacy.calibration.calibrate is what every additive mechanism of the registry uses."""
    from geodp.privacy import GDP, RDP, ZCDP, ApproxDP, PureDP
    from geodp.privacy.calibration import analytic_gaussian_sigma, calibrate, rdp_sigma

    assert calibrate("laplace", PureDP(0.5), 2.0) == 4.0
    assert calibrate("gaussian", ApproxDP(1.0, 1e-5), 2.0) == analytic_gaussian_sigma(1.0, 1e-5, 2.0)
    assert calibrate("gaussian", GDP(0.5), 2.0) == 4.0
    assert calibrate("gaussian", RDP([4.0], [0.5]), 2.0) == rdp_sigma(4.0, 0.5, 2.0)
    assert calibrate("gaussian", ZCDP(0.5), 2.0) == pytest.approx(2.0)  # rho = Delta^2/(2 sigma^2)
    with pytest.raises(ValueError, match="Laplace noise gives epsilon-DP"):
        calibrate("laplace", GDP(1.0), 1.0)
    with pytest.raises(ValueError, match="Gaussian noise gives"):
        calibrate("gaussian", PureDP(1.0), 1.0)
