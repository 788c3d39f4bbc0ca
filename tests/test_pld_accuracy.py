"""The PLD accountant stays an upper bound, and close, after its speed-ups (issue 31): against
high-precision quadrature of a composed subsampled Gaussian and of long Gaussian compositions,
against dp-accounting's optimistic and pessimistic estimates, and its own inverse profile."""

from __future__ import annotations

import math

import mpmath as mp
import pytest

from geodp.privacy import PLDAccountant
from geodp.privacy.pld import (DEFAULT_TAIL_MASS, gaussian_pld, laplace_pld, pure_pld,
                               subsampled_gaussian_pld)


def two_step_delta(z: float, q: float, eps: float, direction: str) -> mp.mpf:
    """Exact delta(eps) of two Poisson-subsampled Gaussian steps, at 30 digits.

    delta = E_{P x P}[(1 - e^(eps - L(x1) - L(x2)))_+]. For fixed x1, with r = eps - L(x1), the
    inner expectation over x2 is P(L > r) - e^r Q(L > r), and {L > r} is a half-line in x2
    (L is monotone), so it is a difference of normal CDFs; the outer one is a 1-D quadrature.
    remove: P = (1-q) N(0, z^2) + q N(1, z^2), Q = N(0, z^2), L = log(1 - q + q e^((2x-1)/(2z^2)));
    add: P and Q swapped, the loss -L.
    """
    mp.mp.dps = 30
    z, q, eps = mp.mpf(z), mp.mpf(q), mp.mpf(eps)

    def ell(x):
        return mp.log(1 - q + q * mp.exp((2 * x - 1) / (2 * z * z)))

    def x_of(level):  # L(x) = level; None below L's infimum log(1 - q)
        arg = (mp.exp(level) - 1 + q) / q
        return z * z * mp.log(arg) + mp.mpf(1) / 2 if arg > 0 else None

    def mixture_cdf(t):
        return (1 - q) * mp.ncdf(t / z) + q * mp.ncdf((t - 1) / z)

    if direction == "remove":
        def inner(x1):
            r = eps - ell(x1)
            t = x_of(r)
            if t is None:
                return 1 - mp.exp(r)  # every x2 has L(x2) > r
            return (1 - mixture_cdf(t)) - mp.exp(r) * (1 - mp.ncdf(t / z))

        def density(x):
            return (1 - q) * mp.npdf(x, 0, z) + q * mp.npdf(x, 1, z)

        kink = x_of(eps - mp.log(1 - q))
    else:
        def inner(x1):
            r = eps + ell(x1)  # need -L(x2) > r, i.e. x2 < x_of(-r)
            t = x_of(-r)
            if t is None:
                return mp.mpf(0)
            return mp.ncdf(t / z) - mp.exp(r) * mixture_cdf(t)

        def density(x):
            return mp.npdf(x, 0, z)

        kink = x_of(-eps - mp.log(1 - q))
    points = {-mp.inf, mp.mpf(0), mp.mpf(1), mp.inf} | ({kink} if kink is not None else set())
    return mp.quad(lambda x: density(x) * inner(x), sorted(points))


TWO_STEP = [(0.8, 0.1)] + [pytest.param(z, q, marks=pytest.mark.slow)
                           for z, q in [(2.0, 0.5), (1.0, 0.01), (5.0, 0.05)]]


@pytest.mark.parametrize("z, q", TWO_STEP)
@pytest.mark.parametrize("direction", ["remove", "add"])
def test_two_composed_subsampled_gaussians_are_bounded_from_above(z, q, direction):
    """At the epsilon reported for delta, the exact delta is at most delta, and close to it
    (within 1e-5 relative on the remove side at delta = 1e-5; the add side's losses span only
    -log(1 - q), about 100 grid steps at q = 0.01, so its grid is relatively coarser)."""
    pld = subsampled_gaussian_pld(z, q, direction).self_compose(2)
    for delta in (1e-5, 1e-8):
        exact = two_step_delta(z, q, pld.epsilon(delta), direction)
        assert exact <= delta
        if delta == 1e-5:
            assert exact >= delta * (1 - (3e-5 if direction == "remove" else 5e-3))


def gdp_delta_mp(mu: float, eps: float) -> mp.mpf:
    mp.mp.dps = 40
    mu, eps = mp.mpf(mu), mp.mpf(eps)
    return mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2)


@pytest.mark.parametrize("sigma, steps", [(30.0, 1000), (100.0, 10_000), (3.0, 200)])
def test_windowed_gaussian_self_composition_is_exact_gdp_from_above(sigma, steps):
    """T Gaussians with sigma are sqrt(T)/sigma-GDP: the discretised, Chernoff-windowed
    self-composition must read at least the exact epsilon, and not much more."""
    pld = gaussian_pld(sigma).self_compose(steps)
    assert len(pld.pmf) < steps * (len(gaussian_pld(sigma).pmf) - 1) / 10  # it was windowed
    assert pld.errors >= DEFAULT_TAIL_MASS  # and the mass it let wrap around is in delta
    mu = math.sqrt(steps) / sigma
    for delta in (1e-3, 1e-5, 1e-9):
        exact = gdp_delta_mp(mu, pld.epsilon(delta))
        assert exact <= delta
        # close to delta, but for the mass at +inf (error terms; at delta = 1e-9 they dominate)
        assert exact >= delta * (1 - 3e-4) - pld.infinity_mass


def test_full_batch_gaussians_are_read_in_closed_form_and_fold_into_other_parts():
    acc = PLDAccountant().compose_gaussian(2.0, 30).compose_gaussian(4.0, 40)
    mu = math.sqrt(30 / 4 + 40 / 16)
    eps = acc.epsilon(1e-6)
    assert gdp_delta_mp(mu, eps) <= 1e-6 and gdp_delta_mp(mu, eps * (1 - 1e-9)) > 1e-6
    assert acc.delta(eps) >= 1e-6 * (1 - 1e-8) and acc.error_terms() == 0.0
    # with a Laplace part, the Gaussians enter as one discretised Gaussian: the same as composing
    # that Gaussian's PLD by hand
    mixed = PLDAccountant().compose_gaussian(2.0, 30).compose_laplace(1.0).compose_gaussian(4.0, 40)
    by_hand = PLDAccountant().compose_pld(gaussian_pld(1.0, mu)).compose_laplace(1.0)
    assert mixed.epsilon(1e-6) == pytest.approx(by_hand.epsilon(1e-6), rel=1e-9)
    assert mixed.epsilon(1e-6) > eps


@pytest.mark.parametrize("pld", [
    subsampled_gaussian_pld(0.5, 0.1, "remove").self_compose(300),
    subsampled_gaussian_pld(5.0, 0.05, "add").self_compose(1000),
    laplace_pld(0.3).self_compose(20),
    gaussian_pld(10.0).self_compose(5000),
], ids=["z0.5", "z5", "laplace", "gaussian"])
def test_epsilon_is_the_smallest_certified_point(pld):
    """The profile is inverted on a stretch located by tail sums: the answer must be where the
    full profile (``delta``) crosses, to within a few ulps, whatever that stretch."""
    for delta in (1e-2, 1e-5, 1e-8):
        eps = pld.epsilon(delta)
        assert math.isfinite(eps)
        assert pld.delta(eps) <= delta
        assert pld.delta(eps - 64 * 2.2e-16 * max(1.0, eps)) > delta or eps == 0.0


@pytest.mark.parametrize("e0", [45.0, 60.0])
def test_delta_counts_losses_far_above_epsilon(e0):
    """delta(eps) counts losses more than 40 above eps by their whole mass: still the exact
    value of randomised response to rounding, never below it."""
    acc = PLDAccountant().compose_pure(e0)
    p_top = 1 / (1 + math.exp(-e0))
    for eps in (0.5, 4.0, e0 - 41.0):
        exact = p_top * -math.expm1(eps - e0)
        assert exact <= acc.delta(eps) <= exact * (1 + 1e-9)
    assert pure_pld(e0).delta(e0) == 0.0


DP_ACCOUNTING_CELLS = [(5.0, 0.05, 1000), (2.0, 0.01, 1000), (1.1, 0.01, 100), (2.0, 0.1, 100),
                       (5.0, 0.001, 10_000)]


@pytest.mark.parametrize("z, q, steps", DP_ACCOUNTING_CELLS)
def test_between_dp_accountings_optimistic_and_pessimistic_estimates(z, q, steps):
    """dp-accounting's optimistic PLD (losses rounded down) reads below the exact epsilon on
    these cells; geodp's must not fall below it, and must stay within 1e-5 of dp-accounting's
    pessimistic value. (Not so on long compositions with epsilon in the hundreds, where
    dp-accounting's truncation lifts both its estimates: at z 0.5, q 0.1, T 10^4 they read 782.79
    and 783.29, geodp 782.33, and a saddle-point evaluation of the exact delta gives
    delta(782.3288) = 0.99994e-5.)"""
    pytest.importorskip("dp_accounting")
    from dp_accounting.pld import privacy_loss_distribution as dpa_pld

    def theirs(pessimistic: bool) -> float:
        pld = dpa_pld.from_gaussian_mechanism(z, sampling_prob=q, pessimistic_estimate=pessimistic)
        return pld.self_compose(steps).get_epsilon_for_delta(1e-5)

    ours = PLDAccountant().compose_gaussian(z, steps, q).epsilon(1e-5)
    assert theirs(False) <= ours <= theirs(True) * (1 + 1e-5)


def test_windowed_self_composition_puts_the_wrapped_mass_at_infinity(monkeypatch):
    """The Chernoff window lets up to tail_mass wrap around: that mass must be counted at +inf
    (seen with the rounding bound switched off and a base PLD without error terms, so that the
    only other entry, the truncated top, is below tail_mass)."""
    import geodp.privacy.pld as pld_module

    monkeypatch.setattr(pld_module, "_power_error", lambda *args: 0.0)
    g = gaussian_pld(30.0)
    base = pld_module.PrivacyLossDistribution(g.step, g.offset, g.pmf, 0.0, g.max_loss, False)
    composed = base.self_compose(1000)
    assert len(composed.pmf) < 1000 * len(base.pmf) / 10  # windowed
    assert composed.errors >= DEFAULT_TAIL_MASS
    assert composed.infinity_mass >= composed.errors


def test_fft_power_error_bound_covers_the_actual_rounding():
    """``_power_error`` bounds the l1 rounding error of IFFT(FFT(x)^T): checked against the
    T-fold convolution done directly in extended precision."""
    import numpy as np
    from scipy import fft

    from geodp.privacy.pld import _l2, _power, _power_error

    x = subsampled_gaussian_pld(0.9, 0.2, "remove", step=2e-2).pmf
    for count in (3, 40):
        exact = np.array([1.0], dtype=np.longdouble)
        for _ in range(count):
            exact = np.convolve(exact, x.astype(np.longdouble))
        n = fft.next_fast_len(len(exact), real=True)
        spectrum = fft.rfft(x, n)
        moduli = np.abs(spectrum)
        powered = _power(spectrum, count)
        y = fft.irfft(powered, n)
        actual = float(np.sum(np.abs(y[:len(exact)] - exact)) + np.sum(np.abs(y[len(exact):])))
        bound = _power_error(n, count, moduli, np.abs(powered), _l2(y))
        assert 0 < actual <= bound
