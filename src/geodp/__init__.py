"""geodp: differential privacy on Riemannian manifolds."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_attributes

if TYPE_CHECKING:
    from .learn import Release, private_frechet_mean, private_geodesic_regression

__all__ = ["private_frechet_mean", "private_geodesic_regression", "Release"]
__version__ = "0.1.0"

# Imported on first use (PEP 562), so that ``import geodp`` and ``geodp --help`` stay fast: the
# library's modules pull in SciPy.
_FROM_LEARN = {"private_frechet_mean", "private_geodesic_regression", "Release"}
_SUBMODULES = {"audit", "chunked", "cli", "datasets", "estimators", "experiments", "learn",
               "manifolds", "mechanisms", "parameters", "privacy", "progress", "statistics"}


__getattr__, __dir__ = lazy_attributes(__name__, globals(), dict.fromkeys(_FROM_LEARN, ".learn"),
                                       _SUBMODULES)
