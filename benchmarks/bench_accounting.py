"""Accounting: geodp's PLD and RDP accountants against dp-accounting, measured in the same run.

Prints, for Poisson-subsampled Gaussians at delta = 1e-5:
- PLD: epsilon and time of geodp's PLDAccountant and of dp-accounting's (same grid step 1e-4),
  their ratio, and the T = 10^5 composition time (target: under 2 s on 2 cores);
- RDP: the ratio of geodp's epsilon to dp-accounting's over z in {0.5, 0.8, 1.1, 2, 4, 10},
  q in {1e-3, 1e-2, 0.1, 0.5}, T in {1, 100, 10^4} (target: never above 1) and to the PLD value;
- calibration (issue 31): ``noise_multiplier_for`` by PLD against by RDP, timed alternately in
  the same run, warm (RDP curves cached, best of repeats) and cold (caches cleared before every
  call, median), with their ratio (target: PLD at most 10x RDP).
dp-accounting is the ``accounting`` extra (``pip install '.[accounting]'``); without it only
geodp's rows are printed.
"""

from __future__ import annotations

import itertools
import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, print_table  # noqa: E402

from geodp.privacy import PLDAccountant, RDPAccountant, noise_multiplier_for  # noqa: E402
from geodp.privacy import rdp as _rdp  # noqa: E402

DELTA = 1e-5


def dp_accounting():
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


def main():
    peer = dp_accounting()
    rows = []
    for z, q, steps in [(1.1, 0.01, 1000), (0.8, 0.1, 100), (2.0, 0.1, 1000), (1.1, 0.01, 10_000),
                        (1.1, 0.01, 100_000)]:
        t_ours, ours = best_time(
            lambda: PLDAccountant().compose_gaussian(z, steps, q).epsilon(DELTA), 2)
        row = {"z": z, "q": q, "T": steps, "geodp eps": f"{ours:.6f}", "geodp s": f"{t_ours:.3f}"}
        if peer is not None:
            t0 = time.perf_counter()
            theirs = peer[0](z, q, steps)
            t_theirs = time.perf_counter() - t0
            row.update({"dp-acc eps": f"{theirs:.6f}", "dp-acc s": f"{t_theirs:.3f}",
                        "eps ratio": f"{ours / theirs:.6f}", "speed-up": f"{t_theirs / t_ours:.1f}x"})
        rows.append(row)
    print("PLD accountant (Poisson-subsampled Gaussian, delta = 1e-5)")
    print_table(rows, list(rows[0]))

    ratios, above_pld = [], []
    for z, q, steps in itertools.product([0.5, 0.8, 1.1, 2, 4, 10], [1e-3, 1e-2, 0.1, 0.5],
                                         [1, 100, 10_000]):
        ours = RDPAccountant().compose_gaussian(z, steps, q).epsilon(DELTA)
        pld = PLDAccountant().compose_gaussian(z, steps, q).epsilon(DELTA)
        above_pld.append((ours / pld, z, q, steps))
        if peer is not None:
            ratios.append((ours / peer[1](z, q, steps), z, q, steps))
    print("\nRDP accountant over 72 settings (z, q, T)")
    if ratios:
        hi, lo = max(ratios), min(ratios)
        print(f"  geodp / dp-accounting RDP epsilon: max {hi[0]:.12f} at {hi[1:]}, "
              f"min {lo[0]:.4f} at {lo[1:]}")
    hi, lo = max(above_pld), min(above_pld)
    mid = sorted(r[0] for r in above_pld)[len(above_pld) // 2]
    print(f"  geodp RDP / geodp PLD epsilon: median {mid:.3f}, max {hi[0]:.3f} at {hi[1:]}, "
          f"min {lo[0]:.4f} at {lo[1:]}")
    calibration()


def calibration(rounds: int = 5) -> None:
    """noise_multiplier_for by PLD and by RDP, interleaved: warm (RDP's curve cache kept, the
    answer cache emptied) and cold (both emptied) ratios per setting; then a cached repeat."""
    print("\nCalibration: noise_multiplier_for(eps, 1e-5, q, T), PLD (default) against RDP")
    rows = []
    for eps, q, steps in [(1.0, 0.01, 1000), (2.0, 0.01, 500), (1.0, 1e-3, 10_000),
                          (8.0, 0.1, 100), (1.0, 1.0, 100)]:
        warm, cold = {"pld": [], "rdp": []}, {"pld": [], "rdp": []}
        for _ in range(rounds):
            for acc in ("rdp", "pld"):
                def call(acc=acc):  # computed afresh: the answer cache is emptied first
                    noise_multiplier_for.cache_clear()
                    return noise_multiplier_for(eps, DELTA, q, steps, accountant=acc)
                _rdp._poisson_curve.cache_clear()
                t0 = time.perf_counter()
                z = call()
                cold[acc].append(time.perf_counter() - t0)
                warm[acc].append(best_time(call, 3)[0])
                if acc == "pld":
                    z_pld = z
        w = [p / r for p, r in zip(warm["pld"], warm["rdp"])]
        c = [p / r for p, r in zip(cold["pld"], cold["rdp"])]
        rows.append({"eps": eps, "q": q, "T": steps, "z (PLD)": f"{z_pld:.8f}",
                     "RDP warm ms": f"{1e3 * min(warm['rdp']):.2f}",
                     "PLD warm ms": f"{1e3 * min(warm['pld']):.1f}",
                     "warm ratio": f"{min(w):.1f}-{max(w):.1f}",
                     "RDP cold ms": f"{1e3 * sorted(cold['rdp'])[rounds // 2]:.1f}",
                     "PLD cold ms": f"{1e3 * sorted(cold['pld'])[rounds // 2]:.1f}",
                     "cold ratio": f"{min(c):.1f}-{max(c):.1f}"})
    print_table(rows, list(rows[0]))
    cached = best_time(lambda: noise_multiplier_for(1.0, DELTA, 0.01, 1000), 5)[0]
    print(f"a repeated calibration with the same arguments (answer cache): {1e6 * cached:.1f} us")


if __name__ == "__main__":
    main()
