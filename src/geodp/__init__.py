"""geodp: differential privacy on Riemannian manifolds."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .learn import Release, private_frechet_mean, private_geodesic_regression

__all__ = ["private_frechet_mean", "private_geodesic_regression", "Release"]
__version__ = "0.1.0"

# Imported on first use (PEP 562), so that ``import geodp`` and ``geodp --help`` stay fast: the
# library's modules pull in SciPy.
_FROM_LEARN = {"private_frechet_mean", "private_geodesic_regression", "Release"}
_SUBMODULES = {"audit", "chunked", "cli", "datasets", "estimators", "experiments", "learn",
               "manifolds", "mechanisms", "parameters", "privacy", "progress", "statistics"}


def __getattr__(name: str) -> Any:
    if name in _FROM_LEARN:
        value = getattr(importlib.import_module(".learn", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | _FROM_LEARN | _SUBMODULES)
