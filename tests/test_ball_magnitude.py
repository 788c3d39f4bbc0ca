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


def _private_route_after_charge(seeds: int = 6) -> int:
    """``PrivateFrechetMean(ball="private", max_condition=1e4)`` at epsilon 5 on 2000 SPD(2)
    records inside a public ball whose eigenvalue margin is 0.01 nats at reach R (so short at
    reach 2 R): how many fits raised after the ledger charged them."""
    from geodp.estimators import PrivateFrechetMean
    from geodp.privacy import MemoryLedger

    m, radius = SPD(2), 4.48
    log_scale = 500 * np.log(2.0) - data_ball.NOISE_SPREAD - radius - 0.01
    signs = np.random.default_rng(1).choice([-1.0, 1.0], 2000)
    x = np.exp(log_scale) * np.stack([np.diag(np.exp([1 + 3 * s, 1 - 3 * s])) for s in signs])
    after_charge = 0
    for seed in range(seeds):
        ledger = MemoryLedger(100.0)
        try:
            PrivateFrechetMean(m, epsilon=5.0, center=np.exp(log_scale) * np.eye(2), radius=radius,
                               accountant=ledger, random_state=seed, max_condition=1e4).fit(x)
        except ValueError:
            after_charge += ledger.spent()[0] > 0
    return after_charge


@pytest.mark.filterwarnings("ignore")
def test_private_ball_routes_check_the_released_balls_reach_before_the_charge(monkeypatch):
    """The released center lies up to R above the public one in log-eigenvalue and the inner
    mean runs in a ball of radius <= R, so ``plan_ball`` checks magnitudes at reach 2 R and
    refuses this ball before the charge. Planted bug (reach R, the ball's own): the ball passes,
    and the inner check of the released ball refuses after the charge."""
    import geodp.learn.private_ball as private_ball

    assert _private_route_after_charge() == 0
    own = data_ball.check_representable
    monkeypatch.setattr(private_ball, "check_representable",
                        lambda m, c, r, reach=None: own(m, c, r))
    assert _private_route_after_charge() > 0


def test_magnitude_reach_is_not_counted_twice():
    """A regression domain reaching 161 beyond a unit ball around I is representable (e^+-161);
    the check once doubled radius and reach together and refused it."""
    rng = np.random.default_rng(0)
    m = SPD(2)
    x = rng.uniform(0, 80, 50)
    y = m.exp(np.eye(2), m.from_coords(np.eye(2), 0.01 * rng.standard_normal((50, 3))))
    geodp.private_geodesic_regression(m, x, y, 0.5, tau=0.5, x_range=(0, 80), v_max=2.0,
                                      center=np.eye(2), radius=1.0, rng=0)


def test_log_euclidean_and_product_balls_are_checked_too():
    from geodp.manifolds import Euclidean, Product

    log_euclidean = SPD(2, metric="log-euclidean")
    with pytest.raises(ValueError, match="rescale the data"):
        data_ball.check_representable(log_euclidean, 1e307 * np.eye(2), 0.2)
    product = Product(SPD(2), Euclidean(1))
    center = product.join([1e-315 * np.eye(2), np.zeros(1)])
    with pytest.raises(ValueError, match="rescale the data"):
        data_ball.check_representable(product, center, 0.2)
    data_ball.check_representable(product, product.join([np.eye(2), np.zeros(1)]), 0.2)
