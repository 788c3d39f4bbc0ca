"""DP Riemannian gradient descent (Han et al.): exact tangent noise, calibration, clipping,
convergence without noise, outputs, ledger and the applications (PCA, Fréchet mean)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

import geodp
from geodp.learn import dp_rsgd, private_pca
from geodp.learn.dp_rgd import LipschitzViolation, clipped_coordinate_sum, paper_sigma
from geodp.learn.pca import pca_euclidean_gradients, pca_gradients
from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere, _threads
from geodp.mechanisms.tangent_gaussian import TangentGaussian
from geodp.privacy import GDP, BudgetLedger, composed_epsilon
from geodp.statistics import frechet_mean

N_DRAWS = 20_000
# KS critical value at level 1e-3: 1.95 / sqrt(N); a sampler off by 3% in scale exceeds it
KS_LIMIT = 1.95 / math.sqrt(N_DRAWS)


@pytest.mark.parametrize("manifold,point", [
    (SPD(3), np.array([[4.0, 1.0, 0.5], [1.0, 2.0, 0.3], [0.5, 0.3, 0.5]])),
    (Hyperbolic(2), Hyperbolic(2).exp(np.array([1.0, 0, 0]), np.array([0, 1.5, -0.7]))),
    (Sphere(3), Sphere(3).project(np.array([1.0, 2.0, -1.0, 0.5]))),
])
def test_tangent_gaussian_is_exactly_isotropic_in_the_metric(manifold, point):
    sigma = 0.7
    xi = TangentGaussian(manifold, sigma).sample(point, N_DRAWS, rng=0)
    coords = manifold.to_coords(point, xi)
    for j in range(manifold.dim):
        assert stats.kstest(coords[:, j] / sigma, "norm").statistic < KS_LIMIT
    sq = manifold.inner(point, xi, xi) / sigma**2
    assert stats.kstest(sq, stats.chi2(manifold.dim).cdf).statistic < KS_LIMIT
    assert abs(np.corrcoef(coords.T)[0, 1]) < 4 / math.sqrt(N_DRAWS)


def test_ambient_isotropic_noise_fails_the_same_test_on_spd():
    """Power: N(0, sigma^2) entries of a symmetric matrix ignore the metric tr(P^-1 U P^-1 V)."""
    m, p = SPD(3), np.diag([4.0, 2.0, 0.5])
    rng = np.random.default_rng(0)
    raw = rng.normal(scale=0.7, size=(N_DRAWS, 3, 3))
    sq = m.inner(p, 0.5 * (raw + np.swapaxes(raw, -1, -2)), 0.5 * (raw + np.swapaxes(raw, -1, -2)))
    assert stats.kstest(sq / 0.49, stats.chi2(6).cdf).statistic > 10 * KS_LIMIT


@pytest.mark.parametrize("batch_size,sampling", [(None, "poisson"), (50, "poisson"),
                                                 (50, "without_replacement")])
def test_noise_multiplier_meets_the_target_and_is_tight(batch_size, sampling):
    z = np.random.default_rng(1).normal(size=(1000, 3))
    rate = 0.05 if sampling == "poisson" and batch_size else None
    rel = dp_rsgd(Sphere(2), pca_gradients, z, 1.0, 1e-5, steps=30, batch_size=batch_size,
                  sample_rate=rate,
                  sampling=sampling, init=np.eye(3)[0], clip=2.0, rng=0)
    g = rel.guarantee
    if batch_size is None:  # full batch: the exact Gaussian composition, sqrt(T)/z-GDP
        assert g.to_approx(1e-5).epsilon <= 1.0
        assert GDP(math.sqrt(30) / (g.noise_multiplier * (1 - 1e-6))).to_approx(1e-5).epsilon > 1.0
    else:
        accountant = "rdp" if sampling == "without_replacement" else "pld"
        assert composed_epsilon(g.noise_multiplier, 1e-5, g.sample_rate, g.steps, g.sampling,
                                accountant=accountant) <= 1.0
        assert composed_epsilon(g.noise_multiplier * (1 - 1e-3), 1e-5, g.sample_rate, g.steps,
                                g.sampling, accountant=accountant) > 1.0
    assert rel.sensitivity == (2.0 if sampling == "poisson" and batch_size else 4.0)
    d = {**rel.parameters, **rel.diagnostics}
    assert ("n" in rel.parameters) == (sampling == "without_replacement" or batch_size is None)
    assert d["paper_sigma_mean"] == pytest.approx(paper_sigma(30, 1e-5, 2.0, 1000, 1.0))
    assert rel.scale == pytest.approx(g.noise_multiplier * rel.sensitivity)


def test_clipping_bounds_each_records_influence():
    rng = np.random.default_rng(2)
    m = SPD(3)
    w = m.random_ball(np.eye(3), 1.0, None, rng)
    grads = m.random_ball(np.eye(3), 2.0, 40, rng) - np.eye(3)  # symmetric tangent vectors
    total = lambda g, bound=0.5, **kw: clipped_coordinate_sum(m, w, g, bound, **kw)
    for factor in (1e-3, 1.0, 1e6):  # adversarial extra record, tiny to huge
        extra = factor * (m.random_ball(np.eye(3), 1.0, None, rng) - np.eye(3))
        s, _ = total(grads)
        s_add, _ = total(np.concatenate([grads, extra[None]]))
        s_rep, _ = total(np.concatenate([grads[1:], extra[None]]))
        assert np.linalg.norm(s_add - s) <= 0.5 * (1 + 1e-12)
        assert np.linalg.norm(s_rep - s) <= 1.0 * (1 + 1e-12)
    # coordinates are an isometry: the sum maps back to the clipped sum in the metric
    assert np.isclose(m.norm(w, m.from_coords(w, total(grads, 1e3)[0])),
                      m.norm(w, grads.sum(axis=0)), rtol=1e-9)
    # a stated Lipschitz bound that fails is enforced by clipping (and counted), never exceeded
    s, over = total(grads, 1e-6, lipschitz=True)
    assert over == len(grads) and np.linalg.norm(s) <= len(grads) * 1e-6 * (1 + 1e-9)
    # a non-finite gradient contributes nothing
    bad = grads.copy()
    bad[0] = np.nan
    s_bad, over = total(bad)
    assert np.all(np.isfinite(s_bad)) and over >= 1
    assert np.allclose(s_bad, total(grads[1:])[0])


def test_without_noise_the_iteration_reaches_the_optimum():
    rng = np.random.default_rng(3)
    z = rng.normal(size=(2000, 6)) * np.array([3, 1, 1, 1, 0.5, 0.5])
    z /= np.maximum(1.0, np.linalg.norm(z, axis=1) / 5.0)[:, None]
    top = np.linalg.eigh(z.T @ z / len(z))[1][:, -1]
    rel = private_pca(Sphere(5), z, 1e7, 1e-5, norm_bound=5.0, steps=300, lr=0.05, rng=0)
    assert abs(rel.value @ top) > 1 - 1e-6
    m = SPD(2)
    x = m.random_ball(np.eye(2), 0.8, 300, rng)
    mean = frechet_mean(m, x).mean
    rel = geodp.private_frechet_mean(m, x, epsilon=1e7, delta=1e-5, center=np.eye(2), radius=1.0,
                                     mechanism="dp-rgd", steps=30, lr=1.0, rng=0)
    assert m.dist(rel.value, mean) < 1e-4  # the noise left at epsilon = 1e7: about 1e-5


def test_outputs_ledger_and_loss_trace(tmp_path):
    z = np.random.default_rng(4).normal(size=(400, 3))
    ledger = BudgetLedger(tmp_path / "l.db", 2.0, 1e-5)
    results = {}
    for output in ("last", "random", "average", "weighted-average"):
        rel = private_pca(Sphere(2), z / 4, 0.4, 1e-5, norm_bound=2.0, steps=20, output=output, rng=5,
                          ledger=ledger, clip_data=True)
        Sphere(2).check_point(rel.value)
        results[output] = rel
    assert len(results["last"].diagnostics["loss_trace"]) == 20
    assert not np.allclose(results["average"].value, results["last"].value)
    assert len(ledger.history()) == 4 and ledger.spent()[0] <= 2.0
    with pytest.raises(geodp.privacy.BudgetExceededError):
        private_pca(Sphere(2), z / 4, 3.0, 1e-5, norm_bound=2.0, rng=0, ledger=ledger, clip_data=True)


def test_pca_refuses_data_beyond_the_public_bound_unless_clipped():
    z = np.random.default_rng(5).normal(size=(100, 4))
    with pytest.raises(ValueError, match="norm_bound"):
        private_pca(Sphere(3), z, 1.0, 1e-5, norm_bound=1.0)
    rel = private_pca(Sphere(3), z, 1.0, 1e-5, norm_bound=1.0, clip_data=True, steps=5, rng=0)
    assert rel.diagnostics["rows_scaled_to_bound"] > 0


@pytest.mark.parametrize("bad,match", [
    (dict(clip=None), "exactly one of clip"),
    (dict(clip=1.0, lipschitz=1.0), "exactly one of clip"),
    (dict(steps=0), "steps"),
    (dict(batch_size=0), "batch_size"),
    (dict(batch_size=5), "sample_rate"),  # Poisson needs a public rate, not batch_size / n
    (dict(batch_size=5, sample_rate=1.5), "sample_rate"),
    (dict(sample_rate=0.5), "sample_rate"),
    (dict(output="best"), "output"),
    (dict(init=None), "init"),
    (dict(epsilon=-1), "epsilon"),
])
def test_invalid_parameters_are_refused(bad, match):
    args = dict(epsilon=1.0, delta=1e-5, steps=3, init=np.zeros(2), clip=1.0)
    args.update(bad)
    with pytest.raises(ValueError, match=match):
        dp_rsgd(Euclidean(2), lambda w, b: b - w, np.ones((10, 2)), **args)


def test_dp_rgd_mean_needs_delta_and_reports_its_accounting():
    m, x = Hyperbolic(2), Hyperbolic(2).random_ball(np.array([1.0, 0, 0]), 0.5, 200, 0)
    with pytest.raises(ValueError, match="delta"):
        geodp.private_frechet_mean(m, x, 1.0, np.array([1.0, 0, 0]), 0.5, mechanism="dp-rgd")
    rel = geodp.private_frechet_mean(m, x, 1.0, np.array([1.0, 0, 0]), 0.5, mechanism="dp-rgd",
                                     delta=1e-6, rng=1)
    assert rel.parameters["accountant"] == "exact Gaussian (GDP)"
    assert rel.guarantee.relation.value == "replace-one"
    assert rel.guarantee.to_approx(1e-6).epsilon <= 1.0


def test_jax_per_sample_gradients_match_the_closed_form():
    jnp = pytest.importorskip("jax.numpy")
    from geodp.learn import jax_per_sample_grad

    grad = jax_per_sample_grad(lambda w, z: -jnp.dot(w, z) ** 2)
    z = np.random.default_rng(6).normal(size=(50, 4))
    w = Sphere(3).project(np.ones(4))
    riemannian = Sphere(3).egrad_to_rgrad(w, grad(w, z))
    assert np.allclose(riemannian, pca_gradients(w, z), atol=1e-5)
    rel = dp_rsgd(Sphere(3), grad, z, 1.0, 1e-5, 5, init=w, clip=10.0, euclidean_grad=True, rng=0)
    Sphere(3).check_point(rel.value)


def _canary_step(epsilon: float, delta: float, secure: bool, sign: float, rng) -> np.ndarray:
    """One full-batch DP-RGD step on S^2 from the north pole over ten records whose gradients
    are the records themselves (tangent at the pole): nine zero and a canary +-clip e1. The
    output's coordinate along e1 is minus the noisy sum over n = 10 (a step of length well below
    pi, so Log undoes Exp)."""
    m, pole, clip = Sphere(2), np.array([0.0, 0.0, 1.0]), 1.0
    data = np.zeros((10, 3))
    data[0, 0] = sign * clip
    rel = dp_rsgd(m, lambda w, b: b.copy(), data, epsilon, delta, 1, lr=1.0, init=pole, clip=clip,
                  rng=rng, secure=secure)
    return m.log(pole, rel.value)[0], rel


@pytest.mark.parametrize("secure,blocked", [(False, False), (True, False), (False, True)])
def test_full_batch_dp_rgd_is_replace_one_and_a_canary_audits_below_its_claim(secure, blocked,
                                                                             monkeypatch):
    """The audit's pair (issue 28): replace-one neighbours whose canary gradient goes from -clip e
    to +clip e. The old calibration (sensitivity clip, the step dividing by the data's n) made
    mu 1.85 where 0.925 was claimed; the twin with the noise halved is caught by the same audit.
    The secure (discrete Gaussian) path is audited in Renyi divergence of order 2 against its
    zCDP claim 2 rho. ``blocked``: blocks of 48 bytes, so that the ten records' clipped sum runs
    in blocks of two records (the path of large batches, issue 31)."""
    from geodp.audit import audit_mechanism

    if blocked:
        monkeypatch.setattr(_threads, "BLOCK_BYTES", 48)
        assert len(_threads.map_blocks(lambda lo, hi: hi - lo, 10, 24)) >= 5

    def audit(samples: int):
        def sampler(sign):
            return lambda k, rng: np.array([_canary_step(4.0, 1e-5, secure, sign, rng)[0]
                                            for _ in range(k)])
        return audit_mechanism(sampler(-1.0), sampler(1.0), lambda s: s, samples, rng=7, rdp_order=2.0)

    rel = _canary_step(4.0, 1e-5, secure, 1.0, 0)[1]
    assert rel.guarantee.relation.value == "replace-one" and rel.sensitivity == 2.0
    claim = 2.0 * rel.guarantee.rho if secure else rel.guarantee.to_gdp().mu
    # observed: mu claim 0.925, honest 0.73, halved 1.68; secure D_2 claim 0.746, honest 0.15,
    # halved 1.42 (3000 releases on each side, 95% confidence)
    honest = audit(3000)
    assert (honest.rdp_lower if secure else honest.mu_lower) <= claim
    target = "geodp.learn.dp_rgd." + ("secure_sigma_for_rho" if secure else "_noise_multiplier")
    real = getattr(geodp.learn.dp_rgd, target.rsplit(".", 1)[1])
    monkeypatch.setattr(target, lambda *a, **k: real(*a, **k) / 2)
    planted = audit(3000)
    assert (planted.rdp_lower if secure else planted.mu_lower) > claim


def test_secure_dp_rgd_meets_its_target_and_ignores_the_seed():
    first, rel = _canary_step(1.0, 1e-5, True, 1.0, 0)
    second = _canary_step(1.0, 1e-5, True, 1.0, 0)[0]
    assert first != second  # secure noise comes from the OS, not from rng
    assert rel.guarantee.to_approx(1e-5).epsilon <= 1.0
    assert rel.parameters["accountant"].startswith("zCDP")


@pytest.mark.parametrize("manifold,center,r,factor", [
    (Sphere(2), np.array([0.0, 0.0, 1.0]), 0.5, 1.0 / math.sin(1.0)),  # t = 2r sqrt(k) = 1
    (KendallShape(4), KendallShape(4).project(np.array([[0.0, 0], [1, 0], [1, 1], [0, 1.2]])), 0.35,
     1.4 / math.sin(1.4)),  # curvature up to 4: t = 4r
    (Hyperbolic(2), np.array([1.0, 0.0, 0.0]), 0.5, 1.0),
])
def test_dp_rgd_mean_calibrates_to_the_curvature_bound_on_the_gradient_change(manifold, center, r, factor):
    """Issue 28: the DP-RGD mean assumed |Log_w x - Log_w x'| <= 2r, true on Hadamard manifolds but
    not on the sphere (1.04 x 2r at r = 0.5). Random triples in the ball find the excess; the
    release's per-step sensitivity is the Rauch bound 2r max(1, t/sin t), which covers it."""
    rng = np.random.default_rng(0)
    w, x, y = (manifold.random_ball(center, r, 20_000, rng) for _ in range(3))
    worst = float(np.max(manifold.norm(w, manifold.log(w, x) - manifold.log(w, y)))) / (2 * r)
    points = manifold.random_ball(center, r, 50, rng)
    rel = geodp.private_frechet_mean(manifold, points, 1.0, center, r, mechanism="dp-rgd",
                                     delta=1e-6, rng=0)
    assert rel.sensitivity == pytest.approx(2 * r * factor) and worst <= factor
    if manifold.curvature_bounds[1] > 0:
        assert worst > 1.0  # the old bound 2r fails here


def test_records_are_checked_before_the_ledger_reserves(tmp_path):
    """A NaN record, or a stated Lipschitz bound that fails at the public start, is refused
    before any budget is reserved (so success or failure does not depend on which records a
    Poisson batch drew), with neither counts nor data values (the counts are attributes; the
    neighbouring-pair test is in test_release_outcomes.py)."""
    ledger = BudgetLedger(tmp_path / "l.db", 10.0, 1e-5)
    data = np.random.default_rng(0).normal(size=(50, 3))
    bad = data.copy()
    bad[7, 1] = np.nan
    run = dict(epsilon=1.0, delta=1e-5, steps=3, init=np.eye(3)[0], ledger=ledger, rng=0)
    with pytest.raises(ValueError, match=r"one or more records contain NaN") as err:
        dp_rsgd(Sphere(2), pca_gradients, bad, clip=1.0, batch_size=5, sample_rate=0.1, **run)
    assert err.value.count == 1
    with pytest.raises(LipschitzViolation, match=r"one or more records have a gradient at init") as err:
        dp_rsgd(Sphere(2), pca_gradients, 10 * data, lipschitz=1.0, **run)
    assert not any(ch.isdigit() for ch in str(err.value)) and err.value.count > 1
    assert ledger.history() == []
    # a loss diagnostic that raises is recorded, the release goes on
    rel = dp_rsgd(Sphere(2), pca_gradients, data, clip=1.0, loss=lambda w, x: 1 / 0, **run)
    assert rel.diagnostics["loss_error"].startswith("ZeroDivisionError") and len(ledger.history()) == 1


def test_gradients_off_the_tangent_space_are_projected_before_the_noise():
    """Review of issue 28: a per_sample_grad returning Euclidean vectors (not tangent at w) put
    their normal component, noiseless, into the output (exactly +-0.001 off the sphere for the
    neighbours e0 vs -e0: audited epsilon >= 4.65 where 1 was claimed). Now projected onto T_w."""
    nine = np.tile(np.eye(3)[1], (9, 1))
    for sign in (1.0, -1.0):
        data = np.vstack([nine, sign * np.eye(3)[0]])
        rel = dp_rsgd(Sphere(2), lambda w, b: -b, data, 1.0, 1e-5, 1, lr=0.01, clip=1.0,
                      init=np.array([1.0, 0.0, 0.0]), rng=0)
        assert abs(np.linalg.norm(rel.value) - 1.0) < 1e-12


def test_far_iterates_do_not_abort_a_reserved_release(tmp_path):
    """Issue 28: the DP-RGD mean at 150 steps on the digit descriptors (public ball of radius 31
    on SPD(5)) failed after its reservation ("Matrix is not positive definite") at iterates
    beyond double precision. Iterates are now projected, steps double precision cannot take keep
    their iterate (post-processing of the noisy trajectory), and the release completes."""
    from geodp.datasets import load

    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    ledger = BudgetLedger(tmp_path / "l.db", 2.0, 1e-5)
    rel = geodp.private_frechet_mean(ds.manifold, ds.points, 1.0, center, radius, mechanism="dp-rgd",
                                     delta=1e-5, steps=150, rng=0, ledger=ledger)
    ds.manifold.check_point(rel.value)
    assert np.linalg.eigvalsh(rel.value).min() > 0 and ledger.history()[0]["status"] == "done"
    assert "loss_error" not in rel.diagnostics


def test_the_clipped_sum_cannot_overflow_where_the_representation_is_huge():
    """Review of issue 28: on SPD at w = 2.7e307 I, gradients of metric norm <= clip have entries
    near 1e307, and their sum in matrix entries overflowed before the noise, so whether the step
    was taken depended on the data (audited epsilon >= 1.81 where 1 was claimed). The sum is now
    taken in orthonormal coordinates, bounded by n clip: every record set moves the iterate."""
    m, w0 = SPD(2), 2.7e307 * np.eye(2)
    for sign in (1.0, -1.0):
        a = np.ones(10)
        a[0] = sign
        rel = dp_rsgd(m, lambda w, b: b[:, :1, None] * w, a[:, None], 1.0, 1e-5, 1, lr=0.1,
                      init=w0, clip=1.0, rng=0)
        assert rel.diagnostics["steps_not_representable"] == 0
        assert not np.array_equal(rel.value, w0)


def test_projected_euclidean_pca_gradients_are_the_riemannian_ones():
    """Issue 31: private_pca passes -2 c_i z_i with euclidean_grad=True; projected onto T_w they
    are pca_gradients' -2 c_i (z_i - c_i w)."""
    m = Sphere(4)
    rng = np.random.default_rng(2)
    w, z = m.project(rng.normal(size=5)), rng.normal(size=(40, 5))
    projected = m.egrad_to_rgrad(w, pca_euclidean_gradients(w, z))
    assert np.allclose(projected, pca_gradients(w, z), rtol=0, atol=1e-14)


def test_blocks_of_records_give_the_one_pass_sum(monkeypatch):
    """Issue 31: a large batch's clipped sum is taken over blocks of records. With blocks of a few
    records (one holding a non-finite gradient, one a gradient that raises, most clipped) the
    release, its clipped count and the steps kept equal those of one pass, to rounding."""
    monkeypatch.setattr(_threads, "BLOCK_BYTES", 200)
    pole = np.array([0.0, 0.0, 1.0])
    data = np.random.default_rng(3).normal(size=(97, 3))
    data[5, 2], data[60, 1] = 800.0, 9.0  # a gradient overflowing to inf, one raising

    def grad(w, b):
        if np.any(b[:, 1] == 9.0):
            raise RuntimeError("singular")
        return b * np.exp(b[:, 2:])

    def run():
        rel = dp_rsgd(Sphere(2), grad, data, 1.0, 1e-3, 4, lr=0.05, init=pole, clip=1.0, rng=5,
                      output="average")
        return rel.value, rel.diagnostics

    blocks = _threads.map_blocks(lambda lo, hi: (lo, hi), 97, 24)
    assert len(blocks) >= 8
    value, diagnostics = run()
    monkeypatch.setattr(geodp.learn.dp_rgd, "map_blocks", lambda task, size, row: [task(0, size)])
    one_value, one_diagnostics = run()
    assert np.allclose(value, one_value, rtol=0, atol=1e-13)
    assert diagnostics == one_diagnostics and diagnostics["clipped_gradients"] > 100


def test_any_per_record_failure_during_the_run_contributes_zero(tmp_path):
    """Review of issue 28: a per-record gradient raising RuntimeError (as torch.linalg does) for
    one record, away from init, aborted a reserved release; only that record's term is dropped."""
    ledger = BudgetLedger(tmp_path / "l.db", 10.0, 1e-3)
    pole = np.array([0.0, 0.0, 1.0])

    def grad(w, b):
        if np.any(b[:, 0] > 5) and not np.allclose(w, pole):
            raise RuntimeError("singular")
        return np.tile([0.1, 0.0, 0.0], (len(b), 1))

    data = np.zeros((20, 3))
    data[3, 0] = 9.0
    rel = dp_rsgd(Sphere(2), grad, data, 1.0, 1e-3, 3, lr=0.1, init=pole, clip=1.0, rng=0,
                  ledger=ledger)
    assert ledger.history()[0]["status"] == "done" and rel.diagnostics["clipped_gradients"] >= 2
    with pytest.raises(TypeError, match="per_sample_grad must return shape"):
        dp_rsgd(Sphere(2), lambda w, b: b[:1], data, 1.0, 1e-3, 2, init=pole, clip=1.0, rng=0)


def test_random_output_of_one_step_is_refused():
    """output='random' draws from w_0 .. w_{T-1}: with one step that is the public start, which
    no record moved, so the call is refused by name instead of releasing it."""
    m = Sphere(2)
    z = np.tile(np.eye(3)[2], (10, 1))

    def grad(w, x):
        return m.to_tangent(w, x)

    with pytest.raises(ValueError, match="output.*random.*steps.*=1"):
        dp_rsgd(m, grad, z, 1.0, 1e-5, steps=1, init=np.eye(3)[0], clip=1.0, output="random", rng=0)
