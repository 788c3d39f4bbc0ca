"""Throughput of exp/log/dist and Fréchet-mean time, geodp versus geomstats 2.8.0 and pyRiemann.

Run: python benchmarks/bench_geometry.py [--scale 1.0] [--no-geomstats] [--contended] [--sweep]
     [--floor [--case SPD(8) connectomes ...] [--kernel log "dist(X, Y)" ...] [--rounds 5]]
Each row prints points per second for geodp and the peer measured in the same run, their ratio,
and the largest difference between the two results (the targets: >= 5x geomstats, >= 2x pyRiemann
on SPD, results equal to 1e-8).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
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
    """(exp, log, distance, mean, transport) of pyRiemann's affine-invariant metric, from
    ``pyriemann.geometry`` (0.12 on) or ``pyriemann.utils`` (before)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from pyriemann.geometry import distance, mean, tangentspace
        except ImportError:
            from pyriemann.utils import distance, mean, tangentspace
    return (tangentspace.exp_map_riemann, tangentspace.log_map_riemann, distance.distance_riemann,
            mean.mean_riemann, tangentspace.transport_riemann)


def pyriemann_rows(scale, repeats=3):
    try:
        exp_map_riemann, log_map_riemann, distance_riemann, mean_riemann, _ = _pyriemann_ops()
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
        exp_map, log_map, distance, mean, _ = _pyriemann_ops()
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


FLOOR_N = (2, 3, 4, 5, 6, 8, 12, 16, 24, 28, 32)
FLOOR_DATASETS = ("digits-covariance", "emg-covariance", "connectomes")
FLOOR_MIN_BATCH = 2000  # the two-thread target applies from here on
FLOOR_KERNELS = ("exp", "log", "dist", "dist(X, Y)", "transport", "mean pass")
FREE_CORES = 1.7  # rounds whose floor gains this much on two threads had both cores to themselves


def floor_batch(n, scale):
    """Matrices per SPD(n) row: about 2e6 / (n^2 max(1, n/4)) (some 20-70 ms of LAPACK work),
    at least ``FLOOR_MIN_BATCH``, at most 50,000, times ``scale``."""
    return max(100, int(scale * min(max(FLOOR_MIN_BATCH, int(2e6 / (n * n * max(1.0, n / 4)))), 50_000)))


def _selected(label, wanted):
    """Whether a case is among the ``wanted`` names (all cases if None): 'SPD(8)', or a data
    set's name."""
    return not wanted or label.lower() in {w.lower() for w in wanted}


def floor_cases(scale, wanted=None):
    """(label, manifold, base point, batch X, batch Y): synthetic SPD(n) batches of spread 1 from
    a base point of spread 0.5 (drawn from a generator seeded by n, so that a subset of the rows
    times the same inputs as the full run), and the real SPD data sets (X the records, Y the same
    records in another order, the base point the first record); only the ``wanted`` cases
    (``_selected``), if given."""
    from geodp import datasets

    cases = []
    for n in FLOOR_N:
        if not _selected(f"SPD({n})", wanted):
            continue
        m, rng = SPD(n), np.random.default_rng([3, n])
        count = floor_batch(n, scale)
        cases.append((f"SPD({n})", m, spd_batch(m, 1, 0.5, rng)[0], spd_batch(m, count, 1.0, rng),
                      spd_batch(m, count, 1.0, rng)))
    for name in FLOOR_DATASETS:
        if not _selected(name, wanted):
            continue
        ds = datasets.load(name)
        x = np.asarray(ds.points, dtype=float)
        cases.append((f"{name} {ds.manifold!r}", ds.manifold, x[0], x, np.roll(x, 1, axis=0)))
    return cases


def sygst_work(x, factors):
    """A function returning the CPU seconds LAPACK's ``dsygst`` (the reduction of the pencil
    (X_i, B_i) to L_i^-1 X_i L_i^-T, given B_i = L_i L_i^T) takes on the batch ``x``, one matrix
    per call through SciPy's wrapper, less the same loop of calls on 1 x 1 matrices (the
    wrapper's own cost, 0.2 us a call). ``factors``: the lower Cholesky factors, one per
    matrix or one for all. NumPy has no batched ``dsygst``: this is the reduction step of
    LAPACK's generalised eigensolver ``dsygv`` (potrf, sygst, syev), which the floor of the
    distances leaves out."""
    from scipy.linalg.lapack import dsygst

    work = np.array(x, dtype=float)  # C-ordered, so that work[i].T is Fortran-ordered X_i^T = X_i
    lt = np.ascontiguousarray(np.swapaxes(np.broadcast_to(factors, x.shape), -1, -2))
    pairs = [(work[i].T, lt[i].T) for i in range(len(x))]
    ones = np.ones((len(x), 1, 1))
    trivial = [(ones[i], ones[i]) for i in range(len(x))]

    def loop(args):
        c0 = time.process_time()
        for a, b in args:
            dsygst(a, b, 1, 1, 1)  # itype 1, lower, overwrite a in place
        return time.process_time() - c0

    def timed():
        np.copyto(work, x)
        return max(loop(pairs) - loop(trivial), 0.0)

    return timed


def floor_kernels(m, c, x, y, peers):
    """kernel -> (geodp call, the LAPACK work it cannot avoid on a slice of the batch, pyRiemann's
    call or None, and for the distances ``sygst_work``'s timer of the pencil's reduction, else
    None). The floors run on the whitened batch Z = L^-1 X L^-T (c = L L^T): eigh for exp, log,
    transport and the Fréchet-mean pass (one gradient-and-Hessian pass over the records),
    eigvalsh for the distance to one base point, and cholesky(Y) + eigvalsh of the reduced
    pencil L_Y^-1 X L_Y^-T for the distance between two batches (the eigenvalue solver's time
    depends on the spectrum: on digits-covariance, eigvalsh(X) takes 0.92x eigvalsh of the
    pencil)."""
    from geodp.chunked import as_sample

    lc = np.linalg.cholesky(c)
    linv = np.linalg.inv(lc)
    z = linv @ x @ linv.T
    lyf = np.linalg.cholesky(y)
    ly = np.linalg.inv(lyf)
    pencil = ly @ x @ np.swapaxes(ly, -1, -2)  # the reduced pencil (X, Y), as LAPACK's sygst makes it
    v = m.log(c, x)
    data = as_sample(m, x)
    exp_map, log_map, distance, transport = peers

    def eigh(part):
        return np.linalg.eigh(z[part])

    return {
        "exp": (lambda: m.exp(c, v), eigh, lambda: exp_map(v, c, Cm12=True), None),
        "log": (lambda: m.log(c, x), eigh, lambda: log_map(x, c, C12=True), None),
        "dist": (lambda: m.dist(c, x), lambda part: np.linalg.eigvalsh(z[part]), lambda: distance(x, c),
                 sygst_work(x, lc)),
        "dist(X, Y)": (lambda: m.dist(x, y),
                       lambda part: (np.linalg.cholesky(y[part]), np.linalg.eigvalsh(pencil[part])),
                       lambda: distance(x, y), sygst_work(x, lyf)),
        "transport": (lambda: m.transport(c, x, v), eigh, lambda: transport(v, c, x), None),
        "mean pass": (lambda: data.total(lambda xs, ws: m.mean_log_value_and_hessian(c, xs, ws)),
                      eigh, None, None),
    }


def _timed(fn, threads, inner):
    """(wall, CPU) seconds, best of ``inner`` calls, with geodp on ``threads`` threads (None: as
    installed) and BLAS on one thread where ``threads`` is 1."""
    import os

    from threadpoolctl import threadpool_limits

    before = os.environ.get("GEODP_NUM_THREADS")
    if threads is not None:
        os.environ["GEODP_NUM_THREADS"] = str(threads)
    try:
        with threadpool_limits(1) if threads == 1 else threadpool_limits(None):
            wall, cpu = float("inf"), float("inf")
            for _ in range(inner):
                w0, c0 = time.perf_counter(), time.process_time()
                fn()
                wall, cpu = min(wall, time.perf_counter() - w0), min(cpu, time.process_time() - c0)
    finally:
        if before is None:
            os.environ.pop("GEODP_NUM_THREADS", None)
        else:
            os.environ["GEODP_NUM_THREADS"] = before
    return wall, cpu


def _spread(values, fmt="{:.2f}"):
    values = np.sort(values)
    return f"{fmt.format(np.median(values))} [{fmt.format(values[0])}-{fmt.format(values[-1])}]"


def floor_row(label, count, kernel, calls, rounds, inner, pool):
    """One row: per round (floor on 1 thread and split in two halves over ``pool``'s two
    threads, geodp on 1 thread and on 2, pyRiemann; interleaved), the ratios geodp 1-thread CPU
    time / floor CPU time, geodp 1-thread wall / 2-thread wall (beside the same ratio of the
    floor: what two threads of plain NumPy gain on the machine at that moment), and pyRiemann
    wall / geodp 2-thread wall (and / geodp 1-thread wall); with a ``reduction`` timer
    (``sygst_work``), also geodp's CPU time / (floor + the reduction's), "x sygv"; medians and
    ranges."""
    from threadpoolctl import threadpool_limits

    mine, floor, peer, reduction = calls
    halves = [slice(0, count // 2), slice(count // 2, None)]
    ratios = {"x floor": [], "x sygv": [], "scaling": [], "floor scaling": [], "vs pyR": [],
              "vs pyR 1t": []}
    floor_us = []
    for _ in range(rounds):
        fw1, f_cpu = _timed(lambda: floor(slice(None)), 1, inner)
        fw2, _ = _timed(lambda: list(pool.map(floor, halves)), 1, inner)
        w1, c1 = _timed(mine, 1, inner)
        w2, _ = _timed(mine, 2, inner)
        floor_us.append(f_cpu / count * 1e6)
        ratios["x floor"].append(c1 / f_cpu)
        if reduction is not None:
            with threadpool_limits(1):
                ratios["x sygv"].append(c1 / (f_cpu + reduction()))
        ratios["scaling"].append(w1 / w2)
        ratios["floor scaling"].append(fw1 / fw2)
        if peer is not None:
            wp, _ = _timed(peer, 1, inner)
            ratios["vs pyR"].append(wp / w2)
            ratios["vs pyR 1t"].append(wp / w1)
    free = [s for s, f in zip(ratios["scaling"], ratios["floor scaling"]) if f >= FREE_CORES]
    ratios["scaling, cores free"] = free
    row = {"case": label, "kernel": kernel, "N": count, "floor us": f"{np.median(floor_us):.3g}"}
    row.update({k: _spread(v) for k, v in ratios.items() if v})
    if free:
        row["scaling, cores free"] += f" ({len(free)}/{rounds})"
    row["_median"] = {k: float(np.median(v)) for k, v in ratios.items() if v}
    return row


def floor_rows(scale, rounds=5, inner=3, cases=None, kernels=None):
    """The SPD kernels against the LAPACK floor, their own single-threaded time and pyRiemann
    (the ``cases`` and ``kernels`` of ``floor_main`` only, if given)."""
    try:
        exp_map, log_map, distance, _, transport = _pyriemann_ops()
        peers = (exp_map, log_map, distance, transport)
    except ImportError:
        peers = (None,) * 4
    from concurrent.futures import ThreadPoolExecutor

    rows = []
    with ThreadPoolExecutor(2) as pool:
        for label, m, c, x, y in floor_cases(scale, cases):
            calls = floor_kernels(m, c, x, y, peers)
            for kernel, (mine, floor, peer, reduction) in calls.items():
                if kernels and kernel not in kernels:
                    continue
                rows.append(floor_row(label, len(x), kernel,
                                      (mine, floor, peer if peers[0] else None, reduction),
                                      rounds, inner, pool))
                print(".", end="", flush=True)
    print()
    return rows


def floor_summary(rows):
    """Which rows meet the three targets (on the medians)."""
    def count(key, ok, eligible=lambda r: True):
        sel = [r for r in rows if key in r["_median"] and eligible(r)]
        good = [r for r in sel if ok(r["_median"][key])]
        bad = ", ".join(f"{r['case']} {r['kernel']} {r['_median'][key]:.2f}" for r in sel if r not in good)
        return f"{len(good)}/{len(sel)}" + (f" (not: {bad})" if bad else "")

    print("x floor <= 1.2 (1 thread):", count("x floor", lambda v: v <= 1.2))
    print("  distances against LAPACK's whole route, floor + sygst (x sygv <= 1.2):",
          count("x sygv", lambda v: v <= 1.2))
    print(f"2-thread scaling >= 1.7 (N >= {FLOOR_MIN_BATCH}):",
          count("scaling", lambda v: v >= 1.7, lambda r: r["N"] >= FLOOR_MIN_BATCH))
    print(f"  the same, in the rounds where both cores were free (the floor's scaling >= {FREE_CORES}):",
          count("scaling, cores free", lambda v: v >= 1.7, lambda r: r["N"] >= FLOOR_MIN_BATCH))
    print(f"  the floor's own 2-thread scaling >= 1.7 (N >= {FLOOR_MIN_BATCH}, the machine's share):",
          count("floor scaling", lambda v: v >= 1.7, lambda r: r["N"] >= FLOOR_MIN_BATCH).split(" (")[0])
    print("not slower than pyRiemann (geodp on 2 threads):", count("vs pyR", lambda v: v >= 1.0))


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


FLOOR_HEADER = """\
Per row, median [range] over the rounds, each call timed as the best of 3:
  floor us   the LAPACK work per matrix (1 thread): eigh / eigvalsh of the whitened batch, or
             cholesky(Y) + eigvalsh of the reduced pencil for dist(X, Y). For n = 2, 3 geodp uses closed forms and
             the floor is what LAPACK would do; the exponential (n >= 4) uses no eigh at all.
  x floor    geodp CPU time on 1 thread (GEODP_NUM_THREADS=1, BLAS 1) / floor CPU time
  x sygv     (distances) the same / (floor + LAPACK's dsygst reducing each pencil, one call a
             matrix less the wrapper's cost): LAPACK's whole route for the generalised
             eigenvalues (dsygv: potrf, sygst, syev), of which the floor leaves out the
             reduction, O(n^3) work that no method avoids
  scaling    geodp wall time on 1 thread / on 2 threads; floor scaling: the floor's wall time /
             its two halves' on two Python threads (what plain NumPy gains at that moment);
             scaling, cores free: geodp's scaling in the rounds where the floor's was >= 1.7
             (both cores free; how many of the rounds)
  vs pyR     pyRiemann wall time / geodp wall time on 2 threads (> 1: geodp faster);
             vs pyR 1t: the same against geodp on 1 thread. pyRiemann runs with BLAS on one
             thread: its per-matrix products gain nothing from more, and OpenBLAS threads
             that spin beside other work made its SPD(28) log map 10x slower on a busy day"""


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--scale", type=float, default=1.0, help="multiply every problem size")
    ap.add_argument("--no-geomstats", action="store_true", help="skip the geomstats comparison")
    ap.add_argument("--only", nargs="*", choices=sorted(CASES), help="run only these cases")
    ap.add_argument("--contended", action="store_true",
                    help="also rerun the pyRiemann rows beside a CPU-bound competitor process")
    ap.add_argument("--sweep", action="store_true",
                    help="only the pyRiemann ratios over SPD(2..32) and batches of 100 to 10^5")
    ap.add_argument("--floor", action="store_true",
                    help="only the SPD kernels against the LAPACK floor, two threads and pyRiemann")
    ap.add_argument("--rounds", type=int, default=5, help="repeats of each --floor row (>= 3)")
    ap.add_argument("--case", nargs="+", metavar="NAME",
                    help="rows of the floor table of these cases only ('SPD(8)', 'connectomes', ...)")
    ap.add_argument("--kernel", nargs="+", choices=FLOOR_KERNELS,
                    help="rows of the floor table of these kernels only")
    args = ap.parse_args(argv)
    if args.floor:
        floor_main(args.scale, args.rounds, args.case, args.kernel)
        return
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
    print()
    floor_main(args.scale, args.rounds, args.case, args.kernel)


def warm_allocator():
    """Allocate and free 16 MB once. glibc's malloc serves blocks above a threshold (128 KB at
    start) by mmap, and returns the top of its heap to the system beyond twice that; freeing a
    large block raises both. Until then every batch-sized temporary of a few hundred KB costs a
    page fault per 4 KB (the connectomes' two-batch distance: 300 faults, 10% of its time), far
    more than in any process that has freed a large array before, as the full run has (its
    synthetic batches): so a subset of the rows measures what the full run does."""
    big = np.ones(2**21)
    del big


def floor_main(scale, rounds, cases=None, kernels=None):
    """The --floor table (``cases``: names for ``_selected``, ``kernels``: names of
    ``FLOOR_KERNELS``; every row if None)."""
    import os

    print(f"SPD kernels against the LAPACK work they cannot avoid (load average "
          f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs at the start)")
    warm_allocator()
    rows = floor_rows(scale, max(3, rounds), inner=3, cases=cases, kernels=kernels)
    print(FLOOR_HEADER)
    print_table(rows, ["case", "kernel", "N", "floor us", "x floor", "x sygv", "scaling", "floor scaling",
                       "scaling, cores free", "vs pyR", "vs pyR 1t"])
    floor_summary(rows)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
