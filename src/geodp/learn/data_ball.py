"""Checks that data lie in the ball a sensitivity bound assumes, and clipping into it."""

from __future__ import annotations

import warnings

import numpy as np

from ..manifolds import Manifold
from ..manifolds.base import Array


CLIP_WARNING = 0.05
"""Fraction of the records moved by clipping above which ``ClippingWarning`` is issued."""


class ClippingWarning(UserWarning):
    """Clipping moved a large share of the records onto the public ball's boundary."""


def enforce_ball(manifold: Manifold, points: Array, center: Array, radius: float,
                 clip: bool) -> tuple[Array, int]:
    """Points inside B_radius(center), and how many were clipped.

    Without ``clip`` a point outside raises ``ValueError`` naming how many and how far. With
    ``clip`` each such point moves along its geodesic from the center to the boundary,
    Exp_c(radius Log_c(x)/|Log_c(x)|): a fixed map applied to each record, so the sensitivity
    bound (and the guarantee) holds for the clipped data.
    """
    d = manifold.dist(center, points)
    outside = d > radius
    if not outside.any():
        return points, 0
    if not clip:
        raise ValueError(
            f"{int(outside.sum())} of {len(points)} points lie outside the ball of radius "
            f"{radius:g} around the center (farthest at distance {float(d.max()):.6g}); the "
            f"sensitivity bound does not hold for them. Pass clip=True to move them onto the "
            f"boundary, or choose a larger public radius")
    v = manifold.log(center, points[outside])
    norms = manifold.norm(center, v).reshape((-1,) + (1,) * len(manifold.point_shape))
    clipped = np.array(points, dtype=float, copy=True)
    clipped[outside] = manifold.exp(center, radius * (1 - 1e-12) * v / norms)
    count = int(outside.sum())
    if count > CLIP_WARNING * len(points):
        warnings.warn(f"clipping moved {count} of {len(points)} records ({count / len(points):.0%}) "
                      f"onto the boundary of the public ball: the release describes the clipped "
                      f"data, and a radius this small distorts it", ClippingWarning, stacklevel=3)
    return clipped, count
