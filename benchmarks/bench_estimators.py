"""PrivateMDM fit time against pyRiemann's MDM fit on the shipped digits covariance descriptors.

Both fit 1797 SPD(5) matrices in 10 classes (affine-invariant metric). The private fit adds the
released class counts and one Riemannian Laplace draw per class (epsilon = 100, private class
sizes) to the class means; the two are timed alternately, ``ROUNDS`` rounds of best-of-3 each
(``best_time``), and the script prints each round's times and ratio, then the median and range.
Usage: ``python benchmarks/bench_estimators.py [ROUNDS]``.
"""

from __future__ import annotations

import statistics
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import best_time  # noqa: E402

from geodp.datasets import load  # noqa: E402
from geodp.estimators import PrivateMDM  # noqa: E402

ROUNDS = 5


def main(rounds: int = ROUNDS) -> None:
    from pyriemann.classification import MDM
    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    private = PrivateMDM(epsilon=100.0, center=center, radius=radius, classes=range(10), random_state=0)
    public = MDM()
    ratios = []
    print(f"{'round':>5} {'PrivateMDM fit (ms)':>20} {'pyRiemann MDM fit (ms)':>23} {'ratio':>7}")
    for r in range(rounds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_private, _ = best_time(lambda: private.fit(ds.points, ds.labels))
            t_public, _ = best_time(lambda: public.fit(ds.points, ds.labels))
        ratios.append(t_private / t_public)
        print(f"{r:>5} {1e3 * t_private:>20.1f} {1e3 * t_public:>23.1f} {ratios[-1]:>7.2f}")
    print(f"ratio PrivateMDM / MDM: median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f} over {rounds} rounds")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
