"""The PLD calibration behind ``noise_multiplier_for`` (issue 31: about one evaluation on the
accountant's grid).

- certified: the accountant's own epsilon at the z returned is at most the target, and so is
  dp-accounting's (an independent implementation of the pessimistic connect-the-dots PLD, at its
  default grid step 1e-4): its delta at epsilon is at most delta. The planted-bug twin, a
  calibration returning 0.99 z, is refused by the same check in every cell (dp-accounting's delta
  at 0.99 z was 1.15-1.42 times the target; at (1 - 2e-5) z already above it in 10 of 12 cells).
- within ``Z_TOL`` of the smallest z the accountant certifies, found by bisection of the
  accountant's epsilon to 1e-9 relative.
- the pieces: the GDP inversion and the CLT coordinate that steer the search, the unimodal grid
  search of the Chernoff window, the normal tail pairs of the discretisation.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import geodp.privacy.pld_calibration as calibration
import geodp.privacy.rdp as rdp_module
from geodp.privacy import gdp_delta, noise_multiplier_for
from geodp.privacy.pld import DEFAULT_STEP, _grid_min, _phi_pair
from geodp.privacy.rdp import composed_epsilon

Z_TOL = calibration.Z_TOL
#: (epsilon, delta, q, T): the issue's cell first; rates from 1e-3 to 0.99, 1 to 5000 steps,
#: delta from 1e-9 to 1e-5, few bins per step (z 25) to many (z 0.85).
CELLS = [(1.0, 1e-5, 0.01, 1000), (3.0, 1e-5, 0.5, 10), (2.0, 1e-5, 0.01, 500),
         (8.0, 1e-6, 0.1, 100), (1.0, 1e-5, 0.3, 1), (0.1, 1e-5, 0.01, 10),
         (0.05, 1e-8, 0.001, 1), (0.5, 1e-5, 0.05, 5000), (4.0, 1e-7, 0.2, 2000),
         (1.0, 1e-9, 0.9, 50), (0.3, 1e-6, 0.99, 3), (10.0, 1e-5, 0.9, 5)]
#: the first two run by default, the others with -m slow (dp-accounting takes up to 1.3 s each)
GRID = [c if i < 2 else pytest.param(c, marks=pytest.mark.slow) for i, c in enumerate(CELLS)]


def fresh(cell) -> float:
    noise_multiplier_for.cache_clear()  # computed here, not an answer cached by another test
    return noise_multiplier_for(*cell)


def dp_accounting_certifies(z: float, cell) -> bool:
    """Whether dp-accounting's PLD accountant finds T Poisson-subsampled Gaussian steps with
    noise multiplier z (epsilon, delta)-DP (add or remove one)."""
    dpa = pytest.importorskip("dp_accounting")
    from dp_accounting.pld import pld_privacy_accountant

    eps, delta, q, steps = cell
    accountant = pld_privacy_accountant.PLDAccountant()
    accountant.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
    return accountant.get_delta(eps) <= delta


@pytest.mark.parametrize("cell", GRID)
def test_the_calibrated_z_is_certified_and_its_twin_is_refused(cell):
    eps, delta, q, steps = cell
    z = fresh(cell)
    assert composed_epsilon(z, delta, q, steps) <= eps  # the accountant's own reading
    assert dp_accounting_certifies(z, cell)
    assert not dp_accounting_certifies(0.99 * z, cell)  # the planted-bug twin


@pytest.mark.parametrize("cell", GRID)
def test_the_calibrated_z_is_within_tolerance_of_the_smallest(cell):
    """Bisection on the accountant's epsilon(z) (decreasing) from [z (1 - 3 Z_TOL), z] to 1e-9
    relative: the smallest certified z, hi, has z <= hi (1 + Z_TOL)."""
    eps, delta, q, steps = cell
    z = fresh(cell)
    lo, hi = z * (1 - 3 * Z_TOL), z
    assert composed_epsilon(lo, delta, q, steps) > eps >= composed_epsilon(hi, delta, q, steps)
    while hi / lo - 1 > 1e-9:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if composed_epsilon(mid, delta, q, steps) <= eps else (mid, hi)
    assert hi <= z <= hi * (1 + Z_TOL)


def test_the_issues_cell_takes_one_evaluation_on_the_accountants_grid(monkeypatch):
    """noise_multiplier_for(1, 1e-5, 0.01, 1000): two coarse steps (1e-3), one at 5e-4, one on
    the accountant's grid (remove), the add direction on the coarse grid; never the fallback
    (which calls ``composed_epsilon``)."""
    calls = []
    original = calibration._Search.delta_at
    monkeypatch.setattr(calibration._Search, "delta_at",
                        lambda self, z, step, side: calls.append((step, side))
                        or original(self, z, step, side))
    monkeypatch.setattr(rdp_module, "composed_epsilon", lambda *a, **k: pytest.fail("fallback"))
    fresh(CELLS[0])
    assert sorted(calls) == sorted([(1e-3, "remove")] * 2 + [(5e-4, "remove"),
                                                             (DEFAULT_STEP, "remove"), (1e-3, "add")])


def test_an_add_direction_that_binds_is_searched_too(monkeypatch):
    """The add direction never bound in the cells tried (its delta stayed below the remove
    direction's); planted here: "add" answers as "remove" at z / 1.001, binding at 1.001 times
    the remove answer, which the search must then reach on the accountant's grid."""
    cell = CELLS[0]
    z_remove = fresh(cell)
    original = calibration._Search.delta_at
    monkeypatch.setattr(calibration._Search, "delta_at",
                        lambda self, z, step, side: original(
                            self, z / 1.001 if side == "add" else z, step, "remove"))
    z = fresh(cell)
    assert 1.001 / (1 + Z_TOL) <= z / z_remove <= 1.001 * (1 + Z_TOL)


def test_the_search_returns_none_where_the_pld_rounding_terms_exceed_delta():
    """At delta 1e-12 after 1000 steps the PLD's own rounding terms exceed delta at every z: the
    search gives up (after its coarse steps) and the caller returns the RDP answer."""
    assert calibration.pld_noise_multiplier(3.0, 1e-12, 0.01, 1000) is None


@pytest.mark.parametrize("eps", [1e-3, 0.1, 1.0, 8.0])
def test_implied_log_mu_inverts_the_gdp_profile(eps):
    for mu in np.logspace(-2, 1, 13):
        delta = gdp_delta(mu, eps)
        if 1e-300 < delta < 0.5:
            assert calibration.implied_log_mu(eps, delta, 0.0) == pytest.approx(math.log(mu),
                                                                               abs=1e-9)
    assert calibration.implied_log_mu(eps, 0.0, 0.0) == -math.inf
    assert calibration.implied_log_mu(eps, 0.5, 0.0) == math.inf
    assert math.isnan(calibration.implied_log_mu(eps, math.nan, 0.0))


@given(st.floats(1e-4, 0.99), st.integers(1, 100_000), st.floats(-12.0, 12.0))
def test_the_clt_coordinate_round_trips(q, steps, log_z):
    clt = calibration._CLT(q, steps)
    u = clt.u(log_z)
    assert clt.log_z(u) == pytest.approx(log_z, abs=1e-9)
    mu = q * math.sqrt(steps * math.expm1(math.exp(-2 * log_z))) if log_z > -3 else math.inf
    if math.isfinite(mu):
        assert u == pytest.approx(math.log(mu), abs=1e-9)


@settings(max_examples=300)
@given(st.lists(st.integers(-10**6, 10**6), min_size=2, max_size=60, unique=True), st.data())
def test_grid_min_finds_the_minimum_of_a_unimodal_sequence_from_any_start(values, data):
    """Strictly decreasing, then strictly increasing; any starting guess."""
    low = min(values)
    others = [v for v in values if v != low]
    k = data.draw(st.integers(0, len(others)))
    seq = sorted(others[:k], reverse=True) + [low] + sorted(others[k:])
    start = data.draw(st.integers(-2, len(seq) + 2))
    assert _grid_min(lambda i: seq[i], len(seq), start) == low


def test_phi_pair_takes_each_side_where_it_does_not_cancel():
    a = np.concatenate([-np.logspace(-3, 1.5, 50), [0.0], np.logspace(-3, 1.5, 50),
                        [-np.inf, np.inf]])
    below, above = _phi_pair(a)
    np.testing.assert_array_equal(np.where(a < 0, below, above), special.ndtr(-np.abs(a)))
    np.testing.assert_allclose(below, special.ndtr(a), rtol=0, atol=2.3e-16)
    np.testing.assert_allclose(above, special.ndtr(-a), rtol=0, atol=2.3e-16)
