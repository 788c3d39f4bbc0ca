"""PrivateMDM fit time against pyRiemann's MDM fit on the shipped digits covariance descriptors.

Both fit 1797 SPD(5) matrices in 10 classes (affine-invariant metric). The private fit
(``ball="public"``, the route that samples the Riemannian Laplace) adds the
released class counts and one Riemannian Laplace draw per class (epsilon = 100, private class
sizes) to the class means; the two are timed alternately, ``ROUNDS`` rounds of best-of-3 each
(``best_time``), and the script prints each round's times and ratio, then the median and range.
It then times ``PrivateMDM(ball="private")`` (private ball and tangent class means, issue 30) the
same way, and prints its 5-fold CV accuracy gap to pyRiemann's MDM (same folds, 3 seeds) at each
epsilon of ``EPSILONS``.
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
EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)


def main(rounds: int = ROUNDS) -> None:
    from pyriemann.classification import MDM
    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    private = PrivateMDM(epsilon=100.0, center=center, radius=radius, classes=range(10),
                         ball="public", random_state=0)
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
    private_ball_route(ds, center, radius, public, rounds)


def private_ball_route(ds, center, radius, public, rounds: int) -> None:
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    from geodp.privacy import MemoryLedger
    ratios = []
    for _ in range(rounds):
        est = PrivateMDM(epsilon=10.0, center=center, radius=radius, classes=range(10),
                         ball="private", accountant=MemoryLedger(), random_state=0)
        t_private, _ = best_time(lambda: est.fit(ds.points, ds.labels))
        t_public, _ = best_time(lambda: public.fit(ds.points, ds.labels))
        ratios.append(t_private / t_public)
    print(f"ball='private': fit time ratio to MDM median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f} over {rounds} rounds")
    cv = StratifiedKFold(5, shuffle=True, random_state=0)
    mdm = cross_val_score(public, ds.points, ds.labels, cv=cv).mean()
    print(f"{'epsilon':>8} {'PrivateMDM acc':>15} {'MDM acc':>8} {'gap':>7}")
    for eps in EPSILONS:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            acc = statistics.mean(cross_val_score(
                PrivateMDM(epsilon=eps, center=center, radius=radius, classes=range(10),
                           ball="private", accountant=MemoryLedger(), random_state=s),
                ds.points, ds.labels, cv=cv).mean() for s in range(3))
        print(f"{eps:>8g} {acc:>15.3f} {mdm:>8.3f} {acc - mdm:>+7.3f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else ROUNDS)
