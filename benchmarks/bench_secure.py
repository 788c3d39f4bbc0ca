"""Secure discrete Gaussian noise (``secure=True``): time per draw against a peer and the floor.

geodp's sampler (``sample_discrete_gaussian``, Canonne, Kamath & Steinke 2020, Algorithms 1-3 in
integer arithmetic from ``secrets``) is timed in this run beside:

- the peer: diffprivlib's ``GaussianDiscrete`` (the same algorithm, IBM), at the same sigma^2,
  when it imports (``pip install diffprivlib 'scikit-learn<1.6'``; it fails on newer
  scikit-learn);
- the floor: one 64-bit draw from the operating system's CSPRNG (``secrets.randbits``), the
  randomness a draw cannot do without, and numpy's (insecure) continuous normal for scale;
- one secure DP-RGD step's noise on SPD(5) (d = 15) against the continuous ``TangentGaussian``.

Run it several times on a shared machine: the ratios move with the load.
"""

from __future__ import annotations

import secrets
import sys
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time, print_table  # noqa: E402

from geodp.manifolds import SPD  # noqa: E402
from geodp.mechanisms import SecureTangentGaussian, TangentGaussian  # noqa: E402
from geodp.mechanisms.discrete_gaussian import sample_discrete_gaussian  # noqa: E402

DRAWS = 2000


def per_draw(fn, draws: int = DRAWS) -> float:
    """Seconds per draw of ``fn(draws)`` (best of several calls)."""
    return best_time(lambda: fn(draws))[0] / draws


def peer(sigma2: Fraction):
    """diffprivlib's discrete Gaussian at scale sigma (None when it does not import)."""
    try:
        from diffprivlib.mechanisms import GaussianDiscrete
    except Exception:  # noqa: BLE001 - any import failure means no peer in this environment
        return None
    mech = GaussianDiscrete(epsilon=0.5, delta=1e-5, sensitivity=1)
    mech._scale = float(sigma2) ** 0.5
    return lambda k: [mech.randomise(0) for _ in range(k)]


def main() -> None:
    floor = per_draw(lambda k: [secrets.randbits(64) for _ in range(k)])
    normal = per_draw(lambda k: np.random.default_rng(0).standard_normal(k))
    rows = []
    for sigma2 in (Fraction(49), Fraction(2**20)):
        ours = per_draw(lambda k: sample_discrete_gaussian(sigma2, k))
        theirs = peer(sigma2)
        t_peer = per_draw(theirs) if theirs is not None else float("nan")
        rows.append({"sigma^2": f"{float(sigma2):g}", "geodp us": f"{1e6 * ours:.1f}",
                     "diffprivlib us": f"{1e6 * t_peer:.1f}", "peer / geodp": f"{t_peer / ours:.2f}",
                     "geodp / CSPRNG floor": f"{ours / floor:.1f}",
                     "geodp / numpy normal": f"{ours / normal:.0f}"})
    print_table(rows, list(rows[0]))
    m, w = SPD(5), np.eye(5)
    g = 0.1 * (m.random_ball(w, 1.0, None, 0) - w)
    secure, plain = SecureTangentGaussian(m, 1.0), TangentGaussian(m, 1.0)
    t_secure = best_time(lambda: secure.sample_around(w, g))[0]
    t_plain = best_time(lambda: g + plain.sample(w, rng=0))[0]
    print(f"\none DP-RGD step's noise on SPD(5): secure {1e6 * t_secure:.0f} us, continuous "
          f"{1e6 * t_plain:.0f} us ({t_secure / t_plain:.0f}x); CSPRNG floor for d = 15 draws "
          f"{1e6 * 15 * floor:.1f} us")


if __name__ == "__main__":
    t0 = time.perf_counter()
    main()
    print(f"\n({time.perf_counter() - t0:.1f} s)")
