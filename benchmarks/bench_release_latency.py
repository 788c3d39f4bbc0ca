"""Release latency (issue 31): the K-norm gradient Fréchet mean against the Riemannian Laplace
mean on digits-covariance (1797 x SPD(5), its public ball, epsilon = 1), timed alternately in
the same run; prints each round's times and the ratio (target: KNG under 0.5 s)."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from geodp.datasets import load  # noqa: E402
from geodp.learn.frechet import private_frechet_mean  # noqa: E402


def main(rounds: int = 5) -> None:
    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    times: dict[str, list[float]] = {"laplace": [], "kng": []}
    print(f"{'round':>5} {'laplace (s)':>12} {'kng (s)':>9} {'ratio':>7}")
    for r in range(rounds):
        for mechanism in times:
            t0 = time.perf_counter()
            private_frechet_mean(ds.manifold, ds.points, 1.0, center, radius, mechanism=mechanism,
                                 rng=np.random.default_rng(r))
            times[mechanism].append(time.perf_counter() - t0)
        print(f"{r:>5} {times['laplace'][-1]:>12.3f} {times['kng'][-1]:>9.3f} "
              f"{times['kng'][-1] / times['laplace'][-1]:>7.1f}")
    ratios = [k / lap for k, lap in zip(times["kng"], times["laplace"])]
    print(f"kng: median {statistics.median(times['kng']):.3f} s, range "
          f"{min(times['kng']):.3f}-{max(times['kng']):.3f} s; kng / laplace: median "
          f"{statistics.median(ratios):.1f}, range {min(ratios):.1f}-{max(ratios):.1f}")


if __name__ == "__main__":
    main()
