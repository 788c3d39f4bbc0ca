"""Checks that data lie in the ball a sensitivity bound assumes, and clipping into it."""

from __future__ import annotations

import warnings

import numpy as np

from ..chunked import ChunkedSample
from ..manifolds import Manifold
from ..manifolds.base import Array, represents_distance


CLIP_WARNING = 0.05
"""Fraction of the records moved by clipping above which ``ClippingWarning`` is issued."""


class ClippingWarning(UserWarning):
    """Clipping moved a large share of the records onto the public ball's boundary."""


def check_representable(manifold: Manifold, center: Array, radius: float) -> None:
    """Refuse a public ball whose boundary double precision cannot hold (far hyperbolic or SPD
    points overflow): the mechanisms' draws and iterates would leave the number range."""
    if not represents_distance(manifold, center, radius):
        raise ValueError(f"radius {radius:g} reaches beyond what double precision represents on "
                         f"{manifold!r} (points at that distance overflow); choose a smaller radius")


def into_ball(manifold: Manifold, points: Array, center: Array, radius: float,
              outside: Array | None = None) -> tuple[Array, Array]:
    """Each point outside B_radius(center) moved along its geodesic from the center onto the
    boundary, Exp_c(radius Log_c(x)/|Log_c(x)|); and the mask of the points moved (``outside``:
    that mask when the caller has it already)."""
    if outside is None:
        outside = manifold.dist(center, points) > radius
    if not outside.any():
        return points, outside
    v = manifold.log(center, points[outside])
    norms = manifold.norm(center, v).reshape(v.shape[:v.ndim - len(manifold.point_shape)]
                                             + (1,) * len(manifold.point_shape))
    moved = np.array(points, dtype=float, copy=True)
    moved[outside] = manifold.exp(center, radius * (1 - 1e-12) * v / norms)
    return moved, outside


def enforce_ball(manifold: Manifold, points: Array | ChunkedSample, center: Array, radius: float,
                 clip_data: bool) -> tuple[Array | ChunkedSample, int]:
    """Points inside B_radius(center), and how many were clipped.

    Without ``clip_data`` a point outside raises ``ValueError`` naming how many (never how far: an
    exact distance would let whoever sees the error probe an outlier at no privacy cost). With
    ``clip_data`` each such point moves along its geodesic from the center to the boundary,
    Exp_c(radius Log_c(x)/|Log_c(x)|): a fixed map applied to each record, so the sensitivity
    bound (and the guarantee) holds for the clipped data.

    ``points`` may be a ``ChunkedSample``: one distributed pass then checks every chunk on the
    manifold (naming a bad chunk) and counts the records outside the ball, and the clipping is
    applied lazily, chunk by chunk; the records never reach the client.
    """
    check_representable(manifold, center, radius)
    chunked = isinstance(points, ChunkedSample)
    if chunked:
        def outside(x: Array, w: Array) -> int:
            return int(np.sum(manifold.dist(center, manifold.check_point(x)) > radius))

        n, count = points.n, int(points.reduce(outside, lambda a, b: a + b))
    else:
        outside = manifold.dist(center, points) > radius
        n, count = len(points), int(outside.sum())
    if count == 0:
        return points, 0
    if not clip_data:
        raise ValueError(
            f"{count} of {n} points lie outside the ball of radius {radius:g} around the center; "
            f"the sensitivity bound does not hold for them. Pass clip_data=True to move them onto the "
            f"boundary, or choose a larger public radius (fixed without looking at the data)")
    if chunked:
        clipped = points.map_points(lambda x: into_ball(manifold, x, center, radius)[0])
    else:
        clipped, _ = into_ball(manifold, points, center, radius, outside)
    if count > CLIP_WARNING * n:
        warnings.warn(f"clipping moved {count} of {n} records ({count / n:.0%}) onto the boundary "
                      f"of the public ball: the release describes the clipped data, and a radius "
                      f"this small distorts it", ClippingWarning, stacklevel=3)
    return clipped, count
