"""A public condition cap K on affine-invariant SPD records (issue 31): the certified mean's
tolerance and the unrestricted Laplace's representability bound become worst cases over the
public ball's points of condition <= K.

Each bound is checked against what it bounds (rounding errors measured in 60-digit arithmetic
on matrices of condition K whose eigenvectors oppose the footpoint's; draws that LAPACK cannot
factor, counted around a footpoint of condition K), with a planted-bug twin (the bound ignoring
K) that the same measurement catches. The release's refusals are decided from public parameters
and never quote a statistic of the records.
"""

from __future__ import annotations

import re
import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import geodp.learn.frechet as frechet_module
import geodp.statistics.certified as certified
from geodp.learn import RecordsOutsideBound, private_frechet_mean
from geodp.learn.release import ToleranceDominatesWarning
from geodp.manifolds import SPD, Euclidean
from geodp.manifolds._condition import window_start
from geodp.mechanisms import RiemannianLaplace
from geodp.mechanisms.spd_laplace import (MAX_UNREPRESENTABLE, SPDEigenLaw, UnrepresentableScaleError,
                                          haar_orthogonal, representable,
                                          representable_log_condition, spd_critical_scale,
                                          spread_tail_bound, unrepresentable_bound)
from geodp.parameters import ParameterError
from geodp.privacy import MemoryLedger
from geodp.statistics import frechet_mean
from geodp.statistics.certified import certified_mean, mean_tolerance

ROT = np.array([[1.0, 1.0], [-1.0, 1.0]]) / np.sqrt(2.0)


def rotation(n: int, rng) -> np.ndarray:
    return haar_orthogonal(n, 1, rng)[0]


def spd(frame: np.ndarray, logs) -> np.ndarray:
    return (frame * np.exp(np.asarray(logs, dtype=float))) @ frame.T


# --- the projection onto {cond <= K} -------------------------------------------------------

@pytest.mark.parametrize("n", [2, 3, 5])
def test_cap_is_the_closest_point_and_moves_nothing_farther(n):
    """cap_condition(x) has condition <= K, leaves S_K alone, is at least as close to x as 300
    other points of S_K (random and x's own eigenvalues clipped about other windows), and is no
    farther than x from any of them (a metric projection onto a convex set)."""
    m, k, rng = SPD(n), 50.0, np.random.default_rng(n)
    frames = haar_orthogonal(n, 40, rng)
    logs = rng.normal(0.0, 3.0, (40, n))
    x = (frames * np.exp(logs)[:, None, :]) @ np.swapaxes(frames, 1, 2)
    capped = m.cap_condition(x, k)
    assert np.all(m.condition_numbers(capped) <= k)
    inside = m.condition_numbers(x) <= k
    assert np.array_equal(capped[inside], x[inside])
    others = (haar_orthogonal(n, 300, rng) * np.exp(rng.uniform(0, np.log(k), (300, n)))[:, None, :])
    others = others @ np.swapaxes(haar_orthogonal(n, 300, rng), 1, 2)
    others = 0.5 * (others @ np.swapaxes(others, 1, 2))
    others = m.cap_condition(others, k)
    for i in np.flatnonzero(~inside)[:10]:
        shifts = np.linspace(logs[i].min(), logs[i].max() - np.log(k), 50)
        windows = np.clip(logs[i], shifts[:, None], shifts[:, None] + np.log(k) * (1 - 1e-9))
        clipped = (frames[i] * np.exp(windows)[:, None, :]) @ frames[i].T
        rivals = np.concatenate([others, clipped])
        own = float(m.dist(x[i], capped[i]))
        assert own <= float(np.min(m.dist(x[i], rivals))) + 1e-9
        assert np.all(m.dist(capped[i], others) <= m.dist(x[i], others) + 1e-9)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-40, 40), min_size=2, max_size=8), st.floats(0.01, 30))
def test_window_is_the_best_clip(logs, width):
    """The clipped row [a, a + width] is the closest of all clips (a scan over a), and its
    spread is the width: the Euclidean projection onto {max l - min l <= width}."""
    logs = np.sort(np.array(logs))
    if logs[-1] - logs[0] <= width:
        return
    a = float(window_start(logs[None], width)[0])

    def cost(start):
        return np.sum((logs - np.clip(logs, start, start + width)) ** 2, axis=-1)

    scan = np.linspace(logs[0], logs[-1] - width, 4001)
    assert cost(a) <= np.min(cost(scan[:, None])) + 1e-9 * (1 + cost(a))
    assert logs[0] <= a <= logs[-1] - width + 1e-12


def test_window_balances_what_is_cut_and_added():
    logs = np.sort(np.random.default_rng(0).normal(0, 5, (200, 4)), axis=1)
    width = 3.0
    a = window_start(logs, width)
    cut = np.maximum(logs - a[:, None] - width, 0).sum(1)
    added = np.maximum(a[:, None] - logs, 0).sum(1)
    wide = logs[:, -1] - logs[:, 0] > width
    assert np.allclose(cut[wide], added[wide], atol=1e-10)


# --- the gradient's rounding: measured in 60 digits against the bound -----------------------

def _mp(a: np.ndarray) -> mp.matrix:
    return mp.matrix(a.tolist())


def measured_rounding(m, p: np.ndarray, x: np.ndarray) -> float:
    """``|P^-1/2 (g - g*) P^-1/2|_F`` for the computed gradient g = sum_i Log_P(X_i) / k (with
    equal weights) and the exact one g*, from 60-digit eigendecompositions."""
    n = p.shape[0]
    w = np.full(len(x), 1.0 / len(x))
    g = m.mean_log_and_value(p, x, w)[0]
    with mp.workdps(60):
        e, q = mp.eigsy(_mp(p))
        half_inv = q * mp.diag([1 / mp.sqrt(e[i]) for i in range(n)]) * q.T
        exact = mp.zeros(n, n)
        for xi in x:
            ez, qz = mp.eigsy(half_inv * _mp(xi) * half_inv)
            exact += mp.mpf(1) / len(x) * (qz * mp.diag([mp.log(ez[i]) for i in range(n)]) * qz.T)
        return float(mp.mnorm(half_inv * _mp(g) * half_inv - exact, "f"))


def adversarial_configuration(n: int, k: float, rng) -> tuple[np.ndarray, np.ndarray]:
    """P of condition K; records of condition K whose eigenvectors oppose P's (the whitened
    records then have condition K^2), one in a random frame, one nearly aligned."""
    frame, lk = rotation(n, rng), np.log(k)
    logs = np.linspace(lk / 2, -lk / 2, n)
    x = np.stack([spd(frame, -logs), spd(rotation(n, rng), logs), spd(frame, 0.9 * logs[::-1])])
    return spd(frame, logs), x


def rounding_cases(sizes, conditions, trials, seed=0):
    rng = np.random.default_rng(seed)
    for n in sizes:
        m = SPD(n)
        for k in conditions:
            for _ in range(trials):
                p, x = adversarial_configuration(n, k, rng)
                radius = float(np.max(m.dist(np.eye(n), np.concatenate([p[None], x]))))
                yield m, k, p, x, radius


def check_rounding_bound(sizes, conditions, trials):
    """Every measured error is below the capped bound; the uncapped estimate (the planted bug:
    a bound that ignores K) is below some of them."""
    caught = 0
    for m, k, p, x, radius in rounding_cases(sizes, conditions, trials):
        err = measured_rounding(m, p, x)
        bound = m.capped_gradient_rounding(np.eye(m.n), radius, k)
        assert err <= bound, (m, k, err, bound)
        caught += err > m.gradient_rounding(np.eye(m.n), radius)
    assert caught > 0


def test_capped_rounding_bounds_errors_measured_in_high_precision():
    check_rounding_bound((3, 5), (1e3, 1e6), 2)


@pytest.mark.slow
def test_capped_rounding_bounds_errors_measured_in_high_precision_wide():
    check_rounding_bound((2, 3, 5, 8), (1e2, 1e4, 1e6, 1e7), 4)


def test_capped_rounding_grows_with_k_and_is_bounded_by_the_ball():
    """eps n^2 (4 kappa + 2 r K): kappa = K^2 for a wide ball, e^(2 sqrt 2 r) for a small one."""
    m, eps = SPD(3), np.finfo(float).eps
    assert m.capped_gradient_rounding(np.eye(3), 30.0, 1e4) == pytest.approx(
        eps * 9 * (4e8 + 60 * 1e4))
    small = m.capped_gradient_rounding(np.eye(3), 1.0, 1e4)
    assert small == pytest.approx(eps * 9 * (4 * np.exp(2 * np.sqrt(2)) + 2e4))


# --- the certified mean under the cap ---------------------------------------------------------

def edge_records(n_records: int, k: float, radius: float, flip: int = 0) -> np.ndarray:
    """SPD(2) records of condition K (log-eigenvalues +-log(K)/2 in the 45-degree frame), at
    distance log(K)/sqrt 2 <= radius from I; the last ``flip`` with the opposite orientation."""
    a = np.log(k) / 2
    assert np.sqrt(2) * a <= radius
    out = np.repeat(spd(ROT, [a, -a])[None], n_records, 0)
    if flip:
        out[-flip:] = spd(ROT, [-a, a])
    return out


def unconverged(manifold, data, *, init, **options):
    from geodp.statistics import FrechetMeanResult
    return FrechetMeanResult(mean=np.asarray(init, dtype=float), iterations=0, converged=False,
                             grad_norm=np.inf, max_radius=None)


@pytest.mark.parametrize("fallback", [False, True], ids=["fast", "descent"])
def test_certified_mean_stays_under_the_cap_and_within_its_bound(fallback, monkeypatch):
    """Records at condition K on the ball's edge (the worst for the cap): the certified mean,
    from the fast solver or the public descent, has condition <= K and lies within tau / lambda
    of the exact mean (a 1e-13 Karcher solve)."""
    m, k, radius = SPD(2), 1e4, 7.0
    x = edge_records(12, k, radius, flip=5)
    exact = frechet_mean(m, x, init=np.eye(2), tol=1e-13, max_iter=5000, on_spread="ignore").mean
    if fallback:
        monkeypatch.setattr(certified, "frechet_mean", unconverged)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fit = certified_mean(m, x, np.eye(2), radius, max_condition=k)
    assert fit.tolerance == mean_tolerance(m, np.eye(2), radius, k)
    assert fit.tolerance == certified.TOLERANCE_FACTOR * m.capped_gradient_rounding(np.eye(2), radius, k)
    assert (fit.descent_steps >= 1) == fallback
    assert float(m.condition_numbers(fit.mean)) <= k
    assert float(m.dist(fit.mean, exact)) <= fit.distance_bound


def test_a_solver_point_above_the_cap_is_projected_back(monkeypatch):
    """A fast solver that stops at a point of condition 4K inside the ball (as rounding near the
    cap may): the certificate judges, and returns, its projection onto {cond <= K}, where the
    capped rounding bound holds."""
    from geodp.statistics import FrechetMeanResult
    m, k, radius = SPD(2), 1e4, 8.0
    wide = spd(ROT, [np.log(4 * k) / 2, -np.log(4 * k) / 2])  # 7.5 from I: inside the ball

    def stops_above(manifold, data, *, init, **options):
        return FrechetMeanResult(mean=wide, iterations=1, converged=True, grad_norm=np.float64(0.0),
                                 max_radius=None)

    monkeypatch.setattr(certified, "frechet_mean", stops_above)
    fit = certified_mean(m, edge_records(12, k, radius), np.eye(2), radius, max_condition=k)
    assert float(m.condition_numbers(fit.mean)) <= k * (1 + 1e-12)   # onto S_K, up to rounding
    assert float(m.dist(fit.mean, edge_records(1, k, radius)[0])) <= fit.distance_bound


# --- the release -------------------------------------------------------------------------------

K, RADIUS, EPS = 1e4, 7.0, 5.0


def test_worst_pair_for_the_cap_releases_alike_and_publishes_k():
    """Neighbours at condition K on the ball's edge, one record flipped to the opposite
    orientation: both release, with equal public parameters (K, tau, sensitivity, scale), and
    the stated sensitivity pays 2 tau / lambda for the capped tolerance."""
    d, d_prime = edge_records(20, K, RADIUS, flip=1), edge_records(20, K, RADIUS, flip=2)
    rels = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for x in (d, d_prime):
            rels.append(private_frechet_mean(SPD(2), x, EPS, np.eye(2), RADIUS, rng=0,
                                             max_condition=K))
    a, b = rels
    assert a.parameters == b.parameters and (a.scale, a.exact_sampler) == (b.scale, b.exact_sampler)
    tau = mean_tolerance(SPD(2), np.eye(2), RADIUS, K)
    assert a.parameters["max_condition"] == K and a.parameters["mean_tolerance"] == tau
    assert a.parameters["numerical_bounds"].startswith("worst case")
    theorem = frechet_module.frechet_mean_sensitivity(SPD(2), RADIUS, 20)
    assert a.sensitivity == pytest.approx(theorem + 2 * tau, rel=1e-12)


def test_without_a_cap_the_release_says_its_bounds_are_estimates():
    rel = private_frechet_mean(SPD(2), edge_records(20, K, RADIUS), EPS, np.eye(2), RADIUS, rng=0)
    assert rel.parameters["max_condition"] is None
    assert rel.parameters["numerical_bounds"] == "estimates"
    euclid = private_frechet_mean(Euclidean(2), np.zeros((5, 2)), 1.0, np.zeros(2), 1.0, rng=0)
    assert "max_condition" not in euclid.parameters


def test_a_record_above_the_cap_is_refused_without_quoting_it():
    x = edge_records(20, K, RADIUS)
    x[3] = spd(ROT, [2.5, -2.5])  # condition e^5 = 148 > 100
    with pytest.raises(RecordsOutsideBound) as info:
        private_frechet_mean(SPD(2), x, 1.0, np.eye(2), RADIUS, rng=0, max_condition=100.0)
    message = str(info.value)
    assert "max_condition" in message and "clip_data=True" in message
    assert not re.search(r"148|1\.48|\b1\b record|e\+0?2", message)
    assert info.value.count == 20  # for the curator, not in the message


def test_clip_data_caps_the_records_and_counts_them():
    x = edge_records(20, K, RADIUS)
    rel = private_frechet_mean(SPD(2), x, EPS, np.eye(2), RADIUS, rng=0, max_condition=100.0,
                               clip_data=True)
    assert rel.diagnostics["clipped"]["records_capped"] == 20
    assert rel.parameters["max_condition"] == 100.0


@pytest.mark.parametrize("bad,pattern", [(0.5, ">= 1"), (float("nan"), ">= 1"), ("big", ">= 1"),
                                         (2.0, "below the condition number 10 of the public center"),
                                         (1e15, "leaves no margin below the cap")])
def test_bad_caps_are_refused_naming_max_condition(bad, pattern):
    center = np.diag([10.0, 1.0])
    with pytest.raises(ParameterError, match=pattern) as info:
        private_frechet_mean(SPD(2), np.repeat(center[None], 5, 0), 1.0, center, 3.0, rng=0,
                             max_condition=bad)
    assert "max_condition" in str(info.value)


def test_a_cap_is_refused_where_it_means_nothing():
    with pytest.raises(ParameterError, match="max_condition.*affine-invariant SPD"):
        private_frechet_mean(Euclidean(2), np.zeros((5, 2)), 1.0, np.zeros(2), 1.0, rng=0,
                             max_condition=10.0)
    with pytest.raises(ParameterError, match="max_condition"):
        private_frechet_mean(SPD(2), np.repeat(np.eye(2)[None], 5, 0), 1.0, np.eye(2), 1.0,
                             rng=0, max_condition=10.0, mechanism="dp-rgd", delta=1e-6)


# --- representability of the unrestricted Laplace's draws -------------------------------------

@pytest.mark.parametrize("n", [2, 3, 5, 8, 16, 28])
def test_draws_of_condition_e_to_the_t_n_plus_3_are_representable(n):
    """The premise of the bound: Y = B B^T with log cond(Y) = T_n + 3 passes LAPACK's Cholesky,
    for draws aligned with the footpoint's eigenvectors and for Haar frames."""
    rng, t = np.random.default_rng(n), representable_log_condition(n) + 3.0
    for log_k in (0.0, 0.5 * t):
        frame = rotation(n, rng)
        chol = np.linalg.cholesky(spd(frame, np.linspace(log_k / 2, -log_k / 2, n)))
        spread = np.linspace((t - log_k) / 2, -(t - log_k) / 2, n)
        for u in (haar_orthogonal(n, 200, rng), np.broadcast_to(frame, (200, n, n))):
            b = chol @ u * np.exp(0.5 * spread)
            assert np.all(representable(b @ np.swapaxes(b, -1, -2)))


@pytest.mark.parametrize("n,scale", [(3, 0.5), (3, 0.6), (5, 0.25), (5, 0.28)])
def test_spread_tail_bound_is_above_the_sampled_tail(n, scale):
    """P(max r - min r > x) <= Q(n(n+1)/2, (1/s - 1/s_crit) x / sqrt 2), against 20 000 exact
    draws at four levels: observing as many exceedances must stay plausible (binomial
    p-value > 1e-6) under the bound."""
    r, _, _ = SPDEigenLaw(n, scale).sample(20000, np.random.default_rng(n))
    spread = r.max(axis=1) - r.min(axis=1)
    for x in np.quantile(spread, [0.5, 0.9, 0.99, 0.999]):
        k = int(np.sum(spread > x))
        bound = spread_tail_bound(n, scale, x)
        assert stats.binom.sf(k - 1, len(spread), bound) > 1e-6, (x, k, bound)


def test_spread_tail_bound_rate_uses_the_largest_sinh_exponent():
    """b(u) = 1/2 sum |u_i - u_j| <= 1/s_crit over unit u, attained (the bound's rate)."""
    for n in (3, 5, 8):
        u = np.random.default_rng(n).standard_normal((20000, n))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        b = 0.5 * np.abs(u[:, :, None] - u[:, None, :]).sum((1, 2)) / 2
        assert b.max() <= 1 / spd_critical_scale(n) + 1e-12
        best = np.arange(n, dtype=float) - (n - 1) / 2
        best /= np.linalg.norm(best)
        assert 0.25 * np.abs(best[:, None] - best[None]).sum() == pytest.approx(
            1 / spd_critical_scale(n))


def test_unrepresentable_draws_around_a_footpoint_of_condition_k():
    """SPD(2) around a footpoint of condition K = e^28 at scale 0.7: LAPACK fails on a measurable
    share of the draws, below the capped bound and above the bound that ignores K (the
    planted-bug twin: the check around well-conditioned footpoints, K = 1). (On SPD(3) the
    failures are too rare, below the loose K = 1 bound, for a twin to be caught this way.)"""
    n, scale, k, rng = 2, 0.7, np.exp(28.0), np.random.default_rng(7)
    foot = spd(rotation(n, rng), np.linspace(14.0, -14.0, n))
    r, _, _ = SPDEigenLaw(n, scale).sample(20000, rng)
    b = np.linalg.cholesky(foot) @ haar_orthogonal(n, 20000, rng) * np.exp(0.5 * r)[:, None, :]
    failures = int(np.sum(~representable(b @ np.swapaxes(b, -1, -2))))
    low, high = stats.binomtest(failures, 20000).proportion_ci(0.999)
    assert low <= unrepresentable_bound(n, scale, k)
    assert low > unrepresentable_bound(n, scale)


def test_a_scale_unrepresentable_under_the_cap_is_refused_before_the_ledger_reserves():
    """SPD(3) at scale 0.3: around well-conditioned footpoints fine (no check for n > 2 without
    a cap), but not around footpoints of condition 1e8; the refusal names the scale, the cap and
    the bound, from public parameters, and the ledger keeps its budget."""
    RiemannianLaplace(SPD(3), 0.3)
    with pytest.raises(UnrepresentableScaleError, match=r"SPD\(3\) at scale 0.3 .*max_condition = "
                                                        r"1e\+08.*probability up to"):
        RiemannianLaplace(SPD(3), 0.3, max_condition=1e8)
    radius, n = 10.0, 10
    x = np.repeat(np.eye(3)[None], n, 0)
    sensitivity = (frechet_module.frechet_mean_sensitivity(SPD(3), radius, n)
                   + frechet_module.computed_mean_slack(SPD(3), np.eye(3), radius, 1e8)[1])
    ledger = MemoryLedger()
    with pytest.raises(UnrepresentableScaleError, match="max_condition"), pytest.warns(
            ToleranceDominatesWarning):
        private_frechet_mean(SPD(3), x, sensitivity / 0.3, np.eye(3), radius, rng=0,
                             max_condition=1e8, ledger=ledger)
    assert ledger.history() == []
    assert unrepresentable_bound(3, 0.3, 1e8) > MAX_UNREPRESENTABLE


def test_refusal_depends_on_the_cap_not_on_the_footpoint():
    """The neighbouring pair whose means differ most in condition (all records at K vs one
    flipped): with the cap, the refusal is the same for both; the planted bug (the check run
    with the footpoint's own condition) refuses one and releases the other."""
    n, radius, k = 2, 14.0, np.exp(19.0)
    d, d_prime = edge_records(12, k, radius), edge_records(12, k, radius, flip=6)
    scale = 0.45
    outcomes, buggy = [], []
    for x in (d, d_prime):
        mean = frechet_mean(SPD(2), x, init=np.eye(2), tol=1e-8, on_spread="ignore").mean
        own = float(SPD(2).condition_numbers(mean))
        for cap, out in ((k, outcomes), (own, buggy)):
            try:
                RiemannianLaplace(SPD(n), scale, max_condition=cap)
                out.append("released")
            except UnrepresentableScaleError:
                out.append("refused")
    assert outcomes[0] == outcomes[1]
    assert buggy[0] != buggy[1]


# --- data sets and the command line -----------------------------------------------------------

def test_shipped_spd_data_sets_publish_caps_from_their_eigenvalue_ranges():
    """The caps follow from the public eigenvalue ranges (not from the records), and every
    record obeys them."""
    from geodp.datasets import load
    expected = {"digits-covariance": (5 * 64 + 1e-6) / 1e-6, "connectomes": 29.0,
                "emg-covariance": 8 * 127.5**2 + 1.0}
    for name, k in expected.items():
        ds = load(name)
        assert ds.max_condition == pytest.approx(k, rel=1e-15)
        assert np.all(ds.manifold.condition_numbers(ds.points) <= ds.max_condition)
    assert load("iris").max_condition is None


def run_cli(argv, capsys):
    import json

    from geodp.cli import main
    code = main(argv)
    out = capsys.readouterr()
    return code, (json.loads(out.out) if code == 0 else out.err)


def test_cli_passes_max_condition_and_public_reads_the_data_set(capsys):
    code, out = run_cli(["release", "mean", "connectomes", "--epsilon", "1", "--seed", "0",
                         "--mechanism", "wrapped-laplace", "--max-condition", "public"], capsys)
    assert code == 0 and out["parameters"]["max_condition"] == 29.0
    code, out = run_cli(["release", "mean", "digits-covariance", "--epsilon", "1", "--seed", "0",
                         "--max-condition", "1000", "--clip-data"], capsys)
    assert code == 0 and out["parameters"]["max_condition"] == 1000.0
    assert out["parameters"]["mean_tolerance"] == mean_tolerance(SPD(5), np.eye(5), 30.892420751474166,
                                                                 1000.0)


def test_cli_refusals_name_the_flag(capsys):
    code, err = run_cli(["release", "mean", "digits-covariance", "--epsilon", "1", "--seed", "0",
                         "--max-condition", "100"], capsys)
    assert code != 0 and "--max-condition" in err and "--clip-data" in err
    assert "max_condition" not in err.replace("--max-condition", "")
    code, err = run_cli(["release", "mean", "iris", "--epsilon", "1", "--center", "[0,0,0,0]",
                         "--radius", "10", "--max-condition", "public"], capsys)
    assert code != 0 and "--max-condition public needs a built-in data set" in err


def test_a_cap_too_large_for_double_precision_is_a_public_caveat():
    """K = 1e5 on the digits' ball: the capped tolerance adds more than Delta; the release warns
    (a public warning) naming max_condition and clip_data."""
    from geodp.datasets import load
    ds = load("digits-covariance")
    with pytest.warns(ToleranceDominatesWarning, match="max_condition = 100000 .*clip_data"):
        rel = private_frechet_mean(ds.manifold, ds.points, 5.0, *ds.public_ball(), rng=0,
                                   max_condition=1e5)
    assert any(isinstance(c, ToleranceDominatesWarning) for c in rel.caveats)


def test_the_laplace_takes_a_cap_only_where_it_means_something():
    from geodp.manifolds import Sphere
    for manifold, cap in ((Sphere(2), 10.0), (SPD(2, metric="log-euclidean"), 10.0), (SPD(2), 0.5)):
        with pytest.raises(ValueError, match="max_condition"):
            RiemannianLaplace(manifold, 0.1, max_condition=cap)


def test_private_footpoint_and_chunked_records_follow_the_cap():
    """The private footpoint's subsample mean and its Laplace take the cap; chunked records are
    checked and capped chunk by chunk."""
    big = edge_records(400, K, RADIUS, flip=100)
    rel = private_frechet_mean(SPD(2), big, 20.0, np.eye(2), RADIUS, rng=0, max_condition=K,
                               mechanism="wrapped-laplace", footpoint="private",
                               footpoint_budget=0.5)
    assert rel.parameters["max_condition"] == K and "private_footpoint" in rel.parameters
    sub = (frechet_module.frechet_mean_sensitivity(SPD(2), RADIUS, 20)
           + frechet_module.computed_mean_slack(SPD(2), np.eye(2), RADIUS, K)[1])
    with pytest.raises(frechet_module.FootpointNotNormalisable, match="max_condition = 10000"):
        private_frechet_mean(SPD(2), big, 2 * sub / 0.45, np.eye(2), RADIUS, rng=0,
                             max_condition=K, mechanism="wrapped-laplace", footpoint="private",
                             footpoint_budget=0.5)  # the footpoint's scale 0.45: fine at K = 1
    x = edge_records(40, K, RADIUS, flip=10)
    da = pytest.importorskip("dask.array")
    chunked = da.from_array(x, chunks=(10, 2, 2))
    with pytest.raises(RecordsOutsideBound, match="max_condition"):
        private_frechet_mean(SPD(2), chunked, EPS, np.eye(2), RADIUS, rng=0, max_condition=100.0)
    rel = private_frechet_mean(SPD(2), chunked, EPS, np.eye(2), RADIUS, rng=0, max_condition=100.0,
                               clip_data=True)
    assert rel.diagnostics["clipped"]["records_capped"] == 40


def test_cli_names_the_flags_when_the_cap_makes_the_scale_unrepresentable(capsys):
    code, err = run_cli(["release", "mean", "digits-covariance", "--epsilon", "0.2", "--seed", "0",
                         "--max-condition", "3000", "--clip-data"], capsys)
    assert code != 0 and "--max-condition = 3000" in err and "--restrict" in err
    assert "probability up to" in err


def test_class_means_take_the_cap_before_charging():
    """private_class_means: a record above the cap is refused before the ledger is charged; with
    the cap every class mean publishes it."""
    from geodp.learn.classes import private_class_means
    x = edge_records(40, K, RADIUS, flip=20)
    labels = np.repeat([0, 1], 20)
    ledger = MemoryLedger()
    with pytest.raises(RecordsOutsideBound, match="max_condition"):
        private_class_means(SPD(2), x, labels, [0, 1], 20.0, np.eye(2), RADIUS, rng=0,
                            max_condition=100.0, ledger=ledger)
    assert ledger.history() == []
    rel = private_class_means(SPD(2), x, labels, [0, 1], 20.0, np.eye(2), RADIUS, rng=0,
                              max_condition=K, class_sizes="public")
    assert rel.parameters["max_condition"] == K
    assert rel.value.shape == (2, 2, 2)


def test_a_mean_on_the_caps_boundary_is_certified_without_the_descent():
    """Review of the cap: records of condition exactly K that commute put the exact mean on the
    boundary of S_K. The certificate projects onto S_K itself (the records' margin would move the
    iterate 7e-10 from the exact mean, 17 times its bound, and send it to the data-dependent
    descent): the fast path certifies it, as it does the neighbour with one record at I."""
    m, k = SPD(2), 10.0
    a = np.exp(np.random.default_rng(0).uniform(-0.3, 0.3, 20))
    x = np.stack([np.diag([ai, k * ai]) for ai in a])
    exact = np.exp(np.log(a).mean()) * np.diag([1.0, k])
    neighbour = np.concatenate([np.eye(2)[None], x[1:]])
    fits = [certified_mean(m, data, np.eye(2), 3.0, max_condition=k) for data in (x, neighbour)]
    assert float(m.dist(fits[0].mean, exact)) <= fits[0].distance_bound
    assert fits[0].descent_steps == fits[1].descent_steps == 0


@pytest.mark.parametrize("n", [2, 4, 8])
def test_capped_records_stay_within_a_large_cap(n):
    """Review of the cap: at K = 1e8 a margin of 1e-9 is below the reconstruction's rounding
    (relative n eps K), so capped records recomputed above K and a class mean re-checking them
    refused after the charge; the margin 16 n eps K keeps every capped record within K."""
    m, k = SPD(n), 1e8
    rng = np.random.default_rng(n)
    q = np.linalg.qr(rng.standard_normal((500, n, n)))[0]
    w = np.exp(rng.uniform(0, np.log(1e12), (500, n)))
    x = (q * w[:, None, :]) @ np.swapaxes(q, 1, 2)
    assert np.all(m.condition_numbers(m.cap_condition(x, k)) <= k)
