"""Privacy mechanisms on manifolds and their samplers.

The names below load on first use (``geodp._lazy``): ``geodp.mechanisms.registry`` alone, which
the command line's help reads, imports neither NumPy nor SciPy."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from .discrete_gaussian import SecureTangentGaussian, secure_sigma_for_rho, secure_zcdp_rho
    from .euclidean import EuclideanLaplace, ambient_radius
    from .laplace import RiemannianLaplace, SamplerInfo
    from .mcmc import ApproximateSamplerRefused, ApproximateSamplerWarning, metropolis_hastings
    from .radial import NotNormalisableError
    from .spd_laplace import LowAcceptanceError, spd_critical_scale
    from .tangent_gaussian import TangentGaussian
    from .wrapped import NotHadamardError, WrappedGaussian, WrappedLaplace

_ORIGINS = {
    ".discrete_gaussian": ("SecureTangentGaussian", "secure_sigma_for_rho", "secure_zcdp_rho"),
    ".euclidean": ("EuclideanLaplace", "ambient_radius"),
    ".laplace": ("RiemannianLaplace", "SamplerInfo"),
    ".mcmc": ("ApproximateSamplerRefused", "ApproximateSamplerWarning", "metropolis_hastings"),
    ".radial": ("NotNormalisableError",),
    ".spd_laplace": ("LowAcceptanceError", "spd_critical_scale"),
    ".tangent_gaussian": ("TangentGaussian",),
    ".wrapped": ("NotHadamardError", "WrappedGaussian", "WrappedLaplace"),
}

__all__ = ["RiemannianLaplace", "EuclideanLaplace", "SamplerInfo", "ambient_radius",
           "metropolis_hastings", "NotNormalisableError", "LowAcceptanceError",
           "spd_critical_scale", "WrappedLaplace", "WrappedGaussian", "NotHadamardError",
           "TangentGaussian", "SecureTangentGaussian", "secure_zcdp_rho", "secure_sigma_for_rho",
           "ApproximateSamplerRefused", "ApproximateSamplerWarning"]

__getattr__, __dir__ = lazy_attributes(__name__, globals(), {
    name: module for module, names in _ORIGINS.items() for name in names})
