"""Exponential-wrapped mechanisms: tangent laws, pushed-forward density, calibration, releases."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import integrate, stats

import geodp
from geodp.cli import main
from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere
from geodp.mechanisms import NotHadamardError, WrappedGaussian, WrappedLaplace
from geodp.privacy import (GDP, RDP, ApproxDP, BudgetLedger, PureDP, analytic_gaussian_sigma,
                           gdp_delta)
from geodp.learn.frechet import split_guarantee

ALPHA = 1e-3
N = 5000
HADAMARD = {"spd3": (SPD(3), np.eye(3) * 1.5), "hyperbolic3": (Hyperbolic(3), np.array([1.0, 0, 0, 0])),
            "spd2_le": (SPD(2, metric="log-euclidean"), np.eye(2)), "euclid": (Euclidean(3), np.zeros(3))}


def away_from(m, p0, dist, seed=0):
    c = np.random.default_rng(seed).standard_normal(m.dim)
    return m.exp(p0, m.from_coords(p0, dist * c / np.linalg.norm(c)))


@pytest.mark.parametrize("name", sorted(HADAMARD))
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_tangent_law_is_exactly_laplace_or_gaussian(name, kind):
    m, p0 = HADAMARD[name]
    center = away_from(m, p0, 0.7)
    mech = WrappedLaplace(m, 0.3, p0) if kind == "laplace" else WrappedGaussian(m, 0.3, p0)
    y = mech.sample(center, N, np.random.default_rng(1))
    u = m.to_coords(p0, m.log(p0, y)) - mech.tangent_center(center)
    radius = np.linalg.norm(u, axis=1)
    law = stats.gamma(m.dim, scale=0.3) if kind == "laplace" else stats.chi(m.dim, scale=0.3)
    assert stats.kstest(radius, law.cdf).pvalue > ALPHA
    a = (m.dim - 1) / 2
    assert stats.kstest((u[:, 0] / radius + 1) / 2, stats.beta(a, a).cdf).pvalue > ALPHA


@pytest.mark.parametrize("name", ["spd2", "hyperbolic2"])
@pytest.mark.parametrize("kind", ["laplace", "gaussian"])
def test_pushed_forward_density_matches_log_density(name, kind):
    """Histogram of rho(center, y) against the density integrated over the same shells.

    Shell probabilities conditional on B_R(center) are estimated as weighted means of
    exp(log_density) over uniform points of the ball, so the volume-change term 1/J is tested."""
    m, p0 = {"spd2": (SPD(2), np.eye(2)), "hyperbolic2": (Hyperbolic(2), np.array([1.0, 0, 0]))}[name]
    center = away_from(m, p0, 0.8, seed=3)
    mech = WrappedLaplace(m, 0.25, p0) if kind == "laplace" else WrappedGaussian(m, 0.3, p0)
    rng = np.random.default_rng(2)
    big = 2.0
    y = mech.sample(center, N, rng)
    d = m.dist(center, y)
    d = d[d < big]
    u = m.random_ball(center, big, 400_000, rng)
    w = np.exp(mech.log_density(center, u))
    du = m.dist(center, u)
    edges = np.quantile(d, np.linspace(0, 1, 11))
    edges[0], edges[-1] = 0.0, big
    expected = np.histogram(du, edges, weights=w)[0]
    expected = expected / expected.sum() * len(d)
    observed = np.histogram(d, edges)[0]
    chi2 = np.sum((observed - expected) ** 2 / expected)
    assert stats.chi2(len(observed) - 1).sf(chi2) > ALPHA


def test_log_density_integrates_to_one_on_hyperbolic_plane():
    """vol(B_R) = 2 pi (cosh R - 1) on H^2: the density's mass in a big ball is about one."""
    m = Hyperbolic(2)
    p0 = np.array([1.0, 0, 0])
    mech = WrappedGaussian(m, 0.2, p0)
    center = away_from(m, p0, 0.5)
    u = m.random_ball(center, 2.5, 400_000, np.random.default_rng(0))
    mass = np.mean(np.exp(mech.log_density(center, u))) * 2 * np.pi * (np.cosh(2.5) - 1)
    assert mass == pytest.approx(1.0, rel=0.02)


def test_non_hadamard_manifolds_are_refused():
    for m, p in [(Sphere(2), np.array([0, 0, 1.0])),
                 (KendallShape(4), KendallShape(4).project(np.arange(8.0).reshape(4, 2) ** 2))]:
        with pytest.raises(NotHadamardError, match="Log_p0 is not defined everywhere"):
            WrappedGaussian(m, 1.0, p)


def test_wrapped_laplace_log_ratio_is_at_most_epsilon():
    m, p0 = SPD(3), np.eye(3)
    eta1 = away_from(m, p0, 0.5, seed=1)
    eta2 = m.exp(eta1, m.from_coords(eta1, np.array([0.1, 0, 0, 0, 0, 0])))
    delta, eps = float(m.dist(eta1, eta2)), 0.7
    mech = WrappedLaplace(m, delta / eps, p0)
    y = mech.sample(eta1, 20000, np.random.default_rng(0))
    ratio = mech.log_density(eta1, y) - mech.log_density(eta2, y)
    assert ratio.max() <= eps + 1e-9


@pytest.mark.parametrize("eps,delta", [(0.5, 1e-5), (2.0, 1e-6)])
def test_gaussian_calibration_attains_delta_in_the_tangent_space(eps, delta):
    """Privacy profile of N(Log eta1, s^2 I) vs N(Log eta2, s^2 I) by quadrature equals delta."""
    sens = 0.3
    s = analytic_gaussian_sigma(eps, delta, sens)
    p = stats.norm(sens, s).pdf
    q = stats.norm(0, s).pdf
    t = s * s * eps / sens + sens / 2
    val, _ = integrate.quad(lambda x: p(x) - np.exp(eps) * q(x), t, t + 40 * s, epsabs=0,
                            epsrel=1e-11)
    assert val == pytest.approx(delta, rel=1e-7)


def test_gdp_and_rdp_calibrations_by_quadrature():
    sens = 0.4
    rel_gdp = GDP(2.0)
    s = sens / rel_gdp.mu
    assert gdp_delta(sens / s, 1.0) == pytest.approx(gdp_delta(2.0, 1.0))
    alpha, eps = 3.0, 0.8
    s = sens / np.sqrt(2 * eps / alpha)
    p, q = stats.norm(sens, s), stats.norm(0, s)
    val, _ = integrate.quad(lambda x: np.exp(alpha * p.logpdf(x) + (1 - alpha) * q.logpdf(x)),
                            -40 * s, 40 * s, epsabs=0, epsrel=1e-12)
    assert np.log(val) / (alpha - 1) == pytest.approx(eps, rel=1e-8)


def test_budget_split_composes_back():
    eps_fp, main = split_guarantee(GDP(1.0), 0.1)
    assert GDP(np.sqrt(0.1)).to_approx(1e-5).epsilon <= PureDP(eps_fp).to_gdp().to_approx(
        1e-5).epsilon + 1e-9
    assert np.hypot(PureDP(eps_fp).to_gdp().mu, main.mu) == pytest.approx(1.0)
    eps_fp, main = split_guarantee(RDP([4.0], [1.0]), 0.2)
    assert min(eps_fp, 4.0 * eps_fp**2 / 2) + main.epsilons[0] == pytest.approx(1.0)
    assert split_guarantee(ApproxDP(1.0, 1e-6), 0.25)[1] == ApproxDP(0.75, 1e-6)


def spd_data(n=300, r=0.5):
    m = SPD(3)
    return m, m.random_ball(np.eye(3), r, n, np.random.default_rng(0))


def test_private_mean_wrapped_notions_and_scales():
    m, x = spd_data()
    delta = 2 * 0.5 / 300
    cases = [({"mechanism": "wrapped-laplace", "epsilon": 1.0}, PureDP(1.0), delta),
             ({"mechanism": "wrapped-gaussian", "mu": 2.0}, GDP(2.0), delta / 2),
             ({"mechanism": "wrapped-gaussian", "rdp": (2.0, 0.5)}, RDP([2.0], [0.5]),
              delta / np.sqrt(2 * 0.5 / 2.0)),
             ({"mechanism": "wrapped-gaussian", "epsilon": 1.0, "delta": 1e-5}, ApproxDP(1.0, 1e-5),
              analytic_gaussian_sigma(1.0, 1e-5, delta))]
    for kwargs, guarantee, scale in cases:
        rel = geodp.private_frechet_mean(m, x, center=np.eye(3), radius=0.5, rng=0, **kwargs)
        assert rel.guarantee.describe() == guarantee.describe()
        assert rel.scale == pytest.approx(scale)
        m.check_point(rel.value)
    with pytest.raises(ValueError, match="exactly one of"):
        geodp.private_frechet_mean(m, x, center=np.eye(3), radius=0.5, mechanism="wrapped-gaussian",
                                   mu=1.0, epsilon=1.0)
    with pytest.raises(NotHadamardError):
        geodp.private_frechet_mean(Sphere(2), np.array([[0, 0, 1.0]] * 5), 1.0, np.array([0, 0, 1.0]),
                                   0.3, mechanism="wrapped-laplace")


def test_private_footpoint_spends_its_share_and_is_recorded(tmp_path):
    m, x = spd_data()
    ledger = BudgetLedger(tmp_path / "l.db", total_epsilon=40.0, total_delta=1e-5)
    rel = geodp.private_frechet_mean(m, x, center=np.eye(3), radius=0.5, mechanism="wrapped-gaussian",
                                     mu=4.0, footpoint="private", ledger=ledger, rng=1)
    fp = rel.parameters["private_footpoint"]
    assert fp["subsample_size"] == 15 and rel.diagnostics["private_footpoint_sampler"]["exact"]
    assert rel.parameters["main_guarantee"] == GDP(np.sqrt(0.9) * 4.0).describe()
    assert rel.scale == pytest.approx(2 * 0.5 / 300 / (np.sqrt(0.9) * 4.0))
    assert ledger.spent() == pytest.approx((GDP(4.0).to_approx(1e-5).epsilon, 1e-5))
    assert "4-GDP" in ledger.history()[0]["guarantee"]


def test_infeasible_private_footpoint_raises_before_spending(tmp_path):
    m, x = spd_data(n=40, r=1.5)
    ledger = BudgetLedger(tmp_path / "l.db", total_epsilon=5.0)
    with pytest.raises(ValueError, match="private footpoint selection.*not normalisable"):
        geodp.private_frechet_mean(m, x, 1.0, np.eye(3), 1.5, mechanism="wrapped-laplace",
                                   footpoint="private", ledger=ledger)
    assert ledger.spent() == (0.0, 0.0)


def test_cli_wrapped_gaussian_gdp(capsys):
    main(["release", "mean", "digits-covariance", "--mechanism", "wrapped-gaussian", "--mu", "1",
          "--seed", "3"])
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee"] == "1-GDP (replace-one)" and out["mechanism"] == "exponential-wrapped Gaussian"
    assert "delta=1e-05" in out["equivalent_guarantees"]
