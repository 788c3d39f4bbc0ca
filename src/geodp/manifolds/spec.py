"""Parse manifold specifications written on the command line, e.g. ``spd:3,metric=log-euclidean``."""

from __future__ import annotations

from .base import Manifold
from .registry import FAMILIES

SPEC_HELP = ("manifold as FAMILY:SIZE[,key=value]: euclidean:3, sphere:2[,curvature=1], "
             "hyperbolic:2[,curvature=-1], spd:3[,metric=affine|log-euclidean], kendall:K (landmarks), "
             "grassmann:NxK (K-dimensional subspaces of R^N), so:N (rotations), "

             "stiefel:NxK (k orthonormal columns in R^n, embedded metric); products of "
             "manifolds (geodp.manifolds.Product) are Python-only")


def manifold_from_spec(spec: str) -> Manifold:
    """Build a manifold from ``FAMILY:SIZE[,key=value,...]``; SIZE is one integer or, for a family
    built from several, integers joined by ``x`` (``stiefel:4x2`` is ``Stiefel(4, 2)``)."""
    family, _, rest = spec.partition(":")
    family = family.strip().lower()
    if family not in FAMILIES or not rest:
        raise ValueError(f"cannot read manifold {spec!r}; expected {SPEC_HELP}")
    cls, options = FAMILIES[family].build, FAMILIES[family].options
    size, *pairs = rest.split(",")
    kwargs = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in options:
            raise ValueError(f"{family} takes no option {key!r}; options: {sorted(options) or 'none'}")
        kwargs[key] = options[key](value)
    try:
        return cls(*(int(s) for s in size.split("x")), **kwargs)
    except TypeError as error:  # a wrong number of sizes, or a family with no size (product)
        raise ValueError(f"cannot read manifold {spec!r} ({error}); expected {SPEC_HELP}") from None
