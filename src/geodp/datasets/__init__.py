"""Real data sets shipped inside the package, one or more per manifold family.

``load(name)`` returns a ``Dataset``; it unpacks as ``points, manifold = load(name)``.
Sources and licences are listed in ``data/README.md`` and in each ``Dataset.source``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import numpy as np

from ..manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Manifold, Sphere

_UCI_DIGITS = ("UCI Optical Recognition of Handwritten Digits (CC BY 4.0), bundled with "
               "scikit-learn (BSD-3-Clause)")


@dataclass(frozen=True)
class Dataset:
    """Points on a manifold with per-point labels and provenance."""

    name: str
    points: np.ndarray
    manifold: Manifold
    labels: np.ndarray
    description: str
    source: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def covariates(self) -> np.ndarray | None:
        """A real covariate per record for regression (None when the data set has none)."""
        c = self.meta.get("covariates")
        return None if c is None else np.asarray(c, dtype=float)

    @property
    def covariate_range(self) -> tuple[float, float] | None:
        """A public range of the covariate, set from its units, not from the data."""
        r = self.meta.get("covariate_range")
        return None if r is None else (float(r[0]), float(r[1]))

    def public_ball(self) -> tuple[np.ndarray, float]:
        """A data-independent ball (center, radius) containing every possible record.

        It is derived from the measurement domain alone (e.g. pixel range for covariance
        descriptors), so it can calibrate a private release without spending budget. Data sets
        whose domain gives none raise ``ValueError`` saying why (see ``has_public_ball``).
        """
        if "public_radius" not in self.meta:
            raise ValueError(f"data set {self.name!r} has no public ball: "
                             f"{_NO_BALL.get(self.name, 'its domain gives no bound')}; pass a "
                             f"center and radius you can justify without the data")
        center = self.meta["public_center"]
        if center == "identity":
            center = np.eye(self.manifold.point_shape[0])
        return np.asarray(center, dtype=float), float(self.meta["public_radius"])

    @property
    def has_public_ball(self) -> bool:
        return "public_radius" in self.meta

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, {len(self.points)} points on {self.manifold!r}, "
                f"public ball: {'yes' if self.has_public_ball else 'none'})")

    def __iter__(self) -> Iterator[Any]:
        yield self.points
        yield self.manifold


_REGISTRY: dict[str, tuple[Callable[[dict], Manifold], str, str]] = {
    "cities": (lambda meta: Sphere(2), "50 large world cities as unit vectors on S^2",
               "SimpleMaps World Cities Basic (CC BY 4.0), via the geomstats 2.8.0 wheel (MIT)"),
    "cells": (lambda meta: KendallShape(meta["landmarks"]),
              "650 osteosarcoma cell outlines as planar shapes of 40 landmarks",
              "geomstats 2.8.0 wheel (MIT); contours from A. Prasad's laboratory, Colorado State"),
    "digits-covariance": (lambda meta: SPD(5),
                          "1797 covariance descriptors of 8x8 handwritten digits (SPD(5))",
                          _UCI_DIGITS),
    "digits-histograms": (lambda meta: Sphere(16),
                          "square-root intensity histograms of 1797 digits on S^16", _UCI_DIGITS),
    "digits-gaussians": (lambda meta: Hyperbolic(2, curvature=-0.5),
                         "Fisher-Rao points N(mu, sigma^2) of 1797 digits' intensities (H^2, k=-1/2)",
                         _UCI_DIGITS),
    "connectomes": (lambda meta: SPD(28),
                    "86 brain functional-connectivity matrices (I + R)/2, R the 28 x 28 "
                    "correlations (SPD(28)); labels: schizophrenia 1, control 0",
                    "MLSP 2014 Schizophrenia Classification Challenge (Kaggle), via the geomstats "
                    "2.8.0 wheel (MIT)"),
    "emg-covariance": (lambda meta: SPD(8),
                       "1440 covariance matrices of 500-sample windows of 8-channel forearm EMG "
                       "(SPD(8)); labels: hand sign",
                       "geomstats 2.8.0 wheel (MIT), datasets/data/emg (Myo armband recordings "
                       "of hand signs)"),
    "trilobites": (lambda meta: KendallShape(16),
                   "273 trilobite cephala as planar shapes of 16 landmarks, with log10 centroid "
                   "size as covariate (geodesic regression: allometry); labels: genus",
                   "Serra et al. 2023 (Zenodo record 17308187), as distributed in the ktch 0.11.1 "
                   "wheel (Apache-2.0), ktch/datasets/data/landmark_trilobite_cephala"),
    "iris": (lambda meta: Euclidean(4), "Fisher's iris measurements (cm) in R^4",
             "UCI Iris (CC BY 4.0), bundled with scikit-learn (BSD-3-Clause)"),
}


_NO_BALL = {
    "cities": "cities can lie anywhere on the globe, and the whole sphere breaks Assumption 1",
    "cells": "any planar shape is possible, and Kendall's space is too curved for a ball that "
             "holds them all",
    "digits-gaussians": "a digit of one grey level has sigma = 0, at infinite Fisher-Rao distance",
    "iris": "the measurements have no stated range",
    "trilobites": "any planar shape is possible (a regression on it needs no ball: Kendall's "
                  "space is compact)",
    "digits-histograms": "the histograms fill the positive orthant of S^16, whose smallest "
                         "enclosing cap (radius arccos(1/sqrt 17) = 1.33) breaks Assumption 1",
}


def names() -> list[str]:
    """Names of the shipped data sets."""
    return sorted(_REGISTRY)


def load(name: str) -> Dataset:
    """Load a shipped data set by name (see ``names()``)."""
    if name not in _REGISTRY:
        raise KeyError(f"unknown data set {name!r}; available: {', '.join(names())}")
    make_manifold, description, source = _REGISTRY[name]
    with resources.files(__package__).joinpath("data", f"{name}.npz").open("rb") as f:
        arrays = np.load(f, allow_pickle=False)
        points, labels = arrays["points"], arrays["labels"]
        meta = json.loads(str(arrays["meta"]))
    manifold = make_manifold(meta)
    manifold.check_point(points)
    return Dataset(name, points, manifold, labels, description, source, meta)
