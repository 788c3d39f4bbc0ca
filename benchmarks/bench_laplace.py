"""Exact Riemannian Laplace samplers versus the samplers the papers' authors used.

Baselines, re-implemented as described (one point at a time, as in the authors' Matlab code):
- S^2 (Reimherr et al. 2021, suppl. A.5): Metropolis chain, proposal Exp_x(v) with v a Gaussian
  scaled to length sigma and projected onto T_x, burn-in 10 000; a release at a new footpoint needs
  a new chain, so one independent draw costs the burn-in plus 100 thinning steps;
- S^2: uniform proposal on the sphere accepted with probability exp(-rho/sigma) (vectorised);
- SPD(2) (Hajri et al. 2016 as used by the exponential-wrapped paper): Metropolis chain on the
  eigenvalue vector r, 10 000 steps per release.
Settings of the paper: r = pi/8 on S^2 with n = 25..500, epsilon = 1; SPD(2) with r = 1.5.
Prints independent draws per second and the ratio (target: >= 10 000x over the MCMC baselines).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, print_table  # noqa: E402

from geodp.experiments.baselines import (eigen_metropolis_seconds_per_step,  # noqa: E402
                                        sphere_metropolis_seconds_per_step,
                                        sphere_uniform_rejection_rate)
from geodp.manifolds import SPD, Sphere  # noqa: E402
from geodp.mechanisms import RiemannianLaplace  # noqa: E402
from geodp.statistics import frechet_mean_sensitivity  # noqa: E402

BURN_IN, THIN = 10_000, 100


def ours_rate(manifold, scale, footpoints, rng) -> float:
    mech = RiemannianLaplace(manifold, scale)
    t, _ = best_time(lambda: mech.sample(footpoints, rng=rng))
    return len(footpoints) / t


def main():
    rng = np.random.default_rng(0)
    rows = []
    sphere = Sphere(2)
    r = np.pi / 8
    north = np.array([0.0, 0.0, 1.0])
    footpoints = sphere.random_ball(north, r, 200_000, rng)
    step_time = None
    for n in (25, 100, 500):
        sigma = frechet_mean_sensitivity(sphere, r, n) / 1.0
        mine = ours_rate(sphere, sigma, footpoints, rng)
        if step_time is None:
            step_time = sphere_metropolis_seconds_per_step(sigma, 20_000, rng)
        per_release = 1.0 / ((BURN_IN + THIN) * step_time)
        amortised = 1.0 / (THIN * step_time)
        uniform = sphere_uniform_rejection_rate(sigma, rng)
        for name, rate in [("MCMC, new chain per release (burn-in 10000)", per_release),
                           ("MCMC, one long chain, thinning 100", amortised),
                           ("uniform proposal + rejection", uniform)]:
            rows.append({"setting": f"S^2 r=pi/8 n={n} sigma={sigma:.4f}", "baseline": name,
                         "geodp draws/s": f"{mine:.3g}", "baseline draws/s": f"{rate:.3g}",
                         "ratio": f"{mine / max(rate, 1e-300):.3g}x"})
    spd = SPD(2)
    feet = spd.random_ball(np.eye(2), 1.5, 100_000, rng)
    spd_step = None
    for n in (25, 100, 500):
        scale = frechet_mean_sensitivity(spd, 1.5, n)
        mine = ours_rate(spd, scale, feet, rng)
        if spd_step is None:
            spd_step = eigen_metropolis_seconds_per_step(2, scale, 20_000, rng)
        rate = 1.0 / (BURN_IN * spd_step)
        rows.append({"setting": f"SPD(2) r=1.5 n={n} scale={scale:.4f}",
                     "baseline": "MCMC on eigenvalues, 10000 steps per release",
                     "geodp draws/s": f"{mine:.3g}", "baseline draws/s": f"{rate:.3g}",
                     "ratio": f"{mine / rate:.3g}x"})
    print_table(rows, ["setting", "baseline", "geodp draws/s", "baseline draws/s", "ratio"])


if __name__ == "__main__":
    main()
