"""Batched Stiefel(10, 3) exp and tangent projection on 10^4 points, geodp versus pymanopt 2.2.1.

Run: python benchmarks/bench_stiefel.py [--points 10000]

pymanopt's ``Stiefel.exp`` is the same map as geodp's (the embedded-metric geodesic of Edelman,
Arias & Smith 1998, eq. 2.7, not its default QR retraction), and ``projection`` is geodp's
``to_tangent``. Rows: geodp batched; pymanopt looping over the points (``Stiefel(10, 3)``, one
call per point); pymanopt batched (``Stiefel(10, 3, k=N)``, its product of N copies, which takes
the stacked points in one call and runs scipy's expm on the stack); the floor, the batched work
no exp can skip (for exp: geodp's batched [13/13] Pade ``expm`` of the prebuilt 2k x 2k blocks and
of -A; for the projection: the two batched matrix products Y^T V and Y sym(.)). Ratios are times
over geodp's; ``max diff`` is the largest entry-wise difference from geodp's result.

Two runs on this machine (2 shared cores, NumPy 2.4.6, SciPy 1.17.1, pymanopt 2.2.1), 10^4
points, best-of-several wall times in seconds:

    map         route              run 1     run 2     ratio (run 1 / run 2)  max diff
    exp         geodp (batched)    0.0369    0.0354    1 / 1
    exp         pymanopt (loop)    0.855     0.858     23.2 / 24.2            7.8e-16
    exp         pymanopt (k=N)     0.217     0.212     5.88 / 5.99            7.8e-16
    exp         floor (expm only)  0.0215    0.0216    0.583 / 0.612
    to_tangent  geodp (batched)    0.00116   0.00116   1 / 1
    to_tangent  pymanopt (loop)    0.0471    0.0471    40.5 / 40.7            0
    to_tangent  pymanopt (k=N)     0.00116   0.00116   1 / 1                  0
    to_tangent  floor (matmuls)    0.000924  0.000925  0.795 / 0.798

geodp's exp is ~24x pymanopt point by point and ~6x pymanopt's own batched call (scipy's expm on
stacked 6 x 6 and 3 x 3 matrices costs ~20 us per point, the batched Pade expm ~2 us); the two expm
calls are ~60% of it, the rest the block assembly and three products. The projection is the
same two products as pymanopt's batched call, ~1.25x the bare products.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, print_table  # noqa: E402

from geodp.manifolds import Stiefel  # noqa: E402
from geodp.manifolds.stiefel import expm  # noqa: E402

N_, K_ = 10, 3


def data(points: int) -> tuple[Stiefel, np.ndarray, np.ndarray]:
    """Stiefel(10, 3), points (N, 10, 3) and tangent vectors at them of norm ~1."""
    m = Stiefel(N_, K_)
    rng = np.random.default_rng(0)
    o = m.origin()
    p = m.exp(o, m.from_coords(o, rng.standard_normal((points, m.dim)) / np.sqrt(m.dim)))
    v = m.from_coords(p, rng.standard_normal((points, m.dim)) / np.sqrt(m.dim))
    return m, p, v


def exp_floor(p: np.ndarray, v: np.ndarray):
    """The batched expm calls of eq. 2.7 on prebuilt blocks: a closure timing only them."""
    a = np.swapaxes(p, -1, -2) @ v
    block = np.block([[a, -np.swapaxes(v, -1, -2) @ v],
                      [np.broadcast_to(np.eye(K_), a.shape), a]])
    return lambda: (expm(block), expm(-a))


def tangent_floor(p: np.ndarray, x: np.ndarray):
    s = np.swapaxes(p, -1, -2) @ x
    return lambda: (np.swapaxes(p, -1, -2) @ x, p @ s)


def rows(points: int) -> list[dict]:
    import pymanopt.manifolds as pm

    m, p, x = data(points)
    one, many = pm.Stiefel(N_, K_), pm.Stiefel(N_, K_, k=points)
    x_ambient = x + np.random.default_rng(1).standard_normal(x.shape)
    cases = {
        "exp": (lambda: m.exp(p, x), lambda: np.stack([one.exp(a, b) for a, b in zip(p, x)]),
                lambda: many.exp(p, x), exp_floor(p, x), "floor (expm only)"),
        "to_tangent": (lambda: m.to_tangent(p, x_ambient),
                       lambda: np.stack([one.projection(a, b) for a, b in zip(p, x_ambient)]),
                       lambda: many.projection(p, x_ambient), tangent_floor(p, x_ambient),
                       "floor (matmuls)"),
    }
    out = []
    for name, (ours, loop, batched, floor, floor_label) in cases.items():
        t0, ref = best_time(ours)
        out.append({"map": name, "route": "geodp (batched)", "seconds": f"{t0:.3g}", "ratio": "1"})
        for label, fn in (("pymanopt (loop)", loop), ("pymanopt (k=N)", batched),
                          (floor_label, floor)):
            t, res = best_time(fn)
            diff = "" if label.startswith("floor") else f"{np.max(np.abs(res - ref)):.1e}"
            out.append({"map": name, "route": label, "seconds": f"{t:.3g}",
                        "ratio": f"{t / t0:.3g}", "max diff": diff})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=10**4)
    args = parser.parse_args()
    print(f"Stiefel({N_}, {K_}), {args.points} points")
    print_table(rows(args.points), ["map", "route", "seconds", "ratio", "max diff"])


if __name__ == "__main__":
    main()
