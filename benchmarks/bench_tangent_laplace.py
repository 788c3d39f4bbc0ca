"""Exact tangent-rejection draws of the Riemannian Laplace on SO(n >= 4) and the Grassmannians
(``mechanisms/tangent_rejection.py``) against the Metropolis-Hastings path that was their only
sampler before (``allow_approximate=True``: MIN_CHAINS or more chains of 3000 burn-in steps, one
state per chain), in the same run.

Run: python benchmarks/bench_tangent_laplace.py [--n 20000] [--chains 500] [--repeats 3]
Each row: the acceptance rate of the exact sampler, its draws per second (range over
``--repeats`` calls of ``n`` draws), the MCMC path's draws per second (range over two runs of
``--chains`` chains) and the speed-up exact / MCMC (ratio of the medians). Scales where the exact
sampler accepts fewer than min_acceptance = 1e-4 print "refused".

Numbers (2 shared cores, NumPy 2.4.6, SciPy 1.17.1; n = 20 000, 500 chains, 3 repeats):

    manifold              scale  acceptance  exact draws/s      MCMC draws/s  exact / MCMC
    SpecialOrthogonal(4)  0.1    0.934       7.18e+04-7.65e+04  78.5-81.2     901
    SpecialOrthogonal(4)  0.3    0.576       4.68e+04-5.81e+04  62.7-68.2     888
    SpecialOrthogonal(4)  1.0    0.123       8.35e+03-1.09e+04  73.3-78.7     141
    SpecialOrthogonal(5)  0.1    0.768       3.59e+04-4.32e+04  54.1-55.2     735
    SpecialOrthogonal(5)  0.3    0.163       8.3e+03-1.39e+04   51.8-53.2     158
    Grassmann(4, 2)       0.1    0.937       1.01e+05-1.28e+05  87.3-88.7     1.45e+03
    Grassmann(4, 2)       0.3    0.598       1.68e+05-1.81e+05  87.7-88.1     2.02e+03
    Grassmann(4, 2)       1.0    0.268       8.54e+04-8.88e+04  86.9-88       1.02e+03
    Grassmann(6, 3)       0.1    0.576       9.2e+04-9.42e+04   50.1-50.3     1.86e+03
    Grassmann(6, 3)       0.3    0.0595      1.2e+04-1.28e+04   49.6-49.8     255

The MCMC path pays 3200 steps of a chain per draw (one state per chain), whatever the scale;
the exact sampler's cost grows as 1/acceptance. Exact draws are 140-2000x faster where both
run; at the scales refused (acceptance < 1e-4, e.g. SO(8) at scale 0.3, Gr(10, 3) at 0.3) only
MCMC remains.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import print_table  # noqa: E402

from geodp.manifolds import Grassmann, SpecialOrthogonal  # noqa: E402
from geodp.mechanisms import ApproximateSamplerRefused, RiemannianLaplace  # noqa: E402

CASES = [(SpecialOrthogonal(4), (0.1, 0.3, 1.0)), (SpecialOrthogonal(5), (0.1, 0.3)),
         (Grassmann(4, 2), (0.1, 0.3, 1.0)), (Grassmann(6, 3), (0.1, 0.3))]


def rates(fn, count: int, repeats: int) -> list[float]:
    """Draws per second of ``repeats`` calls of fn (each making ``count`` draws)."""
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        out.append(count / (time.perf_counter() - t0))
    return out


def span(values: list[float]) -> str:
    return f"{min(values):.3g}-{max(values):.3g}"


def row(m, scale: float, args, rng) -> dict:
    foot = m.random_point(1)
    exact = RiemannianLaplace(m, scale)
    out = {"manifold": repr(m), "scale": scale}
    try:
        exact.check_exact(rng)
    except ApproximateSamplerRefused:
        return {**out, "acceptance": "refused"}
    ours = rates(lambda: exact.sample(foot, args.n, rng), args.n, args.repeats)
    chains = RiemannianLaplace(m, scale, allow_approximate=True, chain_ball=(foot, 0.5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        mcmc = rates(lambda: chains._mcmc(foot, args.chains, rng), args.chains, 2)
    return {**out, "acceptance": f"{exact.last_info.acceptance_rate:.3g}",
            "exact draws/s": span(ours), "MCMC draws/s": span(mcmc),
            "exact / MCMC": f"{np.median(ours) / np.median(mcmc):.3g}"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--chains", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    rows = [row(m, s, args, rng) for m, scales in CASES for s in scales]
    print_table(rows, ["manifold", "scale", "acceptance", "exact draws/s", "MCMC draws/s",
                       "exact / MCMC"])


if __name__ == "__main__":
    main()
