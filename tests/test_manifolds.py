"""Property tests of the Riemannian geometry of every manifold family."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import MANIFOLDS, base_point, needs, safe_radius
from geodp.manifolds.capabilities import has

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
FRACTIONS = st.floats(min_value=1e-6, max_value=1.0)
NAMES = sorted(MANIFOLDS)
PROP = settings(max_examples=25, deadline=None)


def points(m, seed, frac, size):
    """Random points within frac * safe_radius of the base point (uniform where the manifold has
    a volume density, else along Gaussian directions)."""
    rng = np.random.default_rng(seed)
    if has(m, "volume_density"):
        return m.random_ball(base_point(m), frac * safe_radius(m), size=size, rng=rng)
    p = base_point(m)
    v = m.from_coords(p, rng.standard_normal((size, m.dim)))
    r = frac * safe_radius(m) * rng.uniform(0, 1, size) / m.norm(p, v)
    return m.exp(p, r.reshape((size,) + (1,) * len(m.point_shape)) * v)


def tangent(m, p, seed, scale):
    rng = np.random.default_rng(seed + 1)
    c = rng.standard_normal(p.shape[: p.ndim - len(m.point_shape)] + (m.dim,))
    return m.from_coords(p, scale * c)


@pytest.mark.parametrize("name", NAMES)
@given(seed=SEEDS, frac=FRACTIONS)
@PROP
def test_exp_log_inverse(name, seed, frac):
    m = MANIFOLDS[name]
    needs(m, "log")
    p, q = points(m, seed, frac, 2)
    v = m.log(p, q)
    m.check_tangent(p, v)
    q2 = m.exp(p, v)
    assert m.dist(q, q2) < 1e-9 * (1 + m.dist(p, q))
    assert np.isclose(m.dist(p, q), m.norm(p, v), rtol=1e-9, atol=1e-13)
    w = m.to_tangent(p, v)
    assert np.allclose(m.log(p, m.exp(p, w)), w, atol=1e-9)


@pytest.mark.parametrize("name", NAMES)
@given(seed=SEEDS, frac=FRACTIONS)
@PROP
def test_distance_symmetric_and_triangle(name, seed, frac):
    m = MANIFOLDS[name]
    needs(m, "log")
    a, b, c = points(m, seed, frac, 3)
    assert np.isclose(m.dist(a, b), m.dist(b, a), rtol=1e-10, atol=1e-14)
    assert m.dist(a, c) <= m.dist(a, b) + m.dist(b, c) + 1e-12
    assert m.dist(a, a) < 1e-7


@pytest.mark.parametrize("name", NAMES)
@given(seed=SEEDS, frac=FRACTIONS)
@PROP
def test_transport_is_isometry_into_tq(name, seed, frac):
    m = MANIFOLDS[name]
    needs(m, "log", "transport")
    p, q = points(m, seed, frac, 2)
    u, v = tangent(m, np.stack([p, p]), seed, 1.0)
    tu, tv = m.transport(p, q, u), m.transport(p, q, v)
    m.check_tangent(q, tu)
    assert np.isclose(m.inner(q, tu, tv), m.inner(p, u, v), rtol=1e-8, atol=1e-10)
    back = m.transport(q, p, tu)
    assert np.allclose(back, u, atol=1e-8)
    # the velocity of the geodesic is parallel: Gamma(Log_p q) = -Log_q p
    assert np.allclose(m.transport(p, q, m.log(p, q)), -m.log(q, p), atol=1e-8)


@pytest.mark.parametrize("name", NAMES)
@given(seed=SEEDS, frac=FRACTIONS)
@PROP
def test_tangent_basis_orthonormal_and_coords_isometric(name, seed, frac):
    m = MANIFOLDS[name]
    p = points(m, seed, frac, 1)[0]
    basis = m.tangent_basis(p)
    assert basis.shape == (m.dim,) + m.point_shape
    gram = m.inner(p, basis[:, None], basis[None, :])
    assert np.allclose(gram, np.eye(m.dim), atol=1e-9)
    v = m.to_tangent(p, np.random.default_rng(seed).standard_normal(m.point_shape))
    c = m.to_coords(p, v)
    assert np.isclose(c @ c, m.inner(p, v, v), rtol=1e-9, atol=1e-12)
    assert np.allclose(m.from_coords(p, c), v, atol=1e-9)


def exp_jacobian_det(m, p, v, h=1e-6):
    """|det d Exp_p(v)| in orthonormal frames, by central finite differences."""
    q = m.exp(p, v)
    basis = m.tangent_basis(p)
    cols = [m.to_coords(q, m.to_tangent(q, (m.exp(p, v + h * b) - m.exp(p, v - h * b)) / (2 * h)))
            for b in basis]
    return abs(np.linalg.det(np.stack(cols, axis=-1)))


@pytest.mark.parametrize("name", NAMES)
@given(seed=SEEDS, frac=st.floats(min_value=0.05, max_value=1.0))
@settings(max_examples=10, deadline=None)
def test_volume_density_matches_finite_differences(name, seed, frac):
    m = MANIFOLDS[name]
    needs(m, "volume_density")
    p = base_point(m)
    v = tangent(m, p, seed, 1.0)
    v *= frac * safe_radius(m) / m.norm(p, v)
    assert np.isclose(m.volume_density(p, v), exp_jacobian_det(m, p, v), rtol=1e-6)
    assert m.volume_density(p, v) <= m.max_volume_density(frac * safe_radius(m)) * (1 + 1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_before_cut_locus_is_where_exp_is_minimising(name):
    """Inside the domain of ``before_cut_locus`` (beyond the injectivity radius too)
    rho(p, Exp_p v) = |v| < diameter and 0 < J <= 1 (curvature >= 0); at |v| >= diameter, outside."""
    m = MANIFOLDS[name]
    needs(m, "before_cut_locus", "diameter", "log", "volume_density")
    p, rng = base_point(m), np.random.default_rng(5)
    c = rng.standard_normal((400, m.dim))
    c *= (1.2 * m.diameter * rng.random(400) / np.linalg.norm(c, axis=1))[:, None]
    v = m.from_coords(p, c)
    inside, length = m.before_cut_locus(p, v), np.linalg.norm(c, axis=1)
    assert inside.shape == (400,) and np.any(inside) and not np.any(inside & (length >= m.diameter))
    assert np.any(inside & (length > m.injectivity_radius)) or m.diameter == m.injectivity_radius
    assert np.allclose(m.dist(p, m.exp(p, v[inside])), length[inside], atol=1e-8)
    j = m.volume_density(p, v[inside])
    assert np.all(j > 0) and (m.curvature_bounds[0] < 0 or np.all(j <= 1 + 1e-12))


def sectional_curvature(m, p, u, w, t=2e-3):
    """K(u, w) from rho^2(Exp tu, Exp tw) = t^2 |u - w|^2 - K t^4 / 3 + O(t^6), u, w orthonormal."""
    d2 = m.dist(m.exp(p, t * u), m.exp(p, t * w)) ** 2
    return 3.0 * (2.0 * t * t - d2) / t**4


@pytest.mark.parametrize("name", NAMES)
@given(seed=SEEDS)
@settings(max_examples=10, deadline=None)
def test_sectional_curvature_within_bounds(name, seed):
    m = MANIFOLDS[name]
    needs(m, "log", "curvature_bounds")
    if m.dim < 2:
        return
    p = base_point(m)
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((m.dim, 2)))
    u, w = m.from_coords(p, q[:, 0]), m.from_coords(p, q[:, 1])
    k = sectional_curvature(m, p, u, w)
    lo, hi = m.curvature_bounds
    assert lo - 1e-3 <= k <= hi + 1e-3


@pytest.mark.parametrize("name", ["sphere5_k4", "hyperbolic4_k05", "spd2", "kendall6"])
def test_curvature_bounds_are_attained(name):
    """The bounds are sharp: some 2-planes reach them (so the bounds are not vacuous)."""
    m = MANIFOLDS[name]
    p = base_point(m)
    rng = np.random.default_rng(0)
    ks = []
    for _ in range(200):
        q, _ = np.linalg.qr(rng.standard_normal((m.dim, 2)))
        ks.append(sectional_curvature(m, p, m.from_coords(p, q[:, 0]), m.from_coords(p, q[:, 1])))
    lo, hi = m.curvature_bounds
    if name == "kendall6":
        u = m.from_coords(p, np.eye(m.dim)[0])
        iu = m.to_tangent(p, np.stack([-u[:, 1], u[:, 0]], axis=-1))
        ks.append(sectional_curvature(m, p, u, iu / m.norm(p, iu)))
    assert min(ks) < lo + 0.1 * (hi - lo) + 1e-2
    assert max(ks) > hi - 0.1 * (hi - lo) - 1e-2


def test_batched_broadcasting(manifold):
    m = manifold
    needs(m, "log")
    ps = points(m, 1, 0.5, 12).reshape((4, 3) + m.point_shape)
    q = points(m, 2, 0.5, 1)[0]
    d = m.dist(ps, q)
    assert d.shape == (4, 3)
    assert np.allclose(d[2, 1], m.dist(ps[2, 1], q))
    v = m.log(ps, q)
    assert v.shape == (4, 3) + m.point_shape
    assert np.allclose(m.exp(ps, v)[1, 2], m.exp(ps[1, 2], v[1, 2]))


def test_random_ball_inside_radius(manifold):
    m = manifold
    needs(m, "log", "volume_density")
    c = base_point(m)
    r = 0.3 * safe_radius(m)
    x = m.random_ball(c, r, size=500, rng=np.random.default_rng(3))
    d = m.dist(c, x)
    assert d.max() <= r * (1 + 1e-9)
    assert d.max() > 0.9 * r


def test_random_ball_radial_law_uniform_volume():
    """Uniform on a spherical cap of S^2: P(rho <= t) = (1 - cos t)/(1 - cos r)."""
    from scipy import stats

    m = MANIFOLDS["sphere2"]
    r = 1.2
    d = m.dist(base_point(m), m.random_ball(base_point(m), r, 4000, np.random.default_rng(7)))
    res = stats.kstest(d, lambda t: (1 - np.cos(t)) / (1 - np.cos(r)))
    assert res.pvalue > 1e-3


def test_small_distances_are_accurate(manifold):
    m = manifold
    needs(m, "log")
    p = base_point(m)
    v = tangent(m, p, 5, 1.0)
    v *= 1e-10 / m.norm(p, v)
    assert np.isclose(m.dist(p, m.exp(p, v)), 1e-10, rtol=1e-6)


def test_check_point_rejects_bad_input(manifold):
    m = manifold
    p = base_point(m)
    with pytest.raises(ValueError, match="NaN"):
        m.check_point(np.full(m.point_shape, np.nan))
    with pytest.raises(ValueError, match="shape"):
        m.check_point(np.zeros((7,)))
    if not has(m, "curvature_bounds") or m.curvature_bounds != (0.0, 0.0) or hasattr(m, "n"):
        with pytest.raises(ValueError):
            square = hasattr(m, "n") and m.point_shape == (m.n, m.n)  # SPD: p * 1.5 is SPD
            bad = p + np.triu(np.ones(m.point_shape), 1) if square else p * 1.5
            m.check_point(bad)
    m.check_point(p)


def test_origin_and_random_points_lie_on_the_manifold(manifold):
    m = manifold
    assert m.check_point(m.origin()).shape == m.point_shape
    assert np.array_equal(m.random_point(3), m.random_point(3))
    m.check_point(m.random_point(4))


def test_missing_capabilities_raise_naming_the_manifold_and_method():
    """A manifold that implements the required core only: every optional capability raises
    MissingCapability naming it, has() says so, and the Riemannian Laplace refuses up front."""
    from geodp.manifolds import Euclidean, Manifold
    from geodp.manifolds.capabilities import MissingCapability, require
    from geodp.mechanisms import RiemannianLaplace

    class Bare(Euclidean):
        log = transport = volume_density = radial_volume = Manifold.log
        dist = Manifold.dist
        __repr__ = lambda self: "Bare(2)"

    m = Bare(2)
    assert not has(m, "log") and not has(m, "dist") and has(m, "exp")
    with pytest.raises(MissingCapability, match="Bare\\(2\\) provides no 'log'"):
        m.dist(m.origin(), m.origin())
    with pytest.raises(MissingCapability, match="the Riemannian Laplace mechanism needs 'dist'"):
        RiemannianLaplace(m, 1.0)
    with pytest.raises(MissingCapability, match="needs 'transport'"):
        require(m, ["exp", "transport"], by="a test")


@pytest.mark.parametrize("kind", ["sphere", "hyperboloid"])
def test_angle_ratio_as_function_of_cosine(kind):
    """theta/sin(theta) from c = cos(theta) (theta/sinh(theta) from c = cosh(theta)) matches the
    direct ratio on both sides of the series threshold, down to theta = 1e-7 and at c = 1."""
    from geodp.manifolds._special import acos_ratio, acosh_ratio

    theta = np.concatenate([np.logspace(-7, 0, 300), [1e-2 * np.sqrt(2.0) * 0.99, 2.0, 3.0]])
    if kind == "sphere":
        got, ref = acos_ratio(np.cos(theta)), theta / np.sin(theta)
        assert acos_ratio(1.0) == 1.0
    else:
        got, ref = acosh_ratio(np.cosh(theta)), theta / np.sinh(theta)
        assert acosh_ratio(1.0) == 1.0
    assert np.max(np.abs(got / ref - 1.0)) < 1e-14
