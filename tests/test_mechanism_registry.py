"""The contract of the mechanism registry over every registered manifold: each (mechanism,
manifold) pair either releases with an exact sampler, or refuses before anything is charged
with an error that names what is missing (a capability, the Hadamard property, an exact
sampler, a normalisable law)."""

from __future__ import annotations

import numpy as np
import pytest

import geodp
from conftest import MANIFOLDS
from geodp.manifolds.capabilities import MissingCapability, has
from geodp.mechanisms import ApproximateSamplerRefused, NotHadamardError, NotNormalisableError
from geodp.mechanisms.registry import MECHANISMS, lookup
from geodp.privacy import BudgetLedger
from geodp.statistics.frechet import uniqueness_radius

GUARANTEE = {"epsilon": dict(epsilon=2.0), "epsilon-delta": dict(epsilon=2.0, delta=1e-5),
             "mu": dict(mu=2.0), "rdp": dict(rdp=(2.0, 1.0))}
REFUSALS = (MissingCapability, NotHadamardError, ApproximateSamplerRefused, NotNormalisableError)


def small_sample(m, n: int = 12):
    """n points near the manifold's origin, with a public ball that contains them."""
    radius = 0.3 * min(1.0, uniqueness_radius(m)) if has(m, "curvature_bounds") else 0.3
    o = m.origin()
    v = m.from_coords(o, np.random.default_rng(0).standard_normal((n, m.dim)))
    v *= (0.8 * radius * np.linspace(0.1, 1, n) / m.norm(o, v)).reshape((n,) + (1,) * len(m.point_shape))
    return m.exp(o, v), o, radius


@pytest.mark.parametrize("name", sorted(MECHANISMS))
@pytest.mark.parametrize("manifold", sorted(MANIFOLDS))
def test_every_pair_releases_exactly_or_refuses_naming_what_is_missing(name, manifold, tmp_path):
    m, spec = MANIFOLDS[manifold], lookup(name)
    x, center, radius = small_sample(m)
    ledger = BudgetLedger(tmp_path / "l.db", 100.0, 1e-3)
    try:
        rel = geodp.private_frechet_mean(m, x, center=center, radius=radius, mechanism=name,
                                         ledger=ledger, rng=0, **GUARANTEE[spec.notions[0]])
    except REFUSALS as exc:
        assert str(exc)
        if isinstance(exc, MissingCapability):
            assert name in str(exc) and repr(m) in str(exc)
            assert ledger.history() == []  # refused before the reservation
        elif spec.exact_on(m):
            assert not isinstance(exc, ApproximateSamplerRefused) or name == "kng"
        return
    assert spec.exact_on(m) and rel.exact_sampler
    assert rel.mechanism == spec.title and spec.theorem in rel.theorem  # the registry states it
    m.check_point(rel.value)
    assert rel.guarantee.relation.value == "replace-one"
