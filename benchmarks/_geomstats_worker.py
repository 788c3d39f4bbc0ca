"""Runs inside the geomstats 2.8.0 environment: times exp/log/dist/Fréchet mean on given inputs.

Usage: python _geomstats_worker.py CASES_DIR. Each CASES_DIR/<case>.npz holds p, v, q, x, the case
name encodes the manifold. Writes CASES_DIR/<case>.geomstats.npz with timings and outputs.
"""

import sys
import time
from pathlib import Path

import numpy as np


def space_for(case):
    family, size = case.split("-")[0], int(case.split("-")[1])
    if family == "euclidean":
        from geomstats.geometry.euclidean import Euclidean
        return Euclidean(size)
    if family == "sphere":
        from geomstats.geometry.hypersphere import Hypersphere
        return Hypersphere(size)
    if family == "hyperbolic":
        from geomstats.geometry.hyperboloid import Hyperboloid
        return Hyperboloid(size)
    if family == "spd":
        from geomstats.geometry.spd_matrices import SPDMatrices
        return SPDMatrices(size)
    if family == "spdle":
        from geomstats.geometry.spd_matrices import SPDLogEuclideanMetric, SPDMatrices
        space = SPDMatrices(size, equip=False)
        space.equip_with_metric(SPDLogEuclideanMetric)
        return space
    if family == "kendall":
        from geomstats.geometry.pre_shape import PreShapeSpace
        space = PreShapeSpace(size, 2)
        space.equip_with_group_action("rotations")
        space.equip_with_quotient()
        return space.quotient
    raise ValueError(case)


def timed(fn, repeats=3):
    """Smallest wall time over ``repeats`` calls (as for geodp), and the last result."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, np.asarray(out)


def main(cases_dir):
    from geomstats.learning.frechet_mean import FrechetMean

    for path in sorted(Path(cases_dir).glob("*.npz")):
        if path.name.endswith(".geomstats.npz"):
            continue
        case = path.stem
        d = np.load(path)
        space = space_for(case)
        metric = space.metric
        res = {}
        res["t_exp"], res["exp"] = timed(lambda: metric.exp(d["v"], d["p"]))
        res["t_log"], res["log"] = timed(lambda: metric.log(d["q"], d["p"]))
        res["t_dist"], res["dist"] = timed(lambda: metric.dist(d["p"], d["q"]))
        estimator = FrechetMean(space)
        if hasattr(estimator, "set") and hasattr(estimator, "optimizer"):
            # geomstats stops when |grad|^2 <= epsilon * dim; geodp at |grad| <= 1e-10
            estimator.set(max_iter=500, epsilon=1e-20 / space.dim)
        res["t_mean"], res["mean"] = timed(lambda: estimator.fit(d["x"]).estimate_)
        np.savez(path.with_suffix(".geomstats.npz"), **res)
        print(case, "done", flush=True)


if __name__ == "__main__":
    main(sys.argv[1])
