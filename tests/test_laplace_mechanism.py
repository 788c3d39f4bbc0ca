"""Riemannian Laplace: exact samplers against their targets, MCMC, restriction, privacy checks."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, special, stats

from conftest import MANIFOLDS, base_point, needs
from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere
from geodp.mechanisms import (EuclideanLaplace, NotNormalisableError, RiemannianLaplace,
                              metropolis_hastings, spd_critical_scale)
from geodp.mechanisms.spd_laplace import (MAX_LOG_CONDITION, MAX_UNREPRESENTABLE, SPDEigenLaw,
                                          UnrepresentableScaleError, spd2_representable_scale,
                                          spd2_spread_tail, spd_from_polar)

N = 4000
ALPHA = 1e-3  # KS tests: fixed seeds; a correct sampler fails one with probability 1e-3


def log_radial(manifold, scale):
    """log of exp(-r/s) J(r) written out from the geometry, independent of the implementation."""
    d = manifold.dim
    if isinstance(manifold, Sphere):
        c = np.sqrt(manifold.curvature)
        return (lambda r: -r / scale + (d - 1) * np.log(np.sin(c * r))), np.pi / c
    if isinstance(manifold, Hyperbolic):
        c = np.sqrt(-manifold.curvature)
        log_sinh = lambda x: x + np.log1p(-np.exp(-2 * x)) - np.log(2)
        return (lambda r: -r / scale + (d - 1) * log_sinh(c * r)), np.inf
    if isinstance(manifold, KendallShape):
        return (lambda r: -r / scale + (d - 1) * np.log(np.sin(r)) + np.log(np.cos(r))), np.pi / 2
    return (lambda r: -r / scale + (d - 1) * np.log(r)), np.inf


def radial_cdf(log_f, hi, scale, decay):
    """CDF by cumulative quadrature; ``decay`` is the exponential rate of the tail."""
    upper = hi if np.isfinite(hi) else 60.0 / decay
    grid = np.geomspace(1e-8 * min(scale, upper), upper, 400_001)
    vals = np.exp(log_f(grid) - np.max(log_f(grid)))
    cdf = integrate.cumulative_trapezoid(vals, grid, initial=0.0)
    cdf /= cdf[-1]
    return lambda r: np.interp(r, grid, cdf)


ISOTROPIC = ["euclidean3", "sphere2", "sphere5_k4", "hyperbolic2", "hyperbolic4_k05",
             "spd3_logeuclid", "kendall3", "kendall6"]


def scales_for(m):
    if isinstance(m, Hyperbolic) and m.dim > 1:
        top = 1.0 / ((m.dim - 1) * np.sqrt(-m.curvature))
        return [0.01 * top, 0.3 * top, 0.95 * top]
    if isinstance(m, SPD):
        return [0.01, 0.1, 0.5]  # larger scales leave the range of double-precision matrices
    return [0.01, 0.3, 3.0]


@pytest.mark.parametrize("name", ISOTROPIC)
def test_exact_radial_law_matches_numerical_cdf(name):
    m = MANIFOLDS[name]
    p = base_point(m)
    rng = np.random.default_rng(11)
    for scale in scales_for(m):
        mech = RiemannianLaplace(m, scale)
        x = mech.sample(p, N, rng)
        assert mech.last_info.exact
        log_f, hi = log_radial(m, scale)
        decay = 1 / scale - (m.dim - 1) * np.sqrt(-m.curvature) if isinstance(m, Hyperbolic) \
            else 1 / scale
        d = m.dist(p, x)
        res = stats.kstest(d, radial_cdf(log_f, hi, scale, decay))
        assert res.pvalue > ALPHA, (name, scale, res)


@pytest.mark.parametrize("name", ISOTROPIC + ["spd2", "spd3", "spd5"])
def test_direction_is_uniform(name):
    m = MANIFOLDS[name]
    if m.dim < 2:
        pytest.skip("one-dimensional")
    p = base_point(m)
    x = RiemannianLaplace(m, 0.2).sample(p, N, np.random.default_rng(5))
    c = m.to_coords(p, m.log(p, x))
    c /= np.linalg.norm(c, axis=1, keepdims=True)
    a = (m.dim - 1) / 2
    for j in (0, m.dim - 1):
        assert stats.kstest((c[:, j] + 1) / 2, stats.beta(a, a).cdf).pvalue > ALPHA


def struve_cdf(scale):
    """CDF of rho(footpoint, Y) on SPD(2): density t e^(-t/s) L0(t/sqrt 2) (README notes)."""
    grid = np.linspace(1e-9, 400 * scale, 400_001)
    log_f = np.log(grid) - grid / scale + np.log(special.modstruve(0, grid / np.sqrt(2)))
    f = np.exp(log_f - log_f.max())
    cdf = integrate.cumulative_trapezoid(f, grid, initial=0.0)
    return lambda t: np.interp(t, grid, cdf / cdf[-1])


@pytest.mark.parametrize("fraction", [0.05, 0.5, 0.92])
def test_spd2_distance_law_is_struve(fraction):
    """On SPD(2), |r| = rho(footpoint, Y) has the Struve law of ``struve_cdf``."""
    m = MANIFOLDS["spd2"]
    scale = fraction * spd_critical_scale(2)
    p = base_point(m)
    if scale <= spd2_representable_scale():
        d = m.dist(p, RiemannianLaplace(m, scale).sample(p, N, np.random.default_rng(2)))
    else:
        # beyond the representable scale the matrices are refused: test r itself
        r, _, _ = SPDEigenLaw(2, scale).sample(N, np.random.default_rng(2))
        d = np.linalg.norm(r, axis=1)
    assert stats.kstest(d, struve_cdf(scale)).pvalue > ALPHA


SPD2_FEET = [np.eye(2), np.array([[2.0, 0.7], [0.7, 0.5]])]


@pytest.mark.parametrize("scale", [0.3, 0.45, "bound"])
def test_spd2_draws_are_positive_definite_and_exact_up_to_the_representable_scale(scale):
    """Issue 28: 20000 draws, LAPACK's Cholesky accepts every one and the distance law holds."""
    m = SPD(2)
    scale = spd2_representable_scale() if scale == "bound" else scale
    mech = RiemannianLaplace(m, scale)
    for i, foot in enumerate(SPD2_FEET):
        x = mech.sample(foot, 20000, np.random.default_rng(i))
        np.linalg.cholesky(x)
        assert np.all(np.linalg.eigvalsh(x)[:, 0] > 0)
        assert stats.kstest(m.dist(foot, x), struve_cdf(scale)).pvalue > ALPHA


@pytest.mark.parametrize("scale", [0.6, 1.0, 1.2, 1.35, 1.4])
def test_spd2_scales_beyond_double_precision_are_refused_before_sampling(scale):
    """At scale 1.0 0.4% of draws span more than e^32 (and no double matrix holds them as
    positive definite beyond about e^35); 95% at 1.4."""
    with pytest.raises(UnrepresentableScaleError, match=f"scale {scale:.4g} .* at most 0.495"):
        RiemannianLaplace(SPD(2), scale)
    assert issubclass(UnrepresentableScaleError, ValueError)
    ball = RiemannianLaplace(SPD(2), scale, restrict_to=(np.eye(2), 2.0))
    np.linalg.cholesky(ball.sample(np.eye(2), 100, np.random.default_rng(0)))


def test_spd2_spread_tail_matches_the_sampled_law():
    """The closed-form law of |r_1 - r_2| behind the refusal, against the exact sampler."""
    scale = 1.0
    r, _, _ = SPDEigenLaw(2, scale).sample(20000, np.random.default_rng(4))
    spread = np.abs(r[:, 0] - r[:, 1])
    grid = np.linspace(0.0, 60.0, 301)
    cdf = np.array([1.0 - spd2_spread_tail(scale, c) if c > 0 else 0.0 for c in grid])
    assert stats.kstest(spread, lambda c: np.interp(c, grid, cdf)).pvalue > ALPHA
    assert spd2_spread_tail(spd2_representable_scale(), MAX_LOG_CONDITION) == pytest.approx(
        MAX_UNREPRESENTABLE, rel=1e-3)


def test_a_draw_beyond_double_precision_raises_instead_of_returning():
    """Log-eigenvalues +-30 in 50 rotated frames: eigenvalue ratio e^60 > 1/machine epsilon, so
    some are not positive definite once rounded; a representable batch passes."""
    t = np.linspace(0.1, 1.5, 50)
    frames = np.stack([np.stack([np.cos(t), np.sin(t)], -1), np.stack([-np.sin(t), np.cos(t)], -1)], -1)
    wide = np.tile([30.0, -30.0], (50, 1))
    with pytest.raises(UnrepresentableScaleError, match="scale 1.3 .* not positive definite"):
        spd_from_polar(frames, wide, 1.3)
    np.linalg.cholesky(spd_from_polar(frames, wide / 3, 1.3))


def test_spd3_exact_matches_mcmc():
    m = SPD(3)
    p = np.eye(3)
    scale = 0.4
    rng = np.random.default_rng(3)
    exact = RiemannianLaplace(m, scale).sample(p, 2000, rng)
    init = np.broadcast_to(p, (400, 3, 3))
    approx, diag = metropolis_hastings(m, lambda y: -m.dist(p, y) / scale, init, rng,
                                       burn_in=1500, trace_length=1000, step=0.3)
    assert diag.r_hat < 1.2  # slow mixing in 6 dimensions: a sanity bound, not convergence proof
    assert stats.ks_2samp(m.dist(p, exact), m.dist(p, approx)).pvalue > ALPHA


@pytest.mark.parametrize("n,fraction", [(3, 0.3), (3, 0.6), (4, 0.2)])
def test_spd_exact_schemes_agree(n, fraction):
    """S1 and S2 are independent exact constructions of the same law of r."""
    rng = np.random.default_rng(n)
    draws = {}
    for method in ("S1", "S2"):
        law = SPDEigenLaw(n, fraction * spd_critical_scale(n))
        law._method = method
        r, _, _ = law.sample(3000, rng)
        draws[method] = r
    for f in (lambda r: np.linalg.norm(r, axis=1), lambda r: np.ptp(r, axis=1)):
        assert stats.ks_2samp(f(draws["S1"]), f(draws["S2"])).pvalue > ALPHA


def test_sphere_mcmc_matches_exact_and_reports_diagnostics():
    m = Sphere(2)
    p = np.array([0.0, 0.0, 1.0])
    rng = np.random.default_rng(4)
    exact = RiemannianLaplace(m, 0.3).sample(p, 2000, rng)
    approx, diag = metropolis_hastings(m, lambda y: -m.dist(p, y) / 0.3,
                                       np.broadcast_to(p, (1500, 3)), rng, burn_in=1500,
                                       trace_length=1000)
    assert 0.15 < diag.acceptance_rate < 0.5 and diag.r_hat < 1.05 and diag.ess > 100
    assert stats.ks_2samp(m.dist(p, exact), m.dist(p, approx)).pvalue > ALPHA


@pytest.mark.parametrize("name", sorted(MANIFOLDS))
def test_hastings_correction_cancels_on_symmetric_spaces(name):
    """The walks skip the volume factor where ``symmetric_space`` says so: it must cancel there."""
    m = MANIFOLDS[name]
    needs(m, "log", "volume_density")
    if not m.symmetric_space:
        pytest.skip(f"{m!r} is not a symmetric space")
    rng = np.random.default_rng(0)
    x = m.random_ball(base_point(m), 0.4, 50, rng)
    y = m.random_ball(base_point(m), 0.4, 50, rng)
    assert np.allclose(m.volume_density(x, m.log(x, y)), m.volume_density(y, m.log(y, x)),
                       rtol=1e-9)


def test_normalisability_is_checked_with_the_bound_in_the_message():
    with pytest.raises(NotNormalisableError, match="scale < 1/\\(\\(d-1\\) sqrt\\(k\\)\\) = 0.5"):
        RiemannianLaplace(Hyperbolic(3), 0.5)
    with pytest.raises(NotNormalisableError, match="1.41421"):
        RiemannianLaplace(SPD(2), 1.5)
    with pytest.raises(NotNormalisableError, match="0.707107"):
        RiemannianLaplace(SPD(3), 0.71)
    RiemannianLaplace(Hyperbolic(3), 0.5, restrict_to=(np.array([1.0, 0, 0, 0]), 1.0))


def test_restricted_law_is_the_conditional_law():
    m = Sphere(2)
    p = np.array([0.0, 0.0, 1.0])
    for scale in (0.05, 2.0):
        mech = RiemannianLaplace(m, scale, restrict_to=(p, 0.4))
        d = m.dist(p, mech.sample(p, N, np.random.default_rng(9)))
        assert d.max() <= 0.4
        log_f, _ = log_radial(m, scale)
        grid = np.linspace(1e-9, 0.4, 100_001)
        f = np.exp(log_f(grid) - log_f(grid).max())
        cdf = integrate.cumulative_trapezoid(f, grid, initial=0.0)
        assert stats.kstest(d, lambda t: np.interp(t, grid, cdf / cdf[-1])).pvalue > ALPHA


def test_mcmc_fallback_is_reported():
    m = SPD(3)
    mech = RiemannianLaplace(m, 0.4, min_acceptance=0.9, mcmc_burn_in=300, allow_approximate=True,
                             chain_ball=(np.eye(3), 1.0))
    x = mech.sample(np.eye(3), 20, np.random.default_rng(0))
    assert x.shape == (20, 3, 3)
    assert not mech.last_info.exact and "exact samplers were not used" in mech.last_info.notes[0]
    assert mech.last_info.mcmc.n_chains == 20


def test_log_ratio_of_neighbouring_releases_never_exceeds_epsilon():
    """Worst-case neighbours in R^2 (means exactly Delta apart): the log-ratio reaches epsilon
    along the line through the means and never exceeds it."""
    from geodp.statistics import frechet_mean_sensitivity

    m, n, r, eps = Euclidean(2), 20, 1.0, 0.8
    data = np.tile([-r, 0.0], (n, 1))
    other = data.copy()
    other[-1] = [r, 0.0]
    mean, mean2 = data.mean(0), other.mean(0)
    delta = frechet_mean_sensitivity(m, r, n)
    assert np.isclose(np.linalg.norm(mean - mean2), delta)
    mech = RiemannianLaplace(m, delta / eps)
    y = mech.sample(mean, 20000, np.random.default_rng(1))
    ratio = mech.log_density(mean, y) - mech.log_density(mean2, y)
    assert ratio.max() <= eps + 1e-12
    assert ratio.max() > 0.95 * eps


def test_log_ratio_on_the_sphere_is_bounded_by_theorem_2():
    from geodp.statistics import frechet_mean, frechet_mean_sensitivity

    m, n, r, eps = Sphere(2), 15, np.pi / 8, 1.0
    c = np.array([0.0, 0.0, 1.0])
    rng = np.random.default_rng(6)
    data = m.random_ball(c, r, n, rng)
    other = data.copy()
    other[-1] = m.random_ball(c, r, 1, rng)[0]
    m1, m2 = frechet_mean(m, data).mean, frechet_mean(m, other).mean
    delta = frechet_mean_sensitivity(m, r, n)
    assert m.dist(m1, m2) <= delta
    mech = RiemannianLaplace(m, delta / eps)
    y = mech.sample(m1, 20000, rng)
    assert (mech.log_density(m1, y) - mech.log_density(m2, y)).max() <= eps


def test_euclidean_laplace_records_points_off_the_manifold():
    m = SPD(2)
    mech = EuclideanLaplace(m, 0.8, project=False)
    raw = mech.sample(np.eye(2) * 0.3, 2000, np.random.default_rng(0))
    info = mech.last_info.as_dict()
    assert 0 < info["off_manifold"] < 2000
    assert info["off_manifold"] == int(np.sum(np.linalg.eigvalsh(raw)[:, 0] <= 0))
    projected = EuclideanLaplace(Sphere(2), 0.1).sample(np.array([0, 0, 1.0]), 10, 0)
    Sphere(2).check_point(projected)


def test_euclidean_laplace_radius_is_gamma():
    m = Euclidean(4)
    x = EuclideanLaplace(m, 0.5).sample(np.zeros(4), N, np.random.default_rng(0))
    assert stats.kstest(np.linalg.norm(x, axis=1), stats.gamma(4, scale=0.5).cdf).pvalue > ALPHA


@pytest.mark.parametrize("name", ["sphere2", "spd3", "kendall6"])
def test_batched_footpoints_give_one_draw_each_from_its_own_law(name):
    m = MANIFOLDS[name]
    rng = np.random.default_rng(8)
    feet = m.random_ball(base_point(m), 0.5, N, rng)
    mech = RiemannianLaplace(m, 0.1)
    x = mech.sample(feet, rng=rng)
    assert x.shape == feet.shape
    single = mech.sample(base_point(m), N, rng)
    assert stats.ks_2samp(m.dist(feet, x), m.dist(base_point(m), single)).pvalue > ALPHA


@pytest.mark.parametrize("name", ["sphere2", "hyperbolic4_k05", "kendall3"])
def test_tiny_scales_sample_exactly_from_the_gamma_limit(name):
    """At scales down to the smallest doubles the radius law is Gamma(d, scale) to rounding; the
    sampler keeps working there (it used to give up below 1e-12)."""
    m = MANIFOLDS[name]
    p = base_point(m)
    for scale in (1e-12, 1e-100, 1e-300):
        mech = RiemannianLaplace(m, scale)
        x = mech.sample(p, 5000, np.random.default_rng(3))
        assert mech.last_info.exact and np.all(np.isfinite(x))
        if scale >= 1e-12:  # below, a move is under the rounding of a generic point's coordinates
            r = m.dist(p, x) / scale
            assert stats.kstest(r, stats.gamma(m.dim).cdf).pvalue > ALPHA


def test_restricted_sampler_skips_the_uniform_ball_pilot_when_the_law_mostly_lands_inside(monkeypatch):
    """A wide SPD ball (digits-covariance's public ball has radius 31): uniform proposals there
    accept below 1e-4 and their pilot cost 10^6 volume densities. When the unrestricted law keeps
    half its proposals, it is used without that pilot; the draws stay in the ball."""
    m = SPD(5)

    def no_uniform(*args, **kwargs):
        raise AssertionError("uniform ball proposals piloted")

    monkeypatch.setattr(m, "random_ball", no_uniform)
    mech = RiemannianLaplace(m, 0.1, restrict_to=(np.eye(5), 31.0))
    mech.check_exact()
    x = mech.sample(np.eye(5) * 1.5, 50, np.random.default_rng(1))
    assert np.all(m.dist(np.eye(5), x) <= 31.0)
    assert "unrestricted law" in mech.last_info.method
