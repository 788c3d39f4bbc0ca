"""Fréchet mean and private mean on Dask: 10^8 points on S^2 and 10^7 SPD(3) matrices, generated
lazily chunk by chunk (never materialised), on a LocalCluster of 2 worker processes.

Each chunk is a fixed cloud of CHUNK points near the base point (made once per worker) moved by
a rotation (S^2) or congruence (SPD(3)) of its own: distinct data at the cost of one small
matrix product per record, so a pass measures the reduction, not a random generator. The
generation alone is timed too (a pass that only sums the chunks, after one that makes each
worker's base cloud).

Reported per data set: seconds per pass over the data (``frechet_mean`` does one pass per
iteration, plus one; ``private_frechet_mean`` adds one pass for the ball check, and clips
the few records outside its public ball chunk by chunk in every pass), throughput
in points per second per pass, peak resident memory of the client and of each worker, and the
ratio of the Dask throughput per core to the in-memory NumPy path's (2 worker processes against
geodp's 2-thread pool on IN_MEMORY points, measured in this run after the Dask part; target:
>= 0.5). Use ``--scale 0.1`` for a quick run on a tenth of the data.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from functools import lru_cache
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table  # noqa: E402

import dask  # noqa: E402
import dask.array as da  # noqa: E402
from distributed import Client  # noqa: E402

from geodp import private_frechet_mean  # noqa: E402
from geodp.chunked import local_cluster  # noqa: E402
from geodp.manifolds import SPD, Manifold, Sphere  # noqa: E402
from geodp.statistics import frechet_mean  # noqa: E402

CHUNK = 10**6
WORKERS = 2


@lru_cache(maxsize=2)
def base_cloud(kind: str, size: int) -> np.ndarray:
    """The cloud every chunk moves: points within about 0.3 of the base point."""
    rng = np.random.default_rng(0)
    if kind == "sphere":
        x = 0.1 * rng.standard_normal((size, 3))
        x[:, 2] += 1.0
        return x / np.linalg.norm(x, axis=1, keepdims=True)
    a = 0.15 * rng.standard_normal((size, 3, 3))
    return SPD(3).exp(np.eye(3), a + a.transpose(0, 2, 1))


def chunk(kind: str, index: int, size: int) -> np.ndarray:
    """Chunk ``index``: the base cloud under a small rotation (S^2) or congruence (SPD(3))."""
    rng = np.random.default_rng(index + 1)
    g = rng.standard_normal((3, 3)) * 0.05
    if kind == "sphere":
        q, _ = np.linalg.qr(np.eye(3) + g - g.T)
        return base_cloud(kind, size) @ q.T
    a = np.eye(3) + g
    return (base_cloud(kind, size).reshape(size, 9) @ np.kron(a, a).T).reshape(size, 3, 3)


def lazy(kind: str, n: int, shape: tuple[int, ...]) -> da.Array:
    """n records in chunks of CHUNK (of n/20 for small n, so that both workers stay busy)."""
    size = max(1, min(CHUNK, n // 20))
    return da.concatenate([da.from_delayed(dask.delayed(chunk)(kind, i, min(size, n - lo)),
                                           (min(size, n - lo),) + shape, float)
                           for i, lo in enumerate(range(0, n, size))])


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def run(kind: str, manifold: Manifold, n: int, in_memory: int, client: Client, center: np.ndarray,
        radius: float) -> dict:
    data = lazy(kind, n, manifold.point_shape)
    data.sum(axis=0).compute()
    gen_seconds, _ = timed(lambda: data.sum(axis=0).compute())
    seconds, fit = timed(lambda: frechet_mean(manifold, data, tol=1e-10, on_spread="ignore"))
    passes = fit.iterations + 1
    private_seconds, rel = timed(lambda: private_frechet_mean(manifold, data, 1.0, center, radius,
                                                              clip_data=True, rng=1))
    private_passes = rel.diagnostics["frechet_iterations"] + 2
    workers = client.run(peak_mib)
    client_peak = peak_mib()
    memory = lazy(kind, in_memory, manifold.point_shape).compute(scheduler="synchronous")
    mem_seconds, mem_fit = timed(lambda: frechet_mean(manifold, memory, tol=1e-10, on_spread="ignore"))
    mem_rate = in_memory * (mem_fit.iterations + 1) / mem_seconds
    rate = n * passes / seconds
    return {"data": f"{manifold!r}", "n": f"{n:.0e}",
            "s/pass": f"{seconds / passes:.2f}", "generation s/pass": f"{gen_seconds:.2f}",
            "points/s/pass": f"{rate:.3g}",
            "private s/pass": f"{private_seconds / private_passes:.2f}",
            "in-memory points/s/pass": f"{mem_rate:.3g} (n={in_memory:.0e})",
            "per-core ratio": f"{(rate / WORKERS) / (mem_rate / WORKERS):.2f}",
            "peak MiB client/workers": f"{client_peak:.0f}/" + "/".join(f"{v:.0f}" for v in workers.values()),
            "iterations": f"{fit.iterations}/{rel.diagnostics['frechet_iterations']}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the data sizes")
    args = parser.parse_args()
    sizes = {"sphere": (int(1e8 * args.scale), int(1e7 * args.scale)),
             "spd": (int(1e7 * args.scale), int(1e6 * args.scale))}
    with local_cluster(WORKERS) as cluster, Client(cluster) as client:
        rows = [run("sphere", Sphere(2), *sizes["sphere"], client, np.array([0.0, 0.0, 1.0]), 0.7),
                run("spd", SPD(3), *sizes["spd"], client, np.eye(3), 3.0)]
    print(f"LocalCluster: {WORKERS} worker processes x 1 thread; {os.cpu_count()} CPUs; "
          f"chunks of {CHUNK} records")
    print_table(rows, list(rows[0]))


if __name__ == "__main__":
    main()
