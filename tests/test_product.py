"""Product manifolds: factor-wise maps on flat points, capabilities as the factors'
intersection, dimension, curvature bounds and injectivity radius."""

from __future__ import annotations

import numpy as np
import pytest

from geodp.manifolds import SPD, Euclidean, Hyperbolic, Product, Sphere, Stiefel
from geodp.manifolds.capabilities import MissingCapability, has, require


def sample(m, size, seed):
    """Points and tangent vectors (size, N) at them."""
    rng = np.random.default_rng(seed)
    o = m.origin()
    p = m.exp(o, m.from_coords(o, 0.7 * rng.standard_normal((size, m.dim))))
    return p, m.from_coords(p, rng.standard_normal((size, m.dim)))


@pytest.fixture
def se():
    return Product(Sphere(2), Euclidean(3))


def test_representation_and_dimension(se):
    st = Product(Sphere(2), Stiefel(4, 2), SPD(2))
    assert (st.dim, st.point_shape, st.sizes) == (2 + 5 + 3, (3 + 8 + 4,), (3, 8, 4))
    assert (se.dim, se.point_shape) == (5, (6,))
    p, _ = sample(st, 4, 0)
    parts = st.split(p)
    assert [a.shape for a in parts] == [(4, 3), (4, 4, 2), (4, 2, 2)]
    assert np.array_equal(st.join(parts), p)
    assert st.join([parts[0][0], parts[1], parts[2][1]]).shape == (4, 15)  # batches broadcast
    assert np.array_equal(st.origin(), np.concatenate([np.eye(3)[2], np.eye(4, 2).ravel(),
                                                       np.eye(2).ravel()]))
    with pytest.raises(TypeError, match="Manifold instances"):
        Product(3)
    assert repr(st) == "Product(Sphere(2), Stiefel(4, 2), SPD(2, metric='affine'))"


def test_maps_act_factor_wise(se):
    s, e = se.factors
    (p, v), (q, _) = sample(se, 5, 1), sample(se, 5, 2)
    (ps, pe), (vs, ve), (qs, qe) = se.split(p), se.split(v), se.split(q)
    assert np.allclose(se.split(se.exp(p, v))[0], s.exp(ps, vs))
    assert np.allclose(se.split(se.exp(p, v))[1], pe + ve)
    assert np.allclose(se.inner(p, v, v), s.inner(ps, vs, vs) + np.sum(ve * ve, axis=-1))
    assert np.allclose(se.log(p, q), se.join([s.log(ps, qs), qe - pe]))
    assert np.allclose(se.dist(p, q), np.hypot(s.dist(ps, qs), e.dist(pe, qe)))
    assert np.allclose(se.transport(p, q, v), se.join([s.transport(ps, qs, vs), ve]))
    assert np.allclose(se.to_coords(p, v), np.concatenate([s.to_coords(ps, vs), ve], axis=-1))
    assert np.allclose(se.from_coords(p, se.to_coords(p, v)), v)
    x = np.random.default_rng(3).standard_normal((5, 6))
    assert np.allclose(se.to_tangent(p, x), se.join([s.to_tangent(ps, se.split(x)[0]), se.split(x)[1]]))
    assert np.allclose(se.project(2.0 * p), se.join([ps, 2.0 * pe]))
    assert np.allclose(se.volume_density(p, v), s.volume_density(ps, vs))
    da, dv = se.exp_adjoints(p, v, se.to_tangent(se.exp(p, v), x))
    assert da.shape == dv.shape == (5, 6)


def test_coordinates_isometry_with_stiefel_factor():
    m = Product(Sphere(2), Stiefel(4, 2))
    p, _ = sample(m, 3, 4)
    c = np.random.default_rng(5).standard_normal((3, 2, m.dim))
    u, w = m.from_coords(p, c[:, 0]), m.from_coords(p, c[:, 1])
    assert np.allclose(m.inner(p, u, w), np.sum(c[:, 0] * c[:, 1], axis=-1), atol=1e-13)
    assert np.allclose(m.to_coords(p, u), c[:, 0], atol=1e-13)
    m.check_tangent(p, u)
    m.check_point(m.exp(p, u))
    with pytest.raises(ValueError, match="not on"):
        m.check_point(m.join([m.split(p[0])[0], 2 * m.split(p[0])[1]]))


def test_capabilities_are_the_factors_intersection(se):
    m = Product(Sphere(2), Stiefel(4, 2))
    for name in ("log", "dist", "transport", "volume_density", "curvature_bounds",
                 "injectivity_radius", "mean_log_and_value", "exp_adjoints"):
        assert not has(m, name), name
        assert has(se, name), name
    assert has(m, "egrad_to_rgrad") and has(m, "exp")
    assert not has(se, "radial_volume") and not has(se, "eigen_laplace_size")
    p = m.origin()
    with pytest.raises(MissingCapability, match=r"Product\(Sphere\(2\), Stiefel\(4, 2\)\) provides "
                                                r"no 'log': its factor Stiefel\(4, 2\) does not"):
        m.log(p, p)
    with pytest.raises(MissingCapability, match="provides no 'dist'"):
        m.dist(p, p)
    with pytest.raises(MissingCapability, match="provides no 'curvature_bounds'"):
        m.curvature_bounds
    with pytest.raises(MissingCapability, match="needs 'log'"):
        require(m, ["exp", "log"], by="a test")
    g = np.random.default_rng(6).standard_normal(m.point_shape)
    assert np.allclose(m.egrad_to_rgrad(p, g), m.to_tangent(p, g))
    assert not m.is_hadamard and Product(Euclidean(2), Hyperbolic(2)).is_hadamard


def test_curvature_bounds_and_injectivity_radius(se):
    assert se.curvature_bounds == (0.0, 1.0)
    m = Product(Sphere(2, curvature=4.0), Hyperbolic(3, curvature=-0.5))
    assert m.curvature_bounds == (-0.5, 4.0)
    assert m.injectivity_radius == Sphere(2, curvature=4.0).injectivity_radius
    assert Product(Sphere(3)).curvature_bounds == (1.0, 1.0)
    assert Product(Sphere(2), Sphere(3, curvature=2.0)).curvature_bounds == (0.0, 2.0)


def sectional(m, p, u, w, t=2e-3):
    d2 = m.dist(m.exp(p, t * u), m.exp(p, t * w)) ** 2
    return 3.0 * (2.0 * t * t - d2) / t**4


def test_sectional_curvature_is_the_weighted_sum():
    """K(u, w) = K_1 |u_1 ^ w_1|^2 + K_2 |u_2 ^ w_2|^2: a plane with one vector in each factor is
    flat, a plane inside a factor has that factor's curvature, a mixed plane lies between."""
    m = Product(Sphere(2, curvature=4.0), Hyperbolic(2, curvature=-0.5))
    p = m.origin()
    e = [m.from_coords(p, row) for row in np.eye(4)]
    assert np.isclose(sectional(m, p, e[0], e[1]), 4.0, atol=1e-3)
    assert np.isclose(sectional(m, p, e[2], e[3]), -0.5, atol=1e-3)
    assert np.isclose(sectional(m, p, e[0], e[2]), 0.0, atol=1e-3)
    u, w = (e[0] + e[2]) / np.sqrt(2), (e[1] + e[3]) / np.sqrt(2)
    assert np.isclose(sectional(m, p, u, w), 0.25 * 4.0 + 0.25 * -0.5, atol=1e-3)


def test_random_ball_and_volume_bound(se):
    c = se.origin()
    x = se.random_ball(c, 1.0, 300, np.random.default_rng(7))
    assert np.all(se.dist(c, x) <= 1.0 + 1e-12)
    assert se.max_volume_density(1.0) == 1.0
