"""Privacy loss distributions (PLDs): tight (epsilon, delta) accounting of composed mechanisms.

A mechanism's pair of output laws (P, Q) on neighbouring inputs is summarised by its privacy loss
L = log(dP/dQ) under P; its privacy profile is the hockey-stick divergence
delta(eps) = E_P[(1 - e^(eps - L))_+] + P(L = inf), and composition adds independent losses
(Meiser & Mohammadi 2018; Koskela, Jälkö & Honkela 2020; Gopi, Lee & Wutschitz 2021).

Discretisation (connect the dots, Doroshenko et al. 2022): the losses are put on the grid
{k * step}; the P-mass of each interval (l_k, l_k+1] is split between its two end points so that
both its P-mass and its Q-mass (the P-mass weighted by e^(-L)) are kept. The term a point mass
contributes to delta(eps), (1 - e^eps e^(-l))_+, is convex in e^(-l), so by Jensen the split pair
dominates the true one at every eps; by Blackwell's theorem domination survives composition. The
result is pessimistic by construction, with no error term, and far tighter than rounding every
loss up, whose bias grows linearly with the number of compositions.

Three error terms are folded into the mass at +inf, so every delta reported is an upper bound:
the P-mass beyond the discretised range (``tail_mass`` per mechanism), the mass a windowed
self-composition lets wrap around (a Chernoff bound), and a bound on the FFT rounding error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import fft, special

from .conversions import SAFETY, check_count, check_positive, gdp_delta, gdp_epsilon

#: Default grid step of the privacy loss (dp-accounting's default value discretisation interval).
DEFAULT_STEP = 1e-4
#: Default P-mass left out of a mechanism's discretised range, or let wrap around, per operation.
DEFAULT_TAIL_MASS = 1e-15
_EPS = np.finfo(float).eps
#: Relative slack on every delta reported: covers the rounding of the masses (about 1e-12,
#: from the cancellation in the connect-the-dots split) and of the profile's sums.
ROUNDING_SLACK = 1e-10


def _up(x: float) -> float:
    """The next double above ``x``: an upper bound on a sum or product rounded to nearest into x."""
    return math.nextafter(x, math.inf)


def _grid_ceil(x: float, step: float) -> float:
    """The smallest grid loss k * step (as the grid computes it) that is at least ``x``."""
    k = math.ceil(x / step - 1e-9)
    return (k + 1) * step if k * step < x else k * step


#: Losses this far above epsilon enter delta(epsilon) with their whole mass (see ``delta``).
_FAR_LOSS = 40.0
#: Composed supports up to this many bins are transformed whole, longer ones in a Chernoff window.
_SHORT_SUPPORT = 1 << 12
#: The Chernoff parameters t tried by ``_chernoff_window`` (any t > 0 gives a valid bound).
_CHERNOFF_TS = np.geomspace(1e-8, 1e1, 120)


def _grid_min(f, size: int, start: int) -> float:
    """min f(i) over i in 0..size-1 for f quasi-convex (unimodal) in i, searched from ``start``
    (a guess of the minimiser): steps doubling downhill bracket the minimum, then bisection on
    the sign of f(i+1) - f(i); about 2 log2(distance to the minimiser) + 4 evaluations.

    The Chernoff bound g(t) = (T log M(t) - log beta) / t is quasi-convex on t > 0 (log M is
    convex, so {t: g(t) <= a} = {t: T log M(t) - log beta - a t <= 0} is an interval), hence
    unimodal along the grid. Should rounding break unimodality, the value returned is still
    f at some grid point: still a valid (if looser) bound.
    """
    cache: dict[int, float] = {}

    def rises(i: int) -> bool:  # f(i) <= f(i+1): the minimum is at or below i
        for j in (i, i + 1):
            if j not in cache:
                cache[j] = f(j)
        return cache[i] <= cache[i + 1]

    lo, hi = 0, size - 1
    i, step = min(max(start, 0), size - 2), 1
    uphill = rises(i)
    while True:
        if uphill:
            hi = i
        else:
            lo = i + 1
        nxt = i - step if uphill else i + step
        if not lo <= nxt < hi:
            break
        if rises(nxt) != uphill:
            if uphill:
                lo = nxt + 1
            else:
                hi = nxt
            break
        i, step = nxt, 2 * step
    while lo < hi:
        mid = (lo + hi) // 2
        if rises(mid):
            hi = mid
        else:
            lo = mid + 1
    return cache[lo] if lo in cache else f(lo)


def _l2(x: np.ndarray) -> float:
    """Euclidean norm without BLAS (whose threads, woken for one dot product, can cost
    milliseconds on a busy machine; these norms only scale the rounding-error bounds)."""
    return math.sqrt(float(np.einsum("i,i->", x, x)))


def _fft_error(size: int, norms: float) -> float:
    """Bound on the l1 error of an FFT convolution of length ``size`` whose factors have l2 norms
    whose sum is ``norms``: ||dy||_1 <= sqrt(N) ||dy||_2 and ||dy||_2 <= 5 eps log2(N) (norms + 1)
    (Higham 2002, Thm 24.2, for the forward and inverse transforms and the product)."""
    return float(math.sqrt(size) * 5.0 * _EPS * max(math.log2(size), 1.0) * (norms + 1.0))


def _convolve(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Linear convolution: direct for short factors, by real FFTs otherwise."""
    if min(len(a), len(b)) <= 64:
        return np.convolve(a, b)
    size = len(a) + len(b) - 1
    n = fft.next_fast_len(size, real=True)
    return fft.irfft(fft.rfft(a, n) * fft.rfft(b, n), n)[:size]


def _power(x: np.ndarray, count: int) -> np.ndarray:
    """x ** count elementwise (count >= 1) by binary powering; ``x`` is consumed (squared in
    place).

    Each complex product errs by at most sqrt(5) u relatively (u = eps/2; Brent, Percival &
    Zimmermann 2007), so the relative error is at most sqrt(5) u (count + log2 count), within
    the 5 eps T |Y_k| that ``_power_error`` allows (the same scheme as NumPy's integer power, in
    about a third of its time on long spectra).
    """
    result = None
    while True:
        if count & 1:
            result = x.copy() if result is None else np.multiply(result, x, out=result)
        count >>= 1
        if not count:
            return result
        np.multiply(x, x, out=x)


def _power_error(size: int, count: int, spectrum: np.ndarray, powered: np.ndarray,
                 norm_y: float) -> float:
    """Bound on the l1 error of y = IFFT(FFT(x)^T) for a sub-probability vector x, given the
    moduli of the half spectrum, |X_k| (``spectrum``) and |Y_k| = |X_k|^T (``powered``); uses
    ``spectrum`` as its workspace.

    Each computed coefficient has |dX_k| <= g = 5 eps log2(N) sum|x| <= g (componentwise bound of
    the radix-2 FFT, Higham 2002, Section 24.1); raising to the power T multiplies it by at most
    T |X_k|^(T-1) (|X_k| <= 1), read off as |Y_k| / |X_k|, and the power itself errs by at most
    5 eps (T |Y_k| + 1).
    Summing over the full spectrum, ||dY||_2 bounds ||dy||_1 <= sqrt(N) ||dy||_2 through
    Parseval, plus the inverse transform's own g sqrt(N) ||y||_2.
    """
    g = 5.0 * _EPS * max(math.log2(size), 1.0)
    # |X_k|^(T-1) = |Y_k| / |X_k| (0 where X_k = 0), a division instead of a log and an exp
    per = np.divide(powered, spectrum, out=spectrum, where=spectrum > 0)
    per *= g * count
    per += 5.0 * _EPS * count * powered
    per += 5.0 * _EPS
    # the half spectrum stands for the full one: every coefficient but X_0 (and X_N/2) twice
    sum_sq = 2.0 * float(np.einsum("i,i->", per, per)) - per[0] ** 2
    if size % 2 == 0:
        sum_sq -= per[-1] ** 2
    return float(math.sqrt(sum_sq) + g * math.sqrt(size) * norm_y)


@dataclass(frozen=True)
class PrivacyLossDistribution:
    """A discretised privacy loss distribution: P-masses ``pmf`` at losses (offset + i) * step.

    ``infinity_mass`` is the P-mass at loss +inf (including the folded-in error terms, listed in
    ``errors``); ``max_loss`` is the largest finite loss of the true support (for delta = 0) and
    ``pure`` says whether the true infinity mass is zero (then epsilon(0) = max_loss).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import PLDAccountant
    >>> acc = PLDAccountant().compose_laplace(scale=1.0)
    >>> round(acc.epsilon(0.0), 2)   # the Laplace at scale 1, sensitivity 1: 1-DP
    1.0
    """

    step: float
    offset: int
    pmf: np.ndarray
    infinity_mass: float
    max_loss: float
    pure: bool
    errors: float = 0.0

    @property
    def losses(self) -> np.ndarray:
        return (self.offset + np.arange(len(self.pmf))) * self.step

    def mass(self) -> float:
        return float(np.sum(self.pmf))

    # composition ------------------------------------------------------------------------------
    def compose(self, other: "PrivacyLossDistribution",
                tail_mass: float = DEFAULT_TAIL_MASS) -> "PrivacyLossDistribution":
        """The PLD of running both mechanisms: the convolution of the losses."""
        if other.step != self.step:
            raise ValueError(f"PLDs on different grids cannot be composed (step {self.step} and "
                             f"{other.step})")
        pmf = _convolve(self.pmf, other.pmf)
        err = _fft_error(len(pmf), _l2(self.pmf) + _l2(other.pmf))
        m1, m2 = self.mass(), other.mass()
        inf = self.infinity_mass * (m2 + other.infinity_mass) + m1 * other.infinity_mass
        return _truncated(self.step, self.offset + other.offset, np.maximum(pmf, 0.0), inf + err,
                          _up(self.max_loss + other.max_loss), self.pure and other.pure,
                          self.errors + other.errors + err, tail_mass)

    def self_compose(self, count: int,
                     tail_mass: float = DEFAULT_TAIL_MASS) -> "PrivacyLossDistribution":
        """The PLD of ``count`` runs of this mechanism, by one FFT raised to the power ``count``.

        Unless the composed support is short, the transform covers only a window [lo, hi] of the
        composed losses chosen by Chernoff bounds, P(S > hi) <= min_t M(t)^count e^(-t hi) <=
        tail_mass with M(t) = sum_k p_k e^(t l_k) (and likewise below lo): the composed losses
        concentrate around their mean, within O(sqrt(count)) of the count-fold support's width.
        The circular convolution wraps the mass above hi to the bottom of the window: that mass
        (at most tail_mass) is added at +inf. Mass below lo wraps to the top of the window (the
        whole transform length is kept), where it only raises delta. The FFT rounding bound
        (``_power_error``) is added at +inf too.
        """
        count = check_count("count", count, 1)
        if count == 1:
            return self
        x = self.pmf
        full = count * (len(x) - 1) + 1
        lo, size = count * self.offset, full
        wrapped = 0.0
        if full > _SHORT_SUPPORT:
            win_lo, win_hi = self._chernoff_window(count, tail_mass)
            if win_hi - win_lo + 1 < full:
                lo, size, wrapped = win_lo, win_hi - win_lo + 1, tail_mass
        n = fft.next_fast_len(max(size, len(x)), real=True)
        if wrapped:
            size = n
        folded = np.bincount(np.arange(len(x)) % n, weights=x, minlength=n) if len(x) > n else x
        spectrum = fft.rfft(folded, n)
        moduli = np.abs(spectrum)
        powered = _power(spectrum, count)
        spectrum, moduli = moduli, np.abs(powered)
        y = fft.irfft(powered, n, overwrite_x=True)
        err = _power_error(n, count, spectrum, moduli, _l2(y))
        start = (lo - count * self.offset) % n
        pmf = y[start:start + size] if start + size <= n else \
            np.concatenate([y[start:], y[:start + size - n]])
        m, i = self.mass(), self.infinity_mass
        inf = (m + i) ** count - m ** count
        return _truncated(self.step, lo, np.maximum(pmf, 0.0, out=pmf), inf + wrapped + err,
                          _up(count * self.max_loss), self.pure, count * self.errors + wrapped + err,
                          tail_mass)

    def _chernoff_window(self, count: int, tail_mass: float) -> tuple[int, int]:
        """Smallest [lo, hi] (bin indices) with both tails of the composed PLD below tail_mass.

        M(t) is bounded on a coarser grid (nodes ``block`` bins apart, at most 2049 of them):
        each bin's mass is split between the two nodes around it keeping its mean, as connect
        the dots does. The split law is larger in the convex order, so its M(t) is larger for
        every t of either sign (e^(tl) is convex) and the bounds stay valid, while the mean, and
        with it the window's centre, stays where it is.
        """
        block = max(1, len(self.pmf) // 2048)
        pad = -len(self.pmf) % block
        bins = np.concatenate([self.pmf, np.zeros(pad)]).reshape(-1, block)
        up = bins @ (np.arange(block) / block)  # the share of each block for its upper node
        nodes = np.zeros(len(bins) + 1)
        nodes[:-1] += np.maximum(bins.sum(axis=1) - up, 0.0)
        nodes[1:] += up
        keep = nodes > 0
        with np.errstate(divide="ignore"):
            log_p = np.log(nodes[keep])
        at = self.offset + block * np.flatnonzero(keep).astype(float)
        log_beta = math.log(tail_mass)
        # start from the t minimising the bound for a Gaussian of the same variance (in bins)
        weights = nodes[keep] / np.sum(nodes[keep])
        var = float(np.dot(weights, (at - np.dot(weights, at)) ** 2))
        start = (int(np.searchsorted(_CHERNOFF_TS, math.sqrt(-2.0 * log_beta / (count * var))))
                 if var > 0 else len(_CHERNOFF_TS) // 2)
        bounds = []
        for signed in (at, -at):

            def bound(i: int) -> float:
                t = float(_CHERNOFF_TS[i])
                terms = log_p + t * signed
                top = float(np.max(terms))
                log_m = top + math.log(float(np.sum(np.exp(terms - top))))
                return (count * log_m - log_beta) / t

            bounds.append(_grid_min(bound, len(_CHERNOFF_TS), start))
        return int(math.floor(-bounds[1])), int(math.ceil(bounds[0]))

    # privacy profile ---------------------------------------------------------------------------
    def _profile(self, tail: np.ndarray, start: int,
                 stop: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(losses l_j, A_j = sum_{k>j} p_k, C_j = sum_{j<k<stop} p_k e^(l_j - l_k)) for
        start <= j < stop, given the tail sums tail_j = sum_{k>=j} p_k. C leaves out the masses
        from ``stop`` on (a smaller C: a larger profile)."""
        p = self.pmf[start:stop]
        above = tail[start + 1:stop + 1]
        if len(above) < len(p):
            above = np.append(above, 0.0)
        k = np.arange(len(p))
        with np.errstate(divide="ignore"):
            log_terms = np.log(p) - k * self.step
        log_acc = np.logaddexp.accumulate(log_terms[::-1])[::-1]
        log_c = np.concatenate([log_acc[1:], [-np.inf]]) + k * self.step
        return (self.offset + start + k) * self.step, above, np.exp(log_c)

    def _index_above(self, loss: float) -> int:
        """A bin index, clipped to [0, len(pmf)], near the grid point of ``loss`` (+-inf: the
        ends); callers keep a margin of a bin either side."""
        if not math.isfinite(loss):
            return 0 if loss < 0 else len(self.pmf)
        return min(max(math.floor(loss / self.step) - self.offset, 0), len(self.pmf))

    def delta(self, epsilon: float) -> float:
        """An upper bound on the smallest delta for which the mechanism is (epsilon, delta)-DP.

        Sums p_k (1 - e^(epsilon - l_k)) over the losses l_k > epsilon; losses more than
        ``_FAR_LOSS`` above epsilon count with their whole mass p_k (larger than their term, by
        less than e^-40 of it), which saves the exponentials over the top of a long grid.
        """
        epsilon = float(epsilon)
        # losses below grid point floor(epsilon / step) - 1 are below epsilon and add nothing
        first = max(self._index_above(epsilon) - 1, 0)
        last = max(min(self._index_above(epsilon + _FAR_LOSS) + 2, len(self.pmf)), first)
        l = (self.offset + first + np.arange(last - first)) * self.step
        p = self.pmf[first:last]
        keep = l > epsilon
        raw = (np.sum(p[keep] * -np.expm1(epsilon - l[keep])) + np.sum(self.pmf[last:])
               + self.infinity_mass)
        return float(raw * (1 + ROUNDING_SLACK))

    def epsilon(self, delta: float) -> float:
        """An upper bound on the smallest epsilon >= 0 for which the mechanism is (epsilon, delta)-DP.

        The profile is inverted in closed form on the grid interval where it crosses delta; the
        result is then certified by ``delta``, which sums non-negative terms and so keeps its
        relative accuracy (see ``_certified``).
        """
        delta = float(delta)
        if not 0 <= delta < 1:
            raise ValueError(f"delta must lie in [0, 1), got {delta}")
        if delta == 0:
            return max(self.max_loss, 0.0) if self.pure else math.inf
        if self.infinity_mass >= delta / (1 + ROUNDING_SLACK):
            return math.inf
        return self._certified(self._inverse_profile(delta / (1 + ROUNDING_SLACK)), delta)

    def _inverse_profile(self, delta: float) -> float:
        """The epsilon >= 0 at which the computed profile equals ``delta`` (up to rounding).

        The profile delta(l_j) = A_j - C_j lies between (1 - e^(-m step)) P(L >= l_(j+m))
        (m steps: about one unit of loss) and P(L > l_j) = A_j. Tail sums place the crossing
        between the last j where the lower bound exceeds delta and the first where A_j does not,
        usually a short stretch of the grid; the profile is formed there only, C_j leaving out
        the losses more than ``_FAR_LOSS`` above that stretch (their share is below e^-40).
        """
        tail = np.cumsum(self.pmf[::-1])[::-1]
        rising = tail[::-1]

        def count_above(x: float) -> int:  # the number of j with tail_j > x (tail decreases)
            return len(tail) - int(np.searchsorted(rising, x, side="right"))

        m = max(1, math.ceil(1.0 / self.step))
        target = delta - self.infinity_mass
        start = max(count_above(target / -math.expm1(-m * self.step)) - 1 - m, 0)
        crossed = count_above(target)  # from j = crossed - 1 on, A_j + infinity mass <= delta
        stop = min(crossed + math.ceil(_FAR_LOSS / self.step), len(tail))
        l, above, c = self._profile(tail, start, stop)
        prof = above - c + self.infinity_mass
        over = np.flatnonzero(prof > delta)
        if len(over) == 0 and start == 0:
            return 0.0
        j = over[-1] if len(over) else 0
        eps = float(l[j]) + math.log((above[j] + self.infinity_mass - delta) / c[j])
        return max(eps, 0.0)

    def _certified(self, epsilon: float, delta: float) -> float:
        """The smallest of epsilon, epsilon + g, epsilon + 3g, ... (g = 4 ulps of max(1, epsilon))
        at which ``self.delta`` is at most ``delta``.

        The closed-form inverse is accurate to a few ulps of max(1, epsilon) in absolute terms,
        but delta(epsilon) = A - C cancels: A = P(L > epsilon) can exceed delta by orders of
        magnitude, so an absolute error u in epsilon moves delta by about A u, which is far more
        than the relative ``ROUNDING_SLACK`` when delta << A (at one randomised response with
        e0 = 1 and delta = 1e-8, three ulps below the exact epsilon). Neither a fixed count of
        ulps (too small near epsilon = 0) nor a relative margin (likewise) covers this, so the
        result is certified by the profile itself, which has no cancellation.
        """
        gap = 4.0 * _EPS * max(1.0, epsilon)
        while self.delta(epsilon) > delta:
            epsilon += gap
            gap *= 2.0
        return epsilon


def _edge(values: np.ndarray, tail_mass: float) -> tuple[int, float]:
    """How many leading ``values`` have a cumulative sum of at most ``tail_mass``, and that sum:
    the cumulative sum is formed over growing prefixes, not the whole array (the same numbers:
    a cumulative sum is sequential)."""
    width = 1024
    while True:
        cum = np.cumsum(values[:width])
        cut = int(np.searchsorted(cum, tail_mass, side="right"))
        if cut < len(cum) or len(cum) == len(values):
            return cut, (float(cum[cut - 1]) if cut else 0.0)
        width *= 8


def _truncated(step, offset, pmf, infinity_mass, max_loss, pure, errors,
               tail_mass) -> PrivacyLossDistribution:
    """Drop at most ``tail_mass`` of P-mass from each end: the top to +inf (not for a pure PLD,
    whose finite support is what epsilon(0) reads), the bottom moved up to the lowest bin kept
    (raising a loss only raises delta). ``pmf`` is consumed (the result is a view of it)."""
    cut_top, top_mass = (0, 0.0) if pure else _edge(pmf[::-1], tail_mass)
    cut_bottom, bottom_mass = _edge(pmf, tail_mass)
    if cut_top + cut_bottom >= len(pmf):
        cut_top = cut_bottom = 0
        top_mass = bottom_mass = 0.0
    kept = pmf[cut_bottom:len(pmf) - cut_top]
    kept[0] += bottom_mass
    return PrivacyLossDistribution(step, offset + cut_bottom, kept, infinity_mass + top_mass,
                                   max_loss, pure, errors + top_mass)


def _interval_masses(cdf: np.ndarray, sf: np.ndarray) -> np.ndarray:
    """Masses of (x_k, x_k+1] from a CDF and survival function sampled at the grid, each from the
    side where it does not cancel."""
    low = cdf[:-1] < 0.5
    return np.where(low, cdf[1:] - cdf[:-1], sf[:-1] - sf[1:])


def from_cdfs(step: float, lo: float, hi: float, laws, max_loss: float,
              pure: bool) -> PrivacyLossDistribution:
    """Connect-the-dots discretisation of a loss L given the CDFs of L under P and under Q.

    ``laws(grid)`` returns (P(L <= l), P(L > l), Q(L <= l), Q(L > l)) at the grid losses, shape
    (K,) each: both sides of each law, so that every interval mass is taken from the side where
    it does not cancel (one call, so that the four may share their work).

    Grid l_k = k * step for k = floor(lo/step) .. ceil(hi/step). The P-mass at or below l_0 moves
    up to l_0, the P-mass above the last point to +inf; in each interval (l_k, l_k+1] with masses
    P_k, Q_k the share (P_k - e^(l_k) Q_k) / (1 - e^(-step)) goes to l_k+1 and the rest to l_k,
    which keeps both masses (clipped to [0, P_k] against rounding).
    """
    k0, k1 = math.floor(lo / step), max(math.ceil(hi / step), math.floor(lo / step) + 1)
    grid = np.arange(k0, k1 + 1) * step
    cp, sp, cq, sq = laws(grid)
    p_int, q_int = _interval_masses(cp, sp), _interval_masses(cq, sq)
    with np.errstate(divide="ignore", over="ignore"):
        q_scaled = np.where(q_int > 0, np.exp(grid[:-1] + np.log(np.maximum(q_int, 1e-320))), 0.0)
    up = np.clip((p_int - q_scaled) / -np.expm1(-step), 0.0, p_int)
    pmf = np.zeros(len(grid))
    pmf[1:] += up
    pmf[:-1] += p_int - up
    pmf[0] += cp[0]
    top = float(sp[-1])
    return PrivacyLossDistribution(step, k0, pmf, top, max_loss, pure, top)


def _phi_pair(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(Phi(a), Phi(-a)) from one evaluation of the smaller tail, Phi(-|a|); the larger is one
    minus it, exact to an ulp of 1/2 or more (``_interval_masses`` differences only the smaller
    side, so this costs no accuracy and halves the calls of the normal CDF)."""
    small = special.ndtr(-np.abs(a))
    big = 1.0 - small
    negative = a < 0
    return np.where(negative, small, big), np.where(negative, big, small)


def gaussian_pld(sigma: float, sensitivity: float = 1.0, step: float = DEFAULT_STEP,
                 tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """The Gaussian mechanism: with mu = sensitivity / sigma, L ~ N(mu^2/2, mu^2) under P and
    N(-mu^2/2, mu^2) under Q (symmetric in the two directions)."""
    mu = check_positive("sensitivity", sensitivity) / check_positive("sigma", sigma)
    k = -special.ndtri(tail_mass)
    m = mu * mu / 2.0

    def laws(l):
        return (*_phi_pair((l - m) / mu), *_phi_pair((l + m) / mu))

    return from_cdfs(step, m - k * mu, m + k * mu, laws, math.inf, False)


def laplace_pld(scale: float, sensitivity: float = 1.0,
                step: float = DEFAULT_STEP) -> PrivacyLossDistribution:
    """The Laplace mechanism, P = Lap(0, b), Q = Lap(s, b), e0 = s/b: the loss is e0 for x <= 0,
    (s - 2x)/b on [0, s] and -e0 beyond, so for l in [-e0, e0) P(L <= l) = e^(-(e0 - l)/2)/2 and
    Q(L <= l) = 1 - e^(-(e0 + l)/2)/2 (symmetric in the two directions)."""
    e0 = check_positive("sensitivity", sensitivity) / check_positive("scale", scale)

    def laws(l):
        inside = (l >= -e0) & (l < e0)
        cdf_p = np.where(l >= e0, 1.0, np.where(inside, 0.5 * np.exp(-(e0 - l) / 2.0), 0.0))
        cdf_q = np.where(l >= e0, 1.0, np.where(inside, 1.0 - 0.5 * np.exp(-(e0 + l) / 2.0), 0.0))
        return cdf_p, 1.0 - cdf_p, cdf_q, 1.0 - cdf_q

    return from_cdfs(step, -e0, e0, laws, _grid_ceil(e0, step), True)


def pure_pld(epsilon: float, step: float = DEFAULT_STEP) -> PrivacyLossDistribution:
    """Any epsilon-DP mechanism is dominated by randomised response with losses +-epsilon:
    P(L = e) = e^e / (1 + e^e), Q(L = e) = 1 / (1 + e^e) (Kairouz, Oh & Viswanath 2015)."""
    e = check_positive("epsilon", epsilon)
    hi_p, hi_q = special.expit(e), special.expit(-e)

    def steps(l, lo_val, hi_val):
        return (np.where(l >= e, 1.0, np.where(l >= -e, lo_val, 0.0)),
                np.where(l >= e, 0.0, np.where(l >= -e, hi_val, 1.0)))

    def laws(l):
        return (*steps(l, hi_q, hi_p), *steps(l, hi_p, hi_q))

    return from_cdfs(step, -e, e, laws, _grid_ceil(e, step), True)


def subsampled_gaussian_pld(noise_multiplier: float, sample_rate: float, direction: str,
                            step: float = DEFAULT_STEP,
                            tail_mass: float = DEFAULT_TAIL_MASS) -> PrivacyLossDistribution:
    """The Poisson-subsampled Gaussian with sigma = z (sensitivity 1), mu_q = (1-q) N(0, z^2) +
    q N(1, z^2), add/remove neighbours.

    ``"remove"``: P = mu_q, Q = N(0, z^2), L(x) = log(1 - q + q e^((2x-1)/(2z^2))) increasing in x,
    L <= l iff x <= x(l) = z^2 log((e^l - 1 + q)/q) + 1/2.
    ``"add"``: P = N(0, z^2), Q = mu_q, L = -log(...) decreasing, L <= l iff x >= x(-l); the loss
    never exceeds -log(1 - q).
    """
    z = check_positive("noise_multiplier", noise_multiplier)
    q = float(sample_rate)
    if not 0 < q <= 1:
        raise ValueError(f"sample_rate must lie in (0, 1], got {sample_rate}")
    if q == 1.0:
        return gaussian_pld(z, 1.0, step, tail_mass)
    if direction not in ("remove", "add"):
        raise ValueError(f"direction must be 'remove' or 'add', got {direction!r}")
    k = -special.ndtri(tail_mass)

    def loss(x):
        return np.logaddexp(np.log1p(-q), np.log(q) + (2.0 * x - 1.0) / (2.0 * z * z))

    def sides(l):
        """(N(0, z^2) below x(l), above it, mu_q below, above), x(l) computed once."""
        arg = np.expm1(l) + q
        with np.errstate(divide="ignore", invalid="ignore"):
            x = np.where(arg > 0, z * z * np.log(np.maximum(arg, 1e-300) / q) + 0.5, -np.inf)
        below, above = _phi_pair(x / z)
        below_1, above_1 = _phi_pair((x - 1.0) / z)
        return below, above, (1 - q) * below + q * below_1, (1 - q) * above + q * above_1

    if direction == "remove":
        def laws(l):
            below, above, mix_below, mix_above = sides(l)
            return mix_below, mix_above, below, above

        return from_cdfs(step, float(loss(-k * z)), float(loss(1 + k * z)), laws, math.inf, False)
    top = -math.log1p(-q)

    def laws(l):  # L <= l iff x >= x(-l)
        below, above, mix_below, mix_above = sides(-l)
        return above, below, mix_above, mix_below

    return from_cdfs(step, -float(loss(k * z)), min(top, -float(loss(-k * z))), laws, math.inf,
                     False)


def subsampled_gaussian_epsilon(noise_multiplier: float, sample_rate: float, steps: int,
                                delta: float, step: float = DEFAULT_STEP,
                                tail_mass: float = DEFAULT_TAIL_MASS) -> float:
    """Epsilon at ``delta`` of ``steps`` Poisson-subsampled Gaussian steps (both directions) on a
    grid of step ``step`` (a valid upper bound at any step; used with a coarse step to steer
    ``noise_multiplier_for`` cheaply)."""
    directions = ("remove", "add") if sample_rate < 1 else ("remove",)
    return max(subsampled_gaussian_pld(noise_multiplier, sample_rate, d, step, tail_mass)
               .self_compose(steps, tail_mass).epsilon(delta)
               for d in directions)


class PLDAccountant:
    """Composes mechanisms as privacy loss distributions and reports (epsilon, delta).

    Add/remove neighbours: both directions (remove: P = M(D), Q = M(D'); add: the reverse) are
    composed separately and the worse is reported; they differ only for subsampled mechanisms.

    Full-batch Gaussian steps are not discretised: k of them with noise multipliers z_i compose
    exactly to one Gaussian with mu = sqrt(sum 1/z_i^2) (Dong, Roth & Su 2022, Cor. 3.3). Alone,
    they are reported by the closed-form profile of mu-GDP (``gdp_epsilon``, ``gdp_delta``);
    with other parts, that one Gaussian is discretised once and composed with them.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.privacy import PLDAccountant
    >>> acc = PLDAccountant().compose_gaussian(1.1, steps=1000, sample_rate=0.01)
    >>> round(acc.epsilon(1e-5), 2)   # tighter than RDP's
    1.52
    """

    def __init__(self, step: float = DEFAULT_STEP, tail_mass: float = DEFAULT_TAIL_MASS):
        self.step = check_positive("step", step)
        self.tail_mass = float(tail_mass)
        if not 0 < self.tail_mass < 1e-6:
            raise ValueError(f"tail_mass must lie in (0, 1e-6), got {tail_mass}")
        self._plds: dict[str, PrivacyLossDistribution] = {}
        #: sum of mu^2 over the full-batch Gaussian parts not yet discretised
        self._gaussian_mu2 = 0.0

    def compose_pld(self, remove: PrivacyLossDistribution,
                    add: PrivacyLossDistribution | None = None) -> "PLDAccountant":
        """Add a mechanism given by its PLDs (``add`` defaults to ``remove``: symmetric)."""
        for direction, pld in (("remove", remove), ("add", remove if add is None else add)):
            if pld.step != self.step:
                raise ValueError(f"the PLD's step {pld.step} differs from the accountant's "
                                 f"{self.step}")
            old = self._plds.get(direction)
            self._plds[direction] = pld if old is None else old.compose(pld, self.tail_mass)
        return self

    def compose_gaussian(self, noise_multiplier: float, steps: int = 1, sample_rate: float = 1.0,
                         sampling: str = "poisson") -> "PLDAccountant":
        """``steps`` runs of the Gaussian mechanism with sigma = noise_multiplier * sensitivity,
        each on a Poisson sample with rate ``sample_rate`` (at rate 1, composed exactly)."""
        if sampling != "poisson":
            raise ValueError("PLD accounting covers Poisson sampling; for sampling without "
                             "replacement use accountant='rdp' (RDPAccountant)")
        steps = check_count("steps", steps)
        z = check_positive("noise_multiplier", noise_multiplier)
        if steps == 0:
            return self
        if float(sample_rate) == 1.0:
            self._gaussian_mu2 += steps / (z * z)
            return self
        parts = [subsampled_gaussian_pld(z, sample_rate, d, self.step, self.tail_mass)
                 .self_compose(steps, self.tail_mass) for d in ("remove", "add")]
        return self.compose_pld(*parts)

    def compose_laplace(self, scale: float, steps: int = 1,
                        sensitivity: float = 1.0) -> "PLDAccountant":
        """``steps`` runs of the Laplace mechanism with the given scale and sensitivity."""
        steps = check_count("steps", steps)
        if steps == 0:
            return self
        return self.compose_pld(laplace_pld(scale, sensitivity, self.step)
                                .self_compose(steps, self.tail_mass))

    def compose_pure(self, epsilon: float, steps: int = 1) -> "PLDAccountant":
        """``steps`` epsilon-DP mechanisms of any kind (dominated by randomised response)."""
        steps = check_count("steps", steps)
        if steps == 0:
            return self
        return self.compose_pld(pure_pld(epsilon, self.step).self_compose(steps, self.tail_mass))

    def _gaussian_only(self) -> bool:
        """Whether only full-batch Gaussians were composed (then the closed form answers)."""
        if not self._plds and not self._gaussian_mu2:
            raise ValueError("nothing has been composed yet")
        return not self._plds

    def _directions(self) -> list[PrivacyLossDistribution]:
        """Both directions' composed PLDs, the pending full-batch Gaussian folded in."""
        if self._gaussian_mu2:
            gaussian = gaussian_pld(1.0, math.sqrt(self._gaussian_mu2), self.step, self.tail_mass)
            self._plds = {d: p.compose(gaussian, self.tail_mass) for d, p in self._plds.items()}
            self._gaussian_mu2 = 0.0
        return list(self._plds.values())

    def epsilon(self, delta: float) -> float:
        """Smallest epsilon (an upper bound) such that the composition is (epsilon, delta)-DP."""
        if self._gaussian_only():
            delta = float(delta)
            if not 0 <= delta < 1:
                raise ValueError(f"delta must lie in [0, 1), got {delta}")
            return gdp_epsilon(math.sqrt(self._gaussian_mu2), delta) if delta > 0 else math.inf
        return float(max(p.epsilon(delta) for p in self._directions()))

    def delta(self, epsilon: float) -> float:
        """Smallest delta (an upper bound) such that the composition is (epsilon, delta)-DP."""
        if self._gaussian_only():
            # log_gdp_delta errs by at most 2e-10 relative (conversions.SAFETY)
            return gdp_delta(math.sqrt(self._gaussian_mu2), epsilon) * (1.0 + SAFETY)
        return max(p.delta(epsilon) for p in self._directions())

    def error_terms(self) -> float:
        """The delta folded in for truncation, wrap-around and rounding (already included)."""
        if self._gaussian_only():
            return 0.0
        return max(p.errors for p in self._directions())
