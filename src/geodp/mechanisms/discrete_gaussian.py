"""Secure tangent-space Gaussian noise: the discrete Gaussian on a fine grid (issue 28).

Why
---
Mironov (2012) showed that textbook floating-point samplers of continuous noise leak the
noiseless value through the low-order bits of the output. This module offers the remedy of
Canonne, Kamath & Steinke (2020, "The Discrete Gaussian for Differential Privacy", NeurIPS;
CKS below): the query, in orthonormal coordinates of T_w, is rounded to the grid gamma Z^d
*exactly* (integer arithmetic on the floats' exact rational values), integer noise from the
discrete Gaussian N_Z(0, s^2) is added, with s = sigma / gamma in grid units, exactly rational, and
the result is scaled back by gamma. The sampler is CKS's Algorithms 1-3, with integer arithmetic
only and randomness from the operating system (``secrets``). Everything after the integer sum
(the conversion to float, ``from_coords``, Exp) is a deterministic function of that integer vector
and of public parameters, so it is post-processing.

Secure draws are *not reproducible by seed, on purpose*: no numpy generator is read or advanced,
and a seed would make the noise predictable to whoever knows it.

Guarantee (CKS 2020, Section 2: their multivariate concentrated-DP theorem; proved in full)
------------------------------------------------------------------------------------------
Claim 1. For integer-valued queries q: X^n -> Z^d with ||q(x) - q(x')||_2 <= Delta for all
neighbours x, x', the release q(x) + Y, Y_j ~ N_Z(0, s^2) independent, is rho-zCDP with
rho = Delta^2 / (2 s^2): for every alpha > 1, D_alpha(M(x) || M(x')) <= alpha Delta^2 / (2 s^2).
(This is CKS's multivariate theorem with all sigma_j = s. The bound with the
extra tau terms, eps = min(sqrt(Delta_2^2/s^2 + ... tau), Delta_1/s + ... tau), is Kairouz, Liu &
Steinke 2021, Prop. 14, for a *sum* of discrete Gaussians, which is not the law drawn here.)

Proof. Write g_c(x) = exp(-(x - c)^2 / (2 s^2)) and theta(c) = sum_{x in Z} g_c(x). By Poisson
summation theta(c) = sqrt(2 pi s^2) sum_{k in Z} exp(-2 pi^2 s^2 k^2) cos(2 pi k c), a sum of
positive coefficients times cosines, so theta(c) <= theta(0) for every real c. In one dimension,
for an integer shift m the two laws share the normaliser theta(0) (Z is shift-invariant) and
alpha x^2 + (1 - alpha)(x - m)^2 = (x - (1 - alpha) m)^2 + alpha (1 - alpha) m^2, hence

    exp((alpha - 1) D_alpha(N_Z(0, s^2) || N_Z(m, s^2)))
        = exp(alpha (alpha - 1) m^2 / (2 s^2)) theta((1 - alpha) m) / theta(0)
        <= exp(alpha (alpha - 1) m^2 / (2 s^2)),

i.e. D_alpha <= alpha m^2 / (2 s^2), with equality when (1 - alpha) m is an integer. Rényi
divergences of product laws add over coordinates, giving alpha ||m||^2 / (2 s^2) <= alpha rho.

Claim 2 (rounding). Let r(x) = floor(x + 1/2) coordinate-wise (any rounding with error at most
1/2 will do). If ||q - q'||_2 <= Delta (metric units) then, in grid units,
||r(q/gamma) - r(q'/gamma)||_2 <= Delta/gamma + sqrt(d).
Proof. r(a) - r(b) = (a - b) + e with e = (r(a) - a) - (r(b) - b); each e_j is a difference of two
numbers in (-1/2, 1/2], so |e_j| < 1 and ||e||_2 < sqrt(d); the triangle inequality ends it. The
bound is nearly attained: q = (1/2 - eps) gamma 1, q' = (1/2 + eps) gamma 1.

Hence the secure release at noise sigma and grid gamma (metric units) is rho-zCDP with
rho = (Delta/gamma + sqrt(d))^2 / (2 (sigma/gamma)^2) = (Delta + gamma sqrt(d))^2 / (2 sigma^2),
``secure_zcdp_rho``; the grid costs as if the sensitivity grew by gamma sqrt(d). The default grid
gamma = sigma 2^-10 (``GRID_FRACTION``) makes the noise 1024 grid units wide: for d = 1000 the
effective noise multiplier sigma / (Delta + gamma sqrt(d)) is 1 / (1/z + 0.031), z = sigma/Delta.
Float results of the rho functions carry a relative slack of 1e-12 (``ROUNDING_SLACK``).

Caveat: Delta must bound the change of the *computed* coordinates ``manifold.to_coords(w, v)``
(floating-point to_coords and clipping can exceed the exact value by a few ulps).

What it covers in geodp
-----------------------
- DP-RGD, full batch: each step releases a clipped gradient sum (L2 sensitivity Delta = clip for
  add/remove, 2 clip for replace-one) at the public footpoint w_t; each step is rho-zCDP and T
  adaptive steps are T rho-zCDP (Bun & Steinke 2016, Lemma 2.3).
- DP-RGD with sampling without replacement (replace-one, Delta = 2 clip) or Poisson sampling
  (add/remove, Delta = clip), *without* amplification by subsampling: a step on a batch changes by
  at most Delta, so each step is rho-zCDP on the full data set and T steps are T rho-zCDP.
- The exponential-wrapped Gaussian at a public footpoint p0 on a Hadamard manifold: the tangent
  center Log_p0 f(D) has sensitivity Delta (Log_p0 is 1-Lipschitz there) and Exp_p0 is
  post-processing, so Exp_p0(sample_around(p0, Log_p0 f(D))) is rho-zCDP.

What it does not cover
----------------------
- Amplification by subsampling (Poisson or without replacement): the library's PLD and RDP
  curves are those of the continuous Gaussian's worst pair; the discrete law's rounding shifts
  are data-dependent and no curve for them is provided here. General RDP amplification bounds
  applied to the curve alpha rho (Zhu & Wang 2019; Wang, Balle & Kasiviswanathan 2019) would be
  valid but are not implemented.
- Laplace radial laws on curved spaces (``RiemannianLaplace``), the K-norm gradient mechanism
  and the MCMC samplers: their laws are densities w.r.t. the Riemannian volume with no lattice to
  discretise on, their pure-DP proofs rest on density ratios a grid does not preserve, and MCMC
  draws are only approximately from the law.
- The wrapped Laplace (a discrete analogue of the L2-norm Laplace is not provided) and densities
  (``log_density``): the secure law is discrete.

Speed (measured on this machine, 2 shared cores, Python 3.11, ``secrets``)
------------------------------------------------------------------------
Best of 5 runs of ``sample_discrete_gaussian(s2, d)``:

    s^2           d = 10    d = 100   d = 1000
    1/2           0.21 ms   3.0 ms    35 ms
    2             0.25 ms   3.1 ms    31 ms
    25            0.18 ms   2.1 ms    24 ms
    400           0.17 ms   2.0 ms    22 ms
    2^20 (default grid, s = 1024)   0.19 ms   2.3 ms    25 ms

i.e. 17-35 us per draw, whatever s (the expected number of Laplace proposals is bounded). A
full ``sample_around`` at d = 1000 (exact rounding, draws, exact scaling back) takes 26 ms.
"""

from __future__ import annotations

import math
import secrets
from fractions import Fraction
from math import isqrt

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array, size_tuple
from ..privacy.conversions import check_positive
from ..privacy.guarantees import ZCDP
from ..privacy.rdp import ROUNDING_SLACK

#: Default grid spacing as a fraction of sigma: gamma = sigma * 2^-10, so s = 1024 grid units.
GRID_FRACTION = 2.0**-10
#: Largest s^2 (grid units) accepted: draws then stay far inside int64.
MAX_SIGMA2 = 2**80
#: Largest |value| / gamma accepted when rounding to the grid (int64 with room for the noise).
MAX_GRID_INDEX = 2**61

Rational = Fraction | int | float | str


def _bernoulli_exp_unit(num: int, den: int) -> bool:
    """Bernoulli(exp(-num/den)) for 0 <= num <= den (CKS Algorithm 1, gamma in [0, 1]).

    K counts the successes of Bernoulli(gamma/1), Bernoulli(gamma/2), ... before the first failure
    (plus one); P(K odd) = sum_k (-gamma)^k / k! = exp(-gamma).
    """
    k = 1
    while secrets.randbelow(den * k) < num:
        k += 1
    return k % 2 == 1


def bernoulli_exp(num: int, den: int) -> bool:
    """One draw of Bernoulli(exp(-num/den)), exactly (CKS Algorithm 1).

    Parameters
    ----------
    num, den : int
        gamma = num/den >= 0 (den > 0), as integers.

    Returns
    -------
    bool
        True with probability exp(-gamma): the product of floor(gamma) draws of
        Bernoulli(exp(-1)) and one of Bernoulli(exp(-(gamma - floor(gamma)))).
    """
    if den <= 0 or num < 0:
        raise ValueError(f"need num >= 0 and den > 0, got {num}/{den}")
    whole, num = divmod(num, den)
    for _ in range(whole):
        if not _bernoulli_exp_unit(1, 1):
            return False
    return _bernoulli_exp_unit(num, den)


def _discrete_laplace(t: int) -> int:
    """One draw of the discrete Laplace law P(x) ∝ exp(-|x|/t) on Z, integer t >= 1 (CKS Alg. 2)."""
    while True:
        u = secrets.randbelow(t)
        if not bernoulli_exp(u, t):
            continue
        v = 0
        while bernoulli_exp(1, 1):
            v += 1
        x = u + t * v
        negative = secrets.randbelow(2) == 1
        if not (negative and x == 0):
            return -x if negative else x


def _discrete_gaussian(a: int, b: int) -> int:
    """One draw of N_Z(0, a/b), by rejection from the discrete Laplace (CKS Algorithm 3).

    t = floor(s) + 1 with s^2 = a/b; a Laplace draw y is kept with probability
    exp(-(|y| - s^2/t)^2 / (2 s^2)) = exp(-(|y| b t - a)^2 / (2 a b t^2)).
    """
    t = isqrt(a // b) + 1
    den = 2 * a * b * t * t
    while True:
        y = _discrete_laplace(t)
        if bernoulli_exp((abs(y) * b * t - a) ** 2, den):
            return y


def _as_sigma2(sigma2: Rational) -> Fraction:
    s2 = Fraction(sigma2)
    if not 0 < s2 < MAX_SIGMA2:
        raise ValueError(f"sigma^2 must lie in (0, 2^80), got {sigma2}")
    return s2


def sample_discrete_gaussian(sigma2: Rational, size: int | tuple[int, ...] | None = None
                             ) -> int | np.ndarray:
    """Exact draws of the discrete Gaussian N_Z(0, sigma2), P(x) ∝ exp(-x^2 / (2 sigma2)) on Z.

    Parameters
    ----------
    sigma2 : Fraction, int, float or str
        The scale parameter sigma^2 (not quite the variance), read as an exact rational
        (``Fraction(sigma2)``; a float is taken at its exact binary value). 0 < sigma2 < 2^80.
    size : int or tuple, optional
        Output shape; None for a single Python int.

    Returns
    -------
    int or ndarray of int64, shape ``size``
        Independent draws, from ``secrets`` (the operating system's CSPRNG).
    """
    s2 = _as_sigma2(sigma2)
    a, b = s2.numerator, s2.denominator
    if size is None:
        return _discrete_gaussian(a, b)
    shape = size_tuple(size)
    draws = [_discrete_gaussian(a, b) for _ in range(math.prod(shape))]
    return np.array(draws, dtype=np.int64).reshape(shape)


def _check_sensitivity(sensitivity: float) -> float:
    delta = float(sensitivity)
    if not (math.isfinite(delta) and delta >= 0):
        raise ValueError(f"sensitivity must be finite and non-negative, got {sensitivity}")
    return delta


def discrete_gaussian_rho(sensitivity: float, sigma: float) -> float:
    """rho = Delta^2 / (2 s^2) of q + N_Z(0, s^2)^d for an integer query (Claim 1 above).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Delta of the integer-valued query, in grid units.
    sigma : float
        s, in grid units (the law's parameter, s^2 rational).

    Returns
    -------
    float
        rho such that the release is rho-zCDP (with relative slack ``ROUNDING_SLACK``).
    """
    delta = _check_sensitivity(sensitivity)
    s = check_positive("sigma", float(sigma))
    return delta**2 / (2.0 * s**2) * (1.0 + ROUNDING_SLACK)


def grid_sensitivity(sensitivity: float, grid: Rational, dim: int) -> float:
    """Delta/gamma + sqrt(d): L2 sensitivity in grid units after rounding to gamma Z^d (Claim 2).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Delta of the real query, metric units.
    grid : Fraction or float
        Grid spacing gamma > 0, metric units.
    dim : int
        d, the number of coordinates.
    """
    if dim < 1:
        raise ValueError(f"dim must be a positive integer, got {dim}")
    return _check_sensitivity(sensitivity) / check_positive("grid", float(grid)) + math.sqrt(dim)


def secure_zcdp_rho(sensitivity: float, sigma: float, grid: Rational, dim: int) -> float:
    """rho of the rounded-then-noised release: (Delta/gamma + sqrt(d))^2 / (2 (sigma/gamma)^2).

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity Delta of the tangent query in the metric at the footpoint.
    sigma : float
        Noise scale in metric units (s = sigma/gamma grid units).
    grid : Fraction or float
        Grid spacing gamma, metric units.
    dim : int
        d = manifold.dim.

    Returns
    -------
    float
        rho such that the release is rho-zCDP (Claims 1 and 2).

    Examples
    --------
    >>> import numpy as np
    >>> from fractions import Fraction
    >>> from geodp.mechanisms import secure_zcdp_rho
    >>> round(secure_zcdp_rho(sensitivity=1.0, sigma=2.0, grid=Fraction(1, 1024), dim=3), 4)   # about 1/8
    0.1254
    """
    g = check_positive("grid", float(grid))
    return discrete_gaussian_rho(grid_sensitivity(sensitivity, grid, dim), float(sigma) / g)


def _check_power_of_two(grid_fraction: float) -> float:
    f = check_positive("grid_fraction", grid_fraction)
    if f >= 1 or math.frexp(f)[0] != 0.5:
        raise ValueError(f"grid_fraction must be 2^-k for an integer k >= 1, got {grid_fraction}")
    return f


def secure_sigma_for_rho(rho: float, sensitivity: float, dim: int,
                         grid_fraction: float = GRID_FRACTION) -> float:
    """The smallest float sigma whose secure release, on the grid gamma = sigma * grid_fraction, is
    rho-zCDP for a query of L2 sensitivity ``sensitivity``.

    rho = (Delta + gamma sqrt(d))^2 / (2 sigma^2) = (Delta/sigma + f sqrt(d))^2 / 2 solves to
    sigma = Delta / (sqrt(2 rho) - f sqrt(d)); the float, raised by the rounding slack of
    ``secure_zcdp_rho``, is then raised ulp by ulp until ``secure_zcdp_rho`` confirms it. The grid-unit scale is s = 1/grid_fraction, exactly.

    Parameters
    ----------
    rho : float
        Target zCDP parameter (> f^2 d / 2, the floor the grid alone costs).
    sensitivity : float
        L2 sensitivity Delta, metric units.
    dim : int
        d = manifold.dim.
    grid_fraction : float
        f = gamma/sigma, a power of two 2^-k (so that gamma = sigma f is exact).

    Returns
    -------
    float
        sigma in metric units; pass it to ``SecureTangentGaussian(manifold, sigma)`` (with
        ``grid=sigma * grid_fraction`` if grid_fraction is not the default).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.mechanisms import secure_sigma_for_rho
    >>> round(secure_sigma_for_rho(rho=0.125, sensitivity=1.0, dim=3), 4)   # a little above 2
    2.0068
    """
    rho = check_positive("rho", rho)
    delta = check_positive("sensitivity", sensitivity)
    f = _check_power_of_two(grid_fraction)
    room = math.sqrt(2.0 * rho) - f * math.sqrt(dim)
    if room <= 0:
        raise ValueError(f"rho = {rho:g} is below the {f**2 * dim / 2:g} the grid alone costs at "
                         f"d = {dim}: use a smaller grid_fraction")
    sigma = delta / room * (1.0 + ROUNDING_SLACK)  # rho carries that slack: start past it
    while secure_zcdp_rho(delta, sigma, sigma * f, dim) > rho:
        sigma = math.nextafter(sigma, math.inf)
    return sigma


def round_to_grid(values: Array, grid: Rational) -> np.ndarray:
    """floor(x/gamma + 1/2) for each x, exactly (from the floats' exact rational values).

    Parameters
    ----------
    values : array_like of float, shape (...)
    grid : Fraction or float
        gamma > 0.

    Returns
    -------
    ndarray of int64, shape (...)
        The nearest grid indices (ties upwards).
    """
    g = Fraction(grid)
    if g <= 0:
        raise ValueError(f"grid must be positive, got {grid}")
    x = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(x)):
        raise ValueError("cannot round non-finite values to the grid")
    if np.any(np.abs(x) >= MAX_GRID_INDEX * float(g)):
        raise ValueError(f"values reach {float(np.max(np.abs(x))):.3g}, beyond 2^61 grid steps of "
                         f"{float(g):.3g}: use a coarser grid")
    gn, gd = g.numerator, g.denominator
    out = []
    for v in x.ravel().tolist():
        p, q = v.as_integer_ratio()
        out.append((2 * p * gd + q * gn) // (2 * q * gn))
    return np.array(out, dtype=np.int64).reshape(x.shape)


def from_grid(indices: np.ndarray, grid: Rational) -> np.ndarray:
    """k * gamma as the nearest floats (exact rational product, one correct rounding).

    Parameters
    ----------
    indices : ndarray of int, shape (...)
    grid : Fraction or float

    Returns
    -------
    ndarray of float, shape (...)
    """
    g = Fraction(grid)
    k = np.asarray(indices)
    vals = [int(i) * g.numerator / g.denominator for i in k.ravel().tolist()]
    return np.array(vals, dtype=float).reshape(k.shape)


class SecureTangentGaussian:
    """Discrete Gaussian noise on the grid gamma Z^d in orthonormal coordinates of T_w.

    Parameters
    ----------
    manifold : Manifold
    sigma : float
        Noise scale in the metric (as ``TangentGaussian``'s sigma).
    grid : float or Fraction, optional
        Grid spacing gamma in metric units; default sigma * 2^-10 (``GRID_FRACTION``), so the
        grid-unit scale is s = 1024 exactly. s^2 = (sigma/gamma)^2 is an exact rational.

    Notes
    -----
    Draws come from ``secrets`` and are not reproducible by any seed, on purpose.

    Examples
    --------
    T full-batch DP-RGD steps with clip C spend T rho in all (zCDP composition):

    >>> from geodp.manifolds import Sphere
    >>> sphere, rho_step, clip = Sphere(2), 0.05, 1.0
    >>> noise = SecureTangentGaussian(sphere, secure_sigma_for_rho(rho_step, clip, sphere.dim))
    >>> noise.rho(clip) <= rho_step, noise.sigma2_grid
    (True, Fraction(1048576, 1))
    >>> w, g = np.array([0.0, 0.0, 1.0]), np.array([0.3, -0.2, 0.0])
    >>> noise.sample_around(w, g, size=5).shape
    (5, 3)
    """

    def __init__(self, manifold: Manifold, sigma: float, grid: Rational | None = None):
        self.manifold = manifold
        self.sigma = check_positive("sigma", sigma)
        self.grid = Fraction(self.sigma) * Fraction(GRID_FRACTION) if grid is None else Fraction(grid)
        if self.grid <= 0:
            raise ValueError(f"grid must be positive, got {grid}")
        self.sigma2_grid = _as_sigma2((Fraction(self.sigma) / self.grid) ** 2)

    def rho(self, sensitivity: float) -> float:
        """zCDP rho of one ``sample_around`` for a tangent query of L2 sensitivity ``sensitivity``."""
        return secure_zcdp_rho(sensitivity, self.sigma, self.grid, self.manifold.dim)

    def guarantee(self, sensitivity: float) -> ZCDP:
        """``ZCDP(self.rho(sensitivity))``, for the accountants."""
        return ZCDP(self.rho(sensitivity))

    def sample_around(self, w: Array, tangent_value: Array,
                      size: int | tuple[int, ...] | None = None) -> Array:
        """Secure release of a tangent vector: from_coords(w, gamma (round(c/gamma) + Y)).

        Parameters
        ----------
        w : array_like, shape ``(*batch, *point_shape)``
            Public footpoint(s).
        tangent_value : array_like, shape ``(*batch, *point_shape)``
            The private value, tangent at w; its coordinates c = to_coords(w, tangent_value)
            have shape ``(*batch, d)``.
        size : int or tuple, optional
            Independent releases of the same value.

        Returns
        -------
        ndarray, shape size + batch + point_shape
            Tangent vectors at w; Y ~ N_Z(0, s^2)^d per release, from ``secrets``.
        """
        w = np.asarray(w, dtype=float)
        coords = self.manifold.to_coords(w, np.asarray(tangent_value, dtype=float))
        return self.manifold.from_coords(w, self.noisy_coordinates(coords, size))

    def noisy_coordinates(self, coords: Array, size: int | tuple[int, ...] | None = None) -> Array:
        """gamma (round(c/gamma) + Y) for orthonormal coordinates c (..., d): the release in
        coordinates, shape size + c's shape (``sample_around`` maps it back to T_w)."""
        centers = round_to_grid(np.asarray(coords, dtype=float), self.grid)
        noisy = centers + sample_discrete_gaussian(self.sigma2_grid, size_tuple(size) + centers.shape)
        return from_grid(noisy, self.grid)
