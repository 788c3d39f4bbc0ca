"""Public SPD balls whose eigenvalue magnitudes double precision cannot carry are refused before
any budget is spent (``data_ball.check_representable`` with ``Manifold.eigenvalue_range``)."""

from __future__ import annotations

import numpy as np
import pytest

import geodp
import geodp.learn.data_ball as data_ball
from geodp.datasets import load, names
from geodp.manifolds import SPD
from geodp.mechanisms import RiemannianLaplace
from geodp.privacy import BudgetLedger


def _refused(center: np.ndarray, radius: float) -> bool:
    try:
        data_ball.check_representable(SPD(2), center, radius)
    except ValueError as err:
        assert "rescale the data" in str(err)
        return True
    return False


@pytest.mark.parametrize("scale", [1e-315, 1e307])
def test_balls_beyond_double_precision_magnitudes_are_refused_before_any_charge(tmp_path, scale):
    """A subnormal center (no relative precision: the certified mean's rounding bound fails
    there) and one near the overflow threshold are refused, naming the remedy, with the ledger
    untouched; the Exp probes of the ball alone accepted both."""
    center = scale * np.eye(2)
    x = SPD(2).exp(center, SPD(2).from_coords(center, 0.05 * np.random.default_rng(0)
                                                .standard_normal((20, 3))))
    ledger = BudgetLedger(tmp_path / "ledger.json", 10.0)
    with pytest.raises(ValueError, match="rescale the data"):
        geodp.private_frechet_mean(SPD(2), x, 1.0, center, 0.2, ledger=ledger, rng=0)
    assert ledger.spent()[0] == 0.0


def test_the_refused_ball_is_one_whose_draws_overflow(monkeypatch):
    """Around footpoints of B_0.2(1e307 I) the SPD Laplace at the largest scale its own check
    accepts (0.49) loses 3-4% of its draws to overflow (the check bounds their condition, not
    their magnitude); the ball is refused. Planted bug: with the eigenvalue range widened to
    (0, inf) the same ball passes, so the first assertion would fail."""
    m, center = SPD(2), 1e307 * np.eye(2)
    mech = RiemannianLaplace(m, scale=0.49)
    with np.errstate(over="ignore", invalid="ignore"):
        kept, _, _ = mech._exact_unrestricted(1e307 * np.exp(0.1) * np.eye(2), 20_000,
                                              np.random.default_rng(0), drop_unrepresentable=True)
    assert len(kept) < 0.99 * 20_000
    assert _refused(center, 0.2)
    monkeypatch.setattr(data_ball, "EIGENVALUE_RANGE", (0.0, np.inf))
    assert not _refused(center, 0.2)


def test_the_shipped_spd_balls_pass():
    for name in names():
        ds = load(name)
        if ds.has_public_ball and hasattr(ds.manifold, "eigenvalue_range"):
            data_ball.check_representable(ds.manifold, *ds.public_ball())
