"""Stiefel(n, k) with the embedded metric: its exponential, coordinates, gradient, the missing
logarithm, and DP-RGD for the top-k eigenvectors under an orthonormality constraint."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm, subspace_angles

from geodp.learn.dp_rgd import dp_rsgd
from geodp.learn.frechet import private_frechet_mean
from geodp.manifolds import Sphere, Stiefel
from geodp.manifolds.capabilities import MissingCapability, has
from geodp.manifolds.spec import manifold_from_spec

SHAPES = [(4, 2), (3, 1), (3, 3), (6, 3), (10, 3)]


def tangents(m, p, size, scale, seed):
    c = np.random.default_rng(seed).standard_normal((size, m.dim))
    return m.from_coords(p, scale * c / np.linalg.norm(c, axis=-1, keepdims=True))


@pytest.mark.parametrize("n, k", SHAPES)
def test_exp_solves_the_geodesic_equation(n, k):
    """Exp_Y(tV) against an ODE solution of Y'' + Y (Y'^T Y') = 0 (Edelman et al. 1998, eq. 2.6),
    the geodesic equation of the embedded metric."""
    m = Stiefel(n, k)
    p = m.random_point(1)
    v = tangents(m, p, 1, 1.7, 2)[0]

    def rhs(t, y):
        pos, vel = y[: n * k].reshape(n, k), y[n * k:].reshape(n, k)
        return np.concatenate([vel.ravel(), -(pos @ (vel.T @ vel)).ravel()])

    sol = solve_ivp(rhs, (0, 1), np.concatenate([p.ravel(), v.ravel()]), rtol=1e-12, atol=1e-12,
                    method="DOP853", dense_output=True)
    for t in (0.3, 1.0):
        assert np.allclose(m.exp(p, t * v), sol.sol(t)[: n * k].reshape(n, k), atol=1e-9)


@pytest.mark.parametrize("n, k", SHAPES)
def test_exp_stays_on_the_manifold_and_batches(n, k):
    m = Stiefel(n, k)
    p = m.random_point(3)
    v = tangents(m, p, 50, 3.0, 4) * np.linspace(0, 1, 50)[:, None, None]
    q = m.exp(p, v)
    assert q.shape == (50, n, k)
    assert np.max(m._point_defect(q)) < 1e-12
    assert np.allclose(q[0], p, atol=1e-15)
    assert np.allclose(q[17], m.exp(p, v[17]), atol=1e-14)
    ps = m.exp(p, tangents(m, p, 6, 1.0, 5)).reshape(2, 3, n, k)
    vs = m.to_tangent(ps, np.random.default_rng(6).standard_normal((2, 3, n, k)))
    assert np.allclose(m.exp(ps, vs)[1, 2], m.exp(ps[1, 2], vs[1, 2]), atol=1e-14)


def test_exp_special_cases():
    """k = 1 is the unit sphere S^(n-1); k = n is O(n), where Exp_Y(Y A) = Y expm(A)."""
    sphere, m = Sphere(4), Stiefel(5, 1)
    p = m.random_point(7)
    v = tangents(m, p, 5, 2.5, 8)
    assert np.allclose(m.exp(p, v)[..., 0], sphere.exp(p[:, 0], v[..., 0]), atol=1e-13)
    m = Stiefel(3, 3)
    p = m.random_point(9)
    v = tangents(m, p, 4, 2.0, 10)
    assert np.allclose(m.exp(p, v), p @ expm(p.T @ v), atol=1e-13)


@pytest.mark.parametrize("n, k", SHAPES)
def test_coordinates_are_an_exact_isometry(n, k):
    m = Stiefel(n, k)
    assert m.dim == k * (k - 1) // 2 + (n - k) * k
    p = m.exp(m.random_point(11), tangents(m, m.random_point(11), 8, 1.0, 12))
    c = np.random.default_rng(13).standard_normal((8, 2, m.dim))
    u, w = m.from_coords(p, c[:, 0]), m.from_coords(p, c[:, 1])
    assert np.max(m._tangent_defect(p, u)) < 1e-13
    assert np.allclose(m.inner(p, u, w), np.sum(c[:, 0] * c[:, 1], axis=-1), atol=1e-13)
    assert np.allclose(m.to_coords(p, u), c[:, 0], atol=1e-14)
    x = np.random.default_rng(14).standard_normal((8, n, k))
    assert np.allclose(m.to_coords(p, x), m.to_coords(p, m.to_tangent(p, x)), atol=1e-14)
    assert np.array_equal(m.to_coords(p, u), m.to_coords(p.copy(), u.copy()))  # deterministic


def test_skew_part_scales_by_sqrt2():
    """|Y A|^2 = tr(A^T A) = 2 a_01^2 for A = a_01 (e_0 e_1^T - e_1 e_0^T): coordinate sqrt(2) a_01."""
    m = Stiefel(4, 2)
    p = m.origin()
    v = p @ np.array([[0.0, 0.5], [-0.5, 0.0]])
    assert np.allclose(m.to_coords(p, v), [np.sqrt(2) * 0.5, 0, 0, 0, 0])


@pytest.mark.parametrize("n, k", SHAPES)
def test_projections(n, k):
    m = Stiefel(n, k)
    rng = np.random.default_rng(15)
    p = m.project(m.random_point(16))
    x = rng.standard_normal((n, k))
    t = m.to_tangent(p, x)
    assert m._tangent_defect(p, t) < 1e-13
    assert np.allclose(m.to_tangent(p, t), t, atol=1e-13)
    assert np.isclose(m.inner(p, x - t, t), 0.0, atol=1e-13)  # orthogonal projection
    y = m.project(x)
    assert m._point_defect(y) < 1e-14 and np.allclose(m.project(p), p, atol=1e-13)
    others = m.exp(y, tangents(m, y, 20, 1e-3, 17))  # the polar factor is the nearest point
    assert np.all(np.linalg.norm(others - x, axis=(-2, -1)) >= np.linalg.norm(y - x) - 1e-15)


@pytest.mark.parametrize("n, k", SHAPES)
def test_egrad_to_rgrad_against_finite_differences(n, k):
    """f(Y) = tr(Y^T A Y): d/dt f(Exp_Y(t V)) at t = 0 equals <grad f(Y), V>."""
    m = Stiefel(n, k)
    rng = np.random.default_rng(18)
    a = rng.standard_normal((n, n))
    f = lambda y: np.trace(y.T @ a @ y)
    p = m.random_point(19)
    g = m.egrad_to_rgrad(p, (a + a.T) @ p)
    assert m._tangent_defect(p, g) < 1e-13
    h = 1e-5
    for v in tangents(m, p, 5, 1.0, 20):
        fd = (f(m.exp(p, h * v)) - f(m.exp(p, -h * v))) / (2 * h)
        assert np.isclose(fd, m.inner(p, g, v), rtol=1e-7, atol=1e-8)


def test_no_logarithm():
    m = Stiefel(4, 2)
    assert not has(m, "log") and not has(m, "dist") and has(m, "egrad_to_rgrad")
    with pytest.raises(MissingCapability, match=r"Stiefel\(4, 2\) provides no 'log'"):
        m.dist(m.origin(), m.random_point(0))
    with pytest.raises(MissingCapability, match=r"Stiefel\(4, 2\) provides no 'log'"):
        m.log(m.origin(), m.random_point(0))


def test_checks_and_spec():
    m = manifold_from_spec("stiefel:4x2")
    assert isinstance(m, Stiefel) and (m.n, m.k, m.point_shape) == (4, 2, (4, 2))
    with pytest.raises(ValueError, match="stiefel:NxK"):
        manifold_from_spec("stiefel:4")
    with pytest.raises(ValueError, match="1 <= k <= n"):
        Stiefel(2, 3)
    with pytest.raises(ValueError, match="orthonormal columns"):
        m.check_point(2 * m.origin())
    with pytest.raises(ValueError, match="not tangent"):
        m.check_tangent(m.origin(), m.origin())


def top_k_problem(n=6, k=2, records=400, seed=21):
    """Records of norm <= 1 whose covariance has a clear gap after the k-th eigenvalue, and the
    per-record Euclidean gradient of -|Y^T z|^2, i.e. -2 z z^T Y (norm <= 2 |z|^2 <= 2)."""
    rng = np.random.default_rng(seed)
    basis = np.linalg.qr(rng.standard_normal((n, n)))[0]
    z = (rng.standard_normal((records, n)) * np.sqrt([9.0, 6.0, 1.0, 0.6, 0.3, 0.1][:n])) @ basis.T
    z /= np.max(np.linalg.norm(z, axis=1))
    grad = lambda y, b: -2.0 * b[:, :, None] * (b @ y)[:, None, :]
    return z, grad


def test_dp_rsgd_top_k_eigenvectors():
    """Private top-k eigenvectors as min -(1/n) sum_i |Y^T z_i|^2 over St(n, k): at epsilon = 1
    the run keeps to the manifold and its guarantee; at epsilon = 1e7 it recovers the span of the
    empirical covariance's top-k eigenvectors."""
    n, k = 6, 2
    m = Stiefel(n, k)
    z, grad = top_k_problem(n, k)
    rel = dp_rsgd(m, grad, z, 1.0, 1e-5, steps=30, lr=2.0, init=m.origin(), clip=2.0,
                  euclidean_grad=True, rng=0)
    m.check_point(rel.value)
    assert m._point_defect(rel.value) < 1e-10
    assert rel.guarantee.to_approx(1e-5).epsilon <= 1.0
    assert rel.guarantee.relation.value == "replace-one"
    rel = dp_rsgd(m, grad, z, 1e7, 1e-5, steps=300, lr=5.0, init=m.origin(), clip=2.0,
                  euclidean_grad=True, rng=1)
    top = np.linalg.eigh(z.T @ z / len(z))[1][:, -k:]
    assert m._point_defect(rel.value) < 1e-10
    assert np.max(subspace_angles(rel.value, top)) < 1e-3


@pytest.mark.parametrize("mechanism", ["laplace", "dp-rgd"])
def test_private_frechet_mean_refuses_without_log(mechanism):
    m = Stiefel(4, 2)
    x = m.exp(m.origin(), tangents(m, m.origin(), 10, 0.3, 22))
    with pytest.raises(MissingCapability, match=r"needs 'log'.*Stiefel\(4, 2\) does not provide"):
        private_frechet_mean(m, x, 1.0, m.origin(), 0.5, mechanism=mechanism,
                             delta=1e-5 if mechanism == "dp-rgd" else None, rng=0)


@pytest.mark.parametrize("scale", [0.0, 1e-8, 0.3, 1.0, 5.0, 30.0])
def test_batched_expm_matches_scipy(scale):
    """The batched [13/13] Pade expm against scipy.linalg.expm, relative to the largest entry,
    on a (2, 40) stack of 6 x 6 matrices (each scaled by its own power of two)."""
    from geodp.manifolds.stiefel import expm as batched_expm

    x = scale * np.random.default_rng(23).standard_normal((2, 40, 6, 6))
    x[0, 0] *= 1e-3  # mixed scalings within one batch
    got, ref = batched_expm(x), expm(x)
    size = np.max(np.abs(ref), axis=(-2, -1), keepdims=True)
    assert got.shape == x.shape and np.all(np.abs(got - ref) <= 1e-11 * size)
    skew = x - np.swapaxes(x, -1, -2)
    q = batched_expm(skew)
    assert np.allclose(q @ np.swapaxes(q, -1, -2), np.eye(6), atol=1e-12 * max(1.0, scale))
