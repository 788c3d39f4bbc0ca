"""Non-private estimators of manifold-valued statistics."""

from .frechet import FrechetMeanResult, NonUniqueMeanWarning, frechet_mean, uniqueness_radius

__all__ = ["frechet_mean", "FrechetMeanResult", "NonUniqueMeanWarning", "uniqueness_radius"]
