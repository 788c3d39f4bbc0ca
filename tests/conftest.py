"""Shared fixtures: one instance of every manifold family and a base point on each."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings

# CI runs the property tests on a fixed sequence of examples; local runs keep exploring new ones
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

from geodp.manifolds.capabilities import has
from geodp.manifolds.registry import examples

MANIFOLDS = examples()


def base_point(manifold) -> np.ndarray:
    """A fixed, not-too-special point on each manifold."""
    return manifold.random_point(12345)


def safe_radius(manifold) -> float:
    """A radius well inside the injectivity radius, where Exp/Log are inverse (0.5 where the
    injectivity radius is not known)."""
    if not has(manifold, "injectivity_radius"):
        return 0.5
    return min(2.0, 0.45 * manifold.injectivity_radius)


def needs(manifold, *capabilities: str) -> None:
    """Skip the calling test on a manifold without these optional capabilities."""
    missing = [c for c in capabilities if not has(manifold, c)]
    if missing:
        pytest.skip(f"{manifold!r} provides no {', '.join(missing)}")


@pytest.fixture(params=sorted(MANIFOLDS))
def manifold(request):
    return MANIFOLDS[request.param]


@pytest.fixture(params=["closed forms", "LAPACK"])
def kernel_route(request, monkeypatch):
    """Each n = 2, 3 matrix kernel route in turn, whatever the batch size."""
    import geodp.manifolds._matrix as mx

    monkeypatch.setattr(mx, "CLOSED_FORM_MIN_BATCH", 1 if request.param == "closed forms" else 10**9)
    return request.param
