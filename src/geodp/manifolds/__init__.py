"""Riemannian manifolds with closed-form geometry, vectorised over batches of points.

The names below load on first use (``geodp._lazy``): ``geodp.manifolds.spec.SPEC_HELP`` and
``geodp.manifolds.capabilities``, which the command line's help reads, import neither NumPy nor
SciPy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from .base import Manifold
    from .euclidean import Euclidean
    from .grassmann import Grassmann
    from .hyperbolic import Hyperbolic
    from .kendall import KendallShape
    from .product import Product
    from .special_orthogonal import SpecialOrthogonal
    from .sphere import Sphere
    from .spd import SPD
    from .stiefel import Stiefel

_ORIGINS = {"Manifold": ".base", "Euclidean": ".euclidean", "Grassmann": ".grassmann",
            "Hyperbolic": ".hyperbolic", "KendallShape": ".kendall", "Product": ".product",
            "SpecialOrthogonal": ".special_orthogonal", "Sphere": ".sphere", "SPD": ".spd",
            "Stiefel": ".stiefel"}

__all__ = ["Manifold", "Euclidean", "Sphere", "Hyperbolic", "SPD", "KendallShape", "Grassmann",
           "SpecialOrthogonal", "Stiefel", "Product"]

__getattr__, __dir__ = lazy_attributes(__name__, globals(), _ORIGINS)
