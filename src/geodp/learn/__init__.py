"""Private estimators: what users call."""

from .data_ball import RecordsOutsideBound
from .dp_rgd import dp_rsgd
from .frechet import private_frechet_mean
from .jax_grad import jax_per_sample_grad
from .pca import private_pca, private_principal_subspace
from .regression import private_geodesic_regression
from .release import Release

__all__ = ["private_frechet_mean", "dp_rsgd", "private_pca", "private_geodesic_regression",
           "jax_per_sample_grad", "Release", "private_principal_subspace", "RecordsOutsideBound"]
