"""Riemannian manifolds with closed-form geometry, vectorised over batches of points."""

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

__all__ = ["Manifold", "Euclidean", "Sphere", "Hyperbolic", "SPD", "KendallShape", "Grassmann",
           "SpecialOrthogonal", "Stiefel", "Product"]
