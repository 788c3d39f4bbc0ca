"""Parse manifold specifications written on the command line, e.g. ``spd:3,metric=log-euclidean``
or ``product:sphere:2+euclidean:3``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: SPEC_HELP alone (the command line's help) stays light
    from .base import Manifold

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
    from .registry import FAMILIES

    name, _, rest = spec.partition(":")
    name = name.strip().lower()
    if name not in FAMILIES or not rest:
        raise ValueError(f"cannot read manifold {spec!r}; expected {SPEC_HELP}")
    family = FAMILIES[name]
    try:
        args, kwargs = family.read(family, rest)
    except ValueError as error:  # a size or an option unread, or a factor's own specification
        expected = "" if "expected manifold as" in str(error) else f"; expected {SPEC_HELP}"
        raise ValueError(f"cannot read manifold {spec!r}: {error}{expected}") from None
    try:
        return family.build(*args, **kwargs)
    except TypeError as error:  # a wrong number of sizes
        raise ValueError(f"cannot read manifold {spec!r} ({error}); expected {SPEC_HELP}") from None
    except ValueError as error:  # a size or an option out of range (sphere:0, curvature=-1)
        raise ValueError(f"cannot read manifold {spec!r}: {error}") from None


def _sizes_from_shape(family: str, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The constructor sizes of ``family`` whose points have ``shape``, or None if none has."""
    if family == "euclidean" and len(shape) == 1:
        return (shape[0],)
    if family in ("sphere", "hyperbolic") and len(shape) == 1 and shape[0] >= 2:
        return (shape[0] - 1,)
    if family in ("spd", "so") and len(shape) == 2 and shape[0] == shape[1]:
        return (shape[0],)
    if family == "kendall" and len(shape) == 2 and shape[1] == 2:
        return (shape[0],)
    if family in ("grassmann", "stiefel") and len(shape) == 2 and shape[0] > shape[1]:
        return shape
    return None


SIZED_FROM_DATA = ("euclidean", "sphere", "hyperbolic", "spd", "so", "kendall", "grassmann", "stiefel")


def manifold_for_data(spec: "Manifold | str", point_shape: tuple[int, ...]) -> Manifold:
    """The manifold of records of shape ``point_shape`` (X.shape[1:]).

    ``spec`` is a ``Manifold`` (its point shape must match), a full specification
    ``FAMILY:SIZE[,key=value]`` (``manifold_from_spec``), or a family name without size,
    ``FAMILY[,key=value]`` (e.g. ``"spd"``, ``"spd,metric=log-euclidean"``, ``"euclidean"``),
    whose size is read from ``point_shape``: R^d from (d,), S^d and H^d from (d + 1,), SPD(n) and
    SO(n) from (n, n), Kendall's space of k landmarks from (k, 2), Grassmann(n, k) and
    Stiefel(n, k) from (n, k).
    """
    from .base import Manifold

    point_shape = tuple(int(s) for s in point_shape)
    if isinstance(spec, Manifold):
        manifold = spec
    elif isinstance(spec, str) and ":" in spec:
        manifold = manifold_from_spec(spec)
    elif isinstance(spec, str):
        family, *pairs = spec.strip().lower().split(",")
        if family not in SIZED_FROM_DATA:
            raise ValueError(f"manifold {spec!r}: expected a Manifold, a specification "
                             f"({SPEC_HELP}) or one of {SIZED_FROM_DATA} sized from the data")
        sizes = _sizes_from_shape(family, point_shape)
        if sizes is None:
            raise ValueError(f"manifold {spec!r}: records of shape {point_shape} are not points of "
                             f"any {family} manifold")
        return manifold_from_spec(f"{family}:{'x'.join(map(str, sizes))}"
                                  + "".join("," + p for p in pairs))
    else:
        raise TypeError(f"manifold must be a Manifold or a string, got {type(spec).__name__}")
    if tuple(manifold.point_shape) != point_shape:
        raise ValueError(f"records of shape {point_shape} are not points of {manifold!r} (points of "
                         f"shape {tuple(manifold.point_shape)})")
    return manifold
