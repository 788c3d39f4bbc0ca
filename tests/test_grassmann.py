"""The Grassmann manifold: basis invariance, closed forms against independent computations, and
the private estimators on it (principal subspace, Fréchet mean)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.linalg import expm, subspace_angles

from geodp.learn import private_frechet_mean, private_principal_subspace
from geodp.learn.pca import subspace_gradients
from geodp.manifolds import Grassmann
from geodp.manifolds.spec import manifold_from_spec
from geodp.mechanisms.mcmc import ApproximateSamplerRefused, ApproximateSamplerWarning
from test_manifolds import sectional_curvature

SIZES = [(4, 2), (5, 1), (7, 3), (6, 5)]


def rotation(k: int, seed: int) -> np.ndarray:
    q, _ = np.linalg.qr(np.random.default_rng(seed).standard_normal((k, k)))
    return q


def pairs(m: Grassmann, count: int, seed: int, scale: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """count random points p and points q within principal angles below pi/2 of them."""
    rng = np.random.default_rng(seed)
    p = m.project(rng.standard_normal((count,) + m.point_shape))
    v = m.from_coords(p, rng.standard_normal((count, m.dim)))
    v *= (scale * rng.uniform(0.05, 1.0, count) / np.linalg.norm(v, axis=(1, 2)))[:, None, None]
    return p, m.exp(p, v)


@pytest.mark.parametrize("n,k", SIZES)
def test_dist_and_log_do_not_depend_on_the_bases(n, k):
    m = Grassmann(n, k)
    p, q = pairs(m, 20, 1)
    w = rotation(k, 2)
    m.check_point(q @ w)  # any orthonormal basis is a point
    assert np.max(m.dist(q, q @ w)) < 1e-12
    assert np.allclose(m.dist(p @ w, q), m.dist(p, q), atol=1e-13)
    assert np.allclose(m.log(p, q @ w), m.log(p, q), atol=1e-12)
    # the lift at another basis of the first subspace is the lift at p times W
    assert np.allclose(m.log(p @ w, q), m.log(p, q) @ w, atol=1e-12)


@pytest.mark.parametrize("n,k", SIZES)
def test_distance_is_the_norm_of_scipys_principal_angles(n, k):
    m = Grassmann(n, k)
    p, q = pairs(m, 30, 3, scale=2.5)
    expected = [np.linalg.norm(subspace_angles(a, b)) for a, b in zip(p, q)]
    assert np.allclose(m.dist(p, q), expected, rtol=1e-10, atol=1e-13)
    theta = np.linalg.svd(m.log(p, q), compute_uv=False)
    for got, a, b in zip(theta, p, q):
        assert np.allclose(np.sort(got), np.sort(subspace_angles(a, b)), atol=1e-10)


@pytest.mark.parametrize("n,k", SIZES)
def test_exp_is_the_one_parameter_subgroup_of_so_n(n, k):
    """Exp_Y(Y_perp B) = Q expm([[0, -B^T], [B, 0]]) I_(n,k) with Q = [Y, Y_perp] (Edelman et al.
    1998, eq. 2.65), the same basis the SVD formula gives."""
    m = Grassmann(n, k)
    rng = np.random.default_rng(4)
    y = m.project(rng.standard_normal((n, k)))
    b = 1.3 * rng.standard_normal((n - k, k))
    full = np.concatenate([y, m._complement(y)], axis=1)
    generator = np.block([[np.zeros((k, k)), -b.T], [b, np.zeros((n - k, n - k))]])
    expected = full @ expm(generator)[:, :k]
    assert np.allclose(m.exp(y, m.from_coords(y, b.ravel())), expected, atol=1e-12)


def test_log_near_the_point_and_at_the_cut_locus():
    m = Grassmann(6, 3)
    p, _ = pairs(m, 1, 5)
    v = m.from_coords(p[0], np.random.default_rng(6).standard_normal(m.dim))
    for size in (1e-12, 1e-6, 1.0):  # to a few roundings of the unit entries of p and Exp_p(u)
        u = size * v / m.norm(p[0], v)
        assert np.allclose(m.log(p[0], m.exp(p[0], u)), u, rtol=1e-9, atol=5e-15)
    # a subspace with a principal angle pi/2: log still returns a shortest geodesic's velocity
    y, z = np.eye(6)[:, :3], np.eye(6)[:, [0, 1, 3]]
    h = m.log(y, z)
    assert np.isclose(m.norm(y, h), np.pi / 2) and m.dist(m.exp(y, h), z) < 1e-12


@pytest.mark.parametrize("n,k", SIZES)
def test_transport_solves_the_parallel_transport_equation(n, k):
    """Against the projected Euler scheme of Delta' = -Y (Y'^T Delta) (Edelman et al., eq. 2.68):
    Delta_(j+1) = (I - Y_(j+1) Y_(j+1)^T) Delta_j along Y_j = Exp_p(j H / N), whose error is O(1/N)."""
    m = Grassmann(n, k)
    p, q = pairs(m, 1, 7, scale=1.2)
    p, q = p[0], q[0]
    h = m.log(p, q)
    v = m.from_coords(p, np.random.default_rng(8).standard_normal(m.dim))
    steps = 4000
    path = m.exp(p, np.linspace(0.0, 1.0, steps + 1)[1:, None, None] * h)
    delta = v
    for y in path:
        delta = m.to_tangent(y, delta)
    exact = m.transport(p, path[-1], v)
    assert np.linalg.norm(exact - delta) < 5.0 / steps * np.linalg.norm(v)
    w = rotation(k, 9)
    assert np.allclose(m.transport(p, path[-1] @ w, v), exact @ w, atol=1e-12)
    assert np.isclose(m.norm(q, m.transport(p, q, v)), m.norm(p, v))


def test_egrad_to_rgrad_of_a_rayleigh_quotient():
    """f(Y) = tr(Y^T A Y): grad f = (I - Y Y^T) 2 A Y, the derivative of f along geodesics."""
    m = Grassmann(6, 2)
    rng = np.random.default_rng(10)
    a = rng.standard_normal((6, 6))
    a = a + a.T
    f = lambda y: np.trace(y.T @ a @ y)
    y = m.random_point(11)
    grad = m.egrad_to_rgrad(y, 2.0 * a @ y)
    m.check_tangent(y, grad)
    h = 1e-6
    for v in m.tangent_basis(y):
        slope = (f(m.exp(y, h * v)) - f(m.exp(y, -h * v))) / (2 * h)
        assert np.isclose(slope, m.inner(y, grad, v), rtol=1e-6, atol=1e-8)
    # a critical point: the span of eigenvectors of A
    eig = np.linalg.eigh(a)[1][:, [0, 3]]
    assert np.allclose(m.egrad_to_rgrad(eig, 2.0 * a @ eig), 0.0, atol=1e-12)


def test_curvature_bounds_are_the_sectional_curvatures_reached():
    """Gr(4, 2) reaches 0 and 2 (Wong 1968); Gr(5, 1) = RP^4 has curvature 1 on every plane."""
    m = Grassmann(4, 2)
    y = m.random_point(12)
    planes = {0.0: (np.eye(4)[0], np.eye(4)[3]),
              1.0: (np.eye(4)[0], np.eye(4)[1]),
              2.0: (np.array([1.0, 0, 0, 1]) / np.sqrt(2), np.array([0, 1.0, -1, 0]) / np.sqrt(2))}
    for expected, (u, w) in planes.items():
        k = sectional_curvature(m, y, m.from_coords(y, u), m.from_coords(y, w))
        assert abs(k - expected) < 1e-3
    assert m.curvature_bounds == (0.0, 2.0)
    rp = Grassmann(5, 1)
    y = rp.random_point(13)
    q, _ = np.linalg.qr(np.random.default_rng(14).standard_normal((4, 2)))
    k = sectional_curvature(rp, y, rp.from_coords(y, q[:, 0]), rp.from_coords(y, q[:, 1]))
    assert abs(k - 1.0) < 1e-3 and rp.curvature_bounds == (1.0, 1.0)
    assert Grassmann(5, 4).curvature_bounds == (1.0, 1.0)
    assert Grassmann(2, 1).curvature_bounds == (0.0, 0.0)


def test_checks_constructor_and_spec():
    m = Grassmann(5, 2)
    y = m.origin()
    assert np.array_equal(y, np.eye(5)[:, :2]) and m.dim == 6
    with pytest.raises(ValueError, match="orthonormal columns"):
        m.check_point(2.0 * y)
    with pytest.raises(ValueError, match="not tangent"):
        m.check_tangent(y, y)
    for n, k in ((3, 0), (3, 3)):
        with pytest.raises(ValueError, match="1 <= k < n"):
            Grassmann(n, k)
    assert repr(manifold_from_spec("grassmann:5x2")) == "Grassmann(5, 2)"


def planted(n: int = 3000, seed: int = 15) -> tuple[np.ndarray, float]:
    """Records with a planted spectrum (rotated), and the public bound of their norms."""
    rng = np.random.default_rng(seed)
    z = rng.standard_normal((n, 6)) * np.array([3.0, 2.5, 1.0, 0.8, 0.6, 0.5])
    return z @ rotation(6, seed + 1).T, 12.0


def test_principal_subspace_gradients_are_within_the_lipschitz_bound():
    z, _ = planted(200)
    m = Grassmann(6, 3)
    y = m.random_point(16)
    g = subspace_gradients(y, z)
    m.check_tangent(y, g)
    assert np.all(np.linalg.norm(g, axis=(1, 2)) <= np.sum(z * z, axis=1) * (1 + 1e-12))
    assert np.allclose(g, m.egrad_to_rgrad(y, -2.0 * z[:, :, None] * (z @ y)[:, None, :]))


def test_private_principal_subspace_recovers_the_planted_subspace():
    z, bound = planted()
    rel = private_principal_subspace(Grassmann(6, 2), z, 1e6, 1e-5, norm_bound=bound, clip_data=True,
                                     steps=400, rng=0)
    top = np.linalg.eigh(z.T @ z / len(z))[1][:, ::-1][:, :2]
    assert Grassmann(6, 2).dist(rel.value, top) < 1e-3
    assert rel.parameters["k"] == 2 and rel.parameters["clip"] == bound**2


def test_private_principal_subspace_guarantee():
    z, bound = planted(500)
    rel = private_principal_subspace(Grassmann(6, 3), z, 0.5, 1e-6, norm_bound=bound, clip_data=True,
                                     steps=30, rng=1)
    assert rel.guarantee.to_approx(1e-6).epsilon <= 0.5
    assert rel.guarantee.relation.value == "replace-one"
    assert rel.sensitivity == 2.0 * bound**2
    Grassmann(6, 3).check_point(rel.value)
    with pytest.raises(ValueError, match="norms above norm_bound"):
        private_principal_subspace(Grassmann(6, 2), z, 1.0, 1e-6, norm_bound=1.0)


def ball_sample(m: Grassmann, radius: float, n: int = 60) -> tuple[np.ndarray, np.ndarray]:
    center = m.random_point(17)
    return center, m.random_ball(center, radius, n, np.random.default_rng(18))


def test_private_frechet_mean_by_dp_rgd_uses_the_rauch_bound_with_k_2():
    m = Grassmann(4, 2)
    r = 0.3
    center, x = ball_sample(m, r)
    rel = private_frechet_mean(m, x, 1.0, center, r, mechanism="dp-rgd", delta=1e-5, rng=0)
    t = 2.0 * r * np.sqrt(2.0)
    assert np.isclose(rel.sensitivity, 2.0 * r * t / np.sin(t))
    assert m.dist(center, rel.value) <= r * (1 + 1e-9)
    with pytest.raises(ValueError, match="Assumption 1"):
        private_frechet_mean(m, x, 1.0, center, 0.6, mechanism="dp-rgd", delta=1e-5, rng=0)


def test_private_frechet_mean_laplace_is_exact_until_tangent_rejection_stops_accepting():
    """Gr(4, 2) at epsilon 1: the exact tangent-rejection sampler. Gr(10, 3) at epsilon 0.01
    (scale about 2): its proposals are all but never accepted, a refusal from the public
    parameters unless approximate draws are allowed."""
    m = Grassmann(4, 2)
    center, x = ball_sample(m, 0.3)
    rel = private_frechet_mean(m, x, 1.0, center, 0.3, rng=0)
    assert rel.exact_sampler and "tangent space" in rel.diagnostics["sampler"]["method"]
    m = Grassmann(10, 3)
    center, x = ball_sample(m, 0.3)
    with pytest.raises(ApproximateSamplerRefused,
                       match=r"Grassmann\(10, 3\).*accept fewer than 0.0001"):
        private_frechet_mean(m, x, 0.01, center, 0.3, rng=0)
    with pytest.warns(ApproximateSamplerWarning):
        rel = private_frechet_mean(m, x, 0.01, center, 0.3, rng=0, allow_approximate=True)
    assert not rel.exact_sampler
    m.check_point(rel.value)
