"""PrivateMDM against epsilon (issue 30): 5-fold CV accuracy of ``PrivateMDM(ball="private")``
next to pyRiemann's non-private ``MDM`` on the same folds, repeated over seeds.

``python -m geodp.experiments.private_mdm [--out DIR] [--seeds 5] [--datasets digits-covariance
emg-covariance]`` writes ``private_mdm.csv`` (data set, epsilon, mean, min, max accuracy, the
MDM accuracy) and ``private_mdm.png`` (accuracy against epsilon, range bands, MDM dashed).
Every fit is charged to its own in-memory ledger (one release per fold).
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

import numpy as np

EPSILONS = (0.1, 0.3, 1.0, 3.0, 10.0)
DATASETS = ("digits-covariance", "emg-covariance")


def curve(name: str, epsilons=EPSILONS, seeds: int = 5, folds: int = 5) -> dict:
    """Accuracies (len(epsilons), seeds) of PrivateMDM and the MDM accuracy on the same folds."""
    from pyriemann.classification import MDM
    from sklearn.model_selection import StratifiedKFold, cross_val_score

    from ..datasets import load
    from ..estimators import PrivateMDM
    from ..privacy import MemoryLedger
    ds = load(name)
    center, radius = ds.public_ball()
    classes = np.unique(ds.labels)
    cv = StratifiedKFold(folds, shuffle=True, random_state=0)
    t = time.perf_counter()
    public = float(cross_val_score(MDM(), ds.points, ds.labels, cv=cv).mean())
    t_public = time.perf_counter() - t
    acc = np.empty((len(epsilons), seeds))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, eps in enumerate(epsilons):
            for s in range(seeds):
                est = PrivateMDM(epsilon=eps, center=center, radius=radius, classes=classes,
                                 ball="private", accountant=MemoryLedger(), random_state=s)
                acc[i, s] = cross_val_score(est, ds.points, ds.labels, cv=cv).mean()
    return {"name": name, "epsilons": list(epsilons), "accuracy": acc, "mdm": public,
            "mdm_seconds": t_public}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default="results")
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = [curve(name, seeds=args.seeds) for name in args.datasets]
    with open(out / "private_mdm.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["dataset", "epsilon", "accuracy_mean", "accuracy_min", "accuracy_max",
                    "mdm_accuracy", "ratio_to_mdm"])
        for r in results:
            for eps, a in zip(r["epsilons"], r["accuracy"]):
                w.writerow([r["name"], eps, f"{a.mean():.4f}", f"{a.min():.4f}", f"{a.max():.4f}",
                            f"{r['mdm']:.4f}", f"{a.mean() / r['mdm']:.3f}"])
                print(f"{r['name']:20s} eps {eps:5g}: {a.mean():.3f} ({a.min():.3f}-{a.max():.3f}) "
                      f"MDM {r['mdm']:.3f} ratio {a.mean() / r['mdm']:.2f}")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(6, 4))
    for k, r in enumerate(results):
        colour = f"C{k}"
        a = r["accuracy"]
        ax.plot(r["epsilons"], a.mean(axis=1), "o-", color=colour, label=f"PrivateMDM, {r['name']}")
        ax.fill_between(r["epsilons"], a.min(axis=1), a.max(axis=1), color=colour, alpha=0.2)
        ax.axhline(r["mdm"], color=colour, ls="--", label=f"pyRiemann MDM, {r['name']}")
    ax.set_xscale("log")
    ax.set_xlabel("epsilon (replace-one, pure DP)")
    ax.set_ylabel(f"5-fold CV accuracy (mean, range over {args.seeds} seeds)")
    ax.set_title("PrivateMDM(ball='private') against epsilon")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "private_mdm.png", dpi=120)
    print(f"wrote {out / 'private_mdm.csv'} and {out / 'private_mdm.png'}")


if __name__ == "__main__":
    main()
