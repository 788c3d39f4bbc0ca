"""Geodesic regression: Jacobi-field adjoints against finite differences, recovery, optimality."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from conftest import MANIFOLDS, base_point, needs, safe_radius
from geodp.statistics import ConvergenceWarning, geodesic_regression
from geodp.statistics.regression import regression_gradient

NAMES = sorted(MANIFOLDS)


def _setup(m, seed, length, spread):
    rng = np.random.default_rng(seed)
    p = m.random_ball(base_point(m), 0.5 * safe_radius(m), rng=rng)
    v = m.from_coords(p, rng.standard_normal(m.dim))
    v = length * v / m.norm(p, v)
    yhat = m.exp(p, v)
    y = m.exp(yhat, m.from_coords(yhat, spread * rng.standard_normal(m.dim)))
    return rng, p, v, y


def _half_sq_dist(m, p, v, y):
    return 0.5 * m.dist(m.exp(p, v), y) ** 2


@pytest.mark.parametrize("name", NAMES)
@given(seed=st.integers(0, 2**32 - 1), length=st.floats(0.0, 2.5), x=st.floats(-2.0, 2.0))
@settings(max_examples=15, deadline=None)
def test_exp_adjoints_match_finite_differences(name, seed, length, x):
    """<d_pExp(xv)^dagger eps, d> and <d_vExp(xv)^dagger eps, d> are the central differences of
    -1/2 rho(Exp_p(x v), y)^2 along d (v transported with p), including long geodesics beyond the
    cut locus of compact manifolds."""
    m = MANIFOLDS[name]
    needs(m, "exp_adjoints", "log", "transport")
    rng, p, v, y = _setup(m, seed, length, 0.3)
    w = x * v
    yhat = m.exp(p, w)
    # y within 0.05 of yhat's cut locus: the logarithm there loses digits (its differential grows
    # like 1 / sin of the angle), which the 1e-6 central differences amplify a millionfold
    assume(float(m.dist(yhat, y)) < m.injectivity_radius - 0.05)
    eps = m.log(yhat, y)
    ap, av = m.exp_adjoints(p, w, eps)
    m.check_tangent(p, ap)
    m.check_tangent(p, av)
    h = 1e-6
    for d in m.tangent_basis(p)[:4]:
        fd_v = (_half_sq_dist(m, p, w + h * d, y) - _half_sq_dist(m, p, w - h * d, y)) / (2 * h)
        p1, p2 = m.exp(p, h * d), m.exp(p, -h * d)
        fd_p = (_half_sq_dist(m, p1, m.transport(p, p1, w), y)
                - _half_sq_dist(m, p2, m.transport(p, p2, w), y)) / (2 * h)
        scale = 1.0 + float(m.norm(p, ap) + m.norm(p, av))
        assert abs(fd_v + m.inner(p, av, d)) < 2e-6 * scale
        assert abs(fd_p + m.inner(p, ap, d)) < 2e-6 * scale


@pytest.mark.parametrize("name", ["sphere2", "hyperbolic2", "spd3", "kendall6"])
def test_exp_adjoints_are_batched(name):
    m = MANIFOLDS[name]
    needs(m, "exp_adjoints", "log", "transport")
    _, p, v, _ = _setup(m, 3, 1.0, 0.3)
    ws = np.stack([0.5 * v, v, -2.0 * v])
    ys = m.exp(p, np.stack([v, 0.3 * v, 0.0 * v]))
    eps = m.log(m.exp(p, ws), ys)
    ap, av = m.exp_adjoints(p, ws, eps)
    for i in range(3):
        one = m.exp_adjoints(p, ws[i], eps[i])
        assert np.allclose(ap[i], one[0], atol=1e-12) and np.allclose(av[i], one[1], atol=1e-12)


@pytest.mark.parametrize("name", ["sphere2", "sphere5_k4", "hyperbolic2", "hyperbolic4_k05", "kendall6",
                                  "spd2", "spd3"])
@given(seed=st.integers(0, 2**32 - 1), length=st.floats(0.0, 2.0), chains=st.integers(0, 3))
@settings(max_examples=15, deadline=None)
def test_closed_form_mean_adjoints_match_the_record_by_record_mean(name, seed, length, chains):
    """The closed-form mean of the adjoints on the space forms, Kendall's shapes and SPD (what the
    regression gradient uses) equals the mean of the per-record adjoints, for covariates of both
    signs and zero, batched footpoints and the zero shooting vector. Far out on the hyperboloid
    both forms round at about eps |e| |p|^2 (the model's conditioning, not the formula): the
    tolerance follows it."""
    from geodp.manifolds import Manifold

    m = MANIFOLDS[name]
    needs(m, "exp_adjoints", "log", "transport")
    rng, p, v, _ = _setup(m, seed, max(length, 1e-9), 0.3)
    v = v * (length > 0)
    batch = (chains,) if chains else ()
    p = np.broadcast_to(p, batch + p.shape)
    nd = len(m.point_shape)
    v = np.broadcast_to(v, batch + v.shape) * (rng.uniform(0.5, 1.5, batch + (1,) * nd) if chains else 1)
    x = rng.uniform(-1.5, 1.5, 40)
    x[:3] = 0.0, 1.5, -1.5
    yhat = m.exp(np.expand_dims(p, -nd - 1), x.reshape(-1, *(1,) * nd) * np.expand_dims(v, -nd - 1))
    e = m.to_tangent(yhat, rng.standard_normal(yhat.shape))
    closed = m.mean_exp_adjoints(p, v, x, e)
    generic = Manifold.mean_exp_adjoints(m, p, v, x, e)
    scale = (1.0 + np.max(np.abs(e))) * (1.0 + np.max(np.abs(p)) ** 2)
    for a, b in zip(closed, generic):
        assert a.shape == b.shape == p.shape
        assert np.max(np.abs(a - b)) < 1e-12 * scale


@pytest.mark.parametrize("n", [2, 3, 5])
@pytest.mark.parametrize("tau", [None, 0.3])
def test_spd_residual_adjoints_in_the_shared_frame_match_the_generic_route(n, tau):
    """SPD's one-frame residuals (no Exp_p(x_i v), no factorisation of it) agree with
    Exp/Log/norm and the record-by-record adjoints on moderate data (where the generic route is
    accurate), for batched parameters and with clipping."""
    from geodp.manifolds import SPD, Manifold

    m, rng = SPD(n), np.random.default_rng(n)
    a = 0.3 * rng.standard_normal((4, n, n))
    p = m.exp(np.eye(n), a + np.swapaxes(a, -1, -2))
    b = 0.3 * rng.standard_normal((4, n, n))
    v = b + np.swapaxes(b, -1, -2)
    x = rng.uniform(-1.0, 1.0, 50)
    c = 0.4 * rng.standard_normal((50, n, n))
    y = m.exp(np.eye(n), c + np.swapaxes(c, -1, -2))
    ours = m.mean_residual_adjoints(p, v, x, y, tau)
    generic = Manifold.mean_residual_adjoints(m, p, v, x, y, tau)
    for a_, b_ in zip(ours, generic):
        assert a_.shape == b_.shape
        assert np.max(np.abs(a_ - b_)) < 1e-10 * (1 + np.max(np.abs(b_)))


def test_zero_shooting_vector_gives_identity_adjoints():
    m = MANIFOLDS["sphere2"]
    p = base_point(m)
    e = m.from_coords(p, np.array([0.3, -0.2]))
    ap, av = m.exp_adjoints(p, 0.0 * p, e)
    assert np.allclose(ap, e) and np.allclose(av, e)


def _data(m, seed, n, noise):
    rng = np.random.default_rng(seed)
    p = m.random_ball(base_point(m), 0.3 * safe_radius(m), rng=rng)
    v = m.from_coords(p, rng.standard_normal(m.dim))
    v = 0.7 * v / m.norm(p, v)
    x = rng.uniform(-0.5, 1.0, n)
    yhat = m.exp(p, x.reshape((n,) + (1,) * v.ndim) * v)
    y = yhat if noise == 0 else m.exp(yhat, m.from_coords(yhat, noise * rng.standard_normal((n, m.dim))))
    return p, v, x, y


@pytest.mark.parametrize("name", NAMES)
def test_recovers_noiseless_geodesic_from_a_poor_start(name):
    m = MANIFOLDS[name]
    needs(m, "exp_adjoints", "log", "transport")
    p, v, x, y = _data(m, 7, 60, 0.0)
    fit = geodesic_regression(m, x, y, init=(y[0], 0.0 * y[0]))
    assert fit.converged and fit.r_squared > 1 - 1e-12
    assert m.dist(p, fit.footpoint) < 1e-7
    assert m.norm(p, m.transport(fit.footpoint, p, fit.shooting_vector) - v) < 1e-7


@pytest.mark.parametrize("name", NAMES)
def test_noisy_fit_is_a_critical_point_and_a_local_minimum(name):
    m = MANIFOLDS[name]
    needs(m, "exp_adjoints", "log", "transport")
    _, _, x, y = _data(m, 11, 200, 0.05)
    fit = geodesic_regression(m, x, y)
    assert fit.converged and 0 < fit.r_squared < 1
    gp, gv, e = regression_gradient(m, fit.footpoint, fit.shooting_vector, x, y)
    assert np.isclose(e, fit.energy, rtol=1e-12)
    assert m.norm(fit.footpoint, gp) < 1e-7 and m.norm(fit.footpoint, gv) < 1e-7
    rng = np.random.default_rng(0)
    for _ in range(5):
        dp, dv = m.from_coords(fit.footpoint, 1e-3 * rng.standard_normal((2, m.dim)))
        p2 = m.exp(fit.footpoint, dp)
        v2 = m.transport(fit.footpoint, p2, fit.shooting_vector + dv)
        assert regression_gradient(m, p2, v2, x, y)[2] >= fit.energy - 1e-14


def test_huber_gradient_clips_each_residual():
    m = MANIFOLDS["sphere2"]
    p, v, x, y = _data(m, 5, 50, 0.3)
    tau = 0.05
    gp, gv, _ = regression_gradient(m, p, v, x, y, tau)
    # each record contributes at most tau (1 + x^2)^(1/2) / n on a manifold of curvature >= 0
    assert np.sqrt(m.norm(p, gp) ** 2 + m.norm(p, gv) ** 2) <= tau * np.sqrt(1 + np.max(x**2)) + 1e-12
    h = 1e-6
    d = m.tangent_basis(p)[0]
    p1, p2 = m.exp(p, h * d), m.exp(p, -h * d)
    fd = (regression_gradient(m, p1, m.transport(p, p1, v), x, y, tau)[2]
          - regression_gradient(m, p2, m.transport(p, p2, v), x, y, tau)[2]) / (2 * h)
    assert abs(fd - m.inner(p, gp, d)) < 1e-7


def test_bad_inputs_are_refused():
    m = MANIFOLDS["sphere2"]
    _, _, x, y = _data(m, 1, 20, 0.1)
    with pytest.raises(ValueError, match="all equal"):
        geodesic_regression(m, np.ones(20), y)
    with pytest.raises(ValueError, match="one value per record"):
        geodesic_regression(m, x[:5], y)
    with pytest.raises(ValueError, match="NaN"):
        geodesic_regression(m, np.where(np.arange(20) == 3, np.nan, x), y)
    with pytest.raises(ValueError, match="not on"):
        geodesic_regression(m, x, 2.0 * y)


def test_unconverged_fit_warns():
    m = MANIFOLDS["kendall6"]
    _, _, x, y = _data(m, 2, 50, 0.2)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = geodesic_regression(m, x, y, init=(y[0], 0.0 * y[0]), max_iter=1)
    assert not fit.converged
    assert any(issubclass(w.category, ConvergenceWarning) for w in caught)


def test_large_in_memory_means_run_in_equal_parts_and_match_one_pass(monkeypatch):
    """From ROWS_TIMES_PARAMETERS (record, parameter) pairs the records are cut into equal parts,
    as many as a multiple of the CPUs, summed on the pool: the same mean as one pass, to
    rounding, and the same bits whatever the load."""
    from geodp.manifolds import _threads
    from geodp.manifolds import Sphere
    from geodp.statistics import regression as reg

    monkeypatch.setattr(_threads, "thread_count", lambda: 2)
    m = Sphere(2)
    rng = np.random.default_rng(3)
    n = 3 * reg.ROWS_TIMES_PARAMETERS // 8 + 5
    x, y = rng.uniform(0, 1, n), m.project(rng.standard_normal((n, 3)) + [0, 0, 3])
    data = reg.RegressionSample(m, x, y)
    p = m.project(rng.standard_normal((8, 3)) + [0, 0, 3])
    v = m.to_tangent(p, 0.3 * rng.standard_normal((8, 3)))
    sizes = []

    def kernel(xs, ys):
        sizes.append(len(xs))
        return regression_gradient(m, p[:, None], v[:, None], xs, ys, 0.5)

    split = data.mean(kernel, 8)
    assert len(sizes) == 4 and sum(sizes) == n and max(sizes) - min(sizes) <= 1
    assert max(sizes) * 8 <= reg.ROWS_TIMES_PARAMETERS
    whole = regression_gradient(m, p[:, None], v[:, None], x, y, 0.5)
    for a, b in zip(split, whole):
        assert np.allclose(a, b, rtol=1e-12, atol=1e-15)
    monkeypatch.setattr(_threads, "_busy_elsewhere", lambda: 5)
    assert all(np.array_equal(a, b) for a, b in zip(data.mean(kernel, 8), split))
    sizes.clear()
    data.mean(kernel, 1)
    assert sizes == [n], "fewer pairs than ROWS_TIMES_PARAMETERS: one pass"
