"""geodp: differential privacy on Riemannian manifolds."""

from .learn import Release, private_frechet_mean, private_geodesic_regression

__all__ = ["private_frechet_mean", "private_geodesic_regression", "Release"]
__version__ = "0.1.0"
