"""The Accountant interface: routes declared by the guarantees, relation checks, and the same
numbers as ``compose``."""

import math

import numpy as np
import pytest

from geodp.privacy import (GDP, RDP, ZCDP, Accountant, ApproxDP, BasicAccountant, GDPAccountant,
                           PLDCompositionAccountant, PureDP, RDPCurveAccountant, SubsampledGaussian,
                           compose)
from geodp.privacy.relation import Relation

AR = Relation.ADD_REMOVE
ALL = (BasicAccountant, GDPAccountant, RDPCurveAccountant, PLDCompositionAccountant)

GUARANTEES = {
    "pure": (PureDP(0.5), {BasicAccountant, GDPAccountant, RDPCurveAccountant,
                           PLDCompositionAccountant}),
    "approx": (ApproxDP(0.5, 1e-6), {BasicAccountant}),
    "gdp": (GDP(0.5), {GDPAccountant, RDPCurveAccountant, PLDCompositionAccountant}),
    "zcdp": (ZCDP(0.1), {RDPCurveAccountant}),
    "rdp": (RDP([2.0, 4.0], [0.1, 0.3]), {RDPCurveAccountant}),
    "full batch": (SubsampledGaussian(2.0, 1.0, 10),
                   {GDPAccountant, RDPCurveAccountant, PLDCompositionAccountant}),
    "full batch wor": (SubsampledGaussian(2.0, 1.0, 10, "without_replacement"),
                       {GDPAccountant, RDPCurveAccountant}),
    "poisson": (SubsampledGaussian(1.1, 0.01, 100), {RDPCurveAccountant, PLDCompositionAccountant}),
    "wor": (SubsampledGaussian(1.1, 0.01, 100, "without_replacement"), {RDPCurveAccountant}),
}


@pytest.mark.parametrize("name", list(GUARANTEES))
def test_supports_follows_the_guarantee_routes(name):
    g, takers = GUARANTEES[name]
    for cls in ALL:
        assert cls().supports(g) is (cls in takers), cls.__name__


@pytest.mark.parametrize("cls", ALL)
def test_unsupported_guarantee_is_refused_by_name(cls):
    g = next(g for g, takers in GUARANTEES.values() if cls not in takers)
    with pytest.raises(ValueError, match=cls.__name__ + " cannot compose"):
        cls().compose(g)


@pytest.mark.parametrize("cls", ALL)
def test_mismatched_relation_is_refused(cls):
    acc = cls().compose(PureDP(0.5))
    assert acc.relation is Relation.REPLACE_ONE
    with pytest.raises(ValueError, match="to_replace_one"):
        acc.compose(PureDP(0.5, AR))
    with pytest.raises(ValueError, match="to_replace_one"):
        cls(AR).compose(PureDP(0.5))
    cls(Relation.REPLACE_ONE).compose(PureDP(0.5, AR).to_replace_one())


@pytest.mark.parametrize("cls", ALL)
def test_empty_accountant_is_zero_and_count_zero_composes_nothing(cls):
    acc = cls().compose(PureDP(0.5), count=0)
    assert isinstance(acc, Accountant)
    assert acc.epsilon(1e-5) == 0.0 and acc.delta(1.0) == 0.0


def test_count_is_repetition():
    g = SubsampledGaussian(1.1, 0.01, 100)
    for cls in (RDPCurveAccountant, PLDCompositionAccountant):
        once = cls().compose(g, count=3).epsilon(1e-5)
        assert once == pytest.approx(cls().compose_all([g, g, g]).epsilon(1e-5), rel=1e-12)
    assert GDPAccountant().compose(GDP(0.3), 4).mu == pytest.approx(0.6)
    assert BasicAccountant().compose(ApproxDP(0.5, 1e-6), 2).total == pytest.approx((1.0, 2e-6))


def test_basic_accountant_states_one_point():
    acc = BasicAccountant().compose_all([PureDP(0.5), ApproxDP(0.25, 1e-6)])
    assert acc.epsilon(1e-6) == 0.75 and acc.delta(0.75) == 1e-6
    with pytest.raises(ValueError, match="already spend"):
        acc.epsilon(1e-7)
    with pytest.raises(ValueError, match="no delta below"):
        acc.delta(0.5)


@pytest.mark.parametrize("cls", (GDPAccountant, RDPCurveAccountant, PLDCompositionAccountant))
def test_delta_inverts_epsilon(cls):
    acc = cls().compose_all([PureDP(0.2), GDP(0.5), GDP(0.3)])
    eps = acc.epsilon(1e-5)
    assert acc.delta(eps) == pytest.approx(1e-5, rel=0.05)
    assert acc.delta(eps * 1.2) < 1e-5 < acc.delta(eps * 0.8)


def test_rdp_orders_are_intersected_and_disjoint_ones_refused():
    acc = RDPCurveAccountant().compose_all([RDP([2, 4, 8], [0.1, 0.3, 0.9]), GDP(0.1),
                                            RDP([4, 8, 16], [0.2, 0.4, 0.8])])
    np.testing.assert_array_equal(acc.orders, [4.0, 8.0])
    np.testing.assert_allclose(acc.curve(), [0.3 + 0.2 + 0.02, 0.9 + 0.4 + 0.04])
    with pytest.raises(ValueError, match="share at least one order"):
        acc.compose(RDP([3], [0.1]))


MIXES = {
    "pure and gdp": ([PureDP(1.0), GDP(1.0)], 1e-5, PLDCompositionAccountant),
    "full batch": ([GDP(0.5), SubsampledGaussian(2.0, 1.0, 10), PureDP(0.1)], 1e-5,
                   PLDCompositionAccountant),
    "full batch wor": ([SubsampledGaussian(2.0, 1.0, 10, "without_replacement"), GDP(0.5)], 1e-5,
                       GDPAccountant),
    "poisson": ([PureDP(0.1, AR), SubsampledGaussian(1.1, 0.01, 500), GDP(0.2, AR)], 1e-5,
                PLDCompositionAccountant),
    "rdp only": ([ZCDP(0.1), RDP([2, 4, 8], [0.1, 0.3, 0.9]), PureDP(0.2)], 1e-5,
                 RDPCurveAccountant),
    "wor": ([SubsampledGaussian(1.1, 0.01, 500, "without_replacement"), GDP(0.3)], 1e-5,
            RDPCurveAccountant),
}


@pytest.mark.parametrize("name", list(MIXES))
def test_accountants_reproduce_compose(name):
    parts, delta, best = MIXES[name]
    eps = compose(parts, delta).epsilon
    takers = [cls().compose_all(parts).epsilon(delta) for cls in ALL
              if all(cls().supports(g) for g in parts)]
    assert best().compose_all(parts).epsilon(delta) == eps
    assert min(takers) == eps


def test_compose_spends_the_approximate_parts_first():
    parts = [GDP(0.5), ApproxDP(0.3, 1e-6)]
    assert compose(parts, 1e-5).epsilon == pytest.approx(
        0.3 + GDPAccountant().compose(GDP(0.5)).epsilon(1e-5 - 1e-6), rel=1e-12)
    assert math.isfinite(compose([PureDP(0.1)] + parts, 1e-5).epsilon)
