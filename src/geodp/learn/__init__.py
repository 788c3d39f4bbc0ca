"""Private estimators: what users call."""

from .frechet import private_frechet_mean
from .release import Release

__all__ = ["private_frechet_mean", "Release"]
