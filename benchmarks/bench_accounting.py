"""Accounting: geodp's PLD and RDP accountants against dp-accounting, measured in the same run.

Run: python benchmarks/bench_accounting.py [--rounds 3] [--only grid|long|rdp|calibration]

Prints, for Poisson-subsampled Gaussians at delta = 1e-5:
- grid (issue 31): the PLD accountants of geodp and dp-accounting on 120 cells, z in
  {0.3, 0.5, 0.8, 1.1, 2, 5} x q in {0.001, 0.01, 0.05, 0.1, 1} x T in {10, 100, 1000, 10^4},
  timed alternately cell by cell for ``--rounds`` rounds. Both discretise the privacy loss on
  a grid of step 1e-4 by connect-the-dots and truncate tails of 1e-15 (dp-accounting's defaults;
  geodp also folds truncation and FFT rounding into delta, and composes full batches, q = 1, in
  closed form). Short cells take more rounds (``CELL_SECONDS``). Per cell: both epsilons and their relative difference, both median times, the
  speed-up (dp-accounting's time / geodp's) of the medians and its range over rounds; then the
  median and minimum speed-up and the count of cells below 1.0x (target: none);
- long: the T = 10^5 composition at z = 1.1, q = 0.01 (target: under 2 s on 2 cores);
- rdp: the ratio of geodp's RDP epsilon to dp-accounting's over z in {0.5, 0.8, 1.1, 2, 4, 10},
  q in {1e-3, 1e-2, 0.1, 0.5}, T in {1, 100, 10^4} (target: never above 1) and to the PLD value;
- calibration: ``noise_multiplier_for`` by PLD against by RDP, alternately, each computed
  afresh (answer cache emptied), RDP both with the curves of an identical earlier search
  cached (warm) and without (cold); target: PLD at most 10x RDP.
dp-accounting is the ``accounting`` extra (``pip install '.[accounting]'``); without it only
geodp's numbers are printed.
"""

from __future__ import annotations

import argparse
import itertools
import logging
import math
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import alternate, load_average, print_table, ratios, span  # noqa: E402

from geodp.privacy import PLDAccountant, RDPAccountant, noise_multiplier_for  # noqa: E402
from geodp.privacy import rdp as _rdp  # noqa: E402

DELTA = 1e-5
GRID_Z = (0.3, 0.5, 0.8, 1.1, 2.0, 5.0)
GRID_Q = (0.001, 0.01, 0.05, 0.1, 1.0)
GRID_T = (10, 100, 1000, 10_000)
GRID = list(itertools.product(GRID_Z, GRID_Q, GRID_T))


def dp_accounting():
    """(PLD epsilon, RDP epsilon) functions of dp-accounting, or None when it is not installed."""
    try:
        import dp_accounting as dpa
        from dp_accounting import rdp
        from dp_accounting.pld import pld_privacy_accountant
    except ImportError:
        print("dp-accounting is not installed (pip install '.[accounting]'): geodp rows only")
        return None
    logging.disable(logging.WARNING)  # its fractional-order series warns where it fails

    def pld(z, q, steps):
        acc = pld_privacy_accountant.PLDAccountant()
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
        return acc.get_epsilon(DELTA)

    def rdp_eps(z, q, steps):
        acc = rdp.RdpAccountant()
        acc.compose(dpa.PoissonSampledDpEvent(q, dpa.GaussianDpEvent(z)), steps)
        return acc.get_epsilon(DELTA)

    return pld, rdp_eps


def geodp_pld(z: float, q: float, steps: int) -> float:
    return PLDAccountant().compose_gaussian(z, steps, q).epsilon(DELTA)


#: A cell's calls alternate until each has taken about this long in all (at most 25 rounds): a
#: call of a few ms is otherwise judged on a handful of samples of a noisy machine.
CELL_SECONDS = 0.5


def pld_grid(peer, rounds: int = 3, cells=GRID) -> list[dict]:
    """One row per cell: epsilons, median times and speed-ups over at least ``rounds``
    alternations, after one untimed call of each (one-off costs: imports, FFT plans)."""
    rows = []
    for z, q, steps in cells:
        calls = {"geodp": lambda: geodp_pld(z, q, steps), "dp-accounting": lambda: peer(z, q, steps)}
        slowest = max(t[0] for t in alternate(calls, 1)[0].values())
        times, eps = alternate(calls, max(rounds, min(25, math.ceil(CELL_SECONDS / slowest))))
        speed = ratios(times["dp-accounting"], times["geodp"])
        med = statistics.median(times["dp-accounting"]) / statistics.median(times["geodp"])
        rows.append({"z": z, "q": q, "T": steps, "geodp eps": f"{eps['geodp']:.6g}",
                     "rel. diff": f"{eps['geodp'] / eps['dp-accounting'] - 1:+.1e}",
                     "geodp s": f"{statistics.median(times['geodp']):.3f}",
                     "dp-acc s": f"{statistics.median(times['dp-accounting']):.3f}",
                     "speed-up": f"{med:.2f}x", "range": f"{min(speed):.2f}-{max(speed):.2f}",
                     "_speed": med, "_worst": min(speed)})
        print(f"  {z} {q} {steps}: {rows[-1]['speed-up']} [{rows[-1]['range']}]", flush=True)
    return rows


def grid_summary(rows: list[dict]) -> str:
    """Median and minimum speed-up, and how many cells are below 1.0x (of the medians, and in
    at least one round)."""
    speed = [r["_speed"] for r in rows]
    low = min(rows, key=lambda r: r["_speed"])
    return (f"{len(rows)} cells: speed-up median {statistics.median(speed):.2f}x, min "
            f"{low['_speed']:.2f}x (z {low['z']}, q {low['q']}, T {low['T']}); below 1.0x: "
            f"{sum(s < 1 for s in speed)} cells (medians), "
            f"{sum(r['_worst'] < 1 for r in rows)} in some round")


def grid(peer, rounds: int) -> None:
    print(f"PLD accountants, {len(GRID)} cells, {rounds} alternating rounds ({load_average()})")
    rows = pld_grid(peer, rounds)
    print_table(rows, [c for c in rows[0] if not c.startswith("_")])
    print(grid_summary(rows))


def long_composition(peer, rounds: int) -> None:
    z, q, steps = 1.1, 0.01, 100_000
    calls = {"geodp": lambda: geodp_pld(z, q, steps)}
    if peer is not None:
        calls["dp-accounting"] = lambda: peer(z, q, steps)
    times, eps = alternate(calls, rounds)
    print("\nT = 10^5 (z 1.1, q 0.01; target under 2 s): " + "; ".join(
        f"{name} eps {eps[name]:.6f}, {span(times[name], '.2f', ' s')}" for name in calls))


def rdp_ratios(peer_rdp) -> None:
    found, above_pld = [], []
    for z, q, steps in itertools.product([0.5, 0.8, 1.1, 2, 4, 10], [1e-3, 1e-2, 0.1, 0.5],
                                         [1, 100, 10_000]):
        ours = RDPAccountant().compose_gaussian(z, steps, q).epsilon(DELTA)
        above_pld.append((ours / geodp_pld(z, q, steps), z, q, steps))
        if peer_rdp is not None:
            found.append((ours / peer_rdp(z, q, steps), z, q, steps))
    print("\nRDP accountant over 72 settings (z, q, T)")
    if found:
        hi, lo = max(found), min(found)
        print(f"  geodp / dp-accounting RDP epsilon: max {hi[0]:.12f} at {hi[1:]}, "
              f"min {lo[0]:.4f} at {lo[1:]}")
    hi, lo = max(above_pld), min(above_pld)
    mid = statistics.median(r[0] for r in above_pld)
    print(f"  geodp RDP / geodp PLD epsilon: median {mid:.3f}, max {hi[0]:.3f} at {hi[1:]}, "
          f"min {lo[0]:.4f} at {lo[1:]}")


def fresh_calibration(eps: float, q: float, steps: int, rounds: int = 5) -> dict:
    """``noise_multiplier_for(eps, 1e-5, q, steps)`` by PLD and by RDP, computed afresh (answer
    cache emptied before each call), alternately: "pld", "rdp warm" (RDP's curves of the same
    search cached by an earlier round) and "rdp cold" (curve cache emptied too). Returns the
    wall times, the CPU times of "pld" and "rdp warm" (a second pass: on a shared machine a call
    of milliseconds is preempted more often than one of a millisecond) and the PLD answer."""
    def call(accountant: str, cold: bool = False):
        def run():
            noise_multiplier_for.cache_clear()
            if cold:
                _rdp._poisson_curve.cache_clear()
            return noise_multiplier_for(eps, DELTA, q, steps, accountant=accountant)
        return run

    noise_multiplier_for(eps, DELTA, q, steps, accountant="rdp")  # RDP's curves, for "warm"
    times, answers = alternate({"pld": call("pld"), "rdp warm": call("rdp"),
                                "rdp cold": call("rdp", cold=True)}, rounds)
    cpu, _ = alternate({"pld": call("pld"), "rdp warm": call("rdp")}, rounds, time.process_time)
    return {"times": times, "cpu": cpu, "z": answers["pld"]}


def calibration(rounds: int = 5) -> None:
    print(f"\nCalibration: noise_multiplier_for(eps, 1e-5, q, T) afresh, PLD (default) against RDP "
          f"({rounds} alternating rounds, {load_average()})")
    rows = []
    for eps, q, steps in [(1.0, 0.01, 1000), (2.0, 0.01, 500), (1.0, 1e-3, 10_000),
                          (8.0, 0.1, 100), (1.0, 1.0, 100)]:
        out = fresh_calibration(eps, q, steps, rounds)
        t = out["times"]
        rows.append({"eps": eps, "q": q, "T": steps, "z (PLD)": f"{out['z']:.8f}",
                     "PLD ms": span([1e3 * v for v in t["pld"]], ".1f"),
                     "RDP warm ms": span([1e3 * v for v in t["rdp warm"]], ".2f"),
                     "RDP cold ms": span([1e3 * v for v in t["rdp cold"]], ".0f"),
                     "PLD / warm": span(ratios(t["pld"], t["rdp warm"]), ".1f"),
                     "CPU PLD / warm": span(ratios(out["cpu"]["pld"], out["cpu"]["rdp warm"]),
                                            ".1f"),
                     "PLD / cold": span(ratios(t["pld"], t["rdp cold"]), ".2f")})
    print_table(rows, list(rows[0]))
    noise_multiplier_for(1.0, DELTA, 0.01, 1000)
    times, _ = alternate({"cached": lambda: noise_multiplier_for(1.0, DELTA, 0.01, 1000)}, 100)
    print(f"a repeated calibration with the same arguments (answer cache): "
          f"{1e6 * min(times['cached']):.1f} us")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternations per measurement")
    parser.add_argument("--only", choices=["grid", "long", "rdp", "calibration"])
    args = parser.parse_args(argv)
    peer = dp_accounting()
    if args.only in (None, "grid") and peer is not None:
        grid(peer[0], args.rounds)
    if args.only in (None, "long"):
        long_composition(None if peer is None else peer[0], args.rounds)
    if args.only in (None, "rdp"):
        rdp_ratios(None if peer is None else peer[1])
    if args.only in (None, "calibration"):
        calibration(max(args.rounds, 5))


if __name__ == "__main__":
    main()
