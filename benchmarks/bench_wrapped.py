"""Releases per second of the exponential-wrapped mechanisms on SPD(m), batched.

Compared in the same run with the Riemannian Laplace baseline of the exponential-wrapped paper
(Metropolis on the eigenvalues, 10 000 steps per release) and with geodp's exact Riemannian
Laplace sampler. Two batched workloads: many data sets (a distinct center per release) and many
releases of one center. Target: >= 100 000 wrapped releases per second on SPD(5) (d = 15).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, print_table  # noqa: E402

from geodp.experiments.baselines import eigen_metropolis_seconds_per_step  # noqa: E402
from geodp.manifolds import SPD  # noqa: E402
from geodp.mechanisms import (RiemannianLaplace, WrappedGaussian, WrappedLaplace,  # noqa: E402
                              spd_critical_scale)

BATCH = 200_000


def main():
    rng = np.random.default_rng(0)
    rows = []
    for size in (2, 3, 5):
        m = SPD(size)
        scale = 0.075  # Delta = 2r/n with r = 1.5, n = 40, epsilon = mu = 1
        centers = m.random_ball(np.eye(size), 1.0, BATCH, rng)
        baseline = 1.0 / (10_000 * eigen_metropolis_seconds_per_step(
            size, min(scale, 0.5 * spd_critical_scale(size)), 5_000, rng))
        exact = RiemannianLaplace(m, scale)
        t_exact, _ = best_time(lambda: exact.sample(centers, rng=rng), 2)
        for name, mech in [("wrapped Laplace", WrappedLaplace(m, scale, np.eye(size))),
                           ("wrapped Gaussian", WrappedGaussian(m, scale, np.eye(size)))]:
            t_many, _ = best_time(lambda: mech.sample(centers, rng=rng), 2)
            t_one, _ = best_time(lambda: mech.sample(centers[0], BATCH, rng=rng), 2)
            rows.append({"manifold": f"SPD({size}) d={m.dim}", "mechanism": name,
                         "releases/s (distinct centers)": f"{BATCH / t_many:.3g}",
                         "releases/s (one center)": f"{BATCH / t_one:.3g}",
                         "exact Riemannian Laplace/s": f"{BATCH / t_exact:.3g}",
                         "MCMC baseline/s": f"{baseline:.3g}",
                         "ratio vs MCMC": f"{BATCH / t_many / baseline:.3g}x"})
    print_table(rows, list(rows[0]))


if __name__ == "__main__":
    main()
