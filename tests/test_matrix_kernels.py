"""Closed-form symmetric eigensolvers and Daleckii-Krein derivatives against LAPACK and finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geodp.manifolds import _matrix as mx

SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@pytest.fixture(scope="module", autouse=True)
def closed_forms_on_every_batch():
    """These tests are about the n = 2, 3 closed forms, which by default serve only batches of
    ``CLOSED_FORM_MIN_BATCH`` matrices or more: here they serve every batch."""
    default = mx.CLOSED_FORM_MIN_BATCH
    mx.CLOSED_FORM_MIN_BATCH = 1
    yield
    mx.CLOSED_FORM_MIN_BATCH = default


def test_small_batches_take_lapack_and_agree():
    """By default a few matrices go to LAPACK (faster there); both routes agree."""
    rng = np.random.default_rng(5)
    a = random_sym(rng, 3, 8, False)
    a = np.einsum("nij,nkj->nik", a, a) + np.eye(3)
    closed = mx.eigvalsh(a), mx.funcm(a, np.log), mx.cholesky(a)[0]
    mx.CLOSED_FORM_MIN_BATCH = 10**9
    try:
        assert not mx._closed_form(a)
        lapack = mx.eigvalsh(a), mx.funcm(a, np.log), mx.cholesky(a)[0]
    finally:
        mx.CLOSED_FORM_MIN_BATCH = 1
    for c, l_ in zip(closed, lapack):
        assert np.allclose(c, l_, rtol=1e-12, atol=1e-12)


def random_sym(rng, n, size, repeated):
    q, _ = np.linalg.qr(rng.standard_normal((size, n, n)))
    lam = rng.standard_normal((size, n)) * 10.0 ** rng.uniform(-6, 3, size=(size, 1))
    if repeated:
        lam[:, 1] = lam[:, 0] * (1 + rng.choice([0.0, 1e-14, 1e-9], size=size))
    return np.einsum("nij,nj,nkj->nik", q, lam, q)


@pytest.mark.parametrize("n", [2, 3])
@given(seed=SEEDS, repeated=st.booleans())
@settings(max_examples=40, deadline=None)
def test_closed_form_eigh_matches_lapack(n, seed, repeated):
    a = random_sym(np.random.default_rng(seed), n, 50, repeated)
    w, v = mx.eigh(a)
    ref = np.linalg.eigvalsh(a)
    size = np.abs(ref).max(axis=-1, keepdims=True)
    assert np.all(np.abs(w - ref) <= 1e-13 * size)
    assert np.all(np.abs(mx.eigvalsh(a) - ref) <= 1e-13 * size)
    assert np.allclose(np.swapaxes(v, -1, -2) @ v, np.eye(n), atol=1e-12)
    assert np.all(np.abs(mx.from_eig(w, v) - a) <= 1e-13 * size[..., None])


def test_closed_form_handles_multiples_of_identity_and_zero():
    for a in (np.zeros((3, 3)), 2.5 * np.eye(3), np.diag([1.0, 1.0, 4.0]), np.diag([4.0, 1.0, 1.0])):
        w, v = mx.eigh(a[None])
        assert np.allclose(w[0], np.sort(np.diag(a)))
        assert np.allclose(mx.from_eig(w, v)[0], a)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_funcm_matches_lapack(n):
    rng = np.random.default_rng(n)
    a = random_sym(rng, n, 100, False)
    w, v = np.linalg.eigh(a)
    assert np.allclose(mx.funcm(a, np.sin), (v * np.sin(w)[:, None, :]) @ np.swapaxes(v, -1, -2),
                       atol=1e-12)


@pytest.mark.parametrize("f", [np.exp, np.log, np.sqrt])
@given(seed=SEEDS, repeated=st.booleans())
@settings(max_examples=30, deadline=None)
def test_closed_form_2x2_functions_match_eigendecomposition(f, seed, repeated):
    """The divided-difference forms of exp/log/sqrt for 2x2 agree with V f(L) V^T, including at
    (nearly) repeated eigenvalues where the divided difference becomes a derivative."""
    rng = np.random.default_rng(seed)
    q, _ = np.linalg.qr(rng.standard_normal((50, 2, 2)))
    lam = np.exp(rng.uniform(-3, 3, size=(50, 2)))
    if repeated:
        lam[:, 1] = lam[:, 0] * (1 + rng.choice([0.0, 1e-14, 1e-9, 1e-5], size=50))
    a = np.einsum("nij,nj,nkj->nik", q, lam, q)
    w, v = np.linalg.eigh(a)
    ref = np.einsum("nij,nj,nkj->nik", v, f(w), v)
    scale = np.abs(f(w)).max(axis=-1)[:, None, None] + 1.0
    assert np.all(np.abs(mx.funcm(a, f) - ref) <= 1e-12 * scale)


@pytest.mark.parametrize("n", [2, 3, 4])
@pytest.mark.parametrize("lower", [False, True])
def test_congruence_entrywise_matches_matmul(n, lower):
    rng = np.random.default_rng(n)
    l = rng.standard_normal((40, n, n))
    if lower:
        l = np.tril(l)
    x = rng.standard_normal((40, n, n))
    ref = l @ mx.sym(x) @ np.swapaxes(l, -1, -2)
    out = mx.congruence(l, x, lower=lower)
    assert np.allclose(out, ref, atol=1e-12) and np.array_equal(out, np.swapaxes(out, -1, -2))
    assert np.allclose(mx.congruence(l[0], x, lower=lower), l[0] @ mx.sym(x) @ l[0].T, atol=1e-12)


@pytest.mark.parametrize("kind", ["log", "exp"])
@pytest.mark.parametrize("gap", [1.0, 1e-9, 0.0])
def test_daleckii_krein_matches_finite_differences(kind, gap):
    rng = np.random.default_rng(0)
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    lam = np.array([0.7, 0.7 + gap, 1.9, 3.1])
    a = (q * lam) @ q.T
    e = rng.standard_normal((4, 4))
    e = e + e.T
    f = np.log if kind == "log" else np.exp
    w, v = np.linalg.eigh(a)
    gamma = mx.divided_differences_log(w) if kind == "log" else mx.divided_differences_exp(w)
    analytic = mx.frechet_derivative(v, gamma, e)
    h = 1e-6
    numeric = (mx.funcm(a + h * e, f) - mx.funcm(a - h * e, f)) / (2 * h)
    assert np.allclose(analytic, numeric, atol=1e-7)


@pytest.mark.parametrize("batch", [(5, 4), (2, mx.STACKED_MIN_BATCH)])
def test_matmul_fast_paths_agree_with_numpy(batch):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 5)), rng.standard_normal(batch + (5, 5))
    assert np.allclose(mx.matmul(a, b), a @ b)
    assert np.allclose(mx.matmul(b, a), b @ a)
    assert np.allclose(mx.matmul(np.swapaxes(b, -1, -2), a), np.swapaxes(b, -1, -2) @ a)
    assert np.allclose(mx.matmul(a[None, None], b), a @ b)
    assert np.allclose(mx.matmul(b, b), b @ b)


def test_eigh_of_symmetric_input_skips_only_the_symmetrising_copy():
    rng = np.random.default_rng(3)
    a = mx.sym(random_sym(rng, 6, 40, False))  # exactly symmetric: sym(a) == a
    for got, ref in ((mx.eigh(a, symmetric=True), mx.eigh(a)),
                     ((mx.eigvalsh(a, symmetric=True),), (mx.eigvalsh(a),))):
        assert all(np.array_equal(g, r) for g, r in zip(got, ref))
    skew = a + 1e-3 * np.triu(rng.standard_normal(a.shape), 1)
    assert np.allclose(mx.eigvalsh(skew), np.linalg.eigvalsh(mx.sym(skew)), rtol=0, atol=1e-12)


def test_threaded_lapack_path_matches_single_call():
    rng = np.random.default_rng(1)
    a = random_sym(rng, 4, 2, False)
    a = np.broadcast_to(a, (15_000, 2, 4, 4)).copy()
    a += 1e-3 * rng.standard_normal(a.shape)
    a = mx.sym(a)
    w, v = mx.eigh(a)
    assert w.shape == (15_000, 2, 4) and v.shape == (15_000, 2, 4, 4)
    assert np.allclose(w, np.linalg.eigvalsh(a), atol=1e-10)
    assert np.allclose(mx.eigvalsh(a), w, atol=1e-12)
    assert np.allclose(mx.from_eig(w, v), a, atol=1e-10)


@pytest.mark.parametrize("n", [2, 3, 4])
def test_cholesky_and_inverse_match_lapack(n):
    rng = np.random.default_rng(n)
    g = rng.standard_normal((500, n, n))
    a = g @ np.swapaxes(g, 1, 2) + 1e-3 * np.eye(n)
    l, inv = mx.cholesky(a)
    assert np.allclose(l, np.linalg.cholesky(a), rtol=1e-10, atol=1e-12)
    assert np.allclose(inv @ l, np.eye(n), atol=1e-9)
    with pytest.raises(np.linalg.LinAlgError):
        mx.cholesky(-np.eye(n))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("scale", [1e-162, 1e-300, 1e-310, 1e150])
def test_closed_form_eigh_is_orthonormal_at_extreme_scales(n, scale):
    """The 2x2 rotation used to form 2 rad (rad + |half|), which underflows for entries below
    1e-154 and left unnormalised eigenvectors (|v| = 0.97 at 1e-162); the 3x3 shift multiplied by
    1/scale, which overflows for subnormal entries (NaN at 1e-310)."""
    a = random_sym(np.random.default_rng(4), n, 50, False)
    a /= np.max(np.abs(a), axis=(-2, -1), keepdims=True)
    w, v = mx.eigh(a * scale)
    assert np.allclose(v @ np.swapaxes(v, -1, -2), np.eye(n), atol=1e-13)
    tol = 1e-13 if scale > 1e-300 else 1e-9  # a subnormal input carries fewer digits
    assert np.allclose(np.einsum("nij,nj,nkj->nik", v, w, v) / scale, a, atol=tol)


@pytest.mark.parametrize("tiny", [1e-150, 1e-160, 1e-167, 1e-200])
def test_closed_form_3x3_pair_far_below_the_separated_eigenvalue(tiny):
    """One eigenvalue of order 1 and a pair of order ``tiny``: the pair's 2x2 problem has entries
    near 1e-160 after scaling, whose squares lost digits in sqrt(half^2 + off^2); the eigenvectors
    were then unnormalised (|v|^2 = 0.945) and expm off by 5e-2 (found by the hypothesis test of
    the regression adjoints, where Exp_p(w + h d) with |w| = 1e-166 met it)."""
    from scipy.linalg import expm

    rng = np.random.default_rng(7)
    a = np.zeros((40, 3, 3))
    a[:, 1, 1] = 1e-5
    s = tiny * rng.standard_normal((40, 3, 3))
    a += s + np.swapaxes(s, -1, -2)
    w, v = mx.eigh(a)
    assert np.allclose(v @ np.swapaxes(v, -1, -2), np.eye(3), atol=1e-13)
    assert np.allclose(mx.funcm(a, np.exp), [expm(x) for x in a], rtol=0, atol=1e-15)


def _mp_expm_whitened_error(a: np.ndarray, e: np.ndarray) -> float:
    """|exp(a)^-1/2 e exp(a)^-1/2 - I|_F at 50 digits: e's error in the affine-invariant geometry."""
    import mpmath as mp

    with mp.workdps(50):
        w, v = mp.eigsy(mp.matrix(a.tolist()))
        half = v * mp.diag([mp.exp(-x / 2) for x in w]) * v.T
        return float(mp.mnorm(half * mp.matrix(e.tolist()) * half - mp.eye(a.shape[0]), "F"))


@pytest.mark.parametrize("n", [4, 7, 16])
@pytest.mark.parametrize("radius", [1e-9, 0.2, 2.0, 7.9])
def test_taylor_exponential_matches_high_precision(n, radius, monkeypatch):
    """Scaling and squaring of the Taylor polynomial is exact to rounding against mpmath inside
    its radius (a spread of up to 16 in the eigenvalues, a mean shift of 3), and as accurate as
    the eigendecomposition there."""
    monkeypatch.setattr(mx, "EXPM_EIGH_MAX_ENTRIES", 0)  # the Taylor route even for 3 matrices
    rng = np.random.default_rng(n)
    a = random_sym(rng, n, 3, False)
    a = a / np.linalg.norm(a, axis=(1, 2))[:, None, None] * radius + 3.0 * np.eye(n)
    out = mx.expm_sym(a)
    w, v = np.linalg.eigh(a)
    eig = (v * np.exp(w)[:, None, :]) @ np.swapaxes(v, 1, 2)
    for a_k, out_k, eig_k in zip(a, out, eig):
        reference = _mp_expm_whitened_error(a_k, eig_k)
        assert _mp_expm_whitened_error(a_k, out_k) <= max(4 * reference, 2e-14 * np.exp(radius))
    assert np.array_equal(out, np.swapaxes(out, 1, 2))


def test_taylor_exponential_falls_back_per_matrix_beyond_its_radius(monkeypatch):
    """A batch mixing spectra inside and beyond TAYLOR_MAX_RADIUS: each matrix agrees with the
    eigendecomposition route, the far ones bit for bit (they take it); each matrix's result is
    the one it gets alone."""
    monkeypatch.setattr(mx, "EXPM_EIGH_MAX_ENTRIES", 0)
    rng = np.random.default_rng(3)
    a = random_sym(rng, 5, 6, False)
    a -= np.trace(a, axis1=1, axis2=2)[:, None, None] / 5 * np.eye(5)
    size = np.array([0.5, 3.0, 40.0, 1.0, 700.0, 8.5])
    a = a / np.linalg.norm(a, axis=(1, 2))[:, None, None] * size[:, None, None] - 2.0 * np.eye(5)
    out = mx.expm_sym(a)
    far = size > mx.TAYLOR_MAX_RADIUS
    w, v = mx.eigh(a[far])
    assert np.array_equal(out[far], mx.sym(mx.from_eig(np.exp(w), v)))
    w, v = np.linalg.eigh(a[~far])
    eig = (v * np.exp(w)[:, None, :]) @ np.swapaxes(v, 1, 2)
    err = np.linalg.norm(out[~far] - eig, axis=(1, 2)) / np.linalg.norm(eig, axis=(1, 2))
    assert np.all(err <= 1e-13)
    assert all(np.array_equal(out[i], mx.expm_sym(a[i:i + 1])[0]) for i in range(len(a)))


def test_small_batches_exponentiate_by_eigendecomposition(monkeypatch):
    """Below ``EXPM_EIGH_MAX_ENTRIES`` entries the eigendecomposition runs (cheaper there than
    the Taylor route's fixed cost); the two routes agree to rounding."""
    rng = np.random.default_rng(11)
    a = random_sym(rng, 8, 4, False)
    a = a / np.linalg.norm(a, axis=(1, 2))[:, None, None] * 2.0
    assert a.size < mx.EXPM_EIGH_MAX_ENTRIES
    small = mx.expm_sym(a)
    w, v = mx.eigh(mx.sym(a))
    assert np.array_equal(small, mx.sym(mx.from_eig(np.exp(w), v)))
    monkeypatch.setattr(mx, "EXPM_EIGH_MAX_ENTRIES", 0)
    taylor = mx.expm_sym(a)
    assert not np.array_equal(taylor, small)
    err = np.linalg.norm(taylor - small, axis=(1, 2)) / np.linalg.norm(small, axis=(1, 2))
    assert np.all(err <= 1e-13)


def test_few_small_matrices_whiten_as_larger_ones(monkeypatch):
    """Below ``CLOSED_FORM_MIN_BATCH`` matrices, n <= 3 whitens by the products (or solves) of
    n >= 4, cheaper there than the entry-by-entry substitution; both agree to rounding."""
    monkeypatch.setattr(mx, "CLOSED_FORM_MIN_BATCH", 128)  # the library's threshold
    rng = np.random.default_rng(12)
    x = rng.standard_normal((5, 3, 3))
    x = np.einsum("nij,nkj->nik", x, x) + np.eye(3)
    l = np.linalg.cholesky(x[0])  # well conditioned: the products route
    linv = np.linalg.inv(l)
    products = mx.sym(linv @ (x.reshape(-1, 3) @ linv.T).reshape(x.shape))
    assert np.array_equal(mx.whiten(l, x), products)
    monkeypatch.setattr(mx, "CLOSED_FORM_MIN_BATCH", 1)
    entrywise = mx.whiten(l, x)
    assert not np.array_equal(entrywise, products)
    assert np.allclose(entrywise, products, rtol=0, atol=1e-13 * np.abs(products).max())
