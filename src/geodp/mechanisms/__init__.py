"""Privacy mechanisms on manifolds and their samplers."""

from .euclidean import EuclideanLaplace, ambient_radius
from .laplace import RiemannianLaplace, SamplerInfo
from .mcmc import ApproximateSamplerRefused, ApproximateSamplerWarning, metropolis_hastings
from .radial import NotNormalisableError
from .spd_laplace import LowAcceptanceError, spd_critical_scale
from .tangent_gaussian import TangentGaussian
from .wrapped import NotHadamardError, WrappedGaussian, WrappedLaplace

__all__ = ["RiemannianLaplace", "EuclideanLaplace", "SamplerInfo", "ambient_radius",
           "metropolis_hastings", "NotNormalisableError", "LowAcceptanceError",
           "spd_critical_scale", "WrappedLaplace", "WrappedGaussian", "NotHadamardError",
           "TangentGaussian", "ApproximateSamplerRefused", "ApproximateSamplerWarning"]
