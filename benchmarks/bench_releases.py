"""Release latency (issue 31): one row per row of the issue's table, each timed in this run.

Run: python benchmarks/bench_releases.py [--rows kng-digits,cli,...] [--reproductions]
     [--rounds 5] [--slow-rounds 1] [--accounting-rounds 1]

Rows (name: job, target):
- kng-digits: ``private_frechet_mean(..., mechanism="kng")`` on digits-covariance (1797 x SPD(5)),
  its public ball, epsilon 1, against the Riemannian Laplace mean on the same data: <= 0.5 s,
  exact sampler;
- kng-connectomes / laplace-connectomes: the KNG mean and the restricted Riemannian Laplace mean
  (``restrict=True``) on connectomes (86 x SPD(28)), epsilon 1, approximate samplers allowed:
  <= 10 s, exact or with passing diagnostics (no ``ApproximateSamplerWarning``: the library's
  split R-hat and ESS thresholds; only pass/fail is printed, the values being data-dependent
  diagnostics);
- calibration: ``noise_multiplier_for(1, 1e-5, 0.01, 1000)`` by PLD, computed afresh, against
  the RDP calibration (with RDP's curves cached from an identical search, "warm", and without,
  "cold"): <= 10x RDP;
- reproduce-regression / reproduce-dp-rgd (only with ``--reproductions``: minutes each):
  ``geodp reproduce geodesic-regression`` (K = 3) <= 120 s and ``geodp reproduce dp-rgd`` <= 60 s;
- accounting: the PLD accountant against dp-accounting's on the 120 cells of
  ``bench_accounting.GRID``: never slower (the count of cells below 1.0x);
- cli: ``geodp --help`` in a fresh interpreter against a bare ``import numpy``: <= 3x;
- spd-distance: ``SPD(n).dist(A, B)`` of two batches against pyRiemann's
  ``distance_riemann(A, B)``, n in 2..32: >= 1.5x pyRiemann at every n.

Each measurement alternates with its peer in the same run; fast rows are repeated ``--rounds``
times, rows taking more than a few seconds ``--slow-rounds`` times. Times and ratios are printed
as median [min-max]. The load average is printed: the machine may be shared.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import alternate, load_average, print_table, ratios, span  # noqa: E402
from bench_accounting import dp_accounting, fresh_calibration, grid_summary, pld_grid  # noqa: E402

from geodp.datasets import load  # noqa: E402
from geodp.learn.frechet import private_frechet_mean  # noqa: E402
from geodp.manifolds import SPD  # noqa: E402
from geodp.mechanisms.mcmc import ApproximateSamplerWarning  # noqa: E402

#: The command line as the ``geodp`` console script runs it, in this interpreter.
CLI = [sys.executable, "-c", "import sys; from geodp.cli import main; sys.exit(main())"]
#: Batch sizes of the two-batch SPD distance (the issue's N at n = 5, 8, 16; smaller beyond).
SPD_SIZES = {2: 20_000, 3: 20_000, 5: 20_000, 8: 20_000, 16: 5000, 24: 3000, 32: 2000}


def row(job: str, times: list[float], target: str, met: bool, peer: str = "",
        peer_ratio: list[float] | None = None, note: str = "") -> dict:
    return {"job": job, "time (s)": span(times), "target": target, "met": "yes" if met else "NO",
            "peer": peer, "ratio": span(peer_ratio, ".3g", "x") if peer_ratio else "",
            "note": note}


def frechet_release(name: str, mechanism: str, restrict: bool = False):
    """A call releasing the mean of data set ``name`` at epsilon 1 (seeded by a counter), and the
    list of (release, whether its sampler warned that it failed its convergence checks)."""
    ds = load(name)
    center, radius = ds.public_ball()
    releases = []

    def call():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", ApproximateSamplerWarning)
            release = private_frechet_mean(
                ds.manifold, ds.points, 1.0, center, radius, mechanism=mechanism,
                restrict=restrict, allow_approximate=True, rng=np.random.default_rng(len(releases)))
        releases.append((release, any(issubclass(w.category, ApproximateSamplerWarning)
                                      for w in caught)))
    return call, releases


def sampler_verdict(releases) -> tuple[bool, str]:
    """Whether every release was exact or passed its MCMC checks (no ApproximateSamplerWarning:
    the library's own R-hat and ESS thresholds), and a note saying how many of each."""
    exact = sum(r.exact_sampler for r, _ in releases)
    passed = sum(not r.exact_sampler and not warned for r, warned in releases)
    return exact + passed == len(releases), f"{exact} exact, {passed} MCMC passing, of {len(releases)}"


def kng_digits(args) -> dict:
    kng, releases = frechet_release("digits-covariance", "kng")
    laplace, _ = frechet_release("digits-covariance", "laplace")
    times, _ = alternate({"kng": kng, "laplace": laplace}, args.rounds)
    exact = all(r.exact_sampler for r, _ in releases)
    return row("KNG mean, digits-covariance, eps 1", times["kng"], "<= 0.5 s, exact",
               statistics.median(times["kng"]) <= 0.5 and exact, "Laplace mean",
               ratios(times["kng"], times["laplace"]), "exact" if exact else "NOT exact")


def connectomes(mechanism: str, restrict: bool, job: str):
    def measure(args) -> dict:
        call, releases = frechet_release("connectomes", mechanism, restrict)
        times, _ = alternate({"release": call}, args.slow_rounds)
        ok, note = sampler_verdict(releases)
        return row(job, times["release"], "<= 10 s, exact or passing diagnostics",
                   statistics.median(times["release"]) <= 10 and ok, note=note)
    return measure


def calibration(args) -> dict:
    out = fresh_calibration(1.0, 0.01, 1000, max(args.rounds, 5))
    t = out["times"]
    warm, cold = ratios(t["pld"], t["rdp warm"]), ratios(t["pld"], t["rdp cold"])
    cpu = ratios(out["cpu"]["pld"], out["cpu"]["rdp warm"])
    return row("noise_multiplier_for(1, 1e-5, 0.01, 1000), PLD afresh", t["pld"], "<= 10x RDP",
               statistics.median(warm) <= 10, "RDP, curves cached", warm,
               f"CPU time: {span(cpu, '.2g', 'x')}; against RDP from scratch: "
               f"{span(cold, '.2g', 'x')}")


def reproduce(paper: str, target: float):
    """The wall time of ``geodp reproduce paper`` (the target), and in the note its CPU time
    (user + system, every thread): what the run costs whatever the machine's load."""
    def measure(args) -> dict:
        cpu = []

        def run():
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            subprocess.run([*CLI, "reproduce", paper, "--out", out, "--quiet"], check=True,
                           capture_output=True)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)

        with tempfile.TemporaryDirectory() as out:
            times, _ = alternate({paper: run}, args.slow_rounds)
        return row(f"geodp reproduce {paper}", times[paper], f"<= {target:g} s",
                   statistics.median(times[paper]) <= target, note=f"CPU {span(cpu, '.3g', ' s')}")
    return measure


def accounting(args) -> dict:
    peer = dp_accounting()
    if peer is None:
        return row("PLD vs dp-accounting", [float("nan")], "never slower", False,
                   note="dp-accounting not installed")
    rows = pld_grid(peer[0], args.accounting_rounds)
    geodp = [float(r["geodp s"]) for r in rows]
    below = sum(r["_speed"] < 1 for r in rows)
    return row(f"PLD vs dp-accounting, {len(rows)} cells (geodp's total)", [sum(geodp)],
               "never slower", below == 0, "dp-accounting PLD",
               [r["_speed"] for r in rows], grid_summary(rows))


def cli(args) -> dict:
    def run(command):
        return lambda: subprocess.run(command, check=True, capture_output=True)
    times, _ = alternate({"cli": run([*CLI, "--help"]),
                          "numpy": run([sys.executable, "-c", "import numpy"])},
                         max(args.rounds, 9))
    startup = ratios(times["cli"], times["numpy"])
    return row("CLI start-up, geodp --help", times["cli"], "<= 3x import numpy",
               statistics.median(startup) <= 3, "bare import numpy", startup)


def spd_distance(args) -> dict:
    try:
        from pyriemann.geometry.distance import distance_riemann
    except ImportError:
        try:
            from pyriemann.utils.distance import distance_riemann
        except ImportError:
            return row("SPD two-batch distance", [float("nan")], ">= 1.5x pyRiemann", False,
                       note="pyRiemann not installed")
    rng = np.random.default_rng(0)
    worst, per_n = [], []
    for n, count in SPD_SIZES.items():
        m = SPD(n)
        a, b = (m.exp(np.eye(n), _symmetric(rng, count, n)) for _ in range(2))
        calls = {"geodp": lambda: m.dist(a, b), "pyriemann": lambda: distance_riemann(a, b)}
        times, out = alternate(calls, max(args.rounds, 7))
        speed = ratios(times["pyriemann"], times["geodp"])
        worst.append((statistics.median(speed), n, times["geodp"]))
        gap = float(np.max(np.abs(out["geodp"] - out["pyriemann"]) / out["pyriemann"]))
        per_n.append(f"n={n} (N={count}): geodp {span(times['geodp'], '.3g', ' s')}, "
                     f"pyRiemann / geodp {span(speed, '.3g', 'x')}, rel. diff {gap:.0e}")
    print("  SPD two-batch distance:\n    " + "\n    ".join(per_n))
    low, n_low, geodp_times = min(worst, key=lambda w: w[0])
    return row("SPD two-batch distance, n in 2..32", geodp_times, ">= 1.5x pyRiemann every n",
               low >= 1.5, "pyRiemann distance_riemann", [w[0] for w in worst],
               f"ratio over n (medians); time and lowest at n = {n_low}")


def _symmetric(rng, count: int, n: int) -> np.ndarray:
    """Random symmetric matrices of Frobenius norm about 1 (tangent vectors at the identity)."""
    s = rng.standard_normal((count, n, n)) / np.sqrt(2 * n)
    return s + np.swapaxes(s, 1, 2)


ROWS = {"kng-digits": kng_digits,
        "kng-connectomes": connectomes("kng", False, "KNG mean, connectomes, eps 1"),
        "laplace-connectomes": connectomes("laplace", True,
                                           "Restricted Laplace mean, connectomes, eps 1"),
        "calibration": calibration,
        "reproduce-regression": reproduce("geodesic-regression", 120),
        "reproduce-dp-rgd": reproduce("dp-rgd", 60),
        "accounting": accounting, "cli": cli, "spd-distance": spd_distance}
REPRODUCTIONS = ("reproduce-regression", "reproduce-dp-rgd")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", help=f"comma-separated subset of {', '.join(ROWS)}")
    parser.add_argument("--reproductions", action="store_true",
                        help="also time the two `geodp reproduce` rows (minutes each)")
    parser.add_argument("--rounds", type=int, default=5, help="repeats of the fast rows")
    parser.add_argument("--slow-rounds", type=int, default=1,
                        help="repeats of the rows that take seconds to minutes")
    parser.add_argument("--accounting-rounds", type=int, default=1,
                        help="alternations per cell of the 120-cell accounting grid")
    args = parser.parse_args(argv)
    names = args.rows.split(",") if args.rows else [
        r for r in ROWS if args.reproductions or r not in REPRODUCTIONS]
    unknown = set(names) - set(ROWS)
    if unknown:
        parser.error(f"unknown rows {sorted(unknown)}; choose from {', '.join(ROWS)}")
    results = []
    for name in names:
        print(f"{name} ({load_average()})", flush=True)
        results.append(ROWS[name](args))
    print()
    print_table(results, list(results[0]))


if __name__ == "__main__":
    main()
