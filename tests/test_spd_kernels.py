"""The SPD kernels' fast routes (issue 31) against LAPACK and 40-digit references: the
entry-by-entry Cholesky factor, triangular solve and Gram product, the blocked triangular
inverse, the three two-batch distance routes, and the reconstructions of log and transport."""

from __future__ import annotations

import functools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geodp.manifolds import SPD
from geodp.manifolds import _matrix as mx
from geodp.manifolds import _triangular as tri
from geodp.manifolds import spd

from test_geometry_edges import dist_mpmath, ill_conditioned

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)
ROUTES = {"entrywise": spd._pair_distances_entrywise, "inverse": spd._pair_distances_inverse,
          "lapack": spd._pair_distances_lapack}


def random_spd(rng, n, size, spread=1.0, scale=1.0):
    """SPD matrices scale * Q diag(e^s) Q^T with s ~ N(0, spread^2)."""
    q, _ = np.linalg.qr(rng.standard_normal(size + (n, n)))
    lam = np.exp(spread * rng.standard_normal(size + (n,)))
    x = np.einsum("...ij,...j,...kj->...ik", q, lam, q)
    return scale * 0.5 * (x + np.swapaxes(x, -1, -2))


def from_entries(e):
    return np.moveaxis(e, (0, 1), (-2, -1))


@given(seed=SEEDS, n=st.integers(1, 9), spread=st.floats(0.0, 4.0),
       log_scale=st.floats(-290.0, 290.0), swap_rate=st.floats(0.0, 1.0))
@settings(max_examples=60, deadline=None)
def test_entrywise_cholesky_solve_and_gram_are_backward_stable(seed, n, spread, log_scale, swap_rate):
    """Entries layout (n, n, *batch), on matrices of any scale and of condition up to e^(8 spread):
    the factor has L L^T = A and the solve (pairs exchanged where ``swap``) F C = G to
    16 n eps |L| |L^T| and 16 n eps |F| |C| entrywise (the backward errors of LAPACK's potrf and
    trsm, Higham, Accuracy and Stability, Thms 10.3 and 8.5), with zero-free diagonals; the
    Gram product equals C C^T to n eps |C| |C^T|."""
    rng = np.random.default_rng(seed)
    p, q = (random_spd(rng, n, (3, 7), spread, 10.0**log_scale) for _ in range(2))
    eps = 16 * n * np.finfo(float).eps
    lp = np.tril(from_entries(tri.cholesky_lower(tri.lower_entries(p))))
    lq = np.tril(from_entries(tri.cholesky_lower(tri.lower_entries(q))))
    for low, a in ((lp, p), (lq, q)):
        assert np.all(np.abs(low @ np.swapaxes(low, -1, -2) - a)
                      <= eps * (np.abs(low) @ np.abs(np.swapaxes(low, -1, -2))))
        assert np.all(np.diagonal(low, axis1=-2, axis2=-1) > 0)
    swap = rng.random((3, 7)) < swap_rate
    f = np.where(swap[..., None, None], lq, lp)
    g = np.where(swap[..., None, None], lp, lq)
    c = np.tril(from_entries(tri.solve_lower(np.ascontiguousarray(np.moveaxis(lp, (-2, -1), (0, 1))),
                                             np.ascontiguousarray(np.moveaxis(lq, (-2, -1), (0, 1))), swap)))
    assert np.all(np.abs(f @ c - g) <= eps * (np.abs(f) @ np.abs(c)))
    z = from_entries(tri.gram_lower(np.ascontiguousarray(np.moveaxis(c, (-2, -1), (0, 1))), upper=True))
    ct = np.swapaxes(c, -1, -2)
    assert np.all(np.abs(z - c @ ct) <= eps * (np.abs(c) @ np.abs(ct)))


def test_entrywise_buffers_may_be_reused():
    """``out=`` the inputs themselves (as the distance route does) gives the same results."""
    rng = np.random.default_rng(2)
    p, q = random_spd(rng, 6, (40,)), random_spd(rng, 6, (40,))
    swap = rng.random(40) < 0.5
    lp, lq = tri.cholesky_lower(tri.lower_entries(p)), tri.cholesky_lower(tri.lower_entries(q))
    c = tri.solve_lower(lp, lq, swap)
    z = tri.gram_lower(c)
    ep, eq = tri.lower_entries(p), tri.lower_entries(q)
    low = np.tril_indices(6)
    lp2, lq2 = tri.cholesky_lower(ep, out=ep), tri.cholesky_lower(eq, out=eq)
    assert np.array_equal(lp[low], lp2[low]) and np.array_equal(lq[low], lq2[low])
    c2 = tri.solve_lower(lp2, lq2, swap, out=lq2)
    assert np.array_equal(c[low], c2[low])
    z2 = tri.gram_lower(c2, out=lp2)
    assert np.array_equal(z[low], z2[low])


@given(seed=SEEDS, n=st.integers(1, 33), lower=st.booleans(), log_cond=st.floats(0.0, 6.0))
@settings(max_examples=60, deadline=None)
def test_blocked_triangular_inverse_matches_lapack(seed, n, lower, log_cond):
    """Leaves of at most ``LEAF`` entry by entry and doubling levels, for every n (odd, powers
    of two, in between, and the sizes padded for want of small leaves) and both triangles: the
    inverse of LAPACK's, to the accuracy the condition allows, with the other triangle exactly
    zero; with ``overwrite``, the same bits in the factor's place."""
    rng = np.random.default_rng(seed)
    a = np.stack([ill_conditioned(n, 10.0**log_cond, rng) + 1e-300 * np.eye(n) for _ in range(6)])
    t = np.linalg.cholesky(a)
    t = t if lower else np.ascontiguousarray(np.swapaxes(t, -1, -2))
    x = tri.inverse_blocked(t.reshape(2, 3, n, n), lower=lower).reshape(t.shape)
    ref = np.linalg.inv(t)
    assert np.allclose(x, ref, rtol=0, atol=1e-13 * 10.0 ** (log_cond / 2) * np.abs(ref).max())
    other = np.triu(x, 1) if lower else np.tril(x, -1)
    assert not np.any(other)
    in_place = tri.inverse_blocked(t, lower=lower, overwrite=True)
    assert np.shares_memory(in_place, t) and np.array_equal(in_place, x)


@given(seed=SEEDS, n=st.integers(2, 12), spread=st.floats(0.1, 3.0), size=st.integers(16, 80))
@settings(max_examples=40, deadline=None)
def test_pair_distance_routes_agree_and_are_symmetric(seed, n, spread, size):
    """The entrywise, inverse-factor and LAPACK reductions give the same distances, to 1e-13
    times the larger condition number of the pair (n eps cond: their rounding errors), each
    exactly symmetric in its arguments."""
    rng = np.random.default_rng(seed)
    p, q = random_spd(rng, n, (size,), spread), random_spd(rng, n, (size,), spread)
    cond = np.maximum(np.linalg.cond(p), np.linalg.cond(q))
    ref = spd._pair_distances_lapack(p, q)
    for name, route in ROUTES.items():
        d = route(p, q)
        assert np.all(np.abs(d - ref) <= 1e-13 * cond * np.maximum(ref, 1.0)), name
        assert np.array_equal(d, route(q, p)), name


@functools.lru_cache(maxsize=None)
def edge_pairs(n):
    """Pairs of condition 1e2 and 1e8, and a multiple of the identity against condition 1e12,
    with their 40-digit distances (computed once for every route and scale: the distance is
    invariant under a common scaling)."""
    rng = np.random.default_rng(n)
    out = []
    for cond in (1e2, 1e8):
        p = np.stack([ill_conditioned(n, cond, rng) for _ in range(20)])
        q = np.stack([ill_conditioned(n, cond, rng) for _ in range(20)])
        out.append((p, q, np.array([dist_mpmath(a, b) for a, b in zip(p, q)])))
    p = np.stack([ill_conditioned(n, 1e12, rng) for _ in range(6)])
    eye = np.broadcast_to(3.0 * np.eye(n), p.shape)
    out.append((p, eye, np.array([dist_mpmath(a, b) for a, b in zip(p, eye)])))
    return out


@pytest.mark.parametrize("route", sorted(ROUTES))
@pytest.mark.parametrize("n", [2, 3, 5, 7, 8, 12])
@pytest.mark.parametrize("scale", [1.0, 1e-290])
def test_pair_distance_routes_at_the_edges(route, n, scale):
    """Against 40 digits: pairs of condition 1e2 to 1e-13; pairs of condition 1e8 to a median
    of 3e-5 and at worst 2e-3 (measured on 20 pairs: medians 3e-10 to 1.6e-5 for every route and
    n, the LAPACK route's 2-D test in test_geometry_edges asks a median of 1e-5 of 25 pairs);
    a multiple of the identity against a condition-1e12 matrix to 1e-5 (the eigenvalues of such
    a matrix are themselves uncertain to 1e-4 relative); at scale 1 and at 1e-290, where the
    smallest eigenvalues (1e-298, 1e-302) are near the end of the normal range; every distance
    exactly symmetric."""
    fn = ROUTES[route]
    for (p, q, ref), (median, worst) in zip(edge_pairs(n), ((1e-13, 1e-13), (3e-5, 2e-3), (1e-5, 1e-5))):
        d = fn(scale * p, scale * q)
        assert np.array_equal(d, fn(scale * q, scale * p))
        errors = np.abs(d / ref - 1)
        assert np.median(errors) < median and np.max(errors) < worst, errors.max()


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_pairs_with_a_matrix_that_is_not_positive_definite(route):
    """Such a pair is reduced by the other matrix's factor, as in the LAPACK route (NaN where an
    eigenvalue is negative); a batch with two failed factors in a pair raises as LAPACK does."""
    rng = np.random.default_rng(4)
    n = 7 if route == "inverse" else 5
    p, q = random_spd(rng, n, (30,)), random_spd(rng, n, (30,))
    q[3] = -q[3]
    q[7, 0, 0] = 0.0
    p[9] = np.diag(np.r_[1e-20, np.ones(n - 1)])
    with np.errstate(invalid="ignore", divide="ignore"):
        got, ref = ROUTES[route](p, q), spd._pair_distances_lapack(p, q)
    assert np.array_equal(np.isnan(got), np.isnan(ref)) and np.isnan(got[3])
    assert np.allclose(got[~np.isnan(ref)], ref[~np.isnan(ref)], rtol=1e-12)


def test_dist_takes_each_route_by_size(monkeypatch):
    """SPD.dist between batches: entrywise for n <= ENTRYWISE_MAX_N, the inverse factor above,
    LAPACK solves for small batches; all the same distances."""
    calls = []
    for name in ("_pair_distances_entrywise", "_pair_distances_inverse", "_pair_distances_lapack"):
        original = getattr(spd, name)
        monkeypatch.setattr(spd, name, lambda p, q, f=original, k=name: calls.append(k) or f(p, q))
    rng = np.random.default_rng(1)
    for n, size, expected in ((5, 200, "entrywise"), (9, 200, "inverse"), (9, 4, "lapack")):
        p, q = random_spd(rng, n, (size,)), random_spd(rng, n, (size,))
        calls.clear()
        d = SPD(n).dist(p, q)
        assert calls[0] == f"_pair_distances_{expected}"
        assert np.allclose(d, np.array([SPD(n).dist(a, b) for a, b in zip(p, q)]), rtol=1e-12)


@given(seed=SEEDS, n=st.integers(2, 10), batched=st.booleans())
@settings(max_examples=30, deadline=None)
def test_log_and_transport_match_their_definitions(seed, n, batched):
    """Log_P(Q) = P^1/2 logm(P^-1/2 Q P^-1/2) P^1/2 and Gamma(V) = E V E^T, E = (Q P^-1)^1/2,
    through eigendecompositions of P (the definitions, not geodp's factorisations); both results
    exactly symmetric."""
    rng = np.random.default_rng(seed)
    m = SPD(n)
    p = random_spd(rng, n, (300,) if batched else (), 0.5)
    q, v = random_spd(rng, n, (300,), 0.8), mx.sym(rng.standard_normal((300, n, n)))

    def power(a, t):
        w, u = np.linalg.eigh(a)
        return (u * w[..., None, :] ** t) @ np.swapaxes(u, -1, -2)

    half, inv_half = power(p, 0.5), power(p, -0.5)
    w, u = np.linalg.eigh(inv_half @ q @ inv_half)
    log_ref = half @ ((u * np.log(w)[..., None, :]) @ np.swapaxes(u, -1, -2)) @ half
    e = half @ ((u * np.sqrt(w)[..., None, :]) @ np.swapaxes(u, -1, -2)) @ inv_half
    transport_ref = e @ v @ np.swapaxes(e, -1, -2)
    for got, ref in ((m.log(p, q), log_ref), (m.transport(p, q, v), transport_ref)):
        assert np.array_equal(got, np.swapaxes(got, -1, -2))
        assert np.allclose(got, ref, rtol=0, atol=1e-11 * np.abs(ref).max())


@pytest.mark.parametrize("n", [3, 5, 8])
def test_whitening_for_lapack_differs_from_the_exact_one_by_rounding(n):
    """``exact=False`` skips the symmetrising pass: the same matrix to rounding, and the same
    eigenvalues from LAPACK (which reads one triangle)."""
    rng = np.random.default_rng(n)
    x = random_spd(rng, n, (300,))
    l = np.linalg.cholesky(random_spd(rng, n, ()))
    linv = np.linalg.inv(l)
    for exact, fast in ((mx.whiten(l, x), mx.whiten(l, x, exact=False)),
                        (mx.congruence(linv, x, lower=True), mx.congruence(linv, x, lower=True, exact=False))):
        assert np.allclose(fast, exact, rtol=0, atol=1e-13 * np.abs(exact).max())
        assert np.allclose(np.linalg.eigvalsh(fast), np.linalg.eigvalsh(exact), rtol=1e-12)


@pytest.mark.parametrize("n", [4, 8, 16])
def test_cholesky_inverse_by_blocks(n):
    """``_matrix.cholesky`` of a batch (n >= 4): LAPACK's factor and its inverse by blocks."""
    rng = np.random.default_rng(n)
    a = random_spd(rng, n, (500,), 1.0)
    l, inv = mx.cholesky(a)
    assert np.array_equal(l, np.linalg.cholesky(a))
    assert np.allclose(inv, np.linalg.inv(l), rtol=0, atol=1e-12 * np.abs(inv).max())


@pytest.mark.parametrize("n", [4, 8])
def test_batch_times_one_matrix_on_the_right(n):
    """``_matrix.matmul``: stacked rows up to ``STACKED_MAX_N``, per matrix with the single
    matrix made contiguous beyond; both the plain product, also for a transposed view."""
    rng = np.random.default_rng(n)
    a, b = rng.standard_normal((n, n)), rng.standard_normal((3, mx.STACKED_MIN_BATCH, n, n))
    assert np.allclose(mx.matmul(b, a), b @ a) and np.allclose(mx.matmul(b, a.T), b @ a.T)
