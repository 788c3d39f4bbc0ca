"""Parse manifold specifications written on the command line, e.g. ``spd:3,metric=log-euclidean``
or ``product:sphere:2+euclidean:3``."""

from __future__ import annotations

from .base import Manifold
from .registry import FAMILIES

SPEC_HELP = ("manifold as FAMILY:SIZE[,key=value]: euclidean:3, sphere:2[,curvature=1], "
             "hyperbolic:2[,curvature=-1], spd:3[,metric=affine|log-euclidean], kendall:K (landmarks), "
             "grassmann:NxK (K-dimensional subspaces of R^N), so:N (rotations), "
             "stiefel:NxK (k orthonormal columns in R^n, embedded metric); a product of manifolds "
             "as product:SPEC+SPEC+... (product:sphere:2+euclidean:3 is S^2 x R^3; its points are "
             "the factors' points flattened and concatenated)")


def manifold_from_spec(spec: str) -> Manifold:
    """Build a manifold from ``FAMILY:SIZE[,key=value,...]``; SIZE is one integer or, for a family
    built from several, integers joined by ``x`` (``stiefel:4x2`` is ``Stiefel(4, 2)``). A family
    registered with another reader reads its own text (``product:sphere:2+euclidean:3`` is
    ``Product(Sphere(2), Euclidean(3))``; see ``registry.Family``)."""
    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    if name not in FAMILIES or not rest:
        raise ValueError(f"cannot read manifold {spec!r}; expected {SPEC_HELP}")
    family = FAMILIES[name]
    try:
        args, kwargs = family.read(family, rest)
    except ValueError as error:  # a size or an option unread, or a factor's own specification
        raise ValueError(f"cannot read manifold {spec!r}: {error}") from None
    try:
        return family.build(*args, **kwargs)
    except TypeError as error:  # a wrong number of sizes
        raise ValueError(f"cannot read manifold {spec!r} ({error}); expected {SPEC_HELP}") from None
