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

    def public_ball(self) -> tuple[np.ndarray, float] | None:
        """A data-independent ball (center, radius) containing every possible record, if known.

        It is derived from the measurement range alone (e.g. pixel range for covariance
        descriptors), so it can calibrate a private release without spending budget.
        """
        if "public_radius" not in self.meta:
            return None
        center = self.meta["public_center"]
        if center == "identity":
            center = np.eye(self.manifold.point_shape[0])
        return np.asarray(center, dtype=float), float(self.meta["public_radius"])

    def __repr__(self) -> str:
        return (f"Dataset({self.name!r}, {len(self.points)} points on {self.manifold!r}, "
                f"public ball: {'yes' if 'public_radius' in self.meta else 'none'})")

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
    "iris": (lambda meta: Euclidean(4), "Fisher's iris measurements (cm) in R^4",
             "UCI Iris (CC BY 4.0), bundled with scikit-learn (BSD-3-Clause)"),
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
