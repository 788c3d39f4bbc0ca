"""Rebuild the real data sets shipped in src/geodp/datasets/data/ (run once by maintainers).

Sources: the geomstats 2.8.0 wheel (unpacked, path given as first argument; obtain it with
``pip download --no-deps geomstats==2.8.0`` and unzip), scikit-learn's bundled digits and iris,
and the ktch 0.11.1 wheel's ``ktch/datasets/data`` directory (second argument).
Nothing here runs at install or run time.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits, load_iris

OUT = Path(__file__).resolve().parents[1] / "src" / "geodp" / "datasets" / "data"
CELL_LANDMARKS = 40
COV_ETA = 1e-6


def save(name: str, points: np.ndarray, labels: np.ndarray, **meta) -> None:
    np.savez_compressed(OUT / f"{name}.npz", points=points, labels=labels,
                        meta=np.array(json.dumps(meta)))
    print(name, points.shape, (OUT / f"{name}.npz").stat().st_size, "bytes")


def cities(data: Path) -> None:
    import csv

    with open(data / "cities" / "cities.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    lat = np.radians([float(r["lat"]) for r in rows])
    lon = np.radians([float(r["lng"]) for r in rows])
    xyz = np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=-1)
    xyz /= np.linalg.norm(xyz, axis=-1, keepdims=True)
    save("cities", xyz, np.array([r["city_ascii"] for r in rows]))


def resample_closed_curve(curve: np.ndarray, k: int) -> np.ndarray:
    closed = np.vstack([curve, curve[:1]])
    seg = np.linalg.norm(np.diff(closed, axis=0), axis=1)
    s = np.concatenate([[0.0], np.cumsum(seg)])
    t = np.linspace(0.0, s[-1], k, endpoint=False)
    return np.stack([np.interp(t, s, closed[:, 0]), np.interp(t, s, closed[:, 1])], axis=-1)


def cells(data: Path) -> None:
    text = (data / "cells" / "cells.txt").read_text()
    curves = [np.array([[float(c) for c in line.split()] for line in block.split("\n") if line])
              for block in text.split("\n\n") if block.strip()]
    shapes = np.stack([resample_closed_curve(c, CELL_LANDMARKS) for c in curves])
    shapes -= shapes.mean(axis=1, keepdims=True)
    shapes /= np.linalg.norm(shapes, axis=(1, 2), keepdims=True)
    lines = (data / "cells" / "cell_lines.txt").read_text().split()
    treat = (data / "cells" / "treatments.txt").read_text().split()
    labels = np.array([f"{a}/{b}" for a, b in zip(lines, treat)])
    save("cells", shapes, labels, landmarks=CELL_LANDMARKS)


def digit_features(images: np.ndarray) -> np.ndarray:
    """Per-pixel features (I, |dI/dx|, |dI/dy|, |d2I/dx2|, |d2I/dy2|), central differences."""
    dy, dx = np.gradient(images, axis=(1, 2))
    dyy = np.gradient(dy, axis=1)
    dxx = np.gradient(dx, axis=2)
    feats = np.stack([images, np.abs(dx), np.abs(dy), np.abs(dxx), np.abs(dyy)], axis=-1)
    return feats.reshape(len(images), -1, 5)


def digits() -> None:
    d = load_digits()
    images, y = d.images.astype(float), d.target
    f = digit_features(images)
    centred = f - f.mean(axis=1, keepdims=True)
    cov = np.einsum("npi,npj->nij", centred, centred) / f.shape[1] + COV_ETA * np.eye(5)
    # every feature lies in [0, 16] (central differences of intensities in [0, 16]), so each
    # variance is at most 16^2/4 and the eigenvalues lie in [eta, 5 * 64 + eta]: the data-
    # independent bound of eq. (5) of the exponential-wrapped paper, adapted to these features
    radius = float(np.sqrt(5.0) * max(abs(np.log(COV_ETA)), abs(np.log(5 * 64.0 + COV_ETA))))
    # the same range bounds every record's condition number by (5 * 64 + eta) / eta
    save("digits-covariance", cov, y, eta=COV_ETA, feature_bound=16.0,
         public_center="identity", public_radius=radius,
         max_condition=(5 * 64.0 + COV_ETA) / COV_ETA)

    counts = np.stack([np.bincount(im.astype(int).ravel(), minlength=17) for im in images])
    save("digits-histograms", np.sqrt(counts / counts.sum(axis=1, keepdims=True)), y, bins=17)

    mu = images.reshape(len(images), -1).mean(axis=1)
    sigma = images.reshape(len(images), -1).std(axis=1)
    x, yy = mu / np.sqrt(2.0), sigma
    radius = np.sqrt(2.0)
    s = x * x + yy * yy
    hyper = radius * np.stack([(1 + s) / (2 * yy), x / yy, (1 - s) / (2 * yy)], axis=-1)
    save("digits-gaussians", hyper, y)


def connectomes(data: Path) -> None:
    """28 x 28 functional-connectivity matrices of 86 subjects (MLSP 2014 schizophrenia
    challenge), assembled as geomstats' load_connectomes does: the 378 correlations fill the
    strict upper triangle row by row, and the symmetrisation (M + M^T)/2 of I + upper leaves
    (I + R)/2, R the correlation matrix."""
    import csv

    with open(data / "connectomes" / "train_FNC.csv") as f:
        rows = list(csv.reader(f))[1:]
    with open(data / "connectomes" / "train_labels.csv") as f:
        labels = {r[0]: int(r[1]) for r in list(csv.reader(f))[1:]}
    values = np.array([[float(v) for v in r[1:]] for r in rows])
    upper = np.zeros((len(rows), 28, 28))
    upper[:, *np.triu_indices(28, 1)] = values
    mats = np.eye(28) + 0.5 * (upper + np.swapaxes(upper, 1, 2))
    # any correlation matrix R has eigenvalues in [0, 28], so (I + R)/2 has them in [1/2, 29/2]:
    # a data-independent ball around sqrt(29)/2 I of radius sqrt(28) log(29) / 2
    lam = np.linalg.eigvalsh(mats)
    assert lam.min() >= 0.5 - 1e-12 and lam.max() <= 14.5 + 1e-12
    save("connectomes", mats, np.array([labels[r[0]] for r in rows]), size=28,
         public_center=(np.sqrt(29.0) / 2 * np.eye(28)).tolist(),
         public_radius=float(np.sqrt(28.0) * np.log(29.0) / 2), max_condition=29.0)


EMG_WINDOW, EMG_ETA = 500, 1.0


def emg(data: Path) -> None:
    """8 x 8 covariance matrices of windows of 500 consecutive samples of 8-channel forearm EMG,
    within one recording and one hand sign, plus eta I (eta = 1 ADC unit^2). Samples are 8-bit
    (0..255), so each variance is at most 127.5^2 and the eigenvalues lie in
    [eta, 8 * 127.5^2 + eta]: a data-independent ball around sqrt(eta * top) I."""
    import csv

    with open(data / "emg" / "emg.csv") as f:
        rows = list(csv.reader(f))[1:]
    signal = np.array([[float(v) for v in r[1:9]] for r in rows])
    keys = np.array([f"{r[10]}|{r[9]}" for r in rows])
    change = np.flatnonzero(keys[1:] != keys[:-1]) + 1
    covs, labels = [], []
    for lo, hi in zip(np.r_[0, change], np.r_[change, len(keys)]):
        for start in range(lo, hi - EMG_WINDOW + 1, EMG_WINDOW):
            seg = signal[start:start + EMG_WINDOW]
            covs.append(np.cov(seg, rowvar=False) + EMG_ETA * np.eye(8))
            labels.append(keys[lo].split("|")[1])
    top = 8 * 127.5**2 + EMG_ETA
    center_scale = float(np.sqrt(EMG_ETA * top))
    radius = float(np.sqrt(8.0) * 0.5 * np.log(top / EMG_ETA))
    save("emg-covariance", np.array(covs), np.array(labels), eta=EMG_ETA, window=EMG_WINDOW,
         public_center=(center_scale * np.eye(8)).tolist(), public_radius=radius,
         max_condition=top / EMG_ETA)


def iris() -> None:
    d = load_iris()
    save("iris", d.data.astype(float), d.target)


def trilobites(ktch_data: Path) -> None:
    """Cephalon shapes (16 fixed landmarks) against log10 centroid size in mm: the TPS file's
    landmark blocks, each followed by its curves, SCALE (mm per unit) and ID."""
    lines = (ktch_data / "landmark_trilobite_cephala" / "data_landmark_trilobite_cephala.tps"
             ).read_text().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("LM=")] + [len(lines)]
    shapes, sizes, ids = [], [], []
    for a, b in zip(starts[:-1], starts[1:]):
        block = lines[a:b]
        k = int(block[0][3:])
        fields = dict(line.split("=", 1) for line in block if line.startswith(("SCALE=", "ID=")))
        if "SCALE" not in fields:  # no scale bar: the size is unknown, the specimen is left out
            continue
        lm = np.array([[float(v) for v in block[1 + j].split()] for j in range(k)])
        if not np.all(np.isfinite(lm)):  # missing landmarks: left out
            continue
        centred = lm - lm.mean(axis=0)
        size = np.sqrt(np.sum(centred**2))
        shapes.append(centred / size)
        sizes.append(np.log10(size * float(fields["SCALE"])))
        ids.append(fields["ID"])
    import csv
    with open(ktch_data / "landmark_trilobite_cephala" / "meta_landmark_trilobite_cephala.csv") as f:
        genus = {r["specimen_id"]: r["genus"] for r in csv.DictReader(f)}
    save("trilobites", np.array(shapes), np.array([genus[s] for s in ids]),
         covariates=np.array(sizes).tolist(), covariate="log10 centroid size (scale-bar units)",
         covariate_range=[-4.0, 2.0])


def hand_rotations(data: Path) -> None:
    """The orientation of each of the 53 SHREC'17 hands (22 joints in 3-D: 0 wrist, 1 palm, 2-5
    thumb, 6-9 index, 10-13 middle, 14-17 ring, 18-21 little finger) as a rotation: columns
    x = the index-to-little-finger knuckle direction made orthogonal to y, y = palm -> middle
    knuckle, z = x cross y. Each rotation depends on its own hand only. All 53 lines of
    hands.txt are read (geomstats' load_hands takes the first line as a header and keeps 52)."""
    joints = np.loadtxt(data / "hands" / "hands.txt").reshape(-1, 22, 3)
    labels = np.loadtxt(data / "hands" / "labels.txt").astype(int)
    y = joints[:, 10] - joints[:, 1]
    y /= np.linalg.norm(y, axis=1, keepdims=True)
    x = joints[:, 6] - joints[:, 18]
    x -= np.sum(x * y, axis=1, keepdims=True) * y
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    save("hand-rotations", np.stack([x, y, np.cross(x, y)], axis=-1),
         np.where(labels == 0, "grab", "expand"))


if __name__ == "__main__":
    OUT.mkdir(parents=True, exist_ok=True)
    geomstats_data = Path(sys.argv[1])
    cities(geomstats_data)
    cells(geomstats_data)
    connectomes(geomstats_data)
    emg(geomstats_data)
    digits()
    iris()
    hand_rotations(geomstats_data)
    if len(sys.argv) > 2:
        trilobites(Path(sys.argv[2]))
