"""The empirical audit: every mechanism audits at or below its claim, and a planted defect (the
scale halved, so the true parameter doubles) is caught, so the audit has power.

Sample sizes: 200 000 draws per input, 64 thresholds in both tails and directions, confidence
0.95. At that size the audit reaches about 0.76-0.84 of a Laplace mechanism's epsilon and 0.98
of a Gaussian mechanism's mu, so it detects a Laplace whose true epsilon exceeds the claim by
about 25% or more, and a Gaussian whose mu exceeds it by about 3%; the planted defects (2x) are
far beyond that. In the other notions of the wrapped Gaussian it reaches 0.54 of epsilon at
delta = 1e-5 (so a true epsilon 1.9x the claim is caught) and 0.26 of the Renyi epsilon at
order 2 (3.9x). The K-norm gradient Fréchet mean audits at 0.35-0.42 of its epsilon: its
theorem spends epsilon/2 on the normalising constants, which cancel for these symmetric
neighbours, so its true epsilon is about epsilon/2; the planted defect there is a quartered
scale (true epsilon about 2 epsilon), which the audit catches at 1.4-1.7. The K-norm gradient
geodesic regression (joint release; 2 records, the last moved to the antipode) audits at 0.50 of
epsilon on S^1 and 0.35 on S^2 with the log-ratio statistic (the Neyman-Pearson events); the
neighbours are not mirror images, so the normalising constants count, and a halved scale is
caught on S^1 (1.12) and a quartered one on S^2 (1.83).
"""

from __future__ import annotations

import numpy as np
import pytest

from geodp.audit import (audit_mechanism, clopper_pearson, dp_rgd_step_sampler, kng_log_ratio_statistic,
                         kng_mean_neighbours, kng_mean_sampler, kng_regression_neighbours,
                         kng_regression_sampler, neighbouring_footpoints, projection_statistic)
from geodp.cli import main
from geodp.manifolds import SPD, Hyperbolic, Sphere
from geodp.mechanisms import RiemannianLaplace, WrappedGaussian, WrappedLaplace
from geodp.mechanisms.kng import KNormGradient
from geodp.privacy import analytic_gaussian_sigma, rdp_sigma
from geodp.statistics.sensitivity import kng_mean_sensitivity, regression_sensitivity

N = 200_000
CASES = {
    "S^2": (Sphere(2), np.array([0.0, 0.0, 1.0])),
    "H^2": (Hyperbolic(2), np.array([1.0, 0.0, 0.0])),
    "SPD(2)": (SPD(2), np.eye(2)),
    "SPD(3)": (SPD(3), np.eye(3)),
}


def audit(manifold, center, make, sensitivity=0.1, n=N, seed=0):
    near, far, direction = neighbouring_footpoints(manifold, center, sensitivity)
    mech = make(manifold, center, sensitivity)
    return audit_mechanism(lambda k, g: mech.sample(far, k, g), lambda k, g: mech.sample(near, k, g),
                           projection_statistic(manifold, center, direction), n, rng=seed)


@pytest.mark.parametrize("name", sorted(CASES))
def test_riemannian_laplace_audits_below_its_epsilon_and_a_halved_scale_is_caught(name):
    manifold, center = CASES[name]
    good = audit(manifold, center, lambda m, c, s: RiemannianLaplace(m, s / 1.0))
    bad = audit(manifold, center, lambda m, c, s: RiemannianLaplace(m, 0.5 * s / 1.0))
    assert 0.5 < good.epsilon_lower <= 1.0 < bad.epsilon_lower


def test_restricted_laplace_audits_below_its_epsilon():
    manifold, center = CASES["H^2"]
    # Theorem 3: restricted to the data ball, the scale doubles for the same epsilon
    res = audit(manifold, center, lambda m, c, s: RiemannianLaplace(m, 2 * s, restrict_to=(c, 0.5)))
    assert res.epsilon_lower <= 1.0


@pytest.mark.parametrize("name", ["H^2", "SPD(2)"])
def test_wrapped_mechanisms_audit_below_their_claims(name):
    manifold, center = CASES[name]
    lap = audit(manifold, center, lambda m, c, s: WrappedLaplace(m, s, c))
    gauss = audit(manifold, center, lambda m, c, s: WrappedGaussian(m, s / 1.0, c))
    assert lap.epsilon_lower <= 1.0 and 0.9 < gauss.mu_lower <= 1.0
    bad = audit(manifold, center, lambda m, c, s: WrappedGaussian(m, 0.5 * s, c))
    assert bad.mu_lower > 1.0


@pytest.mark.parametrize("name", ["H^2", "SPD(2)"])
def test_wrapped_gaussian_audits_below_its_approximate_and_renyi_claims(name):
    manifold, center = CASES[name]
    near, far, direction = neighbouring_footpoints(manifold, center, 0.1)
    stat = projection_statistic(manifold, center, direction)

    def run(sigma, **kwargs):
        mech = WrappedGaussian(manifold, sigma, center)
        return audit_mechanism(lambda k, g: mech.sample(far, k, g), lambda k, g: mech.sample(near, k, g),
                               stat, N, rng=3, **kwargs)

    sigma = analytic_gaussian_sigma(1.0, 1e-5, 0.1)  # claim: (1, 1e-5)-DP
    good, bad = run(sigma, delta=1e-5, delta_at_epsilon=1.0), run(0.5 * sigma, delta=1e-5,
                                                                  delta_at_epsilon=1.0)
    assert good.epsilon_lower <= 1.0 < bad.epsilon_lower
    assert good.delta_lower <= 1e-5 < bad.delta_lower
    sigma = rdp_sigma(2.0, 0.5, 0.1)  # claim: (2, 0.5)-RDP
    good, bad = run(sigma, rdp_order=2.0), run(0.5 * sigma, rdp_order=2.0)
    assert 0.1 < good.rdp_lower <= 0.5 < bad.rdp_lower


@pytest.mark.parametrize("name", ["S^2", "H^2", "SPD(2)"])
def test_kng_frechet_mean_audits_below_its_epsilon_and_a_quartered_scale_is_caught(name):
    manifold, center = CASES[name]
    radius, n = 0.5, 10
    d, d_prime, direction = kng_mean_neighbours(manifold, center, radius, n)
    stat = projection_statistic(manifold, center, direction)
    sigma = KNormGradient(kng_mean_sensitivity(manifold, radius, n), 1.0).scale

    def run(scale):
        return audit_mechanism(kng_mean_sampler(manifold, d, center, radius, scale),
                               kng_mean_sampler(manifold, d_prime, center, radius, scale), stat, N,
                               rng=4)

    assert 0.25 < run(sigma).epsilon_lower <= 1.0 < run(0.25 * sigma).epsilon_lower


@pytest.mark.parametrize("dim,defect", [(1, 2), (2, 4)])
def test_kng_regression_audits_below_its_epsilon_and_a_shrunk_scale_is_caught(dim, defect):
    m = Sphere(dim)
    tau, x_bound, v_max = 0.5, 1.0, 1.0
    x, y, y_prime = kng_regression_neighbours(m, np.eye(dim + 1)[-1], 2, x_bound)
    scale = KNormGradient(regression_sensitivity(m, 2, tau, x_bound, v_max)["joint"], 1.0).scale
    statistic = kng_log_ratio_statistic(m, x, y, y_prime, tau)

    def audit(s):
        return audit_mechanism(kng_regression_sampler(m, x, y, tau, v_max, s),
                               kng_regression_sampler(m, x, y_prime, tau, v_max, s), statistic, N,
                               rng=1).epsilon_lower

    assert audit(scale) <= 1.0
    assert audit(scale / defect) > 1.0


def test_one_dp_rgd_step_audits_below_its_mu():
    manifold, center = CASES["SPD(3)"]
    near, far, direction = neighbouring_footpoints(manifold, center, 0.1)
    stat = projection_statistic(manifold, center, direction)

    def run(sigma):
        return audit_mechanism(dp_rgd_step_sampler(manifold, center, far, sigma),
                               dp_rgd_step_sampler(manifold, center, near, sigma), stat, N, rng=1)

    assert 0.9 < run(0.1).mu_lower <= 1.0 < run(0.05).mu_lower


def test_delta_bound_and_clopper_pearson():
    lo, hi = clopper_pearson(np.array([0, 5, 100]), 100, 0.025)
    assert lo[0] == 0 and hi[2] == 1 and lo[1] < 0.05 < hi[1]
    manifold, center = CASES["H^2"]
    near, far, direction = neighbouring_footpoints(manifold, center, 0.1)
    mech = WrappedGaussian(manifold, 0.1, center)
    res = audit_mechanism(lambda k, g: mech.sample(far, k, g), lambda k, g: mech.sample(near, k, g),
                          projection_statistic(manifold, center, direction), N, rng=2,
                          delta_at_epsilon=1.0)
    from geodp.privacy import gdp_delta
    assert 0 < res.delta_lower <= gdp_delta(1.0, 1.0)


def test_cli_audit_prints_claim_bound_and_verdict(capsys):
    import json

    assert main(["audit", "laplace", "--epsilon", "1", "--samples", "50000", "--seed", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["claimed"] == {"epsilon": 1.0} and out["audited_lower_bound"] <= 1.0
    assert out["verdict"].startswith("consistent")
    assert main(["audit", "wrapped-gaussian", "--manifold", "sphere:2", "--mu", "1"]) == 2
    assert "Hadamard" in capsys.readouterr().err
    for claim, key in ((["--epsilon", "1", "--delta", "1e-5"], "delta_lower"),
                       (["--rdp-alpha", "2", "--rdp-epsilon", "0.5"], "rdp_lower")):
        assert main(["audit", "wrapped-gaussian", "--manifold", "hyperbolic:2", *claim,
                     "--samples", "20000", "--seed", "0"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["audited_lower_bound"] == out[key] and out["verdict"].startswith("consistent")
    assert main(["audit", "kng-mean", "--epsilon", "1", "--samples", "20000", "--seed", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"].startswith("consistent") and out["sensitivity"] > 0.1
    assert main(["audit", "kng-regression", "--manifold", "sphere:1", "--epsilon", "1", "--n", "2",
                 "--samples", "20000", "--seed", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verdict"].startswith("consistent") and 0.1 < out["audited_lower_bound"] <= 1.0
    assert main(["audit", "dp-rgd-step"]) == 2
    assert "needs a claim" in capsys.readouterr().err
