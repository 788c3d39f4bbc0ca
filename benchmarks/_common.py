"""Helpers shared by the benchmark scripts: timing, peer environments, result tables."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEOMSTATS_VENV = HERE / ".geomstats-venv"


#: Calls of best_time continue past ``repeats`` until they have taken this many seconds in all:
#: a call of a few milliseconds is otherwise timed on a handful of samples of a noisy machine.
MIN_TOTAL_SECONDS = 0.3


def best_time(fn: Callable[[], object], repeats: int = 3) -> tuple[float, object]:
    """Smallest wall time over at least ``repeats`` calls (more for short calls, up to
    ``MIN_TOTAL_SECONDS`` in all, at most 100), and the last result."""
    best, out, total, calls = float("inf"), None, 0.0, 0
    while calls < repeats or (total < MIN_TOTAL_SECONDS and calls < 100):
        t0 = time.perf_counter()
        out = fn()
        elapsed = time.perf_counter() - t0
        best, total, calls = min(best, elapsed), total + elapsed, calls + 1
    return best, out


def alternate(calls: dict[str, Callable[[], object]], rounds: int = 3,
              clock: Callable[[], float] = time.perf_counter) -> tuple[dict[str, list[float]], dict]:
    """Times (wall, or CPU with ``clock=time.process_time``) of one call of each of ``calls`` per
    round, the calls taking turns (their order reversed every other round, so that none always
    runs first on a machine whose load drifts), and the last result of each."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    results: dict = {}
    names = list(calls)
    for r in range(rounds):
        for name in names if r % 2 == 0 else names[::-1]:
            t0 = clock()
            results[name] = calls[name]()
            times[name].append(clock() - t0)
    return times, results


def ratios(numerator: list[float], denominator: list[float]) -> list[float]:
    """Round-by-round ratios of two lists of times from ``alternate``."""
    return [a / b for a, b in zip(numerator, denominator)]


def span(values: list[float], fmt: str = ".3g", unit: str = "") -> str:
    """"median [min-max]" of repeated measurements."""
    return (f"{statistics.median(values):{fmt}}{unit} [{min(values):{fmt}}-"
            f"{max(values):{fmt}}{unit}]")


def load_average() -> str:
    """The 1-minute load average and the core count, to print beside timings of a shared machine."""
    try:
        return f"load {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
    except OSError:
        return f"{os.cpu_count()} cores"


def geomstats_python() -> Path | None:
    """Python of a private virtual environment with geomstats 2.8.0 and numpy<2.4 (created once).

    geomstats 2.8.0 does not import with NumPy >= 2.4, hence its own environment.
    Returns None (and says why) when it cannot be created, e.g. without network access.
    """
    py = GEOMSTATS_VENV / "bin" / "python"
    check = [str(py), "-c", "import geomstats"]
    if py.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return py
    print(f"creating {GEOMSTATS_VENV} with geomstats==2.8.0 (once)...", flush=True)
    try:
        subprocess.run([sys.executable, "-m", "venv", str(GEOMSTATS_VENV)], check=True)
        subprocess.run([str(py), "-m", "pip", "install", "-q", "geomstats==2.8.0", "numpy<2.4"],
                       check=True, env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    except subprocess.CalledProcessError as exc:
        print(f"geomstats environment unavailable ({exc}); skipping geomstats rows")
        return None
    return py


def print_table(rows: list[dict], columns: list[str]) -> None:
    widths = {c: max(len(c), *(len(str(r.get(c, ""))) for r in rows)) for c in columns}
    print("  ".join(c.ljust(widths[c]) for c in columns))
    for r in rows:
        print("  ".join(str(r.get(c, "")).ljust(widths[c]) for c in columns))
