"""Exact sampling of the Riemannian Laplace on SPD(n) with the affine-invariant metric.

Hajri, Ilea, Said, Bombrun & Berthoumieu (2016): in the polar decomposition
Y = L U diag(exp(r)) U^T L^T, L L^T = footpoint, U is Haar on O(n) and r in R^n has density
proportional to exp(-|r|/s) prod_{i<j} sinh(|r_i - r_j|/2) (metric tr(P^-1 A P^-1 B)). The
normaliser does not depend on the footpoint (GL(n) acts transitively by isometries) and is finite
iff s < s_crit(n) = sqrt(12 / (n (n^2 - 1))).

Two exact rejection samplers for r, in polar form r = t u, |u| = 1 (see ../shared/papers/README):
S1 bounds sinh(x) <= e^x / 2; S2 draws u from the normalised eigenvalues of a GOE matrix (density
|Vandermonde(u)|) and t from the log-concave t^(n-1) e^(-t/s) sinh(t/sqrt 2)^M. A pilot run picks
the better one.

Representability: a draw whose eigenvalues (relative to its footpoint) span a ratio near
1/machine epsilon has no double-precision matrix that LAPACK recognises as positive definite,
however it is computed (rounding its entries alone moves the small eigenvalue past zero). On
SPD(2) the spread |r_1 - r_2| has the closed-form law used by ``spd2_spread_tail``; scales at which
it exceeds ``MAX_LOG_CONDITION`` with probability above ``MAX_UNREPRESENTABLE`` are refused. That
holds around well-conditioned footpoints only. With a public cap K on the footpoints' condition
(``max_condition``), ``unrepresentable_bound`` bounds the chance for every footpoint of condition
<= K and every n (``spread_tail_bound``), and ``check_representable`` refuses on it.
"""

from __future__ import annotations

import numpy as np
from scipy import integrate, optimize, special

from ..manifolds._special import log_sinhc
from ..parameters import Spelled
from .envelope import accumulate, rejection_sample, tangent_envelope
from .radial import NotNormalisableError


#: Largest accepted spread max(r) - min(r) of a draw's log-eigenvalues relative to its footpoint:
#: e^32 ~ 8e13 leaves a factor 50 below 1/machine epsilon for the footpoint's own conditioning and
#: the rounding of the product (draws of SPD(2) around well-conditioned footpoints first fail
#: LAPACK's Cholesky at spreads near 35).
MAX_LOG_CONDITION = 32.0
#: Largest accepted probability that a draw exceeds ``MAX_LOG_CONDITION``: below any delta a release
#: would accept, so the guard in the sampler (which raises rather than redraws) is never met.
MAX_UNREPRESENTABLE = 1e-12


def representable_log_condition(n: int) -> float:
    """T_n = ``MAX_LOG_CONDITION`` - 2 log(n / 2): a draw Y with log cond(Y) <= T_n is positive
    definite in double precision once formed as B B^T (``spd_from_polar``). Forming B B^T errs by
    at most gamma_n ``|B|_F^2`` <= n^2 eps ``|Y|`` (nearly; gamma_n = n eps / (1 - n eps)), and Cholesky
    runs to completion below a condition of order 1 / (n^2 eps) (Higham, Accuracy and Stability,
    Thm 10.7): e^(T_n) n^2 eps = 0.07 for every n, the margin that e^32 leaves on SPD(2).
    Checked in ``tests/test_condition_cap.py`` on draws of condition e^(T_n + 3) for n <= 28."""
    return MAX_LOG_CONDITION - 2.0 * float(np.log(max(n, 2) / 2.0))


def spread_tail_bound(n: int, scale: float, spread: float) -> float:
    """An upper bound on P(max(r) - min(r) > ``spread``) for the eigenvalue law of SPD(n) at
    ``scale`` (exact on SPD(2): ``spd2_spread_tail``).

    For n > 2, in polar form r = t u, the law of t given the direction u is proportional to
    t^N e^(-t/s) e^(phi(t)), N = n - 1 + M, M = n (n - 1) / 2 and
    phi(t) = sum_{i<j} log sinhc(t a_ij), a_ij = ``|u_i - u_j|`` / 2. phi is convex with
    0 <= phi' < b(u) = sum a_ij <= 1 / s_crit; so for t >= y, phi(t) <= phi(y) + b (t - y), and
    for t <= y, phi(t) >= phi(y) - b (y - t). Both bounds turn the conditional tail at y into
    at most that of a Gamma(N + 1, rate 1/s - b) law, and 1/s - b >= lambda = 1/s - 1/s_crit.
    The spread is t (max u - min u) <= sqrt 2 t, and a ratio of integrals over u is at most the
    largest ratio over u: P(spread > x) <= Q(n (n + 1) / 2, lambda x / sqrt 2), Q the
    regularised upper incomplete gamma function.
    """
    if spread <= 0.0:
        return 1.0
    if n == 2:
        return spd2_spread_tail(scale, spread)
    rate = 1.0 / scale - 1.0 / spd_critical_scale(n)
    return float(special.gammaincc(n * (n + 1) / 2.0, rate * spread / np.sqrt(2.0)))


def unrepresentable_bound(n: int, scale: float, max_condition: float = 1.0) -> float:
    """A bound on the chance that one draw of the Laplace on SPD(n) at ``scale`` around any
    footpoint P of condition <= K = ``max_condition`` is beyond double precision: the draw
    Y = L U e^r U^T L^T has cond(Y) <= cond(P) e^(max r - min r), and Y is representable when
    log cond(Y) <= T_n (``representable_log_condition``); so the chance is at most
    P(max r - min r > T_n - log K) (``spread_tail_bound``). K = 1 gives the chance around
    well-conditioned footpoints only."""
    return spread_tail_bound(n, scale, representable_log_condition(n) - float(np.log(max_condition)))


class LowAcceptanceError(RuntimeError):
    """Every exact sampler would accept fewer than the minimum fraction of proposals."""


class UnrepresentableScaleError(NotNormalisableError):
    """The law exists, but its draws are too often beyond double-precision SPD matrices."""


class UnrepresentableUnderCapError(Spelled, UnrepresentableScaleError):
    """``UnrepresentableScaleError`` for footpoints of condition up to a public cap: the message
    names ``max_condition`` in the caller's spelling (``--max-condition`` on the command line)."""


def spd_critical_scale(n: int) -> float:
    """s_crit(n) = sqrt(12 / (n (n^2 - 1))): the Laplace on SPD(n) exists iff scale < s_crit.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.mechanisms import spd_critical_scale
    >>> round(spd_critical_scale(2), 6), round(spd_critical_scale(5), 6)   # sqrt(2), sqrt(1/10)
    (1.414214, 0.316228)
    """
    if n < 2:
        return float("inf")
    return float(np.sqrt(12.0 / (n * (n * n - 1))))


def _log_spread_density(x: np.ndarray | float, scale: float) -> np.ndarray:
    """Log of the unnormalised density of d = |r_1 - r_2| / sqrt 2 on SPD(2):
    d K_1(d / s) sinh(d / sqrt 2), the integral of e^(-|r|/s) sinh(|r_1 - r_2|/2) over
    (r_1 + r_2) / sqrt 2."""
    c = 1.0 / np.sqrt(2.0)
    x = np.asarray(x, dtype=float)
    return (np.log(x) + np.log(special.kve(1, x / scale)) - x / scale + c * x
            + np.log(-np.expm1(-2.0 * c * x)))


def spd2_spread_tail(scale: float, spread: float) -> float:
    """P(|r_1 - r_2| > spread) for the Riemannian Laplace on SPD(2) at ``scale`` (by quadrature of
    the closed-form density of ``_log_spread_density``, which keeps ten digits or more)."""
    x0 = spread / np.sqrt(2.0)
    top = float(np.max(_log_spread_density(np.geomspace(1e-9 * x0, x0, 400), scale)))

    def f(x):
        return np.exp(_log_spread_density(x, scale) - top)

    above = integrate.quad(f, x0, np.inf, epsabs=0.0, epsrel=1e-10)[0]
    below = integrate.quad(f, 0.0, x0, epsabs=0.0, epsrel=1e-10, limit=200)[0]
    return above / (above + below)


def spd2_representable_scale() -> float:
    """The largest scale of SPD(2) at which a draw exceeds ``MAX_LOG_CONDITION`` with probability
    at most ``MAX_UNREPRESENTABLE``."""
    target = np.log(MAX_UNREPRESENTABLE)
    return float(optimize.brentq(
        lambda s: np.log(spd2_spread_tail(s, MAX_LOG_CONDITION)) - target,
        0.1, 0.999 * spd_critical_scale(2), xtol=1e-6))


def check_representable(n: int, scale: float, max_condition: float | None = None) -> None:
    """Refuse, from public parameters alone, a scale whose draws too often leave double precision.

    With ``max_condition`` = K: refused when ``unrepresentable_bound`` (a worst case over every
    footpoint of condition <= K, every n) exceeds ``MAX_UNREPRESENTABLE``. Without it, on SPD(2)
    only and around well-conditioned footpoints (K = 1: an estimate, not a worst case); no bound
    is computed for n > 2, where ``spd_from_polar`` still guards every draw. The error names the
    scale, the cap and the bound, never a statistic of the data."""
    if max_condition is None:
        if n != 2 or unrepresentable_bound(2, scale) <= MAX_UNREPRESENTABLE:
            return
        raise UnrepresentableScaleError(
            f"the Riemannian Laplace on SPD(2) at scale {scale:.4g} would release, with probability "
            f"above {MAX_UNREPRESENTABLE:g}, matrices whose eigenvalues span more than "
            f"e^{MAX_LOG_CONDITION:g} relative to the footpoint, which no double-precision "
            f"positive-definite matrix can hold; scale must be at most "
            f"{spd2_representable_scale():.4g}. Use a larger epsilon or more records (both lower the "
            f"scale), or restrict the release to a ball (restrict_to)")
    bound = unrepresentable_bound(n, scale, max_condition)
    if bound <= MAX_UNREPRESENTABLE:
        return
    raise UnrepresentableUnderCapError(
        f"the Riemannian Laplace on SPD({n}) at scale {scale:.4g} around a footpoint of condition "
        f"up to {{max_condition}} = {max_condition:g} may release matrices beyond double "
        f"precision (condition above e^{representable_log_condition(n):.4g}) with probability up "
        f"to {bound:.3g}, above the accepted {MAX_UNREPRESENTABLE:g}. Use a smaller "
        f"{{max_condition}} (with {{clip_data}}), a larger {{epsilon}} or more records (a smaller "
        f"scale), or restrict the release to the ball ({{restrict}})", "max_condition",
        "clip_data", "epsilon", "restrict")


def haar_orthogonal(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Haar-distributed orthogonal matrices: QR of a Gaussian matrix with the sign correction
    Q diag(sign(diag R)) (Mezzadri 2007); a plain QR is not Haar."""
    q, r = np.linalg.qr(rng.standard_normal((size, n, n)))
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    d[d == 0] = 1.0
    return q * d[:, None, :]


def spd_from_polar(lu: np.ndarray, r: np.ndarray, scale: float,
                   drop_unrepresentable: bool = False) -> np.ndarray:
    """The draws Y = (L U) diag(e^r) (L U)^T, formed as B B^T with B = L U diag(e^(r/2)).

    B B^T keeps Y symmetric and positive semi-definite up to the rounding of its entries, and
    e^(r/2) overflows only where Y's entries would. A draw still not positive definite to LAPACK
    (its eigenvalues span beyond double precision) is never returned nor redrawn, which would
    change the law: the whole call raises ``UnrepresentableScaleError``; on SPD(2) the refused
    scales keep this below ``MAX_UNREPRESENTABLE`` per draw around a well-conditioned footpoint.
    With ``drop_unrepresentable`` such draws are left out instead (for proposals of a law
    restricted to a public set of representable matrices, which rejects them anyway).
    """
    b = lu * np.exp(0.5 * r)[..., None, :]
    y = b @ np.swapaxes(b, -1, -2)
    if drop_unrepresentable:
        return y[representable(y)]
    try:
        if not np.all(np.isfinite(y)):
            raise np.linalg.LinAlgError("overflow")
        np.linalg.cholesky(y)
    except np.linalg.LinAlgError:
        raise UnrepresentableScaleError(
            f"a draw of the Riemannian Laplace on SPD({lu.shape[-1]}) at scale {scale:.4g} is not "
            f"positive definite in double precision (its eigenvalues, relative to the footpoint, "
            f"span more than about 1/machine epsilon, or the footpoint is itself that "
            f"ill-conditioned); nothing is released. Use a smaller scale (a larger epsilon or more "
            f"records)") from None
    return y


def representable(y: np.ndarray) -> np.ndarray:
    """Mask (batch,) of the matrices y (batch, n, n) that are finite and positive definite in
    double precision: a batched Cholesky factor exists, or, when some matrix has none, each
    one's smallest computed eigenvalue is positive."""
    ok = np.all(np.isfinite(y), axis=(-2, -1))
    try:
        np.linalg.cholesky(y[ok])
        return ok
    except np.linalg.LinAlgError:
        ok[ok] = np.linalg.eigvalsh(y[ok])[:, 0] > 0
        return ok


def _pairs(n: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(n, 1)


class SPDEigenLaw:
    """The law of r; ``sample`` returns exact draws and the acceptance rate."""

    def __init__(self, n: int, scale: float, min_acceptance: float = 1e-4):
        self.n, self.scale = int(n), float(scale)
        self.m = self.n * (self.n - 1) // 2
        s_crit = spd_critical_scale(self.n)
        if not self.scale < s_crit:
            raise NotNormalisableError(
                f"the Riemannian Laplace on SPD({self.n}) (metric tr(P^-1 U P^-1 V)) is "
                f"normalisable only for scale < sqrt(12/(n(n^2-1))) = {s_crit:.6g}; got scale "
                f"{self.scale:.6g}. Increase epsilon or n, or restrict the release to a ball")
        self.lam_min = 1.0 / self.scale - 1.0 / s_crit
        self.min_acceptance = min_acceptance
        self._method: str | None = None
        if self.n >= 2 and self.scale < np.sqrt(2.0) / self.m:
            self._s2_radial = self._make_s2_radial()

    # ---------------------------------------------------------------- S1
    def _propose_s1(self, size: int, rng: np.random.Generator) -> np.ndarray:
        i, j = _pairs(self.n)
        u = rng.standard_normal((size, self.n))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        a = 0.5 * np.abs(u[:, i] - u[:, j])
        lam = 1.0 / self.scale - a.sum(axis=1)
        keep = rng.random(size) <= (self.lam_min / lam) ** self.n
        u, a, lam = u[keep], a[keep], lam[keep]
        t = rng.gamma(self.n, 1.0 / lam)
        keep = rng.random(len(t)) <= np.prod(-np.expm1(-2.0 * t[:, None] * a), axis=1)
        return t[keep, None] * u[keep]

    # ---------------------------------------------------------------- S2
    def _make_s2_radial(self):
        n, m, s = self.n, self.m, self.scale
        c = 1.0 / np.sqrt(2.0)

        def h(t):
            t = np.asarray(t, dtype=float)
            with np.errstate(divide="ignore"):
                return (n - 1) * np.log(t) - t / s + m * (c * t + np.log(-np.expm1(-2 * c * t)) - np.log(2))

        def dh(t):
            t = np.asarray(t, dtype=float)
            return (n - 1) / t - 1.0 / s + m * c / np.tanh(c * t)

        mode = optimize.brentq(dh, 1e-12, 1e3 * s * n)
        sd = 1.0 / np.sqrt((n - 1) / mode**2 + m * c * c / np.sinh(c * mode) ** 2)
        xs = mode + sd * np.array([-2.5, -1.5, -0.75, 0.0, 0.75, 1.5, 2.5, 4.0, 6.0, 9.0])
        xs = np.append(xs[xs > 0], 1e-3 * mode)
        return h, tangent_envelope(h, dh, xs, 0.0, np.inf)

    def _propose_s2(self, size: int, rng: np.random.Generator) -> np.ndarray:
        i, j = _pairs(self.n)
        g = rng.standard_normal((size, self.n, self.n))
        u = np.linalg.eigvalsh(g + np.swapaxes(g, 1, 2))
        u /= np.linalg.norm(u, axis=1, keepdims=True)
        h, env = self._s2_radial
        t, _ = rejection_sample(h, env, size, rng)
        a = 0.5 * np.abs(u[:, i] - u[:, j])
        c = 1.0 / np.sqrt(2.0)
        log_ratio = np.sum(log_sinhc(t[:, None] * a), axis=1) - self.m * log_sinhc(c * t)
        keep = np.log(rng.random(size)) <= log_ratio
        return t[keep, None] * u[keep]

    # ---------------------------------------------------------------- driver
    def _proposers(self):
        out = {"S1": self._propose_s1}
        if hasattr(self, "_s2_radial"):
            out["S2"] = self._propose_s2
        return out

    def choose(self, rng: np.random.Generator, pilot: int = 4000) -> tuple[str, float]:
        """Pick the exact sampler with the higher acceptance on a pilot run."""
        rates = {}
        for name, propose in self._proposers().items():
            rates[name] = len(propose(pilot, rng)) / pilot
        name = max(rates, key=rates.get)
        if rates[name] < self.min_acceptance:
            raise LowAcceptanceError(
                f"exact samplers for SPD({self.n}) at scale {self.scale:.4g} accept "
                f"{rates[name]:.2e} < {self.min_acceptance:g} of proposals")
        self._method = name
        return name, rates[name]

    def sample(self, size: int, rng: np.random.Generator) -> tuple[np.ndarray, float, str]:
        """``size`` exact draws of r, the acceptance rate and the sampler used (S1 or S2)."""
        if self.n == 1:
            return rng.laplace(0.0, self.scale, size=(size, 1)), 1.0, "laplace"
        if self._method is None:
            self.choose(rng)
        propose = self._proposers()[self._method]
        r, rate = accumulate(lambda batch: propose(batch, rng), size, 0.5,
                             self.min_acceptance, 5_000_000)
        return r, rate, self._method
