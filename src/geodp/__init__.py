"""geodp: differential privacy on Riemannian manifolds."""

from .learn import Release, private_frechet_mean

__all__ = ["private_frechet_mean", "Release"]
__version__ = "0.1.0"
