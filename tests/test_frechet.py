"""Fréchet mean: first-order condition, closed forms, batching and the uniqueness warning."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import MANIFOLDS, base_point, needs, safe_radius
from geodp.manifolds import SPD, Euclidean, KendallShape, Sphere
from geodp.manifolds import _matrix as mx
from geodp.statistics import NonUniqueMeanWarning, frechet_mean, uniqueness_radius


@pytest.mark.parametrize("name", sorted(MANIFOLDS))
def test_first_order_condition(name):
    m = MANIFOLDS[name]
    needs(m, "log", "volume_density", "curvature_bounds", "injectivity_radius")
    r = min(0.4 * safe_radius(m), 0.9 * uniqueness_radius(m))
    x = m.random_ball(base_point(m), r, size=60, rng=np.random.default_rng(2))
    res = frechet_mean(m, x, tol=1e-12)
    assert res.converged
    grad = np.mean(m.log(res.mean, x), axis=0)
    assert m.norm(res.mean, grad) < 1e-9


def test_euclidean_mean_is_arithmetic_mean():
    x = np.random.default_rng(0).standard_normal((100, 3))
    assert np.allclose(frechet_mean(Euclidean(3), x).mean, x.mean(axis=0), atol=1e-12)


def test_weights():
    x = np.random.default_rng(0).standard_normal((10, 2))
    w = np.arange(1.0, 11.0)
    res = frechet_mean(Euclidean(2), x, weights=w)
    assert np.allclose(res.mean, (w[:, None] * x).sum(0) / w.sum())


def test_log_euclidean_mean_closed_form():
    m = SPD(3, metric="log-euclidean")
    x = m.random_ball(np.eye(3) * 2.0, 1.0, size=40, rng=np.random.default_rng(4))
    expected = mx.funcm(np.mean(mx.funcm(x, np.log), axis=0), np.exp)
    assert np.allclose(frechet_mean(m, x).mean, expected, atol=1e-9)


def test_affine_mean_of_commuting_matrices_is_geometric_mean():
    d = np.exp(np.random.default_rng(1).standard_normal((30, 3)))
    x = np.stack([np.diag(v) for v in d])
    res = frechet_mean(SPD(3), x)
    assert np.allclose(res.mean, np.diag(np.exp(np.log(d).mean(axis=0))), atol=1e-10)


def test_batched_data_sets_match_individual_solves():
    m = SPD(2)
    x = m.random_ball(np.eye(2), 1.0, size=(5, 20), rng=np.random.default_rng(5))
    batched = frechet_mean(m, x).mean
    for b in range(5):
        assert np.allclose(batched[b], frechet_mean(m, x[b]).mean, atol=1e-10)


def test_warns_or_raises_when_data_too_spread():
    s = Sphere(2)
    x = s.project(np.random.default_rng(0).standard_normal((50, 3)) + [0, 0, 0.5])
    with pytest.warns(NonUniqueMeanWarning, match="r\\* = 0.785"):
        frechet_mean(s, x)
    with pytest.raises(ValueError, match="may not be unique"):
        frechet_mean(s, x, on_spread="raise")


def test_uniqueness_radius_values():
    assert np.isclose(uniqueness_radius(Sphere(2)), np.pi / 4)
    assert np.isclose(uniqueness_radius(Sphere(2, curvature=4.0)), np.pi / 8)
    assert uniqueness_radius(SPD(3)) == np.inf


def test_agrees_with_pyriemann():
    pyriemann_mean = pytest.importorskip("pyriemann.utils.mean")
    m = SPD(4)
    x = m.random_ball(np.eye(4), 1.5, size=50, rng=np.random.default_rng(9))
    ours = frechet_mean(m, x, tol=1e-13).mean
    theirs = pyriemann_mean.mean_riemann(x, tol=1e-14, maxiter=200)
    assert m.dist(ours, theirs) < 1e-8


@pytest.mark.parametrize("name", sorted(MANIFOLDS))
def test_mean_log_and_value_equal_their_definitions(name):
    """Closed-form Fréchet gradients and values (flat, sphere, hyperbolic, whitened SPD) match the
    definitions sum_i w_i Log_p(x_i) and 1/2 sum_i w_i rho(p, x_i)^2."""
    m = MANIFOLDS[name]
    needs(m, "log", "volume_density")
    rng = np.random.default_rng(3)
    x = m.random_ball(base_point(m), 0.5 * safe_radius(m), (2, 30), rng)
    p = m.random_ball(base_point(m), 0.3 * safe_radius(m), 2, rng)
    w = rng.random((2, 30))
    expected = np.sum(w.reshape(w.shape + (1,) * len(m.point_shape)) * m.log(
        np.expand_dims(p, 1), x), axis=1)
    grad, value = m.mean_log_and_value(p, x, w)
    assert np.allclose(grad, expected, atol=1e-12)
    assert np.allclose(value, 0.5 * np.sum(w * m.dist(np.expand_dims(p, 1), x) ** 2, axis=1),
                       rtol=1e-10, atol=1e-14)


def test_kendall_mean_ignores_rotations_of_the_data():
    """Rotating each configuration leaves the shape mean unchanged, and the Procrustes start
    (the data aligned to the first configuration, averaged) saves iterations over starting at
    the first configuration."""
    m = KendallShape(8)
    rng = np.random.default_rng(5)
    x = m.random_ball(base_point(m), 0.3, 200, rng)
    angle = rng.uniform(-np.pi, np.pi, 200)
    rot = np.stack([np.stack([np.cos(angle), -np.sin(angle)], -1),
                    np.stack([np.sin(angle), np.cos(angle)], -1)], -2)
    rotated = np.einsum("nij,nkj->nki", rot, x)
    a, b = frechet_mean(m, x), frechet_mean(m, rotated)
    assert a.converged and b.converged
    assert m.dist(a.mean, b.mean) < 1e-9
    assert b.iterations < frechet_mean(m, rotated, init=rotated[0]).iterations


def _spd_cloud(n, size, spread, rng):
    """Exp_I of symmetric matrices with Frobenius norm about ``spread``."""
    a = rng.standard_normal((size, n, n)) * spread / np.sqrt(2 * n)
    return SPD(n).exp(np.eye(n), a + np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("n, spread", [(4, 0.5), (6, 2.0), (8, 4.0)])
def test_spd_mean_hessian_matches_second_differences_of_the_frechet_function(n, spread):
    """<Hess F [xi], eta> (``MeanHessian``, in whitened coordinates) against the polarised second
    difference of F along geodesics, d^2/dt^2 F(Exp_P(t zeta)) at 0 = <Hess F [zeta], zeta>
    (exact on geodesics). Central differences at t = 0.02 and 0.01, Richardson-extrapolated,
    leave 2e-10 to 5e-7 relative (smaller steps drown in the rounding of F on spread data); the
    Hessian without its coth factor (the identity) errs by 3e-2 to 1.6."""
    m = SPD(n)
    rng = np.random.default_rng(n)
    x = _spd_cloud(n, 30, spread, rng)
    w = rng.uniform(0.5, 1.5, 30)
    w /= w.sum()
    p = _spd_cloud(n, 1, 0.5, rng)[0]
    _, _, hessian = m.mean_log_value_and_hessian(p, x, w)
    xi, eta = (m.from_coords(p, rng.standard_normal(m.dim)) for _ in range(2))

    def second_difference(zeta):
        def central(t):
            value = [m.mean_log_and_value(m.exp(p, s * zeta), x, w)[1] for s in (-t, 0.0, t)]
            return (value[0] - 2 * value[1] + value[2]) / t**2
        return (4 * central(0.01) - central(0.02)) / 3

    fd = (second_difference(xi + eta) - second_difference(xi - eta)) / 4
    _, linv = mx.cholesky(p)
    z = [mx.congruence(linv, a, lower=True) for a in (xi, eta)]
    exact = np.sum(hessian(z[0]) * z[1])
    assert abs(exact - fd) <= 1e-5 * max(1.0, abs(exact))


@pytest.mark.parametrize("n", [2, 3, 6])
def test_spd_newton_direction_solves_the_hessian_system(n):
    """``MeanHessian.solve`` returns d with Hess F [d] = g to the relative residual asked for
    (n <= 3: exactly, from the Hessian as a matrix, which must equal the products)."""
    m = SPD(n)
    rng = np.random.default_rng(3)
    x = _spd_cloud(n, 50, 3.0, rng)
    p = _spd_cloud(n, 1, 1.0, rng)[0]
    g, _, hessian = m.mean_log_value_and_hessian(p, x, np.full(50, 1 / 50))
    _, linv = mx.cholesky(p)
    z = mx.congruence(linv, x[0], lower=True)
    assert np.allclose(mx.coords_to_sym(hessian.matrix() @ mx.sym_to_coords(z), n), hessian(z),
                       rtol=1e-12, atol=1e-12)
    b = mx.congruence(linv, g, lower=True)
    for rtol in (1e-2, 1e-10):
        residual = hessian(mx.congruence(linv, hessian.solve(g, rtol), lower=True)) - b
        assert np.linalg.norm(residual) <= rtol * np.linalg.norm(b)


@pytest.mark.parametrize("n", [2, 3, 4, 8, 16])
def test_spd_newton_mean_takes_fewer_passes_to_the_same_mean(n, monkeypatch):
    """Newton steps (exact for n <= 3, conjugate gradients beyond) reach |grad| <= 1e-10 in at
    most 3 steps on data of spread 1.5 and agree with the Barzilai-Borwein iteration (which takes
    5-7) to 1e-9."""
    from geodp.manifolds.spd import AffineInvariantSPD

    m = SPD(n)
    x = _spd_cloud(n, 200, 1.5, np.random.default_rng(n))
    newton = frechet_mean(m, x, tol=1e-10)
    monkeypatch.setattr(AffineInvariantSPD, "newton_mean", False)
    gradient = frechet_mean(m, x, tol=1e-10)
    assert newton.converged and newton.iterations <= 3 < gradient.iterations
    assert np.max(np.abs(newton.mean - gradient.mean)) <= 1e-9 * np.max(np.abs(gradient.mean))
