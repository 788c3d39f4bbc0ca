"""Throughput of batched exp/log/dist on Grassmann(10, 3), geodp versus pymanopt 2.2.1 and the
LAPACK floor.

Run: python benchmarks/bench_grassmann.py [--points 10000]
Each row prints points per second for geodp's batched call; pymanopt's ``Grassmann(10, 3)``
called point by point (its ``dist`` takes one pair: the norm runs over every axis) and, for exp
and log, whose formulas broadcast, on the whole batch; and the LAPACK floor, one thin SVD
(``np.linalg.svd`` of the (N, 10, 3) batch) per point, the least any SVD-based closed form does.
``speedup`` is geodp over pymanopt point by point; ``floor`` is the LAPACK floor's time over
geodp's (above 1 where geodp needs only the k x k SVD of Y1^T Y2: log and dist); ``diff`` the
largest difference between the two libraries' results (their exp re-orthonormalises by QR,
another basis of the same subspace, so exp is compared by geodp's distance; their dist is the
arccos of the cosines, which loses accuracy at small angles).

Two runs on 2 shared (busy) cores, numpy 2.4.6, pymanopt 2.2.1, 10^4 points (points/s):

    op    geodp     pymanopt-loop  pymanopt-batch  lapack-floor  speedup  floor  diff
    exp   2.19e+05  4.59e+03       4.05e+04        2.05e+05      48x      1.07   5.2e-15
    log   2.78e+05  1.79e+04       2.87e+05        2.05e+05      16x      1.35   4.3e-15
    dist  2.77e+05  8.44e+04       -               2.05e+05      3x       1.35   6.9e-12

    exp   1.67e+05  4.98e+03       2.82e+04        2.79e+05      33x      0.60   5.2e-15
    log   2.15e+05  2.06e+04       1.53e+05        2.79e+05      10x      0.77   4.3e-15
    dist  2.19e+05  4.95e+04       -               2.79e+05      4x       0.79   6.9e-12

geodp's exp runs at the floor (one thin SVD and two products; the machine's load moves the
ratio between 0.6 and 1.07); pymanopt's batched log (a k x k solve and a thin SVD, and a
representation-dependent inverse where Y1^T Y2 is near singular) runs at 0.7-1.03x geodp's
speed; point by point, pymanopt pays Python's overhead per call and a QR per exp.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, print_table  # noqa: E402

from geodp.manifolds import Grassmann  # noqa: E402


def inputs(m: Grassmann, count: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Points p, tangent vectors v at them of norm <= 1, and q = Exp_p(v)."""
    p = m.project(rng.standard_normal((count,) + m.point_shape))
    v = m.from_coords(p, rng.standard_normal((count, m.dim)))
    v *= (rng.random(count) / m.norm(p, v))[:, None, None]
    return {"p": p, "v": v, "q": m.exp(p, v)}


def peer_rows(m: Grassmann, d: dict[str, np.ndarray]) -> dict[str, dict]:
    """pymanopt's times and results: point by point, and batched where its formulas broadcast."""
    from pymanopt.manifolds import Grassmann as PymanoptGrassmann

    peer = PymanoptGrassmann(*m.point_shape)
    p, v, q = d["p"], d["v"], d["q"]
    calls = {"exp": (peer.exp, p, v), "log": (peer.log, p, q), "dist": (peer.dist, p, q)}
    out = {}
    for name, (fn, a, b) in calls.items():
        t_loop, res = best_time(lambda: np.array([fn(x, y) for x, y in zip(a, b)]), repeats=1)
        t_batch = best_time(lambda: fn(a, b))[0] if name != "dist" else None
        out[name] = {"t_loop": t_loop, "t_batch": t_batch, "result": res}
    return out


def difference(m: Grassmann, name: str, ours: np.ndarray, theirs: np.ndarray) -> float:
    """The largest difference of geodp's results from pymanopt's (of subspaces, for exp)."""
    if name == "exp":
        return float(np.max(m.dist(ours, theirs)))
    return float(np.max(np.abs(ours - theirs)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10**4)
    args = parser.parse_args()
    m = Grassmann(10, 3)
    d = inputs(m, args.points, np.random.default_rng(0))
    floor = best_time(lambda: np.linalg.svd(d["v"], full_matrices=False))[0]
    ours = {"exp": lambda: m.exp(d["p"], d["v"]), "log": lambda: m.log(d["p"], d["q"]),
            "dist": lambda: m.dist(d["p"], d["q"])}
    peers = peer_rows(m, d)
    rate = lambda t: f"{args.points / t:.3g}"
    rows = []
    for name, fn in ours.items():
        t, res = best_time(fn)
        peer = peers[name]
        rows.append({"op": name, "geodp": rate(t), "pymanopt-loop": rate(peer["t_loop"]),
                     "pymanopt-batch": rate(peer["t_batch"]) if peer["t_batch"] else "-",
                     "lapack-floor": rate(floor), "speedup": f"{peer['t_loop'] / t:.0f}x",
                     "floor": f"{floor / t:.2f}",
                     "diff": f"{difference(m, name, res, peer['result']):.2g}"})
    print_table(rows, ["op", "geodp", "pymanopt-loop", "pymanopt-batch", "lapack-floor",
                       "speedup", "floor", "diff"])


if __name__ == "__main__":
    main()
