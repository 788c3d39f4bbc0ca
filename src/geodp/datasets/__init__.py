"""Real data sets shipped inside the package, one or more per manifold family.

``load(name)`` returns a ``Dataset``; it unpacks as ``points, manifold = load(name)``.
Sources and licences are listed in ``data/README.md`` and in each ``Dataset.source``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..manifolds import (SPD, Euclidean, Hyperbolic, KendallShape, Manifold, SpecialOrthogonal,
                         Sphere)

_UCI_DIGITS = ("UCI Optical Recognition of Handwritten Digits (CC BY 4.0), bundled with "
               "scikit-learn (BSD-3-Clause)")

__all__ = ["load", "names", "Dataset", "open_chunked", "CHUNK_BYTES"]


@dataclass(frozen=True)
class Dataset:
    """Points on a manifold with per-point labels and provenance.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import load
    >>> ds = load('digits-covariance')
    >>> ds.points.shape, ds.manifold, ds.has_public_ball
    ((1797, 5, 5), SPD(5, metric='affine'), True)
    >>> center, radius = ds.public_ball()
    >>> center.shape, round(radius, 3)
    ((5, 5), 30.892)
    """

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
        if not self.has_public_ball:
            raise ValueError(f"data set {self.name!r} has no public ball: {self.no_public_ball}; "
                             f"pass a center and radius you can justify without the data")
        center = self.meta["public_center"]
        if center == "identity":
            center = np.eye(self.manifold.point_shape[0])
        return np.asarray(center, dtype=float), float(self.meta["public_radius"])

    @property
    def max_condition(self) -> float | None:
        """A public bound on every record's condition number lambda_max / lambda_min, from the
        measurement domain alone (the eigenvalue range that also gives the public ball), for
        ``private_frechet_mean(max_condition=)``; None where the data set states none.

        Examples
        --------
        >>> from geodp.datasets import load
        >>> load("connectomes").max_condition, load("iris").max_condition
        (29.0, None)
        """
        k = self.meta.get("max_condition")
        return None if k is None else float(k)

    @property
    def has_public_ball(self) -> bool:
        return "public_radius" in self.meta

    @property
    def no_public_ball(self) -> str | None:
        """Why the data set ships no public ball (None when it ships one)."""
        if self.has_public_ball:
            return None
        return _NO_BALL.get(self.name, "its domain gives no bound")

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
    "hand-rotations": (lambda meta: SpecialOrthogonal(3),
                       "orientations of 53 hands in SO(3), each from its own 22 joints measured "
                       "in 3-D (columns: knuckle line index -> little finger, palm -> middle "
                       "knuckle, palm normal); labels: grab/expand",
                       "SHREC'17 3D hand gesture data set (De Smedt et al. 2017), subset in the "
                       "geomstats 2.8.0 wheel (MIT), datasets/data/hands"),
}


_NO_BALL = {
    "cities": "cities can lie anywhere on the globe, and the whole sphere breaks Assumption 1",
    "cells": "any planar shape is possible, and Kendall's space is too curved for a ball that "
             "holds them all",
    "digits-gaussians": "a digit of one grey level has sigma = 0, at infinite Fisher-Rao distance",
    "iris": "the measurements have no stated range",
    "trilobites": "any planar shape is possible (a regression on it needs no ball: Kendall's "
                  "space is compact)",
    "hand-rotations": "a hand may face any direction, SO(3) has radius pi, and Assumption 1 asks "
                      "for a ball of radius below pi/2 (curvature up to 1/4), so a ball must "
                      "exclude orientations; an upright hand facing the sensor, diag(-1, 1, -1), "
                      "is a natural center, but SHREC'17 states no bound on how far the tracked "
                      "hands turn from it, and a radius read off these data is not public",
    "digits-histograms": "the histograms fill the positive orthant of S^16, whose smallest "
                         "enclosing cap (radius arccos(1/sqrt 17) = 1.33) breaks Assumption 1",
}


def names() -> list[str]:
    """Names of the shipped data sets.

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import names
    >>> 'digits-covariance' in names(), len(names()) >= 10
    (True, True)
    """
    return sorted(_REGISTRY)


def load(name: str) -> Dataset:
    """Load a shipped data set by name (see ``names()``).

    Examples
    --------
    >>> import numpy as np
    >>> from geodp.datasets import load
    >>> points, manifold = load('cities')     # unpacks as (points, manifold)
    >>> points.shape, manifold
    ((50, 3), Sphere(2))
    """
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


CHUNK_BYTES = 64 * 2**20
"""Target size of one chunk read from a .npy file (64 MiB): large enough to keep the scheduler's
per-task overhead small, small enough for many chunks per worker in memory."""


def _npy_rows(path: str, lo: int, hi: int) -> np.ndarray:
    """Rows lo..hi-1 of a .npy file, read through a memory map (only those rows are read)."""
    return np.array(np.load(path, mmap_mode="r", allow_pickle=False)[lo:hi], dtype=float)


def _open_npy(path: Path) -> Any:
    """A .npy file as a lazy dask array in chunks of about CHUNK_BYTES rows; only the header is
    read here, each worker reads its own rows (the path must be visible to the workers)."""
    import dask
    import dask.array as da

    try:
        header = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read {str(path)!r} as a .npy array: {exc}") from None
    shape, dtype = header.shape, header.dtype
    if len(shape) < 1 or dtype.kind not in "fiu":
        raise ValueError(f"{str(path)!r}: need a numeric array with records along its first axis, "
                         f"got shape {shape}, dtype {dtype}")
    row_bytes = 8 * max(1, int(np.prod(shape[1:], dtype=int)))
    rows = max(1, CHUNK_BYTES // row_bytes)
    parts = [da.from_delayed(dask.delayed(_npy_rows, pure=True)(str(path), lo, min(lo + rows, shape[0])),
                             shape=(min(lo + rows, shape[0]) - lo,) + tuple(shape[1:]), dtype=float)
             for lo in range(0, shape[0], rows)]
    if not parts:
        raise ValueError(f"{str(path)!r} holds no records")
    return da.concatenate(parts, axis=0)


def open_chunked(path: str | Path) -> Any:
    """Records stored on disk as a lazy ``dask.array.Array`` chunked along the first axis, for
    ``frechet_mean`` and ``private_frechet_mean`` on data larger than memory.

    ``path`` is a Zarr array (a directory ending in ``.zarr``, or holding ``.zarray`` or
    ``zarr.json``; its own chunks), a directory of ``.npy`` files (taken in name order, one
    array ``(n_i, *point_shape)`` each, concatenated) or a single ``.npy`` file. Nothing is read but
    headers until a computation runs; the workers then read their chunks themselves, so on a
    cluster the path must be visible to every worker. Needs ``pip install 'geodp[dask]'``.

    Examples
    --------
    >>> import numpy as np
    >>> import tempfile, os
    >>> from geodp.datasets import load, open_chunked
    >>> path = os.path.join(tempfile.mkdtemp(), 'cov.npy')
    >>> np.save(path, load('digits-covariance').points)
    >>> arr = open_chunked(path)   # a lazy dask array (extra [dask])  # doctest: +SKIP
    """
    try:
        import dask.array as da
    except ImportError:
        raise ImportError("chunked inputs need Dask: pip install 'geodp[dask]'") from None
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{str(path)!r} does not exist")
    zarr_like = path.is_dir() and (path.suffix == ".zarr" or (path / ".zarray").exists()
                                   or (path / "zarr.json").exists())
    if zarr_like:
        try:
            array = da.from_zarr(str(path))
        except ImportError:
            raise ImportError("reading Zarr needs zarr: pip install 'geodp[dask]'") from None
        return array.astype(float).rechunk({axis: -1 for axis in range(1, array.ndim)})
    if path.is_file():
        if path.suffix != ".npy":
            raise ValueError(f"{str(path)!r}: chunked inputs are .npy files, directories of them, "
                             f"or Zarr arrays")
        return _open_npy(path)
    files = sorted(path.glob("*.npy"))
    if not files:
        raise ValueError(f"{str(path)!r} holds no .npy files and is not a Zarr array")
    arrays = [_open_npy(f) for f in files]
    shapes = {a.shape[1:] for a in arrays}
    if len(shapes) > 1:
        raise ValueError(f"the .npy files in {str(path)!r} hold records of different shapes "
                         f"{sorted(shapes)}: every file must be (n_i, *point_shape)")
    return da.concatenate(arrays, axis=0)
