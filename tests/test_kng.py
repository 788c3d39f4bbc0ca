"""The K-norm gradient mechanism: samplers against their target densities, sensitivity bounds
against adversarial neighbours, and the private releases built on them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

import geodp
from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere
from geodp.mechanisms import ApproximateSamplerRefused
from geodp.mechanisms.kng import BundleDomain, sample_bundle
from geodp.privacy import BudgetLedger
from geodp.statistics.regression import bundle_norm, regression_gradient
from geodp.statistics.sensitivity import kng_mean_sensitivity, regression_sensitivity

ALPHA = 1e-3  # fixed seeds; a correct sampler fails one of these tests with probability 1e-3


def circle(theta):
    return np.stack([np.cos(theta), np.sin(theta)], axis=-1)


def test_kng_mean_on_the_circle_is_the_truncated_laplace():
    """On an arc of S^1, |grad F(theta)| = |theta - mean| exactly, so KNG restricted to the data
    arc [-r, r] is a Laplace law truncated to it: KS against its closed-form CDF."""
    rng = np.random.default_rng(0)
    r, n, eps = 0.6, 30, 2.0
    x = circle(rng.uniform(-r, r, n))
    mean_angle = np.arctan2(*geodp.statistics.frechet_mean(Sphere(1), x).mean[::-1])
    sigma = 2 * kng_mean_sensitivity(Sphere(1), r, n) / eps
    draws = np.array([geodp.private_frechet_mean(Sphere(1), x, eps, np.array([1.0, 0.0]), r,
                                                 mechanism="kng", rng=seed).value
                      for seed in range(1500)])
    angles = np.arctan2(draws[:, 1], draws[:, 0])

    def cdf(t):
        t = np.clip(t, -r, r)
        def raw(s):
            return np.where(s < mean_angle, np.exp((s - mean_angle) / sigma),
                            2 - np.exp(-(s - mean_angle) / sigma))
        return (raw(t) - raw(-r)) / (raw(r) - raw(-r))
    assert stats.kstest(angles, cdf).pvalue > ALPHA


@pytest.mark.parametrize("m", [Sphere(2), Hyperbolic(2), SPD(2), KendallShape(4)], ids=repr)
def test_kng_mean_is_exact_and_inside_the_ball(m):
    rng = np.random.default_rng(1)
    center = m.project(np.cos(np.arange(np.prod(m.point_shape))).reshape(m.point_shape)) \
        if not isinstance(m, SPD) else np.eye(2)
    if isinstance(m, Hyperbolic):
        center = np.array([1.0, 0.0, 0.0])
    x = m.random_ball(center, 0.3, 100, rng)
    rel = geodp.private_frechet_mean(m, x, 1.0, center, 0.3, mechanism="kng", rng=2)
    assert rel.exact_sampler and m.dist(center, rel.value) <= 0.3
    assert rel.guarantee.describe() == "1-DP (replace-one)"
    assert rel.scale == pytest.approx(2 * kng_mean_sensitivity(m, 0.3, 100))


def _circle_regression(n=40, seed=3):
    rng = np.random.default_rng(seed)
    x = rng.uniform(0.0, 1.0, n)
    y = circle(0.3 + 0.8 * x + 0.2 * rng.standard_normal(n))
    return x, y


def _circle_problem():
    """The regression of ``_circle_regression`` on S^1: its domain (|v| <= 2), gradient (tau 0.5)
    and a start."""
    m = Sphere(1)
    x, y = _circle_regression()

    def gradient(p, v):
        return regression_gradient(m, p, v, x, y, 0.5)[:2]

    return BundleDomain(m, np.array([1.0, 0.0]), None, 2.0), gradient, np.stack([circle(0.7), np.zeros(2)])


def _chi_square_pvalue(counts, probs, size):
    """Chi-square p-value of histogram ``counts`` against bin probabilities (bins expecting
    more than 5 draws)."""
    keep = probs.ravel() * size > 5
    observed = counts.ravel()[keep]
    expected = probs.ravel()[keep] * size
    expected *= observed.sum() / expected.sum()
    return stats.chisquare(observed, expected).pvalue


def _grid_target(x, y, tau, v_max, sigma, bins):
    """Bin probabilities of exp(-|G(theta, v)|/sigma) on S^1 x [-V, V] by a fine midpoint rule."""
    m = Sphere(1)
    th = np.linspace(-np.pi, np.pi, 361)[:-1] + np.pi / 360
    vs = np.linspace(-v_max, v_max, 241)[:-1] + v_max / 240
    tt, vv = np.meshgrid(th, vs, indexing="ij")
    p = circle(tt.ravel())
    v = vv.ravel()[:, None] * np.stack([-p[:, 1], p[:, 0]], axis=-1)
    gp, gv, _ = regression_gradient(m, p, v, x, y, tau)
    dens = np.exp(-bundle_norm(m, p, gp, gv) / sigma).reshape(tt.shape)
    hist, _, _ = np.histogram2d(tt.ravel(), vv.ravel(), bins=bins, weights=dens.ravel(),
                                range=[[-np.pi, np.pi], [-v_max, v_max]])
    return hist / hist.sum()


def _draw_coordinates(states):
    p, v = states[:, 0], states[:, 1]
    theta = np.arctan2(p[:, 1], p[:, 0])
    return theta, v[:, 1] * p[:, 0] - v[:, 0] * p[:, 1]


@pytest.mark.parametrize("method", ["exact", pytest.param("mcmc", marks=pytest.mark.slow)])
@pytest.mark.filterwarnings("ignore::geodp.mechanisms.kng.MixingWarning")
def test_bundle_sampler_matches_the_kng_density_on_the_circle(method, monkeypatch):
    """Chi-square of 2-D histograms of (footpoint angle, shooting vector) draws against the
    numerically integrated KNG density; the MCMC path runs 3000 chains and keeps their last states
    (without the exact fallback: R-hat over their 50 kept steps reads about 1.4, the
    autocorrelation time being about 30 steps, yet the final states follow the law). The law is
    bimodal: after 1500 steps the p-values over seeds 5-7 were 1e-5-0.1 (3e-5-0.007 with the
    linearised independence proposal alone), after 3000-4000 steps 0.5-0.8."""
    import geodp.mechanisms.kng as kng

    monkeypatch.setattr(kng, "FALLBACK_ACCEPTANCE", 2.0)
    m = Sphere(1)
    x, y = _circle_regression()
    tau, v_max, sigma = 0.5, 2.0, 0.08
    bins = (8, 6)
    probs = _grid_target(x, y, tau, v_max, sigma, bins)
    domain = BundleDomain(m, np.array([1.0, 0.0]), None, v_max)

    def gradient(p, v):
        return regression_gradient(m, p, v, x, y, tau)[:2]

    rng = np.random.default_rng(5)
    start = np.stack([circle(0.7), np.zeros(2)])
    size = 3000
    states, info = sample_bundle(domain, gradient, start, sigma, rng, size=size, burn_in=3000,
                                 trace_length=50, max_steps=3050,
                                 min_acceptance=1e-3 if method == "exact" else 2.0,
                                 allow_approximate=True)
    assert info.exact == (method == "exact")
    theta, v = _draw_coordinates(states)
    counts, _, _ = np.histogram2d(theta, v, bins=bins, range=[[-np.pi, np.pi], [-v_max, v_max]])
    assert _chi_square_pvalue(counts, probs, size) > ALPHA


@pytest.mark.filterwarnings("ignore::geodp.mechanisms.kng.MixingWarning")
def test_chart_chains_match_the_footpoint_kng_density_on_the_hyperbolic_plane(monkeypatch):
    """The chains of manifolds with infinite injectivity radius run in normal coordinates of one
    chart, with the chart's volume density J in their target: chi-square of (r, angle) histograms
    of footpoint draws on H^2 (v held at 0) against exp(-|grad_p E|/sigma) sinh(r) integrated on
    a polar grid (4000 chains of 320 steps: their R-hat over 20 kept steps reads high, their
    final states follow the law). Leaving J out (a flat-chart target) fails it: p = 5e-24."""
    import geodp.mechanisms.kng as kng

    monkeypatch.setattr(kng, "FALLBACK_ACCEPTANCE", 2.0)
    m = Hyperbolic(2)
    rng = np.random.default_rng(11)
    o = np.array([1.0, 0.0, 0.0])
    y = m.random_ball(m.exp(o, np.array([0.0, 0.4, 0.0])), 0.5, 30, rng)
    x = rng.uniform(0.0, 1.0, 30)
    tau, radius, sigma = 0.6, 2.0, 1.0

    def gradient(p, v):
        return regression_gradient(m, p, v, x, y, tau)[:2]

    def polar(r, t):
        return np.stack([np.cosh(r), np.sinh(r) * np.cos(t), np.sinh(r) * np.sin(t)], axis=-1)

    bins = (5, 8)
    rr, tt = np.meshgrid(np.linspace(0, radius, 241)[1::2], np.linspace(-np.pi, np.pi, 321)[1::2],
                         indexing="ij")
    p = polar(rr.ravel(), tt.ravel())
    dens = np.exp(-np.sqrt(m.inner(p, *[gradient(p, 0 * p)[0]] * 2)) / sigma) * np.sinh(rr.ravel())
    probs, _, _ = np.histogram2d(rr.ravel(), tt.ravel(), bins=bins, weights=dens,
                                 range=[[0, radius], [-np.pi, np.pi]])
    probs /= probs.sum()

    domain = BundleDomain(m, o, radius, 1.0, "footpoint")
    size = 4000
    states, info = sample_bundle(domain, gradient, np.stack([o, 0 * o]), sigma, rng, size=size,
                                 burn_in=300, trace_length=20, max_steps=320, min_acceptance=2.0,
                                 allow_approximate=True)
    assert not info.exact and np.all(states[:, 1] == 0)
    q = states[:, 0]
    r = m.dist(o, q)
    t = np.arctan2(q[:, 2], q[:, 1])
    counts, _, _ = np.histogram2d(r, t, bins=bins, range=[[0, radius], [-np.pi, np.pi]])
    assert _chi_square_pvalue(counts, probs, size) > ALPHA


def test_chart_chains_start_at_uniform_draws_on_the_domain():
    """The chains start at draws of the uniform law on the domain (which does not depend on the
    data), mapped into the chart's coordinates, where the chains' target is finite, whatever the
    chart's centre (here a point on the ball's edge, as a fit moved onto it is)."""
    from types import SimpleNamespace

    from geodp.mechanisms.kng import _ChartChains, _inside
    from geodp.mechanisms.kng_proposal import _Chart

    m = SPD(2)
    domain = BundleDomain(m, np.eye(2), 1.0, 1.0)
    edge = np.stack([m.exp(np.eye(2), np.diag([1.0, 0.0])), np.diag([0.2, 0.1])])

    def log_target(states):
        return np.where(domain.contains(states), 0.0, -np.inf)

    chains = _ChartChains(SimpleNamespace(chart=_Chart(domain, edge)), log_target, None)
    drawn = domain.uniform(64, np.random.default_rng(0))
    states, delta = _inside(domain, chains, drawn, np.random.default_rng(1))
    assert np.all(domain.contains(states)) and np.all(np.isfinite(chains.log_target(delta)))
    assert np.allclose(chains.states(delta), states) and np.array_equal(states, drawn)


def test_independence_proposal_draws_follow_its_density():
    """The chains' Hastings factors use the proposal's log density, so it must be the density
    of its draws: KS of the K-norm radii r = |B (delta - centre)| of 4000 draws in 12 dimensions
    against the law that r^(D-1) exp(log density) implies (integrated on a grid): p = 0.91.
    Dropping the mixture's normalisers 1/s^D (a 1.5^12 = 130 error in its weights) gives
    p = 7e-239; halving the narrow half's scale in the draws, p = 0."""
    from geodp.mechanisms.kng_proposal import _knorm_mixture

    rng = np.random.default_rng(8)
    d, scale = 12, 0.3
    a = rng.standard_normal((d, d))
    b = a @ a.T + d * np.eye(d)
    centre = rng.standard_normal(d)
    draw, log_density = _knorm_mixture(centre, b, np.linalg.inv(b), scale)
    r = np.linalg.norm((draw(4000, rng) - centre) @ b, axis=1)
    grid = np.linspace(0.0, 20 * d * scale, 40001)[1:]
    ray = centre + grid[:, None] * np.linalg.solve(b, np.eye(d)[0])[None]
    log_mass = (d - 1) * np.log(grid) + log_density(ray)
    cdf = np.cumsum(np.exp(log_mass - log_mass.max()))
    cdf /= cdf[-1]
    assert stats.kstest(r, lambda t: np.interp(t, grid, cdf)).pvalue > ALPHA


def test_truncated_independence_proposal_draws_follow_its_density():
    """Truncated to two discs the law fills (the centre inside both), the proposal's draws must
    still follow the density its Hastings factors use, whose normaliser then varies with the
    direction: chi-square of 40000 draws in 8 x 8 cells of the discs' bounding box against that
    density integrated on a 1600 x 1600 grid (p = 0.75). Without the per-direction normaliser p = 0 (chi2
    3800 on 58 degrees of freedom); rays cut 5% past the discs' edge put draws outside them."""
    from geodp.mechanisms.kng_proposal import _knorm_mixture

    rng = np.random.default_rng(11)
    centre, b, scale = np.array([0.3, -0.2]), np.array([[2.0, 0.5], [0.5, 1.0]]), 0.6
    balls = [(slice(0, 2), np.array([0.5, 0.0]), 1.0), (slice(0, 1), np.array([0.0]), 0.8)]
    draw, log_density = _knorm_mixture(centre, b, np.linalg.inv(b), scale, balls)
    x = draw(40_000, rng)
    inside = (np.linalg.norm(x - [0.5, 0.0], axis=1) <= 1.0 + 1e-9) & (np.abs(x[:, 0]) <= 0.8 + 1e-9)
    assert np.all(inside)
    edges = (np.linspace(-0.5, 0.8, 9), np.linspace(-1.0, 1.0, 9))
    counts = np.histogram2d(x[:, 0], x[:, 1], bins=edges)[0].ravel()
    fine = [0.5 * (e[:-1] + e[1:]) for e in (np.linspace(-0.5, 0.8, 1601), np.linspace(-1.0, 1.0, 1601))]
    grid = np.stack(np.meshgrid(*fine, indexing="ij"), axis=-1).reshape(-1, 2)
    mass = np.exp(log_density(grid)).reshape(8, 200, 8, 200).sum(axis=(1, 3)).ravel()
    expected = mass / mass.sum() * len(x)
    keep = expected > 5
    assert keep.sum() >= 30 and counts[~keep].sum() <= 1e-3 * len(x)
    chi2 = np.sum((counts[keep] - expected[keep]) ** 2 / expected[keep])
    assert stats.chi2.sf(chi2, keep.sum() - 1) > ALPHA


def test_unmixed_chains_give_way_to_the_exact_sampler(monkeypatch):
    """Chains judged unmixed (here: every run, R-hat limit 0) are replaced by an exact draw when
    the uniform law accepts at least FALLBACK_ACCEPTANCE, and the release says why, unless
    ``exact_fallback=False``; when it accepts less, the chain's state is returned with a
    MixingWarning."""
    import geodp.mechanisms.kng as kng

    domain, gradient, start = _circle_problem()
    run = dict(size=2, burn_in=4, trace_length=8, min_acceptance=2.0, allow_approximate=True)
    monkeypatch.setattr(kng, "R_HAT_LIMIT", 0.0)
    states, info = sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(1), **run)
    assert info.exact and "did not mix" in info.notes[0] and np.all(domain.contains(states))
    with pytest.warns(kng.MixingWarning):
        _, info = sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(1), **run,
                                max_steps=12, exact_fallback=False)
    assert not info.exact
    monkeypatch.setattr(kng, "FALLBACK_ACCEPTANCE", 2.0)
    with pytest.warns(kng.MixingWarning, match="not mixed after max_steps = 50 steps"):
        _, info = sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(1), **run,
                                max_steps=50)
    assert not info.exact and (info.mcmc.burn_in, info.mcmc.trace_length) == (25, 25)
    assert [note.split(",")[0] for note in info.notes[2:]] == [
        f"run on to {k} steps" for k in (18, 27, 40, 50)]


def test_unmixed_chains_without_exact_fallback_run_on_until_they_mix(monkeypatch):
    """Chains far too short to mix (4 + 8 steps: R-hat 1.3 here) and no exact fallback run on
    by half their length, R-hat over the last half of all steps, until it is within the limit."""
    import geodp.mechanisms.kng as kng

    monkeypatch.setattr(kng, "FALLBACK_ACCEPTANCE", 2.0)
    domain, gradient, start = _circle_problem()
    run = dict(size=2, burn_in=4, trace_length=8, min_acceptance=2.0, allow_approximate=True)
    with pytest.warns(kng.MixingWarning):
        _, short = sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(2), **run,
                                 max_steps=12)
    assert short.mcmc.r_hat > kng.R_HAT_LIMIT
    with warnings.catch_warnings():
        warnings.simplefilter("error", kng.MixingWarning)
        _, info = sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(2), **run,
                                max_steps=12 * 2**8)
    assert info.mcmc.r_hat <= kng.R_HAT_LIMIT
    steps = info.mcmc.burn_in + info.mcmc.trace_length
    assert info.mcmc.trace_length == steps // 2 and steps > 12
    assert "after the first 12 steps" in info.notes[1]
    assert f"run on to {steps} steps, the first {info.mcmc.burn_in} discarded" in info.notes[-1]


def test_the_mixing_warning_does_not_depend_on_the_data(monkeypatch):
    """Unmixed chains warn with the same text whether the pilot accepts above or below the exact
    fallback's threshold (an advice chosen by the pilot's rate told which, a statistic of the
    data)."""
    import geodp.mechanisms.kng as kng

    monkeypatch.setattr(kng, "FALLBACK_ACCEPTANCE", 0.03)
    domain, gradient, start = _circle_problem()
    texts, rates = set(), []
    for scale in (0.08, 0.02):  # pilot acceptance about 0.04 and below 0.03
        with pytest.warns(kng.MixingWarning) as caught:
            _, info = sample_bundle(domain, gradient, start, scale, np.random.default_rng(2), size=2,
                                    burn_in=4, trace_length=8, min_acceptance=2.0, max_steps=12,
                                    exact_fallback=False, allow_approximate=True)
        texts |= {str(w.message) for w in caught if w.category is kng.MixingWarning}
        rates.append(float(info.notes[0].split()[-3]))
    assert rates[0] >= 0.03 > rates[1] and len(texts) == 1


def test_exact_only_and_max_steps_refuse_what_they_cannot_do():
    domain, gradient, start = _circle_problem()
    with pytest.raises(ValueError, match="accept about .* below 2"):
        sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(1), min_acceptance=2.0,
                      exact_only=True)
    with pytest.raises(ValueError, match="max_steps"):
        sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(1), max_steps=100)


@pytest.mark.filterwarnings("ignore::geodp.mechanisms.kng.MixingWarning")
def test_chains_survive_steps_far_beyond_the_footpoint_ball():
    """A scale so large that the walk's first steps would leave SPD's representable range: such
    moves leave the footpoint ball, so they are rejected before Exp instead of crashing in it
    (the paper's footpoint step at epsilon = 0.05 did, in the reproduction of Figure 7)."""
    m = SPD(2)
    rng = np.random.default_rng(3)
    x = rng.uniform(0, 1, 30)
    y = m.exp(np.eye(2), x[:, None, None] * np.diag([0.5, -0.3]))

    def gradient(p, v):
        return regression_gradient(m, p, v, x, y, 0.5)[:2]

    domain = BundleDomain(m, np.eye(2), 3.0, 11.0, "footpoint")
    start = np.stack([np.eye(2), np.diag([0.5, -0.3])])
    states, info = sample_bundle(domain, gradient, start, 50.0, rng, chains=4, size=4, burn_in=20,
                                 trace_length=10, min_acceptance=2.0, exact_fallback=False,
                                 allow_approximate=True)
    assert not info.exact and np.all(domain.contains(states))


def test_accumulate_lowers_its_rate_estimate_gradually():
    """A first batch without acceptances does not send the next batch to the floor rate: the
    first guess counts as one acceptance in 1/rate proposals."""
    from geodp.mechanisms.envelope import accumulate

    batches = []

    def propose(batch):
        batches.append(batch)
        return np.zeros((1 if len(batches) == 3 else 0, 2))

    draws, rate = accumulate(propose, 1, 1e-3, 1e-9, 10**9)
    assert len(draws) == 1 and batches == [1200, 2640, 5808] and rate == 1 / 9648


@pytest.mark.parametrize("m", [Sphere(2), Hyperbolic(2), SPD(2), KendallShape(4), Euclidean(2)],
                         ids=repr)
def test_regression_sensitivity_holds_and_is_attained_on_adversarial_neighbours(m):
    """Replace one record of a data set by the worst one found: residual tau along and across v
    in both signs, covariate at +-X; at random footpoints and shooting vectors with |v| = V the
    gradient moves by at most the joint, footpoint and shooting-vector bounds, and the search
    comes within 3% of each (they are attained on these manifolds)."""
    rng = np.random.default_rng(7)
    n, tau, big_x, v_max = 5, 0.4, 1.5, 0.8
    bound = regression_sensitivity(m, n, tau, big_x, v_max)
    worst = {"joint": 0.0, "footpoint": 0.0, "shooting_vector": 0.0}
    center = np.eye(2) if isinstance(m, SPD) else (
        np.array([1.0, 0, 0]) if isinstance(m, Hyperbolic) else
        m.project(np.cos(np.arange(np.prod(m.point_shape))).reshape(m.point_shape)))
    for _ in range(20):
        p = m.random_ball(center, 0.5, rng=rng)
        v = m.from_coords(p, rng.standard_normal(m.dim))
        v *= v_max / m.norm(p, v)
        x = rng.uniform(-big_x, big_x, n)
        y = m.random_ball(center, 0.8, n, rng)
        for xi in (big_x, -big_x):
            w = xi * v
            yhat = m.exp(p, w)
            for c in np.concatenate([np.eye(m.dim), -np.eye(m.dim), rng.standard_normal((4, m.dim))]):
                # a residual direction at yhat: the transported basis vector of T_p
                e = m.transport(p, yhat, m.from_coords(p, c)) if m.dim > 1 else m.from_coords(yhat, c)
                e = 3 * tau * e / m.norm(yhat, e)
                y1, y2 = y.copy(), y.copy()
                x[0] = xi
                y1[0], y2[0] = m.exp(yhat, -e), m.exp(yhat, e)
                g0 = regression_gradient(m, p, v, x, y1, tau)
                g1 = regression_gradient(m, p, v, x, y2, tau)
                dp = m.norm(p, g1[0] - g0[0])
                dv = m.norm(p, g1[1] - g0[1])
                worst["footpoint"] = max(worst["footpoint"], dp)
                worst["shooting_vector"] = max(worst["shooting_vector"], dv)
                worst["joint"] = max(worst["joint"], np.hypot(dp, dv))
    for key in worst:
        assert worst[key] <= bound[key] * (1 + 1e-9), key
        assert worst[key] >= 0.97 * bound[key], (key, worst[key] / bound[key])


def _sphere_data(n=300, seed=0):
    m = Sphere(2)
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, n)
    y = m.project(m.exp(np.array([0, 0, 1.0]), x[:, None] * np.array([0.6, 0.2, 0]))
                  + 0.05 * rng.standard_normal((n, 3)))
    return m, x, y


@pytest.mark.parametrize("release", ["joint", "sequential"])
@pytest.mark.parametrize("m", [SPD(2), Hyperbolic(2)], ids=repr)
def test_private_regression_on_hadamard_manifolds_runs_its_chains_in_one_chart(m, release):
    """Releases on manifolds with infinite injectivity radius, whose chains live in normal
    coordinates of a chart (1000 records: the uniform law accepts too little for exact draws):
    the draw lies in the public domain and the release carries the chains' diagnostics, which
    say they mixed."""
    rng = np.random.default_rng(4)
    center = np.eye(2) if isinstance(m, SPD) else np.array([1.0, 0.0, 0.0])
    x = rng.uniform(0.0, 1.0, 1000)
    v0 = m.from_coords(center, np.array([0.4, -0.3, 0.2][:m.dim]))
    y = m.exp(center, x.reshape((-1,) + (1,) * len(m.point_shape)) * v0)
    rel = geodp.private_geodesic_regression(m, x, y, 1.0, tau=0.5, x_range=(0, 1), v_max=1.0,
                                            center=center, radius=1.0, rng=5, release=release,
                                            allow_approximate=True)
    p, v = rel.value["footpoint"], rel.value["shooting_vector"]
    assert m.dist(center, p) <= 1.0 + 1e-12 and m.norm(p, v) <= 1.0 + 1e-12
    samplers = [rel.diagnostics[k] for k in ("sampler", "sampler_footpoint", "sampler_shooting_vector")
                if k in rel.diagnostics]
    assert not rel.exact_sampler and any("mcmc" in info for info in samplers)
    assert all(info["mcmc"]["r_hat"] <= 1.1 for info in samplers if "mcmc" in info)


@pytest.mark.parametrize("release", ["joint", "sequential"])
def test_private_regression_release_and_ledger(tmp_path, release):
    m, x, y = _sphere_data()
    ledger = BudgetLedger(tmp_path / "l.db", 5.0)
    rel = geodp.private_geodesic_regression(m, x, y, 1.0, tau=0.3, x_range=(0, 1), v_max=1.5,
                                            rng=0, release=release, ledger=ledger, burn_in=400,
                                            allow_approximate=True)
    p, v = rel.value["footpoint"], rel.value["shooting_vector"]
    m.check_point(p)
    m.check_tangent(p, v)
    assert m.norm(p, v) <= 1.5
    assert rel.guarantee.describe() == "1-DP (replace-one)"
    assert len(ledger.history()) == 1 and ledger.spent()[0] == pytest.approx(1.0)
    if release == "joint":
        assert rel.sensitivity == pytest.approx(regression_sensitivity(m, 300, 0.3, 1.0, 1.5)["joint"])
        # no exact sampler here (without allow_approximate the release refuses). Chains started
        # at the fit stayed near it (footpoint within 0.9 of the truth over 40 releases); started
        # at uniform draws on the sphere, as they must be, they settle near different critical
        # points of the clipped energy, where the KNG density is high too, and the release says
        # that they have not mixed (R-hat 1.5-9 over seeds 0-5, footpoints 0.95-2.1 away)
        assert not rel.exact_sampler
    else:
        assert rel.parameters["epsilon_footpoint"] + rel.parameters["epsilon_shooting_vector"] == 1.0
    if not rel.exact_sampler:
        info = rel.diagnostics.get("sampler") or rel.diagnostics["sampler_footpoint"]
        assert {"r_hat", "ess"} <= set(info["mcmc"])
    assert rel.as_dict()["value"]["footpoint"] == p.tolist()


def test_private_regression_refuses_bad_inputs_without_charging(tmp_path):
    m, x, y = _sphere_data(50)
    ledger = BudgetLedger(tmp_path / "l.db", 5.0)
    call = dict(epsilon=1.0, tau=0.3, x_range=(0, 1), v_max=1.0, ledger=ledger)
    with pytest.raises(ValueError, match="outside x_range"):
        geodp.private_geodesic_regression(m, x + 0.5, y, **call)
    with pytest.raises(ValueError, match="tau"):
        geodp.private_geodesic_regression(m, x, y, **{**call, "tau": 0.0})
    with pytest.raises(ValueError, match="give center and radius"):
        geodp.private_geodesic_regression(Hyperbolic(2), x, Hyperbolic(2).project(y), **call)
    rotations = geodp.manifolds.SpecialOrthogonal(3)  # compact, but flat directions: no uniform law
    with pytest.raises(ValueError, match="compact space of positive curvature"):
        geodp.private_geodesic_regression(rotations, x, rotations.project(
            np.broadcast_to(np.eye(3), (len(x), 3, 3))), **call)
    with pytest.raises(ValueError, match="not on"):
        geodp.private_geodesic_regression(m, x, 2 * y, **call)
    with pytest.raises(TypeError, match="takes a Manifold first"):
        geodp.private_geodesic_regression(y, m, x, **call)
    with pytest.raises(ValueError, match="max_steps"):
        geodp.private_geodesic_regression(m, x, y, **call, max_steps=100)
    with pytest.raises(ValueError, match="outside x_range"):
        geodp.private_geodesic_regression(m, x + 0.5, y, **call)
    with pytest.raises(ApproximateSamplerRefused, match="n \\* epsilon"):
        geodp.private_geodesic_regression(m, x, y, **call)   # n epsilon = 50 > 46.05: public
    assert ledger.history() == []
    rel = geodp.private_geodesic_regression(m, x + 0.5, y, **{**call, "clip_data": True,
                                                              "epsilon": 0.9}, rng=1)
    assert rel.diagnostics["covariates_clipped"] == int(np.sum(x + 0.5 > 1)) and rel.exact_sampler


def test_running_on_keeps_the_last_half_of_all_steps(monkeypatch):
    """After each run-on the diagnostics cover exactly the last half of all steps, across the
    first run's kept trace and the later segments (chains here stand in for by traces labelled
    with the step number, never mixed): 12 steps, then 18, 27, 40 and 50 (the cap)."""
    import geodp.mechanisms.kng as kng
    from geodp.mechanisms.mcmc import diagnose

    monkeypatch.setattr(kng, "FALLBACK_ACCEPTANCE", 2.0)
    monkeypatch.setattr(kng, "R_HAT_LIMIT", 0.0)
    done = [0]

    def labelled(state, log_target, propose, rng, burn_in, trace_length, step, *args, **kwargs):
        first = done[0] + burn_in
        done[0] = first + trace_length
        trace = np.arange(first, done[0], dtype=float)[:, None] + np.arange(len(state))[None]
        return state, diagnose(trace, burn_in, 0.5, step)

    monkeypatch.setattr(kng, "run_chains", labelled)
    domain, gradient, start = _circle_problem()
    with pytest.warns(kng.MixingWarning, match="not mixed after max_steps = 50 steps"):
        _, info = sample_bundle(domain, gradient, start, 0.08, np.random.default_rng(1), size=2,
                                burn_in=4, trace_length=8, min_acceptance=2.0, max_steps=50,
                                allow_approximate=True)
    assert done[0] == 50 and info.mcmc.burn_in == 25
    assert np.array_equal(info.mcmc.trace[:, 0], np.arange(25, 50))


def test_convex_sampler_evaluates_gradients_lazily_with_the_eager_draws():
    """sample_convex evaluates gradient norms in chunks, in order, until the wanted draws are
    accepted: the draws are those of evaluating the whole batch (same proposals and uniforms)."""
    from geodp.mechanisms.envelope import accumulate
    from geodp.mechanisms.kng import convex_proposal, sample_convex

    m = SPD(3)
    rng = np.random.default_rng(3)
    center = np.eye(3)
    data = m.random_ball(center, 1.0, 200, rng)
    lam, radius, scale = 0.5, 2.0, 1.0
    minimiser = geodp.statistics.frechet_mean(m, data).mean
    rows = []

    def grad_norm(p):
        rows.append(len(p))
        return m.norm(p, m.mean_log_and_value(p, data, np.full(len(data), 1 / len(data)))[0])

    for size in (None, 30):
        rows.clear()
        lazy, info = sample_convex(m, grad_norm, minimiser, lam, center, radius, scale,
                                   np.random.default_rng(7), size)
        evaluated = sum(rows)
        proposal = convex_proposal(m, lam, center, radius, scale)
        eager_rng = np.random.default_rng(7)
        slack = float(grad_norm(minimiser[None])[0])

        def eager(batch, proposal=proposal, eager_rng=eager_rng, slack=slack):
            x = proposal.sample(minimiser, batch, eager_rng)
            gap = grad_norm(x) - lam * m.dist(minimiser, x) + slack
            return x[np.log(eager_rng.random(batch)) <= -np.maximum(gap, 0.0) / scale]

        wanted = 1 if size is None else size
        rows.clear()
        draws, _ = accumulate(eager, wanted, 0.1, 1e-6, 100_000)
        np.testing.assert_array_equal(lazy, draws[0] if size is None else draws)
        assert info.exact and 0 < info.acceptance_rate <= 1
        assert evaluated <= sum(rows) + 1
        if size is None:  # one draw: the first chunks only, not the whole 256-proposal batch
            assert evaluated < sum(rows) - 100, (evaluated, sum(rows), info.acceptance_rate)


def test_regression_publishes_exactness_only_by_the_public_plan():
    """Beyond the public plan (n epsilon > 46.05) whether the regression's chains run depends on
    the data (the uniform pilot's acceptance), so with allow_approximate the published flag is
    False whatever ran; diagnostics say what did. Within the plan the
    draw is exact for every data set, and the flag says so with or without allow_approximate."""
    m = Sphere(2)
    x = np.random.default_rng(0).uniform(0, 1, 100)
    y = m.exp(np.array([0., 0, 1]), x[:, None] * np.array([0.5, 0, 0]))
    run = dict(tau=0.5, x_range=(0, 1), v_max=1.0, rng=0)
    allowed = geodp.private_geodesic_regression(m, x, y, 1.0, allow_approximate=True, **run)
    assert "exact" in allowed.diagnostics["sampler"] and not allowed.exact_sampler
    for option in (False, True):
        assert geodp.private_geodesic_regression(m, x, y, 0.4, allow_approximate=option,
                                                 **run).exact_sampler


def test_regression_refuses_a_center_without_radius_on_a_compact_space():
    """On a compact space without a radius the footpoint ranges over the whole space: a center
    given alone would have no effect, so it is refused by name."""
    m = Sphere(2)
    x = np.random.default_rng(0).uniform(0, 1, 20)
    y = m.exp(np.array([0., 0, 1]), x[:, None] * np.array([0.5, 0, 0]))
    with pytest.raises(ValueError, match="center.*without.*radius"):
        geodp.private_geodesic_regression(m, x, y, 1.0, tau=0.5, x_range=(0, 1), v_max=1.0,
                                          center=np.array([0., 0, 1]), rng=0)
