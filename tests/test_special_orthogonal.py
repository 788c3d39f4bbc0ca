"""SpecialOrthogonal: closed forms against SciPy, accuracy near the cut locus, bi-invariance, and
the exact Riemannian Laplace on SO(3)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats
from scipy.linalg import expm, logm
from scipy.spatial.transform import Rotation

from geodp.manifolds import SpecialOrthogonal
from geodp.manifolds.special_orthogonal import hat
from geodp.mechanisms import RiemannianLaplace

SO3 = SpecialOrthogonal(3)


def rotations(n: int, seed: int) -> np.ndarray:
    return Rotation.random(n, random_state=seed).as_matrix()


def axis_angle(u: np.ndarray, theta: np.ndarray) -> np.ndarray:
    """cos t I + sin t [u]_x + (1 - cos t) u u^T for unit axes u (k, 3), angles t (k,)."""
    c, s = np.cos(theta)[:, None, None], np.sin(theta)[:, None, None]
    return c * np.eye(3) + s * hat(u) + (1 - c) * u[:, :, None] * u[:, None, :]


def test_rodrigues_matches_scipy_expm_and_logm():
    p, q = rotations(20, 1), rotations(20, 2)
    v = SO3.log(p, q)
    for i in range(20):
        assert np.allclose(v[i], p[i] @ logm(p[i].T @ q[i]).real, atol=1e-12)
        assert np.allclose(SO3.exp(p[i], v[i]), p[i] @ expm(p[i].T @ v[i]), atol=1e-13)


@pytest.mark.parametrize("n", [2, 4, 5])
def test_general_n_matches_scipy(n):
    m = SpecialOrthogonal(n)
    p, q = m.random_point(1), m.random_point(2)
    assert np.allclose(m.log(p, q), p @ logm(p.T @ q).real, atol=1e-12)
    v = m.from_coords(p, np.random.default_rng(3).standard_normal(m.dim))
    assert np.allclose(m.exp(p, v), p @ expm(p.T @ v), atol=1e-12)


def test_distance_is_the_rotation_angle():
    p, q = rotations(1000, 3), rotations(1000, 4)
    angle = (Rotation.from_matrix(p).inv() * Rotation.from_matrix(q)).magnitude()
    assert np.allclose(SO3.dist(p, q), angle, atol=1e-13)
    assert np.allclose(SO3.norm(p, SO3.log(p, q)), angle, atol=1e-13)
    assert np.all(SO3.dist(p, q) <= np.pi)


def test_coordinates_are_the_rotation_vector():
    p, q = rotations(50, 5), rotations(50, 6)
    w = SO3.to_coords(p, SO3.log(p, q))
    ref = (Rotation.from_matrix(p).inv() * Rotation.from_matrix(q)).as_rotvec()
    assert np.allclose(w, ref, atol=1e-12)


@pytest.mark.parametrize("gap", [1e-2, 1e-5, 1e-8, 1e-11])
def test_log_accurate_near_pi(gap):
    """At angle pi - gap the axis comes from the symmetric part: error ~1e-15, not 1e-16/gap."""
    u = np.random.default_rng(7).standard_normal((200, 3))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    theta = np.full(200, np.pi - gap)
    w = SO3.to_coords(np.eye(3), SO3.log(np.eye(3), axis_angle(u, theta)))
    assert np.max(np.abs(w - theta[:, None] * u)) < 2e-14
    assert np.allclose(SO3.dist(np.eye(3), axis_angle(u, theta)), theta, atol=1e-14)


def test_log_raises_at_angle_pi():
    half_turn = np.diag([1.0, -1.0, -1.0])
    with pytest.raises(ValueError, match="cut locus"):
        SO3.log(np.eye(3), half_turn)
    assert SO3.dist(np.eye(3), half_turn) == np.pi
    with pytest.raises(ValueError, match="cut locus"):
        SpecialOrthogonal(2).log(np.eye(2), -np.eye(2))


def test_bi_invariance():
    r, r2, q = rotations(100, 8), rotations(100, 9), rotations(100, 10)
    d = SO3.dist(r, r2)
    assert np.allclose(SO3.dist(q @ r, q @ r2), d, atol=1e-13)
    assert np.allclose(SO3.dist(r @ q, r2 @ q), d, atol=1e-13)
    m = SpecialOrthogonal(5)
    a, b, c = (m.random_point(s) for s in (1, 2, 3))
    assert np.isclose(m.dist(c @ a, c @ b), m.dist(a, b)) and np.isclose(m.dist(a @ c, b @ c), m.dist(a, b))


def test_so2_is_the_unit_circle():
    m = SpecialOrthogonal(2)
    t = np.array([0.3, -2.0, 3.1])
    rot = np.stack([np.cos(t), -np.sin(t), np.sin(t), np.cos(t)], -1).reshape(3, 2, 2)
    assert np.allclose(m.dist(np.eye(2), rot), np.abs(t))
    assert np.allclose(m.to_coords(np.eye(2), m.log(np.eye(2), rot))[:, 0], t)  # basis [[0, -1], [1, 0]]


def test_spec_and_registry():
    from geodp.manifolds.registry import examples
    from geodp.manifolds.spec import manifold_from_spec

    assert repr(manifold_from_spec("so:3")) == "SpecialOrthogonal(3)"
    assert {"so3", "so4"} <= set(examples())


def test_project_gives_the_nearest_rotation():
    x = np.random.default_rng(11).standard_normal((50, 3, 3))
    r = SO3.project(x)
    SO3.check_point(r)
    nearest = np.linalg.norm(x - r, axis=(1, 2))
    others = np.linalg.norm(x[:, None] - rotations(200, 12)[None], axis=(2, 3)).min(axis=1)
    assert np.all(nearest <= others + 1e-12)


def test_volume_density_closed_form_on_so3():
    t = np.linspace(1e-3, np.pi, 50)
    v = SO3.from_coords(np.eye(3), t[:, None] * np.array([0.6, 0.0, 0.8]))
    assert np.allclose(SO3.volume_density(np.eye(3), v), 2 * (1 - np.cos(t)) / t**2, rtol=1e-12)


def test_volume_density_general_n_matches_finite_differences():
    """The ad-operator route on SO(5) (odd n > 3: roots theta_i +- theta_j and theta_i)."""
    from test_manifolds import exp_jacobian_det

    m = SpecialOrthogonal(5)
    p = m.random_point(15)
    v = m.from_coords(p, np.random.default_rng(16).standard_normal(m.dim))
    v *= 2.5 / m.norm(p, v)
    assert np.isclose(m.volume_density(p, v), exp_jacobian_det(m, p, v), rtol=1e-6)


@pytest.mark.parametrize("n, top", [(3, 0.25), (4, 0.5)])
def test_curvature_bound_attained(n, top):
    """K(X, Y) = |[X, Y]|^2/4 for orthonormal X, Y reaches the bound (the self-dual plane of so(4))."""
    m = SpecialOrthogonal(n)
    b = m.tangent_basis(np.eye(n))
    if n == 3:
        x, y = b[0], b[1]
    else:  # (E12 + E34)/sqrt 2 and (E13 - E24)/sqrt 2 in the row order of skew_basis(4)
        x, y = (b[0] + b[5]) / np.sqrt(2), (b[1] - b[4]) / np.sqrt(2)
    assert np.isclose(m.inner(np.eye(n), x, y), 0.0) and np.isclose(m.norm(np.eye(n), x), 1.0)
    bracket = x @ y - y @ x
    assert np.isclose(0.25 * m.inner(np.eye(n), bracket, bracket), top)
    assert m.curvature_bounds[1] == top


def laplace_angle_cdf(scale: float):
    """CDF of the density proportional to exp(-t/s)(1 - cos t) on [0, pi], by quadrature."""
    t = np.linspace(0.0, np.pi, 20001)
    f = np.exp(-t / scale) * (1 - np.cos(t))
    cdf = integrate.cumulative_trapezoid(f, t, initial=0.0)
    return lambda x: np.interp(x, t, cdf / cdf[-1])


@pytest.mark.parametrize("scale", [0.02, 0.1, 0.5, 2.0])
def test_laplace_on_so3_is_exact(scale):
    """Rotation angle to the footpoint ~ exp(-t/s)(1 - cos t) on [0, pi] (the radial law of the
    "sphere" family with c = 1/2, cut at pi < pi/c), and the axis uniform on S^2."""
    n = 20000
    foot = rotations(1, 13)[0]
    mech = RiemannianLaplace(SO3, scale)
    x = mech.sample(foot, n, rng=np.random.default_rng(14))
    assert mech.last_info.exact
    angle = SO3.dist(foot, x)
    assert angle.max() <= np.pi
    assert stats.kstest(angle, laplace_angle_cdf(scale)).pvalue > 1e-3
    w = SO3.to_coords(foot, SO3.log(foot, x))
    axis = w / np.linalg.norm(w, axis=1, keepdims=True)
    for k in range(3):  # each coordinate of a uniform point of S^2 is uniform on [-1, 1]
        assert stats.kstest(axis[:, k], stats.uniform(-1, 2).cdf).pvalue > 1e-3


def test_private_rotation_average_of_real_hand_orientations():
    """The Riemannian Laplace mean of the 53 SHREC'17 hand orientations: at a huge epsilon it is
    the Fréchet mean of the data (one record clipped onto the ball of radius 1.5 < pi/2 around the
    upright hand diag(-1, 1, -1)); its guarantee is pure DP for replace-one neighbours."""
    import geodp
    from geodp.datasets import load
    from geodp.learn.data_ball import enforce_ball
    from geodp.statistics import frechet_mean

    ds = load("hand-rotations")
    center, radius = np.diag([-1.0, 1.0, -1.0]), 1.5
    rel = geodp.private_frechet_mean(ds.manifold, ds.points, 1e6, center, radius, clip_data=True, rng=0)
    clipped, _ = enforce_ball(ds.manifold, ds.points, center, radius, True)
    assert ds.manifold.dist(rel.value, frechet_mean(ds.manifold, clipped).mean) < 1e-4
    assert ds.manifold.dist(rel.value, frechet_mean(ds.manifold, ds.points).mean) < 1e-2
    assert rel.exact_sampler and rel.diagnostics["clipped"]["records_clipped"] == 1
    assert rel.guarantee.describe() == "1e+06-DP (replace-one)"
    assert type(rel.guarantee).__name__ == "PureDP" and rel.guarantee.relation.value == "replace-one"
