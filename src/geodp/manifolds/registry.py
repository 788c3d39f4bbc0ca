"""The registry of manifold families: the command line's ``FAMILY:SIZE[,key=value]`` names and
the example instances that the shared invariant test suite runs on.

Adding a manifold is one module (see ``docs/extending.md``) and one ``register`` line below.
"""

from __future__ import annotations

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


@dataclass(frozen=True)
class Family:
    """A manifold family: its constructor (size first), the options the command line may set
    (name -> parser) and example constructor arguments for the shared tests."""

    build: Callable[..., Manifold]
    options: dict[str, Callable[[str], object]] = field(default_factory=dict)
    examples: dict[str, tuple[tuple, dict]] = field(default_factory=dict)


FAMILIES: dict[str, Family] = {}


def register(name: str, build: Callable[..., Manifold], options: dict | None = None,
             examples: dict[str, tuple[tuple, dict]] | None = None) -> None:
    """Add a family under ``name`` (its command-line spelling)."""
    if name in FAMILIES:
        raise ValueError(f"a manifold family {name!r} is already registered")
    FAMILIES[name] = Family(build, options or {}, examples or {})


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
                                       "sphere2_x_stiefel4_2": ((Sphere(2), Stiefel(4, 2)), {})})
