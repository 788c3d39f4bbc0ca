"""Throughput of exp/log/dist and Fréchet-mean time, geodp versus geomstats 2.8.0 and pyRiemann.

Run: python benchmarks/bench_geometry.py [--scale 1.0] [--no-geomstats] [--contended] [--sweep]
Each row prints points per second for geodp and the peer measured in the same run, their ratio,
and the largest difference between the two results (the targets: >= 5x geomstats, >= 2x pyRiemann
on SPD, results equal to 1e-8).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import HERE, best_time, geomstats_python, print_table  # noqa: E402

from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere  # noqa: E402
from geodp.manifolds._threads import thread_count  # noqa: E402
from geodp.statistics import frechet_mean  # noqa: E402

CASES = {
    "euclidean-3": (Euclidean(3), 10**6),
    "sphere-2": (Sphere(2), 10**6),
    "hyperbolic-2": (Hyperbolic(2), 10**6),
    "kendall-10": (KendallShape(10), 10**6),
    "spd-2": (SPD(2), 10**6),
    "spd-3": (SPD(3), 10**5),
    "spdle-3": (SPD(3, metric="log-euclidean"), 10**5),
}
MEAN_POINTS = 10**5


def base_point(m):
    if isinstance(m, (Sphere, KendallShape)):
        return m.project(np.random.default_rng(0).standard_normal(m.point_shape))
    if isinstance(m, Hyperbolic):
        return m.project(np.full(m.point_shape, 0.3))
    if isinstance(m, SPD):
        return np.eye(m.n) + 0.1
    return np.zeros(m.point_shape)


def make_inputs(m, n, rng):
    c = base_point(m)
    p = m.random_ball(c, 0.5, n, rng)
    q = m.random_ball(c, 0.5, n, rng)
    v = m.log(p, q)
    x = m.random_ball(c, 0.5, MEAN_POINTS, rng)
    return {"p": p, "q": q, "v": v, "x": x}


def ours(m, d):
    out = {}
    out["t_exp"], out["exp"] = best_time(lambda: m.exp(d["p"], d["v"]))
    out["t_log"], out["log"] = best_time(lambda: m.log(d["p"], d["q"]))
    out["t_dist"], out["dist"] = best_time(lambda: m.dist(d["p"], d["q"]))
    out["t_mean"], res = best_time(lambda: frechet_mean(m, d["x"], tol=1e-10))
    out["mean"] = res.mean
    return out


def diff(m, op, a, b):
    if op in ("exp", "mean"):
        return float(np.max(m.dist(a, b)))
    return float(np.max(np.abs(a - b)))


PYRIEMANN_SIZES = {2: 10**6, 3: 10**5, 5: 20_000, 8: 10_000, 16: 4_000, 28: 2_000}
PYRIEMANN_MEAN_POINTS = 2_000


def spd_batch(m, count, scale, rng):
    """Exp_I of random symmetric matrices of Frobenius norm about ``scale`` (any n)."""
    a = rng.standard_normal((count, m.n, m.n)) * scale / np.sqrt(2 * m.n)
    return m.exp(np.eye(m.n), a + np.swapaxes(a, 1, 2))


def pyriemann_cases(scale):
    """(label, manifold, base point, batch, sample for the mean) for synthetic and real SPD data."""
    from geodp import datasets

    rng = np.random.default_rng(1)
    cases = []
    for n, count in PYRIEMANN_SIZES.items():
        m = SPD(n)
        x = spd_batch(m, max(int(count * scale), 100), 1.0, rng)
        cases.append((f"SPD({n})", m, spd_batch(m, 1, 0.5, rng)[0], x, x[:PYRIEMANN_MEAN_POINTS]))
    for name in ("emg-covariance", "connectomes"):
        ds = datasets.load(name)
        cases.append((f"{name} {ds.manifold!r}", ds.manifold, ds.points[0], ds.points, ds.points))
    return cases


def _pyriemann_ops():
    from pyriemann.utils.distance import distance_riemann
    from pyriemann.utils.mean import mean_riemann
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from pyriemann.utils.tangentspace import exp_map_riemann, log_map_riemann
    return exp_map_riemann, log_map_riemann, distance_riemann, mean_riemann


def pyriemann_rows(scale, repeats=3):
    try:
        exp_map_riemann, log_map_riemann, distance_riemann, mean_riemann = _pyriemann_ops()
    except ImportError:
        print("pyRiemann not installed (pip install pyriemann): skipping its rows")
        return []
    rows = []
    for label, m, c, x, sample in pyriemann_cases(scale):
        v = m.log(c, x)
        pairs = {
            "exp": (lambda: exp_map_riemann(v, c, Cm12=True), lambda: m.exp(c, v)),
            "log": (lambda: log_map_riemann(x, c, C12=True), lambda: m.log(c, x)),
            "dist": (lambda: distance_riemann(x, c), lambda: m.dist(c, x)),
            "mean": (lambda: mean_riemann(sample, tol=1e-10, maxiter=100),
                     lambda: frechet_mean(m, sample, tol=1e-10).mean),
        }
        for op, (peer, mine) in pairs.items():
            tp, rp = best_time(peer, repeats)
            to, ro = best_time(mine, repeats)
            unit = 1 if op == "mean" else len(x)
            rows.append({"case": f"{label} vs pyRiemann", "op": op,
                         "n": len(sample) if op == "mean" else len(x),
                         "geodp/s": f"{unit / to:.3g}", "peer/s": f"{unit / tp:.3g}",
                         "ratio": f"{tp / to:.2f}x", "max diff": f"{diff(m, op, ro, rp):.1e}",
                         "t_geodp": to, "t_peer": tp})
    return rows


SWEEP_N = (2, 3, 4, 5, 6, 8, 12, 16, 24, 32)
SWEEP_COUNTS = (100, 300, 1000, 3000, 10**4, 10**5)
SWEEP_MAX_ENTRIES = 2 * 10**7  # batches up to 160 MB
SWEEP_MEAN_MAX = 1000  # Fréchet means of up to this many matrices


def sweep_rows():
    """pyRiemann time / geodp time for exp, log and dist (and the mean of up to
    ``SWEEP_MEAN_MAX`` matrices) at every n of ``SWEEP_N`` and batch of ``SWEEP_COUNTS``: the
    sizes users meet, from a hundred EEG trials to 10^5 matrices."""
    try:
        exp_map, log_map, distance, mean = _pyriemann_ops()
    except ImportError:
        print("pyRiemann not installed (pip install pyriemann): no sweep")
        return []
    rng = np.random.default_rng(2)
    rows = []
    for n in SWEEP_N:
        m = SPD(n)
        for count in SWEEP_COUNTS:
            if count * n * n > SWEEP_MAX_ENTRIES:
                continue
            x = spd_batch(m, count, 1.0, rng)
            c = spd_batch(m, 1, 0.5, rng)[0]
            v = m.log(c, x)
            pairs = {"exp": (lambda: exp_map(v, c, Cm12=True), lambda: m.exp(c, v)),
                     "log": (lambda: log_map(x, c, C12=True), lambda: m.log(c, x)),
                     "dist": (lambda: distance(x, c), lambda: m.dist(c, x))}
            if count <= SWEEP_MEAN_MAX:
                pairs["mean"] = (lambda: mean(x, tol=1e-10, maxiter=100),
                                 lambda: frechet_mean(m, x, tol=1e-10).mean)
            row = {"n": n, "matrices": count}
            for op, (peer, mine) in pairs.items():
                tp, rp = best_time(peer)
                to, ro = best_time(mine)
                row[op] = f"{tp / to:.2f}x"
                row["max diff"] = f"{max(diff(m, op, ro, rp), float(row.get('max diff', 0))):.0e}"
            rows.append(row)
    return rows


def contended(scale):
    """The pyRiemann rows again while a CPU-bound competitor runs: each side's slowdown."""
    idle = pyriemann_rows(scale)
    competitor = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        busy = pyriemann_rows(scale)
    finally:
        competitor.kill()
        competitor.wait()
    out = []
    for a, b in zip(idle, busy):
        out.append({"case": a["case"], "op": a["op"],
                    "geodp slowdown": f"{b['t_geodp'] / a['t_geodp']:.2f}x",
                    "pyRiemann slowdown": f"{b['t_peer'] / a['t_peer']:.2f}x",
                    "ratio idle": a["ratio"], "ratio contended": b["ratio"]})
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every problem size")
    ap.add_argument("--no-geomstats", action="store_true", help="skip the geomstats comparison")
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="run only these cases")
    ap.add_argument("--contended", action="store_true",
                    help="also rerun the pyRiemann rows beside a CPU-bound competitor process")
    ap.add_argument("--sweep", action="store_true",
                    help="only the pyRiemann ratios over SPD(2..32) and batches of 100 to 10^5")
    args = ap.parse_args(argv)
    if args.sweep:
        rows = sweep_rows()
        if rows:
            print("pyRiemann time / geodp time (> 1: geodp faster), one base point against a batch")
            print_table(rows, ["n", "matrices", "exp", "log", "dist", "mean", "max diff"])
            for op in ("exp", "log", "dist", "mean"):
                ratios = [float(r[op][:-1]) for r in rows if op in r]
                print(f"{op}: lowest {min(ratios):.2f}x, median {np.median(ratios):.2f}x "
                      f"over {len(ratios)} sizes")
        return
    cases = {k: v for k, v in CASES.items() if not args.only or k in args.only}
    rng = np.random.default_rng(0)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        inputs = {}
        for case, (m, n) in cases.items():
            inputs[case] = make_inputs(m, int(n * args.scale), rng)
            np.savez(Path(tmp) / f"{case}.npz", **inputs[case])
        py = None if args.no_geomstats else geomstats_python()
        if py is not None:
            subprocess.run([str(py), str(HERE / "_geomstats_worker.py"), tmp], check=True)
        for case, (m, n) in cases.items():
            mine = ours(m, inputs[case])
            peer_path = Path(tmp) / f"{case}.geomstats.npz"
            peer = dict(np.load(peer_path)) if peer_path.exists() else None
            for op in ("exp", "log", "dist", "mean"):
                unit = 1 if op == "mean" else len(inputs[case]["p"])
                row = {"case": f"{m!r} vs geomstats", "op": op, "n": unit if op != "mean" else MEAN_POINTS,
                       "geodp/s": f"{unit / mine['t_' + op]:.3g}"}
                if peer is not None:
                    row.update({"peer/s": f"{unit / float(peer['t_' + op]):.3g}",
                                "ratio": f"{float(peer['t_' + op]) / mine['t_' + op]:.1f}x",
                                "max diff": f"{diff(m, op, mine[op], peer[op]):.1e}"})
                rows.append(row)
    rows += pyriemann_rows(args.scale)
    print(f"geodp splits large batches over {thread_count()} threads (GEODP_NUM_THREADS); "
          "the peers run on one")
    print_table(rows, ["case", "op", "n", "geodp/s", "peer/s", "ratio", "max diff"])
    if args.contended:
        print("\nwith a CPU-bound competitor process (slowdown = contended time / idle time)")
        rows = contended(args.scale)
        print_table(rows, list(rows[0]))


if __name__ == "__main__":
    main()
