"""Private estimators: what users call."""

from .dp_rgd import dp_rsgd
from .frechet import private_frechet_mean
from .pca import private_pca
from .release import Release

__all__ = ["private_frechet_mean", "dp_rsgd", "private_pca", "Release"]
