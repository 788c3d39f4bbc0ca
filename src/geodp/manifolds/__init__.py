"""Riemannian manifolds with closed-form geometry, vectorised over batches of points."""

from .base import Manifold
from .euclidean import Euclidean
from .hyperbolic import Hyperbolic
from .kendall import KendallShape
from .sphere import Sphere
from .spd import SPD

__all__ = ["Manifold", "Euclidean", "Sphere", "Hyperbolic", "SPD", "KendallShape"]
from .stiefel import Stiefel as Stiefel  # noqa: E402
__all__.append("Stiefel")
from .product import Product as Product  # noqa: E402
__all__.append("Product")
