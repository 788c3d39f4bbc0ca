"""Privacy mechanisms on manifolds and their samplers."""

from .discrete_gaussian import SecureTangentGaussian, secure_sigma_for_rho, secure_zcdp_rho
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
           "TangentGaussian", "SecureTangentGaussian", "secure_zcdp_rho", "secure_sigma_for_rho",
           "ApproximateSamplerRefused", "ApproximateSamplerWarning"]
