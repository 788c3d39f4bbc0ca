"""Approximate releases on connectomes (86 x SPD(28), public ball of radius 8.9, epsilon 1), issue
31: the restricted Riemannian Laplace mean (``restrict=True``) and the K-norm gradient mean, both
with ``allow_approximate=True`` (no exact sampler exists: the scale 0.41 exceeds the critical
0.023 of SPD(28), and uniform proposals on so wide a ball are never kept).

Per round: wall time of each release, the chains' steps, acceptance, R-hat and bulk ESS (worst
over the monitored summaries), and the share of the chains' time spent on the tilt (the
distances rho(m, x) of the proposals: one generalised symmetric eigenproblem each, the LAPACK
work the sampler cannot avoid). Peer, in the same run: the random-walk Metropolis-Hastings that
was the fallback before (``metropolis_hastings``, 8 chains, step tuned in its burn-in) on the
same target for a fixed budget of steps; the ratio of bulk ESS per second of rho(m, x) (polar
chains / random walk).
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from geodp.datasets import load  # noqa: E402
from geodp.learn.frechet import private_frechet_mean  # noqa: E402
from geodp.mechanisms import laplace as laplace_module  # noqa: E402
from geodp.mechanisms.mcmc import bulk_ess, metropolis_hastings, rank_r_hat  # noqa: E402
from geodp.mechanisms.spd_chains import ball_chains  # noqa: E402
from geodp.statistics import frechet_mean  # noqa: E402


def release_rows(ds, center, radius, rounds: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"laplace --restrict": [], "kng": []}
    print(f"{'round':>5} {'release':>19} {'time (s)':>9} {'steps':>6} {'accept':>7} {'R-hat':>7} "
          f"{'ESS':>6}")
    for r in range(rounds):
        for name in times:
            t0 = time.perf_counter()
            rel = private_frechet_mean(ds.manifold, ds.points, 1.0, center, radius,
                                       mechanism=name.split()[0], restrict=name != "kng",
                                       allow_approximate=True, rng=np.random.default_rng(r))
            times[name].append(time.perf_counter() - t0)
            chains = rel.diagnostics["sampler"]["mcmc"]
            print(f"{r:>5} {name:>19} {times[name][-1]:>9.2f} "
                  f"{chains['burn_in'] + chains['trace_length']:>6} "
                  f"{chains['acceptance_rate']:>7.2f} {chains['r_hat']:>7.4f} {chains['ess']:>6.0f}")
    for name, t in times.items():
        print(f"{name}: median {statistics.median(t):.2f} s, range {min(t):.2f}-{max(t):.2f} s")
    return times


def peer_row(ds, center, radius, steps: int = 400) -> None:
    """Bulk ESS per second of rho(m, x): polar chains against the random walk on the target."""
    m = ds.manifold
    mean = frechet_mean(m, ds.points, init=center, tol=1e-12, max_iter=10_000).mean
    scale = 2 * 2 * radius / len(ds.points)  # Theorem 3's 2 Delta / epsilon, Delta = 2r/n

    def log_target(y):
        return np.where(m.dist(center, y) <= radius, -m.dist(mean, y) / scale, -np.inf)

    tilt = {"time": 0.0}

    def log_tilt(x, t):
        t0 = time.perf_counter()
        out = -(m.dist(mean, x) - t) / scale
        tilt["time"] += time.perf_counter() - t0
        return out

    rng = np.random.default_rng(0)
    t0 = time.perf_counter()
    _, diag = ball_chains(center, radius, scale, log_tilt, rng)
    polar_time = time.perf_counter() - t0
    polar = diag.ess / polar_time
    start = laplace_module._ball_starts(m, center, radius, 8, rng)
    t0 = time.perf_counter()
    _, walk = metropolis_hastings(m, log_target, start, rng, burn_in=steps // 2,
                                  trace_length=steps // 2, step=0.01,
                                  summary=lambda y: m.dist(mean, y))
    walk_time = time.perf_counter() - t0
    walk_ess = bulk_ess(walk.trace)
    walk_r_hat = rank_r_hat(walk.trace)
    print(f"polar chains: {diag.burn_in + diag.trace_length} steps in {polar_time:.2f} s, worst "
          f"bulk ESS {diag.ess:.0f} ({polar:.0f}/s); tilt evaluations {tilt['time']:.2f} s "
          f"({tilt['time'] / polar_time:.0%} of the chains' time)")
    print(f"random walk (peer): {steps} steps in {walk_time:.2f} s, acceptance "
          f"{walk.acceptance_rate:.2f}, R-hat {walk_r_hat:.2f} (an ESS read from chains that "
          f"have not mixed overstates them), bulk ESS of rho(m, x) {walk_ess:.1f} "
          f"({walk_ess / walk_time:.2f}/s); ESS per second, polar / random walk: "
          f"{polar / max(walk_ess / walk_time, 1e-12):.0f}x")


def main(rounds: int = 3) -> None:
    ds = load("connectomes")
    center, radius = ds.public_ball()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release_rows(ds, center, radius, rounds)
        peer_row(ds, center, radius)


if __name__ == "__main__":
    main()
