"""
An empirical audit: lower bounds against the claimed epsilon
============================================================

:func:`geodp.audit.audit_mechanism` draws a mechanism's output on two neighbouring inputs and
turns the frequencies of threshold events into lower bounds on epsilon that hold with 95%
confidence (Clopper-Pearson intervals, Bonferroni over every event tried). A lower bound above a
claim refutes the claim; one below it is consistent with it.

Here: the Riemannian Laplace mechanism of a Fréchet mean on S², in its worst case (two
footpoints at the sensitivity Delta apart, :func:`geodp.audit.neighbouring_footpoints`), at the
scale Delta / epsilon its theorem prescribes, and a planted bug: the same mechanism with half
that scale, which really spends 2 epsilon. The audit must stay below the claim for the first and
catch the second.
"""

# %%
import matplotlib.pyplot as plt
import numpy as np

from geodp.audit import audit_mechanism, neighbouring_footpoints, projection_statistic
from geodp.manifolds import Sphere
from geodp.mechanisms import RiemannianLaplace

m = Sphere(2)
DELTA = 0.2                       # the sensitivity: distance between the neighbours' means
a, b, direction = neighbouring_footpoints(m, m.origin(), DELTA)
statistic = projection_statistic(m, m.origin(), direction)
N = 20000                         # draws on each neighbour


def audited(epsilon, scale_factor, seed):
    mech = RiemannianLaplace(m, scale_factor * DELTA / epsilon)
    return audit_mechanism(lambda n, rng: mech.sample(a, n, rng),
                           lambda n, rng: mech.sample(b, n, rng),
                           statistic, N, rng=seed).epsilon_lower


CLAIMS = [0.25, 0.5, 1.0, 2.0, 4.0]
SEEDS = range(3)
sound = np.array([[audited(eps, 1.0, s) for s in SEEDS] for eps in CLAIMS])
buggy = np.array([[audited(eps, 0.5, s) for s in SEEDS] for eps in CLAIMS])

# %%
fig, ax = plt.subplots(figsize=(7, 5), constrained_layout=True)
ax.plot(CLAIMS, CLAIMS, "k--", label="claimed ε (a valid audit stays below)")
for values, label, marker in [(sound, "Riemannian Laplace, scale Δ/ε", "o"),
                              (buggy, "planted bug: scale Δ/(2ε)", "s")]:
    line, = ax.plot(CLAIMS, values.mean(axis=1), marker=marker, label=label)
    ax.fill_between(CLAIMS, values.min(axis=1), values.max(axis=1), alpha=0.25,
                    color=line.get_color())
ax.set_xlabel("claimed ε")
ax.set_ylabel("audited lower bound on ε (95% confidence)")
ax.set_title(f"Audit of a private mean on S² ({N} draws per neighbour, {len(SEEDS)} audits; "
             "band: range)", fontsize=10)
ax.grid(True, alpha=0.3)
ax.legend()
plt.show()
for eps, s, bug in zip(CLAIMS, sound.max(axis=1), buggy.max(axis=1)):
    verdict = "caught" if bug > eps else "not caught"
    print(f"claim {eps:g}: sound audit <= {s:.2f}; planted bug audits at {bug:.2f} ({verdict})")
