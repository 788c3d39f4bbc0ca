"""The registry of manifold families: the command line's ``FAMILY:SIZE[,key=value]`` names (and
``product:SPEC+SPEC+...``) and the example instances that the shared invariant test suite runs on.

Adding a manifold is one module (see ``docs/extending.md``) and one ``register`` line below.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from .base import Manifold
from .euclidean import Euclidean
from .grassmann import Grassmann
from .hyperbolic import Hyperbolic
from .kendall import KendallShape
from .spd import SPD
from .product import Product
from .special_orthogonal import SpecialOrthogonal
from .sphere import Sphere
from .stiefel import Stiefel


def sizes_and_options(family: Family, text: str) -> tuple[tuple, dict]:
    """The constructor arguments of ``SIZE[,key=value,...]``: SIZE is one integer or integers
    joined by ``x`` (``4x2`` -> (4, 2)), each option parsed by the family's parser."""
    size, *pairs = text.split(",")
    kwargs = {}
    for pair in pairs:
        key, _, value = pair.partition("=")
        if key not in family.options:
            raise ValueError(f"no option {key!r} (options: {sorted(family.options) or 'none'})")
        if not value.strip():
            raise ValueError(f"option {key!r} needs a value ({key}=...)")
        try:
            kwargs[key] = family.options[key](value)
        except ValueError:
            raise ValueError(f"option {key}={value!r} is not a valid "
                             f"{family.options[key].__name__}") from None
    if not all(s.strip().isdigit() for s in size.split("x")):
        raise ValueError(f"SIZE {size!r} is not an integer or integers joined by 'x'")
    sizes = tuple(int(s) for s in size.split("x"))
    counts = {len(args) for args, _ in family.examples.values()}
    if counts and len(sizes) not in counts:
        want = " or ".join(str(c) for c in sorted(counts))
        plural = "s" if len(sizes) > 1 else ""
        raise ValueError(f"SIZE {size!r} gives {len(sizes)} integer{plural} where this family "
                         f"takes {want}")
    return sizes, kwargs


def factor_specs(family: Family, text: str) -> tuple[tuple, dict]:
    """The factors of ``SPEC+SPEC+...``, each a manifold specification of its own
    (``sphere:2,curvature=4+euclidean:3`` -> (Sphere(2, curvature=4), Euclidean(3))). A ``+``
    starts a factor only before a family's name, so an option's value may carry a sign."""
    from .spec import manifold_from_spec

    return tuple(manifold_from_spec(part) for part in re.split(r"\+(?=[A-Za-z])", text)), {}


@dataclass(frozen=True)
class Family:
    """A manifold family: its constructor (size first), the options the command line may set
    (name -> parser), example constructor arguments for the shared tests, and how the text
    after ``FAMILY:`` reads into the constructor's arguments (``read(family, text)`` ->
    (args, kwargs); integer sizes and options by default, factor specifications for products)."""

    build: Callable[..., Manifold]
    options: dict[str, Callable[[str], object]] = field(default_factory=dict)
    examples: dict[str, tuple[tuple, dict]] = field(default_factory=dict)
    read: Callable[[Family, str], tuple[tuple, dict]] = sizes_and_options


FAMILIES: dict[str, Family] = {}


def register(name: str, build: Callable[..., Manifold], options: dict | None = None,
             examples: dict[str, tuple[tuple, dict]] | None = None,
             read: Callable[[Family, str], tuple[tuple, dict]] = sizes_and_options) -> None:
    """Add a family under ``name`` (its command-line spelling); ``read`` turns the text after
    ``name:`` into the constructor's arguments (see ``Family``)."""
    if name in FAMILIES:
        raise ValueError(f"a manifold family {name!r} is already registered")
    FAMILIES[name] = Family(build, options or {}, examples or {}, read)


def examples() -> dict[str, Manifold]:
    """One instance per registered example, by name: what the invariant tests run on."""
    return {key: family.build(*args, **kwargs) for family in FAMILIES.values()
            for key, (args, kwargs) in family.examples.items()}


register("euclidean", Euclidean, examples={"euclidean3": ((3,), {})})
register("sphere", Sphere, {"curvature": float},
         {"sphere2": ((2,), {}), "sphere5_k4": ((5,), {"curvature": 4.0})})
register("hyperbolic", Hyperbolic, {"curvature": float},
         {"hyperbolic2": ((2,), {}), "hyperbolic4_k05": ((4,), {"curvature": -0.5})})
register("spd", SPD, {"metric": str},
         {"spd2": ((2,), {}), "spd3": ((3,), {}), "spd5": ((5,), {}), "spd8": ((8,), {}),
          "spd4_logeuclid": ((4,), {"metric": "log-euclidean"}),
          "spd3_logeuclid": ((3,), {"metric": "log-euclidean"})})
register("kendall", KendallShape, examples={"kendall3": ((3,), {}), "kendall6": ((6,), {})})
register("grassmann", Grassmann, {}, {"grassmann4_2": ((4, 2), {}), "grassmann5_1": ((5, 1), {})})
register("so", SpecialOrthogonal, examples={"so3": ((3,), {}), "so4": ((4,), {})})
register("stiefel", Stiefel,
         examples={"stiefel4_2": ((4, 2), {}), "stiefel3_1": ((3, 1), {}), "stiefel3_3": ((3, 3), {})})
register("product", Product, examples={"sphere2_x_euclidean3": ((Sphere(2), Euclidean(3)), {}),
                                       "sphere2_x_stiefel4_2": ((Sphere(2), Stiefel(4, 2)), {})},
         read=factor_specs)
