"""The PLD calibration of the Poisson-subsampled Gaussian (``noise_multiplier_for``'s default):
a noise multiplier z certified by the PLD accountant, at most ``Z_TOL`` (relative) above the
smallest such z, for about one evaluation at the accountant's grid step.

Every z returned is certified: delta(epsilon) of a pessimistic PLD (connect the dots,
Doroshenko et al. 2022, an upper bound at any grid step) meets the target in both directions:
the remove direction's on the accountant's own grid (step 1e-4), exactly as the accountant
computes it, and the add direction's there or on the grid of step 1e-3, whose points are among
the accountant's. (The PLD discretised on a grid is a garbling of the one discretised on a
refinement of it, so it dominates it: the accountant's reading is no larger.) Everything else,
the CLT start, the coarse grids and the extrapolation in the grid step, only steers the search:
an error there costs evaluations, never validity.
"""

from __future__ import annotations

import math

from .conversions import log_gdp_delta
from .pld import DEFAULT_STEP, DEFAULT_TAIL_MASS, subsampled_gaussian_pld

#: Relative tolerance on z: the z returned is at most this far above the smallest z that the
#: PLD accountant (grid step 1e-4) certifies.
Z_TOL = 1e-5
#: Grid steps of the coarse PLDs steering the search; the error of a grid's epsilon(z) is about
#: c step^2 (connect the dots), which the two extrapolate to the accountant's step.
STEERING_STEPS = (1e-3, 5e-4)
#: The direction of the coarse search's answer is trusted once |phi| is below this.
_COARSE_STOP = 1e-3


def implied_log_mu(epsilon: float, delta: float, log_mu0: float) -> float:
    """log mu of the mu-GDP whose delta at ``epsilon`` is ``delta``, by Newton's method on
    log delta_mu(epsilon) in log mu from ``log_mu0`` (-inf at delta 0, inf at delta >= 1/2, NaN
    at NaN).

    The derivative is d log delta_mu / d log mu = mu phi(-eps/mu + mu/2) / delta_mu (the GDP
    profile's derivative in mu is the normal density there). Steering only: the search turns
    each PLD's delta into this scale, on which it is nearly linear in the CLT's log mu.
    """
    if math.isnan(delta):
        return math.nan
    if delta <= 0.0:
        return -math.inf
    if delta >= 0.5:
        return math.inf
    target, v = math.log(delta), log_mu0
    for _ in range(50):
        mu = math.exp(v)
        log_d = log_gdp_delta(mu, epsilon)
        a = -epsilon / mu + mu / 2.0
        log_slope = v - 0.5 * a * a - 0.5 * math.log(2.0 * math.pi) - log_d
        step = max(-1.0, min(1.0, (target - log_d) / math.exp(log_slope)))
        v += step
        if abs(step) < 1e-13:
            break
    return v


class _CLT:
    """The central limit theorem's coordinate u = log mu_CLT(z), mu_CLT = q sqrt(T (e^(1/z^2)
    - 1)) (Bu et al. 2020): T Poisson-subsampled Gaussian steps are about mu_CLT-GDP, so the
    implied log mu of the true PLD is nearly u plus a constant. u decreases in z."""

    def __init__(self, q: float, steps: int):
        self.log_a = 2.0 * math.log(q) + math.log(steps)

    def log_z(self, u: float) -> float:
        y = 2.0 * u - self.log_a  # e^(1/z^2) - 1 = e^y
        return -0.5 * math.log(y + math.log1p(math.exp(-y)) if y > 30.0 else math.log1p(math.exp(y)))

    def u(self, log_z: float) -> float:
        y = math.exp(-2.0 * log_z)  # 1/z^2; log(e^y - 1) without overflow
        return 0.5 * (self.log_a + (y + math.log(-math.expm1(-y)) if y > 30.0
                                    else math.log(math.expm1(y))))


def _steer(phi, u: float) -> tuple[float, float] | None:
    """Root of the coarse ``phi`` (increasing in u) by a safeguarded secant from ``u``, stopped
    once |phi| < ``_COARSE_STOP`` with a measured slope: (the secant's next point, the slope).

    Each step keeps a bracket lo < root < hi and bisects when the secant leaves it; infinite
    values (delta 0 or >= 1/2) move u by 1 towards the root. None if phi is undefined (NaN) or
    40 steps do not converge."""
    lo, hi, slope, prev = -math.inf, math.inf, 1.0, None
    for _ in range(40):
        f = phi(u)
        if math.isnan(f):
            return None
        lo, hi = (lo, min(hi, u)) if f > 0 else (max(lo, u), hi)
        measured = prev is not None and abs(u - prev[0]) > 1e-6 and f != prev[1]
        if measured and math.isfinite(f) and (f - prev[1]) / (u - prev[0]) > 0:
            slope = (f - prev[1]) / (u - prev[0])
        nxt = u - f / slope if math.isfinite(f) else u - math.copysign(1.0, f)
        if not lo < nxt < hi:
            nxt = 0.5 * (lo + hi)
        if math.isfinite(f):
            if prev is not None and abs(f) < _COARSE_STOP:
                return nxt, slope
            prev = (u, f)
        u = nxt
    return None


def pld_noise_multiplier(epsilon: float, delta: float, q: float, steps: int) -> float | None:
    """Noise multiplier z of ``steps`` Poisson-subsampled Gaussian steps at rate q < 1 that the
    PLD accountant certifies (epsilon, delta)-DP, within ``Z_TOL`` above the smallest; None when
    the search fails (the caller then brackets with the RDP answer).

    In the coordinate u of the CLT (``_CLT``), phi_h(u) = log mu implied by the remove
    direction's delta on grid step h, minus that of the target (``implied_log_mu``), is nearly
    u plus a constant, and phi_h - phi_0 ~ c h^2:

    1. a secant on phi at step h1 = 1e-3 from the CLT's answer (usually two evaluations);
    2. one evaluation at h2 = 5e-4 where the secant points: phi_0 ~ k phi_h2 - (k - 1) phi_h1
       with k = (h1^2 - h0^2) / (h1^2 - h2^2), phi_h1 ~ 0 there (its error enters k - 1 = 0.32
       times), and the secant's slope give the root at the accountant's step h0 = 1e-4 (on 42
       cells, from h2 = 5e-4 as often within the aim of the first step below as from 3e-4, for
       0.7 ms instead of 1 ms at q = 0.01, z = 1.41, T = 1000);
    3. ``_Search.certify``: the accountant's grid, aimed half of ``Z_TOL`` above that root.

    Everything is evaluated at epsilon less 64 ulps of max(1, epsilon), so that the accountant's
    epsilon, inverted from the same profile to a few ulps, reads at most epsilon.
    """
    search = _Search(epsilon - 2.0 ** -46 * max(1.0, epsilon), delta, q, steps)
    h1, h2 = STEERING_STEPS
    steered = _steer(lambda u: search.phi(u, h1), search.log_mu)
    if steered is None:
        return None
    u, slope = steered
    f2 = search.phi(u, h2)
    if not math.isfinite(f2):
        return None
    k = (h1 ** 2 - DEFAULT_STEP ** 2) / (h1 ** 2 - h2 ** 2)
    return search.certify(u - k * f2 / slope, slope)


class _Search:
    """One calibration problem: epsilon (already lowered), delta, q, T; its CLT coordinate and
    the target's implied log mu."""

    def __init__(self, eps: float, delta: float, q: float, steps: int):
        self.eps, self.delta, self.q, self.steps = eps, delta, q, steps
        self.clt = _CLT(q, steps)
        self.log_mu = implied_log_mu(eps, delta, 0.0)

    def delta_at(self, z: float, step: float, direction: str) -> float:
        """An upper bound on delta(eps) of the composition in one direction ("remove" or "add")
        on a grid of step ``step``; NaN when the PLD's own rounding terms (its mass at +inf)
        reach the target, which then no z meets."""
        pld = (subsampled_gaussian_pld(z, self.q, direction, step, DEFAULT_TAIL_MASS)
               .self_compose(self.steps, DEFAULT_TAIL_MASS))
        return math.nan if pld.infinity_mass >= self.delta else pld.delta(self.eps)

    def scale(self, delta: float) -> float:
        """phi of a delta: its implied log mu less the target's."""
        return implied_log_mu(self.eps, delta, self.log_mu) - self.log_mu

    def phi(self, u: float, step: float) -> float:
        """phi_step(u) of the remove direction (NaN where z = e^log_z leaves (1e-6, 1e6))."""
        log_z = self.clt.log_z(u)
        if not -14.0 < log_z < 14.0:
            return math.nan
        return self.scale(self.delta_at(math.exp(log_z), step, "remove"))

    def certify(self, root: float, slope: float) -> float | None:
        """Secant steps on the accountant's grid (remove direction) from the predicted ``root``
        (in u), with the coarse ``slope`` until two evaluations give their own, each aimed
        ``Z_TOL``/2 above the root predicted so far. The first z whose delta meets the target
        with the root within 0.9 ``Z_TOL`` below it (the slope's error moves that root by some
        1e-2 of the distance) is returned once the add direction meets the target too
        (``add_delta``); should the add direction fail on the accountant's grid, the steps go on
        with the larger delta."""
        directions, prev = ("remove",), None
        for _ in range(10):
            log_z = self.clt.log_z(root) + Z_TOL / 2
            z, u = math.exp(log_z), self.clt.u(log_z)
            d = max(self.delta_at(z, DEFAULT_STEP, side) for side in directions)
            f = self.scale(d)
            if not math.isfinite(f):
                return None
            if prev is not None and abs(u - prev[0]) > 1e-7 and (f - prev[1]) / (u - prev[0]) > 0:
                slope = (f - prev[1]) / (u - prev[0])
            prev, root = (u, f), u - f / slope
            if d <= self.delta and log_z - self.clt.log_z(root) <= 0.9 * Z_TOL:
                if len(directions) == 2:
                    return z
                d_add = self.add_delta(z)
                if d_add <= self.delta:
                    return z
                f = self.scale(d_add)
                if not math.isfinite(f):
                    return None
                directions, prev, root = ("remove", "add"), None, u - f / slope
        return None

    def add_delta(self, z: float) -> float:
        """The add direction's delta at z: on the coarse grid h1 (whose points are among the
        accountant's) when it is below half the target, so that the accountant's own rounding
        terms, larger on its longer grid, fit in the other half; else on the accountant's
        grid."""
        coarse = self.delta_at(z, STEERING_STEPS[0], "add")
        return coarse if coarse <= self.delta / 2 else self.delta_at(z, DEFAULT_STEP, "add")
