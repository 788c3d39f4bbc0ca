"""Geometry at its edges, against high-precision references: tiny eigenvalues, ill-conditioned
SPD pairs, points a rounding error from the sphere's cut locus, far hyperboloid points, and a
Karcher iteration that converges (or says it did not) on ill-conditioned data."""

from __future__ import annotations

import warnings

import mpmath as mp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geodp.manifolds import SPD, Hyperbolic, Sphere
from geodp.manifolds.hyperbolic import HyperboloidPrecisionWarning
from geodp.statistics import ConvergenceWarning, frechet_mean


def ill_conditioned(n: int, cond: float, rng: np.random.Generator) -> np.ndarray:
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    x = (q * np.logspace(0, -np.log10(cond), n)) @ q.T
    return 0.5 * (x + x.T)


def dist_mpmath(p: np.ndarray, q: np.ndarray) -> float:
    """|log(P^-1/2 Q P^-1/2)|_F of the given double matrices, in 40-digit arithmetic."""
    mp.mp.dps = 40
    pm, qm = mp.matrix(p.tolist()), mp.matrix(q.tolist())
    w, u = mp.eigsy(pm)
    s = u * mp.diag([1 / mp.sqrt(x) for x in w]) * u.T
    lam, _ = mp.eigsy(s * qm * s)
    return float(mp.sqrt(sum(mp.log(x) ** 2 for x in lam)))


@pytest.mark.parametrize("n", [2, 3])
def test_tiny_eigenvalues_are_exact(n, kernel_route):
    scales = np.array([1.0, 1e-8, 1e-15, 1e-16, 1e-17, 1e-100, 1e-300])
    mats = np.stack([np.diag(np.r_[np.ones(n - 1), s]) for s in scales])
    m = SPD(n)
    assert np.allclose(m.dist(np.eye(n), mats), -np.log(scales), rtol=1e-14, atol=0)
    logs = m.log(np.eye(n), mats)
    assert np.allclose(logs[:, -1, -1], np.log(scales), rtol=1e-14, atol=0)
    assert np.all(np.isfinite(logs))
    # the fallback is per matrix: well-conditioned neighbours keep the closed form's answer
    assert np.allclose(logs[0], 0.0, atol=1e-15)


@pytest.mark.parametrize("n", [2, 3, 5])
def test_ill_conditioned_distance_is_accurate_and_symmetric(n, kernel_route):
    rng = np.random.default_rng(n)
    errors = []
    for _ in range(25):
        p, q = ill_conditioned(n, 1e8, rng), ill_conditioned(n, 1e8, rng)
        m = SPD(n)
        d_pq, d_qp = m.dist(p, q), m.dist(q, p)
        assert d_pq == d_qp
        assert m.dist(p, q[None])[0] == m.dist(q[None], p)[0]
        errors.append(abs(d_pq / dist_mpmath(p, q) - 1))
    # pyRiemann's Cholesky-and-solve reduction on such inputs: median 2e-7, worst 1e-3 (SPD(3))
    assert np.median(errors) < 1e-5 and max(errors) < 2e-3


@pytest.mark.parametrize("cond", [1e2, 1e8])
def test_one_base_distance_routes_are_accurate(cond, monkeypatch):
    """A batch against one base point whitens by products with L^-T when L is well conditioned
    and by forward substitution otherwise; both routes match 40 digits as closely (SPD(5))."""
    from geodp.manifolds import _matrix as mx

    rng = np.random.default_rng(7)
    m = SPD(5)
    p = ill_conditioned(5, cond, rng)
    l = np.linalg.cholesky(p)
    near = np.stack([l @ m.exp(np.eye(5), m.from_coords(np.eye(5), 0.3 * rng.standard_normal(15))) @ l.T
                     for _ in range(6)])
    near = 0.5 * (near + np.swapaxes(near, 1, 2))
    reference = np.array([dist_mpmath(p, q) for q in near])
    products = mx.WELL_CONDITIONED >= np.linalg.norm(l) * np.linalg.norm(np.linalg.inv(l))
    assert products == (cond < 1e4)
    tolerance = 1e-13 if cond < 1e4 else 1e-7
    assert np.max(np.abs(m.dist(p, near) / reference - 1)) < tolerance
    monkeypatch.setattr(mx, "WELL_CONDITIONED", np.inf if not products else 0.0)
    assert np.max(np.abs(m.dist(p, near) / reference - 1)) < tolerance, "the other route"


def test_sphere_log_near_the_cut_locus():
    s = Sphere(2)
    x = np.array([0.5473910394435679, -0.4067427994209252, -0.7313845397984012])
    y = np.array([-0.5473910394451591, 0.40674279942161334, 0.7313845397968277])
    v = s.log(x, y)
    mp.mp.dps = 40
    gap = mp.sqrt(sum((mp.mpf(a) + mp.mpf(b)) ** 2 for a, b in zip(x, y)))
    chord = mp.sqrt(sum((mp.mpf(a) - mp.mpf(b)) ** 2 for a, b in zip(x, y)))
    exact = float(2 * mp.atan2(chord, gap))
    assert np.linalg.norm(v) == pytest.approx(exact, rel=1e-15)
    assert s.dist(x, y) == pytest.approx(exact, rel=1e-15)
    assert np.linalg.norm(s.exp(x, v) - y) < 1e-12
    with pytest.raises(ValueError, match="antipodal"):
        s.log(x, -x)


@settings(max_examples=60, deadline=None)
@given(st.floats(-30, -4), st.integers(0, 2), st.integers(0, 10**6))
def test_log_a_rounding_error_from_the_antipode(log_gap, axis, seed):
    s = Sphere(2)
    rng = np.random.default_rng(seed)
    p = s.project(rng.normal(size=3)) if seed % 2 else np.eye(3)[axis]
    q = s.project(-p + 10.0 ** log_gap * s.to_tangent(p, rng.normal(size=3)))
    if np.array_equal(q, -p):
        return
    v = s.log(p, q)
    assert np.all(np.isfinite(v))
    assert np.linalg.norm(v) == pytest.approx(s.dist(p, q), rel=1e-14)
    assert abs(p @ v) < 1e-12 and s.dist(p, q) > np.pi - 1e-3


def test_far_hyperboloid_points_warn():
    h = Hyperbolic(2)
    near = h.exp(np.array([1.0, 0, 0]), np.array([0.0, 8.0, 0]))
    far = h.exp(np.array([1.0, 0, 0]), np.array([0.0, 12.0, 0]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        h.check_point(near)
    with pytest.warns(HyperboloidPrecisionWarning, match="beyond distance 9.9") as caught:
        h.check_point(far)
    assert "12" not in str(caught[0].message)  # how far is not quoted: it may be a record


@pytest.mark.parametrize("n", [2, 3, 4, 6])
def test_karcher_iteration_is_globally_convergent_on_ill_conditioned_data(n, kernel_route):
    rng = np.random.default_rng(10 + n)
    moderate = np.stack([ill_conditioned(n, 1e4, rng) for _ in range(40)])
    fit = frechet_mean(SPD(n), moderate, max_iter=2000)
    assert fit.converged
    extreme = np.stack([ill_conditioned(n, 1e8, rng) for _ in range(40)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        default = frechet_mean(SPD(n), extreme, max_iter=2000)
        careful = frechet_mean(SPD(n), extreme, step=0.25, max_iter=5000)
    assert np.all(np.isfinite(default.mean)) and np.isfinite(default.grad_norm)
    assert SPD(n).dist(default.mean, careful.mean) < 1e-3
    if not default.converged:
        with pytest.warns(ConvergenceWarning, match="not converged"):
            frechet_mean(SPD(n), extreme, max_iter=2000)


def test_unconverged_mean_warns():
    x = Sphere(2).project(np.random.default_rng(0).normal(size=(50, 3)) + [0, 0, 10])
    with pytest.warns(ConvergenceWarning, match="raise max_iter"):
        fit = frechet_mean(Sphere(2), x, max_iter=1)
    assert not fit.converged
    with pytest.raises(ValueError, match="tol"):
        frechet_mean(Sphere(2), x, tol=-1)
