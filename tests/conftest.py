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

from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere

MANIFOLDS = {
    "euclidean3": Euclidean(3),
    "sphere2": Sphere(2),
    "sphere5_k4": Sphere(5, curvature=4.0),
    "hyperbolic2": Hyperbolic(2),
    "hyperbolic4_k05": Hyperbolic(4, curvature=-0.5),
    "spd2": SPD(2),
    "spd3": SPD(3),
    "spd5": SPD(5),
    "spd8": SPD(8),
    "spd4_logeuclid": SPD(4, metric="log-euclidean"),
    "spd3_logeuclid": SPD(3, metric="log-euclidean"),
    "kendall3": KendallShape(3),
    "kendall6": KendallShape(6),
}


def base_point(manifold) -> np.ndarray:
    """A fixed, not-too-special point on each manifold."""
    rng = np.random.default_rng(12345)
    if isinstance(manifold, Euclidean):
        return rng.standard_normal(manifold.dim)
    if isinstance(manifold, (Sphere, KendallShape)):
        return manifold.project(rng.standard_normal(manifold.point_shape))
    if isinstance(manifold, Hyperbolic):
        return manifold.project(0.5 * rng.standard_normal(manifold.point_shape))
    a = rng.standard_normal(manifold.point_shape)
    return a @ a.T / manifold.n + np.eye(manifold.n)


def safe_radius(manifold) -> float:
    """A radius well inside the injectivity radius, where Exp/Log are inverse."""
    return min(2.0, 0.45 * manifold.injectivity_radius)


@pytest.fixture(params=sorted(MANIFOLDS))
def manifold(request):
    return MANIFOLDS[request.param]


@pytest.fixture(params=["closed forms", "LAPACK"])
def kernel_route(request, monkeypatch):
    """Each n = 2, 3 matrix kernel route in turn, whatever the batch size."""
    import geodp.manifolds._matrix as mx

    monkeypatch.setattr(mx, "CLOSED_FORM_MIN_BATCH", 1 if request.param == "closed forms" else 10**9)
    return request.param
