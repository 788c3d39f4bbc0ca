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
"""

from __future__ import annotations

import numpy as np
from scipy import optimize

from ..manifolds._special import log_sinhc
from .envelope import accumulate, rejection_sample, tangent_envelope
from .radial import NotNormalisableError


class LowAcceptanceError(RuntimeError):
    """Every exact sampler would accept fewer than the minimum fraction of proposals."""


def spd_critical_scale(n: int) -> float:
    """s_crit(n) = sqrt(12 / (n (n^2 - 1))): the Laplace on SPD(n) exists iff scale < s_crit."""
    if n < 2:
        return float("inf")
    return float(np.sqrt(12.0 / (n * (n * n - 1))))


def haar_orthogonal(n: int, size: int, rng: np.random.Generator) -> np.ndarray:
    """Haar-distributed orthogonal matrices: QR of a Gaussian matrix with the sign correction
    Q diag(sign(diag R)) (Mezzadri 2007); a plain QR is not Haar."""
    q, r = np.linalg.qr(rng.standard_normal((size, n, n)))
    d = np.sign(np.diagonal(r, axis1=-2, axis2=-1))
    d[d == 0] = 1.0
    return q * d[:, None, :]


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
