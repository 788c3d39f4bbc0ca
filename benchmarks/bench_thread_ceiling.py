"""What two threads can gain on this machine, beside what geodp's SPD kernels gain (issue 31).

Run: python benchmarks/bench_thread_ceiling.py [--case "SPD(2)" "SPD(3)" ...] [--kernel exp ...]
     [--rounds 3]
Per row (one kernel on the batch of ``bench_geometry --floor``), each a ratio of the wall time of
the whole batch on one thread to the same work on two, median [range] over interleaved rounds:
  geodp        geodp's own split (GEODP_NUM_THREADS=2 against 1)
  2 threads    the two halves of the batch, one geodp call each, on two Python threads
  2 processes  the whole batch in one forked process / its halves in two (no interpreter lock
               shared), timed after every other column (``process_column``)
  LAPACK       the kernel's floor (``bench_geometry.floor_kernels``) in halves on two threads
  numpy 1 op   one elementwise product over the batch's entries, in halves on two threads
  numpy chain  160 short elementwise operations (80 multiply-adds) on two rows of the entries,
               in halves on two threads (what a closed form does: many short NumPy calls)
The process column against the thread columns separates the machine (cores, memory bandwidth)
from the interpreter (threads share its lock while they are between NumPy calls).
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_geometry as bg  # noqa: E402
from _common import span  # noqa: E402

KERNELS = ("exp", "log", "dist", "dist(X, Y)")
CHAIN_OPS = 80


def best(fn, calls=5):
    """Smallest wall time of ``calls`` calls."""
    out = float("inf")
    for _ in range(calls):
        t0 = time.perf_counter()
        fn()
        out = min(out, time.perf_counter() - t0)
    return out


def kernel_call(m, c, x, y, kernel):
    """The geodp call of ``kernel`` on the batch (x, y), base point c."""
    if kernel == "exp":
        v = m.log(c, x)
        return lambda: m.exp(c, v)
    return {"log": lambda: m.log(c, x), "dist": lambda: m.dist(c, x),
            "dist(X, Y)": lambda: m.dist(x, y)}[kernel]


def _child(m, c, part, kernel, barrier, queue):
    """Time the kernel on one part, started together with the other processes at the barrier."""
    fn = kernel_call(m, c, *part, kernel)
    fn()
    times = []
    for _ in range(5):
        barrier.wait()
        t0 = time.perf_counter()  # CLOCK_MONOTONIC: one clock for every process
        fn()
        times.append((t0, time.perf_counter()))
    queue.put(times)


def on_processes(m, c, parts, kernel):
    """Wall time of the parts in as many forked processes started together, from the first
    start to the last end (best of 5, each process having run its part once before)."""
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(len(parts)), ctx.Queue()
    procs = [ctx.Process(target=_child, args=(m, c, h, kernel, barrier, queue)) for h in parts]
    for p in procs:
        p.start()
    times = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    return min(max(t[1] for t in ts) - min(t[0] for t in ts) for ts in zip(*times))


def numpy_ceilings(x, pool):
    """(one product, a chain of short operations): whole / halves on two threads."""
    entries = np.ascontiguousarray(np.moveaxis(x, (-2, -1), (0, 1))).reshape(-1, len(x))
    out = np.empty_like(entries)
    k = len(x) // 2

    def product(s):
        np.multiply(entries[:, s], 1.0001, out=out[:, s])

    def chain(s):
        a, b = entries[0, s], entries[-1, s]
        acc = a * b
        for _ in range(CHAIN_OPS):
            acc = acc * a + b

    ratios = []
    for f in (product, chain):
        whole = best(lambda: f(slice(None)))
        ratios.append(whole / best(lambda: list(pool.map(f, [slice(0, k), slice(k, None)]))))
    return ratios


def row(label, m, c, x, y, kernel, rounds, pool):
    """The thread columns of one row (every column but the processes'), and what
    ``process_column`` needs for the last."""
    fn = kernel_call(m, c, x, y, kernel)
    k = len(x) // 2
    halves = [(x[:k], y[:k]), (x[k:], y[k:])]
    parts = [kernel_call(m, c, *h, kernel) for h in halves]
    floor = bg.floor_kernels(m, c, x, y, (None,) * 4)[kernel][1]
    cols = {"geodp": [], "2 threads": [], "LAPACK": [], "numpy 1 op": [], "numpy chain": []}
    ms = []
    for _ in range(rounds):
        os.environ["GEODP_NUM_THREADS"] = "1"
        whole = best(fn)
        ms.append(whole * 1e3)
        cols["2 threads"].append(whole / best(lambda: list(pool.map(lambda f: f(), parts))))
        os.environ["GEODP_NUM_THREADS"] = "2"
        cols["geodp"].append(whole / best(fn))
        os.environ["GEODP_NUM_THREADS"] = "1"
        cols["LAPACK"].append(best(lambda: floor(slice(None)))
                              / best(lambda: list(pool.map(floor, [slice(0, k), slice(k, None)]))))
        for key, r in zip(("numpy 1 op", "numpy chain"), numpy_ceilings(x, pool)):
            cols[key].append(r)
    out = {"case": label, "kernel": kernel, "N": len(x), "1 thread ms": span(ms, ".3g")}
    out.update({key: span(v, ".2f") for key, v in cols.items()})
    return out, (m, c, [(x, y)], halves, kernel)


def process_column(spec, rounds):
    """The whole batch in one forked process / its halves in two, median [range] over rounds.
    Run after every thread column: after a fork the parent's pages are copy-on-write until
    their first write, and its next calls fault on every temporary the allocator hands out
    again (the SPD(16) exponential on two threads ran at 0.4-1.0x of one thread for five calls
    after a fork, then at 1.7-1.8x)."""
    m, c, whole, halves, kernel = spec
    return span([on_processes(m, c, whole, kernel) / on_processes(m, c, halves, kernel)
                 for _ in range(rounds)], ".2f")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--case", nargs="+", default=["SPD(2)", "SPD(3)"])
    ap.add_argument("--kernel", nargs="+", choices=KERNELS, default=list(KERNELS))
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args(argv)
    from threadpoolctl import threadpool_limits

    from _common import print_table

    print(f"two threads against one (load average {os.getloadavg()[0]:.1f} at the start)")
    bg.warm_allocator()
    rows, specs = [], []
    with threadpool_limits(1), ThreadPoolExecutor(2) as pool:
        for label, m, c, x, y in bg.floor_cases(1.0, args.case):
            for kernel in args.kernel:
                out, spec = row(label, m, c, x, y, kernel, args.rounds, pool)
                rows.append(out)
                specs.append(spec)
                print(".", end="", flush=True)
        for out, spec in zip(rows, specs):
            out["2 processes"] = process_column(spec, args.rounds)
            print(".", end="", flush=True)
    print()
    print_table(rows, list(rows[0]))
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
