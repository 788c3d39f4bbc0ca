"""Non-private estimators of manifold-valued statistics."""

from .frechet import (ConvergenceWarning, FrechetMeanResult, NonUniqueMeanWarning, frechet_mean,
                      uniqueness_radius)
from .regression import GeodesicRegressionResult, geodesic_regression
from .sensitivity import check_assumption_1, curvature_factor, frechet_mean_sensitivity

__all__ = ["frechet_mean", "FrechetMeanResult", "NonUniqueMeanWarning", "ConvergenceWarning",
           "uniqueness_radius", "geodesic_regression", "GeodesicRegressionResult",
           "frechet_mean_sensitivity", "curvature_factor", "check_assumption_1"]
