"""Approximate (MCMC) samplers are refused unless asked for, and then start without the data and
report their diagnostics (issue 28)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

import geodp
from geodp.manifolds import SPD, Sphere
from geodp.mechanisms import ApproximateSamplerRefused, ApproximateSamplerWarning, RiemannianLaplace
from geodp.mechanisms import laplace as laplace_module
from geodp.mechanisms.kng import BundleDomain, sample_bundle
from geodp.mechanisms.mcmc import ESS_WARN, R_HAT_WARN, MCMCDiagnostics, warn_unless_converged
from geodp.privacy import BudgetLedger
from test_kng import _sphere_data
from geodp.statistics.regression import regression_gradient

#: SPD(5) with 50 records in the public ball B_5(I) at epsilon 1: restricted, the scale
#: 2 Delta / epsilon = 0.4 exceeds s_crit(5) = 0.32 (no unrestricted law to propose from) and
#: uniform proposals on so wide a ball are all but never accepted, even at its center.
SPD5, RADIUS = SPD(5), 5.0


def _spd_data(shift: float = 0.0, n: int = 50, seed: int = 1) -> np.ndarray:
    center = SPD5.exp(np.eye(5), shift * np.diag([1.0, -1.0, 0.0, 0.0, 0.0]))
    return SPD5.random_ball(center, 1.0, n, np.random.default_rng(seed))


@pytest.mark.parametrize("mechanism, names", [
    ("laplace", "the unrestricted Riemannian Laplace"),
    ("kng", "the Riemannian Laplace mechanism ('laplace') instead of K-norm gradient")])
def test_default_refuses_before_the_ledger_reserves(tmp_path, mechanism, names):
    """No exact sampler even at the ball's center: refused from the public parameters, before
    the ledger reserves anything, naming the exact alternatives and the keyword."""
    ledger = BudgetLedger(tmp_path / "l.db", 5.0)
    with pytest.raises(ApproximateSamplerRefused, match="allow_approximate=True") as err:
        geodp.private_frechet_mean(SPD5, _spd_data(), 1.0, np.eye(5), RADIUS, mechanism=mechanism,
                                   restrict=mechanism == "laplace", ledger=ledger, rng=0)
    assert names in str(err.value) and "even at the ball's center" in str(err.value)
    assert ledger.history() == []


def test_unrestricted_spd_refusal_depends_on_the_scale_alone():
    """Unrestricted, the exact samplers' acceptance depends on n and the scale only: check_exact
    decides for every footpoint; allowed, the chains need a public ball to start in."""
    mech = RiemannianLaplace(SPD(3), 0.4, min_acceptance=0.9)
    with pytest.raises(ApproximateSamplerRefused, match="a larger epsilon"):
        mech.check_exact()
    with pytest.raises(ApproximateSamplerRefused):
        mech.sample(np.eye(3), rng=0)
    allowed = RiemannianLaplace(SPD(3), 0.4, min_acceptance=0.9, allow_approximate=True)
    allowed.check_exact()
    with pytest.raises(ValueError, match="chain_ball"):
        allowed.sample(np.eye(3), rng=0)


def test_allowed_release_reports_its_chains():
    """allow_approximate=True: exact_sampler False, at least 4 chains whose R-hat, ESS and
    lengths are in the diagnostics (the polar chains of SPD; ``test_spd_chains`` checks that they
    pass, ``test_laplace_mechanism`` that the random-walk fallback of other manifolds reports
    itself the same way)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateSamplerWarning)
        rel = geodp.private_frechet_mean(SPD5, _spd_data(), 1.0, np.eye(5), RADIUS, restrict=True,
                                         allow_approximate=True, rng=0)
    assert not rel.exact_sampler and SPD5.dist(np.eye(5), rel.value) <= RADIUS
    chains = rel.diagnostics["sampler"]["mcmc"]
    assert {"r_hat", "ess", "n_chains", "burn_in", "trace_length"} <= set(chains)
    assert chains["n_chains"] >= 4 and np.isfinite(chains["r_hat"])


def test_laplace_chains_start_the_same_whatever_the_data(monkeypatch):
    """Two data sets with different means, the same seed: the chains start at the same points,
    inside the public ball (recorded by the sampler; chains shortened to 20 steps here)."""
    starts = []
    original = laplace_module.ball_chains

    def recording(*args, **kwargs):
        draws, diag = original(*args, **{**kwargs, "max_steps": 20})
        starts.append(diag.start)
        return draws, diag

    monkeypatch.setattr(laplace_module, "ball_chains", recording)
    means = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateSamplerWarning)
        for shift in (-1.0, 1.0):
            geodp.private_frechet_mean(SPD5, _spd_data(shift), 1.0, np.eye(5), RADIUS,
                                       restrict=True, allow_approximate=True, rng=3)
            means.append(geodp.statistics.frechet_mean(SPD5, _spd_data(shift)).mean)
    assert SPD5.dist(*means) > 1.0
    assert len(starts) == 2 and np.array_equal(starts[0], starts[1])
    assert np.all(SPD5.dist(np.eye(5), starts[0]) <= RADIUS)

    mech = RiemannianLaplace(SPD5, 0.4, restrict_to=(np.eye(5), RADIUS), allow_approximate=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateSamplerWarning)
        mech.sample(means[0], rng=4)
        first = mech.last_info.mcmc.start
        mech.sample(means[1], rng=4)
    assert np.array_equal(first, mech.last_info.mcmc.start)


def test_kng_bundle_chains_start_the_same_whatever_the_data():
    """The regression sampler's chains start at uniform draws on the domain, drawn before the
    data are read: the same for two data sets (responses rotated by 1 radian)."""
    m = Sphere(1)
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, 40)
    domain = BundleDomain(m, np.array([1.0, 0.0]), None, 2.0)
    starts = []
    for angle in (0.3, 1.3):
        theta = angle + 0.8 * x + 0.05 * rng.standard_normal(40)
        y = np.stack([np.cos(theta), np.sin(theta)], axis=1)

        def gradient(p, v, y=y):
            return regression_gradient(m, p, v, x, y, 0.5)[:2]

        start = np.stack([y[0], np.zeros(2)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ApproximateSamplerWarning)
            _, info = sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(7),
                                    burn_in=10, trace_length=10, max_steps=20, min_acceptance=2.0,
                                    exact_fallback=False, allow_approximate=True)
        assert not info.exact
        starts.append(info.mcmc.start)
    assert np.array_equal(starts[0], starts[1]) and np.all(domain.contains(starts[0]))


def test_kng_regression_refuses_before_reserving(tmp_path):
    """The regression's exact plan is public (n epsilon <= 46.05): beyond it the refusal comes
    before the ledger reserves anything, and quotes only public parameters."""
    m, x, y = _sphere_data()
    ledger = BudgetLedger(tmp_path / "l.db", 5.0)
    with pytest.raises(ApproximateSamplerRefused, match=r"here n = \d+ and epsilon = 1,"):
        geodp.private_geodesic_regression(m, x, y, 1.0, tau=0.3, x_range=(0, 1), v_max=1.5,
                                          rng=0, ledger=ledger)
    assert ledger.history() == []


def test_warning_thresholds():
    def diag(r_hat, ess):
        return MCMCDiagnostics(0.3, 0.1, 100, 200, 4, r_hat, ess)

    with warnings.catch_warnings():
        warnings.simplefilter("error", ApproximateSamplerWarning)
        assert not warn_unless_converged(diag(R_HAT_WARN, ESS_WARN), "chains")
    for bad in (diag(1.02, 500.0), diag(1.0, 50.0), diag(float("nan"), 500.0)):
        with pytest.warns(ApproximateSamplerWarning):
            assert warn_unless_converged(bad, "chains")


def test_cli_refuses_without_the_flag_and_names_it(tmp_path, capsys):
    from geodp.cli import main

    np.save(tmp_path / "x.npy", _spd_data())
    call = ["release", "mean", str(tmp_path / "x.npy"), "--manifold", "spd:5", "--epsilon", "1",
            "--center", "identity", "--radius", str(RADIUS), "--restrict", "--seed", "0", "--quiet"]
    assert main(call) == 2
    err = capsys.readouterr().err
    assert "--allow-approximate" in err and "allow_approximate=True" not in err
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateSamplerWarning)
        assert main(call + ["--allow-approximate"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["exact_sampler"] is False and "approximate guarantee" in out["statement"]
    assert "diagnostics_not_private" not in out  # R-hat depends on the data: only on request
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ApproximateSamplerWarning)
        assert main(call + ["--allow-approximate", "--diagnostics"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "r_hat" in out["diagnostics_not_private"]["sampler"]["mcmc"]
