"""
A budget ledger across several releases
=======================================

A :class:`geodp.privacy.BudgetLedger` is an SQLite record of the privacy budget spent on one data
set. Every release reserves its guarantee before it runs and is refused
(``BudgetExceededError``) when the tight composition of everything spent, the new release
included, would exceed the total. Here four kinds of releases on ``digits-covariance`` share a
total of (epsilon, delta) = (4, 1e-6): private means under pure DP, Gaussian DP and
(epsilon, delta)-DP. We plot the budget spent after each release, as the ledger states it (tight
composition over RDP, GDP and privacy loss distributions) and by basic composition (epsilons and
deltas added).
"""

# %%
import os
import tempfile

import matplotlib.pyplot as plt
import numpy as np

from geodp import private_frechet_mean
from geodp.datasets import load
from geodp.privacy import BudgetExceededError, BudgetLedger

ds = load("digits-covariance")
center, radius = ds.public_ball()
ledger = BudgetLedger(os.path.join(tempfile.mkdtemp(), "digits.db"), total_epsilon=4.0,
                      total_delta=1e-6)

plan = [("Laplace, ε = 0.5", dict(epsilon=0.5)),
        ("wrapped Gaussian, μ = 0.3", dict(mechanism="wrapped-gaussian", mu=0.3)),
        ("wrapped Gaussian, μ = 0.3", dict(mechanism="wrapped-gaussian", mu=0.3)),
        ("DP-RGD, (0.5, 1e-7)", dict(mechanism="dp-rgd", epsilon=0.5, delta=1e-7)),
        ("wrapped Gaussian, μ = 0.3", dict(mechanism="wrapped-gaussian", mu=0.3)),
        ("Laplace, ε = 1", dict(epsilon=1.0)),
        ("Laplace, ε = 1", dict(epsilon=1.0)),
        ("Laplace, ε = 1", dict(epsilon=1.0))]
labels, tight, basic, refused = [], [], [], None
for i, (label, kwargs) in enumerate(plan):
    try:
        private_frechet_mean(ds.manifold, ds.points, center=center, radius=radius,
                             ledger=ledger, rng=i, **kwargs)
    except BudgetExceededError as refusal:
        print(f"release {i + 1} ({label}) refused:", str(refusal)[:120], "...")
        refused = f"release {i + 1} ({label}) refused:\nthe total would exceed ε = 4"
        break
    labels.append(f"{i + 1}. {label}")
    tight.append(ledger.spent()[0])
    basic.append(ledger.spent_basic()[0])
print("spent (epsilon, delta):", tuple(round(v, 3) if v > 1e-3 else v for v in ledger.spent()))
for entry in ledger.history():
    print(entry["label"] or "release", "|", entry["guarantee"])

# %%
fig, ax = plt.subplots(figsize=(9, 4.8), constrained_layout=True)
steps = np.arange(1, len(labels) + 1)
ax.step(steps, basic, where="post", marker="s", label="basic composition (ε's added)")
ax.step(steps, tight, where="post", marker="o", label="ledger: tight composition")
ax.axhline(4.0, color="C3", linestyle="--", label="total budget ε = 4 (δ = 1e-6)")
if refused:
    ax.annotate(refused, xy=(steps[-1], tight[-1]), xytext=(steps[-1] - 3.4, 4.5),
                arrowprops={"arrowstyle": "->", "color": "C3"}, color="C3", fontsize=9)
ax.set_xticks(steps, labels, rotation=30, ha="right", fontsize=8)
ax.set_xlabel("release, in order")
ax.set_ylabel("ε spent at δ = 1e-6 (cumulative)")
ax.set_title("Budget spent on digits-covariance after each release")
ax.grid(True, alpha=0.3)
ax.legend(loc="upper left")
plt.show()
