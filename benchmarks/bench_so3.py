"""Batched exp, log and dist on SO(3): geodp's SpecialOrthogonal(3) against SciPy's Rotation,
pymanopt's SpecialOrthogonalGroup (when importable) and the floor, one batched 3 x 3 matmul.

Run: python benchmarks/bench_so3.py [--n 100000] [--pymanopt-n 2000]
Each row prints rotations per second, the time relative to the floor and to SciPy, and the
largest difference from SciPy's result. SciPy (compiled, batched): exp = R * from_rotvec(w)
then as_matrix, log = as_rotvec of R^-1 * R' (geodp returns R [w]_x, the ambient tangent vector),
dist = magnitude of R^-1 * R'. pymanopt's exp is scipy.linalg.expm on the stack and its log a
Python loop of scipy.linalg.logm, so it runs on a smaller batch.

Numbers (2 shared cores, NumPy 2.4.6, SciPy 1.17.1, pymanopt 2.2.1; 10^5 rotations, pymanopt
on 500; two runs; "x floor" and "vs scipy" are time ratios, below 1 = faster than SciPy):

    op    impl      run 1 rot/s  x floor  vs scipy | run 2 rot/s  x floor  vs scipy
    floor matmul       3.30e7       1              |    3.31e7       1
    exp   geodp        1.81e6      18.2    0.64    |    3.07e6      10.8    0.40
    exp   scipy        1.16e6      28.5    1       |    1.23e6      26.8    1
    exp   pymanopt     3.74e4     883     31       |    3.75e4     881     33
    log   geodp        1.51e6      21.9    0.37    |    3.33e6       9.9    0.22
    log   scipy        5.52e5      59.9    1       |    7.30e5      45.3    1
    log   pymanopt     9.29e2     3.6e4   594      |    9.23e2     3.6e4   791
    dist  geodp        1.21e7       2.7    0.074   |    1.21e7       2.7    0.071
    dist  scipy        8.98e5      36.8    1       |    8.57e5      38.6    1
    dist  pymanopt     9.36e2     3.5e4   960      |    9.15e2     3.6e4   937

Largest difference from SciPy: 3.8e-15 (exp), 3.6e-15 (log, rotation vectors), 8.9e-16 (dist).
geodp's exp/log vary between runs (other jobs on the shared cores); dist is one trace and one
skew part per pair, within 3x of the matmul floor.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
from scipy.spatial.transform import Rotation

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, print_table  # noqa: E402

from geodp.manifolds import SpecialOrthogonal  # noqa: E402

SO3 = SpecialOrthogonal(3)


def geodp_ops(p, q, v):
    return {"exp": lambda: SO3.exp(p, v), "log": lambda: SO3.log(p, q),
            "dist": lambda: SO3.dist(p, q)}


def scipy_ops(p, q, w):
    def exp():
        return (Rotation.from_matrix(p) * Rotation.from_rotvec(w)).as_matrix()

    def log():
        return (Rotation.from_matrix(p).inv() * Rotation.from_matrix(q)).as_rotvec()

    def dist():
        return (Rotation.from_matrix(p).inv() * Rotation.from_matrix(q)).magnitude()

    return {"exp": exp, "log": log, "dist": dist}


def pymanopt_ops(p, q, v):
    try:
        from pymanopt.manifolds import SpecialOrthogonalGroup
    except ImportError:
        return None
    group = SpecialOrthogonalGroup(3, k=len(p))
    a = np.swapaxes(p, -1, -2) @ v  # pymanopt's tangent vectors live in the Lie algebra
    return {"exp": lambda: group.exp(p, a), "log": lambda: group.log(p, q),
            "dist": lambda: group.dist(p, q)}  # one distance on SO(3)^k: timed only


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**5)
    ap.add_argument("--pymanopt-n", type=int, default=500)
    args = ap.parse_args()
    p = Rotation.random(args.n, random_state=1).as_matrix()
    q = Rotation.random(args.n, random_state=2).as_matrix()
    w = np.random.default_rng(3).standard_normal((args.n, 3))
    v = SO3.from_coords(p, w)
    floor, _ = best_time(lambda: np.matmul(p, q))
    ours, peer = geodp_ops(p, q, v), scipy_ops(p, q, w)
    k = args.pymanopt_n
    manopt = pymanopt_ops(p[:k], q[:k], v[:k])
    rows = [{"op": "floor", "impl": "matmul", "rot/s": f"{args.n / floor:.3g}", "x floor": "1"}]
    for op in ("exp", "log", "dist"):
        t_ours, r_ours = best_time(ours[op])
        t_peer, r_peer = best_time(peer[op])
        ref = SO3.to_coords(p, r_ours) if op == "log" else r_ours
        diff = float(np.max(np.abs(ref - r_peer)))
        rows.append({"op": op, "impl": "geodp", "rot/s": f"{args.n / t_ours:.3g}",
                     "x floor": f"{t_ours / floor:.3g}", "vs scipy": f"{t_ours / t_peer:.3g}",
                     "max diff": f"{diff:.1e}"})
        rows.append({"op": op, "impl": "scipy", "rot/s": f"{args.n / t_peer:.3g}",
                     "x floor": f"{t_peer / floor:.3g}", "vs scipy": "1"})
        if manopt is not None:
            t_m, _ = best_time(manopt[op], repeats=2)
            rows.append({"op": op, "impl": f"pymanopt (n={k})", "rot/s": f"{k / t_m:.3g}",
                         "x floor": f"{t_m * args.n / k / floor:.3g}",
                         "vs scipy": f"{t_m * args.n / k / t_peer:.3g}"})
    print_table(rows, ["op", "impl", "rot/s", "x floor", "vs scipy", "max diff"])


if __name__ == "__main__":
    main()
