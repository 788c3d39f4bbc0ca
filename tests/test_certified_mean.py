"""The Fréchet mean to a public tolerance (issue 31): no release refuses on the data's own
convergence, and the calibration pays for the computed mean's distance to the exact one.

The review's pairs (an absolute tolerance 1e-12 below the rounding floor of the gradient) now
release on both sides; the stated sensitivity is Delta + 2 tau / lambda; the provable fallback
(projected descent for a public number of steps) lands within tau / lambda of the exact mean on
every manifold; and an audit with an adversarial solver (each mean left tau / (2 lambda) from
the exact one, away from its neighbour's, as a solver stopped at the tolerance may) stays within
the claim, while dropping the 2 tau / lambda term is caught by the same audit.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import geodp.learn.frechet as frechet_module
import geodp.mechanisms.registry as registry_module
import geodp.statistics.certified as certified
from conftest import MANIFOLDS, base_point, needs, safe_radius
from geodp.audit import audit_mechanism, kng_mean_neighbours, projection_statistic
from geodp.learn import private_frechet_mean
from geodp.manifolds import SPD, Euclidean
from geodp.statistics import FrechetMeanResult, curvature_factor, frechet_mean, uniqueness_radius
from geodp.statistics.certified import certified_mean, descent_steps, mean_tolerance

FAR = np.array([1e5, 0.0])
Q = np.array([[1.0, 1.0], [-1.0, 1.0]]) / np.sqrt(2.0)


def spd_edge(t: float) -> np.ndarray:
    """The SPD(2) point at distance t from I along diag(e^a, e^-a) rotated by 45 degrees."""
    a = t / np.sqrt(2.0)
    return Q @ np.diag([np.exp(a), np.exp(-a)]) @ Q.T


def review_pairs():
    """The review's neighbouring pairs: Euclidean(2), ball B_1((1e5, 0)), n = 100, all records at
    the center vs one moved; SPD(2), ball B_10(I), n = 50, 22 vs 23 records at distance 9.99."""
    d = np.repeat(FAR[None], 100, 0)
    d_prime = d.copy()
    d_prime[0] = FAR + np.array([0.7, 0.3])
    spd = [np.concatenate([np.repeat(spd_edge(9.99)[None], k, 0), np.repeat(np.eye(2)[None], 50 - k, 0)])
           for k in (22, 23)]
    return [(Euclidean(2), FAR, 1.0, (d, d_prime)), (SPD(2), np.eye(2), 10.0, tuple(spd))]


MECHANISMS = [("laplace", {}), ("laplace", {"restrict": True}), ("kng", {})]


@pytest.mark.parametrize("which", [0, pytest.param(1, marks=pytest.mark.slow)], ids=["E2", "SPD2"])
@pytest.mark.parametrize("mechanism,options", MECHANISMS, ids=["laplace", "restricted", "kng"])
def test_review_pairs_both_release(which, mechanism, options):
    manifold, center, radius, pair = review_pairs()[which]
    releases = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither an error nor a warning may depend on the data
        for x in pair:
            releases.append(private_frechet_mean(manifold, x, 1.0, center, radius, rng=0,
                                                 mechanism=mechanism, **options))
    a, b = releases
    assert a.value.shape == b.value.shape == manifold.point_shape
    assert (a.exact_sampler, a.sensitivity, a.scale, a.parameters) == \
        (b.exact_sampler, b.sensitivity, b.scale, b.parameters)


def test_review_spd_pair_laplace_releases_fast():
    """The SPD pair with the plain Laplace, in the default run (the kng one is slow)."""
    manifold, center, radius, pair = review_pairs()[1]
    for x in pair:
        rel = private_frechet_mean(manifold, x, 1.0, center, radius, rng=0)
        assert rel.exact_sampler and rel.diagnostics["descent_steps"] == 0


@pytest.mark.parametrize("name", ["E2", "SPD2"])
def test_stated_sensitivity_pays_for_the_tolerance(name, monkeypatch):
    """Delta + 2 tau / lambda, published with tau; with tau inflated (a public parameter) the
    stated sensitivity and the scale grow by exactly 2 tau / lambda."""
    manifold, center, radius, (x, _) = review_pairs()[["E2", "SPD2"].index(name)]
    theorem = frechet_module.frechet_mean_sensitivity(manifold, radius, len(x))
    lam = curvature_factor(radius, manifold.curvature_bounds[1])
    rounding = manifold.gradient_rounding(center, radius)
    for factor in (certified.TOLERANCE_FACTOR, 0.5 * theorem * lam / rounding):  # 2 tau/lam = Delta
        monkeypatch.setattr(certified, "TOLERANCE_FACTOR", factor)
        tau = mean_tolerance(manifold, center, radius)
        rel = private_frechet_mean(manifold, x, 5.0, center, radius, rng=0)
        assert rel.parameters["mean_tolerance"] == tau > 0
        assert rel.sensitivity == rel.parameters["sensitivity"] == pytest.approx(theorem + 2 * tau / lam,
                                                                               rel=1e-12)
        assert rel.scale == pytest.approx(rel.sensitivity / 5.0, rel=1e-12)
    assert rel.sensitivity > 1.5 * theorem  # the large tau is visible in the calibration


def unconverged(manifold, data, *, init, **options):
    """A fast solver that gives up at once (iteration cap reached): the fallback must act."""
    return FrechetMeanResult(mean=np.asarray(init, dtype=float), iterations=0, converged=False,
                             grad_norm=np.inf, max_radius=None)


@pytest.mark.parametrize("name", sorted(MANIFOLDS))
def test_fallback_descent_lands_within_the_bound(name, monkeypatch):
    m = MANIFOLDS[name]
    needs(m, "log", "curvature_bounds", "injectivity_radius", "volume_density")
    r = min(0.4 * safe_radius(m), 0.9 * uniqueness_radius(m), 1.0)
    c = base_point(m)
    x = m.random_ball(c, r, size=20, rng=np.random.default_rng(3))
    exact = frechet_mean(m, x, init=c, tol=1e-13, max_iter=5000, on_spread="ignore").mean
    monkeypatch.setattr(certified, "frechet_mean", unconverged)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = certified_mean(m, x, c, r)
    assert fit.descent_steps == descent_steps(m, r, fit.tolerance)[0] >= 1
    assert float(m.dist(fit.mean, exact)) <= fit.distance_bound
    assert float(m.dist(fit.mean, c)) <= r * (1 + 1e-12)


@settings(max_examples=30, deadline=None)
@given(st.floats(1.0, 1e12), st.integers(1, 60), st.integers(0, 2**32 - 1))
def test_euclidean_certified_mean_far_from_the_origin(shift, n, seed):
    """Any center size: the certified mean is within tau of the exact mean (computed in exact
    rational arithmetic by Python's fractions through math.fsum), and nothing refuses."""
    rng = np.random.default_rng(seed)
    center = np.array([shift, -0.5 * shift])
    step = rng.standard_normal((n, 2))
    x = center + step * (rng.random((n, 1)) / np.linalg.norm(step, axis=1, keepdims=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = certified_mean(Euclidean(2), x, center, 1.0)
    exact = np.array([np.float64(__import__("math").fsum(x[:, j])) / n for j in range(2)])
    assert np.linalg.norm(fit.mean - exact) <= fit.distance_bound


# --- the audit with an adversarial solver --------------------------------------------------

N, EPSILON = 10, 1.0


def adversarial_solver(direction, tau):
    """A fast solver that stops at |grad F| = 0.499 tau (its tolerance is tau / 2), on the side of
    the exact mean that the data's own mean lies on along ``direction``: the neighbours' computed
    means are then tau / lambda (lambda = 1) further apart than the exact ones."""
    def solve(manifold, data, *, init, **options):
        mean = np.mean(data.points, axis=0)
        side = np.sign(np.dot(mean - init, direction)) or 1.0
        moved = mean + side * 0.499 * tau * direction
        return FrechetMeanResult(mean=moved, iterations=1, converged=True,
                                 grad_norm=np.float64(0.499 * tau), max_radius=None)
    return solve


def adversarial_audit(monkeypatch, drop_slack: bool = False, scale_factor: float = 1.0) -> float:
    """Audited epsilon lower bound of the Laplace release on Euclidean(2), ball B_1((1e5, 0)),
    n = 10, the kng_mean_neighbours pair at the ball's edge, with tau made public and large
    (2 tau = 2r/n: the slack equals Theorem 2's Delta) and the adversarial solver."""
    manifold, radius = Euclidean(2), 1.0
    monkeypatch.setattr(certified, "TOLERANCE_FACTOR", 1.0)
    rounding = manifold.gradient_rounding(FAR, radius)
    monkeypatch.setattr(certified, "TOLERANCE_FACTOR", (radius / N) / rounding)  # tau = r / n
    tau = mean_tolerance(manifold, FAR, radius)
    d, d_prime, direction = kng_mean_neighbours(manifold, FAR, radius * (1 - 1e-9), N)
    monkeypatch.setattr(certified, "frechet_mean", adversarial_solver(direction, tau))
    if drop_slack:  # the mutation: calibrate on Theorem 2's Delta alone
        monkeypatch.setattr(frechet_module, "computed_mean_slack",
                            lambda *a: (mean_tolerance(*a), 0.0))
    if scale_factor != 1.0:  # the planted-bug twin: the whole calibrated sensitivity scaled
        true, slack = frechet_module.frechet_mean_sensitivity, frechet_module.computed_mean_slack
        monkeypatch.setattr(frechet_module, "frechet_mean_sensitivity",
                            lambda *a: true(*a) * scale_factor)
        monkeypatch.setattr(frechet_module, "computed_mean_slack",
                            lambda *a: (slack(*a)[0], slack(*a)[1] * scale_factor))
    draws = []
    for x in (d, d_prime):
        rel, draw = spied_laplace(lambda x=x: private_frechet_mean(manifold, x, EPSILON, FAR, radius,
                                                                   rng=0))
        assert rel.diagnostics["descent_steps"] == 0  # the adversarial point was accepted
        draws.append(draw)
    result = audit_mechanism(draws[0], draws[1], projection_statistic(manifold, FAR, direction),
                             200_000, 0.95, rng=31)
    return result.epsilon_lower


def spied_laplace(release):
    """Run ``release()`` recording the Riemannian Laplace object and footpoint of its one draw;
    return the release and a sampler of i.i.d. copies of it (tests/test_canary_audit.py)."""
    base, seen = registry_module.RiemannianLaplace, []

    class Spy(base):
        def sample(self, footpoint, size=None, rng=None):
            seen.append((self, footpoint))
            return super().sample(footpoint, size, rng)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(registry_module, "RiemannianLaplace", Spy)
        rel = release()
    (mech, footpoint), = seen
    return rel, lambda k, rng: base.sample(mech, footpoint, k, rng)


def test_adversarial_solver_audits_within_the_claim(monkeypatch):
    lower = adversarial_audit(monkeypatch)
    print(f"\nadversarial solver: claim {EPSILON}, lower bound {lower:.4f}")
    assert lower <= EPSILON


@pytest.mark.parametrize("mutation", ["slack dropped", "scale halved"])
def test_adversarial_audit_catches_a_missing_slack_and_a_halved_scale(mutation, monkeypatch):
    """Dropping 2 tau / lambda: the means move Delta + 0.998 tau = 1.5 Delta apart, the scale
    pays for Delta (true epsilon 1.5); halving the whole sensitivity (the planted-bug twin): the
    scale pays for Delta, the same true epsilon 1.5."""
    options = {"drop_slack": True} if mutation == "slack dropped" else {"scale_factor": 0.5}
    lower = adversarial_audit(monkeypatch, **options)
    print(f"\n{mutation}: claim {EPSILON}, lower bound {lower:.4f}")
    assert lower > EPSILON


def test_chunked_mean_shows_no_progress_bar(monkeypatch):
    """On chunked data the Fréchet mean's bar would show |grad F| pass by pass (a data statistic
    on the command line's stderr): the certified mean runs with bars off, even when the caller
    switched them on."""
    da = pytest.importorskip("dask.array")
    import geodp.statistics.frechet as frechet_stats
    from geodp.manifolds import Euclidean
    from geodp.progress import _SHOW, bar, showing

    shown = []

    def recording_bar(total, desc, show=None):
        shown.append(_SHOW.get() if show is None else show)
        return bar(total, desc, show)

    monkeypatch.setattr(frechet_stats, "bar", recording_bar)
    m = Euclidean(3)
    x = np.random.default_rng(0).normal(size=(400, 3)) * 0.1
    with showing(True):
        certified.certified_mean(m, da.from_array(x, chunks=(100, 3)), np.zeros(3), 1.0)
    assert shown and not any(shown)
