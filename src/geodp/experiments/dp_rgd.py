"""Figure 1 of Han, Mishra, Jawanpuria & Gao (DP Riemannian optimisation), and its sound version.

Figure 1a, leading eigenvector (Section 5.1): Z = U Sigma V with U (n x 50) and V (50 x 50)
random with orthonormal columns, Sigma = diag(1, 1 - 1.1 nu, 1 - 1.2 nu, 1 - 1.3 nu, 1 - 1.4 nu,
|x_1|/50, |x_2|/50, ...) (nu = 1e-3, x_k standard normal); epsilon = 0.1, delta = 1e-3; L0 the
largest |z_i|^2; T = log(n^2 eps^2 / ((d+1) L0^2 log(1/delta))) and
sigma^2 = T log(1/delta) L0^2 / (n^2 eps^2) (Theorem 4 with c = 1); step 0.2. DP-RGD adds
N_w(0, sigma^2) to the Riemannian gradient, DP-PGD N(0, sigma^2 I) to the Euclidean gradient and
projects. Excess risk F(w) - F(w*) = lambda_1 - w^T A w, A = Z^T Z / n.

Figure 1b, Fréchet mean on SPD(2) (Section 5.2): Wishart W(I/2, 2) data kept within distance
1/2 of I (diameter D = 1); T = n steps of size 0.01, sigma^2 = T log(1/delta) D^2 / (n^2 eps^2);
DP-FM is the Riemannian Laplace at the mean with scale (2 D / n) / eps. Excess risk
F(W) - F(W*) with F(W) = (1/n) sum_i rho(W, X_i)^2.

The paper's procedure (c = 1, no clipping, L0 read off the data) carries no proven guarantee.
Beside it, the sound release of geodp at the same budget: the clipping norm set to the paper's
L0 (so the guarantee holds whatever the data) and sigma from the accountant (``dp_rsgd``), same
T and step; and geodp's defaults. Real data: PCA of the digit histograms (unit vectors in R^17,
norm bound 1) and the Fréchet mean of the covariance descriptors (SPD(5), their public ball).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .. import datasets
from ..learn import dp_rsgd, private_frechet_mean, private_pca
from ..learn.pca import pca_gradients
from ..manifolds import SPD, Sphere
from ..mechanisms import NotNormalisableError, RiemannianLaplace
from ..mechanisms.tangent_gaussian import TangentGaussian
from ..statistics import frechet_mean
from ..progress import tracked
from ._output import pyplot, save_figure, write_csv
from .baselines import dp_pgd

EPSILON, DELTA = 0.1, 1e-3
PCA_DIM, EIGENGAP, PCA_STEP = 50, 1e-3, 0.2
PCA_SIZES = (2000, 5000, 10_000, 20_000, 50_000)
SPD_SIZES = (10, 20, 50, 100, 200)
SPD_STEP, SPD_DIAMETER = 0.01, 1.0


def paper_rgd(manifold, grads, data, sigma, steps, lr, init, rng):
    """Algorithm 1 as the paper runs it: full batch, mean gradient plus N_w(0, sigma^2)."""
    noise = TangentGaussian(manifold, sigma)
    w = init
    for _ in range(steps):
        w = manifold.exp(w, -lr * (np.mean(grads(w, data), axis=0) + noise.sample(w, rng=rng)))
    return w


def pca_data(n: int, rng: np.random.Generator) -> np.ndarray:
    d1 = PCA_DIM
    head = [1.0] + [1.0 - k * EIGENGAP for k in (1.1, 1.2, 1.3, 1.4)]
    sigma = np.concatenate([head, np.abs(rng.standard_normal(d1 - 5)) / d1])
    u, _ = np.linalg.qr(rng.standard_normal((n, d1)))
    v, _ = np.linalg.qr(rng.standard_normal((d1, d1)))
    return (u * sigma) @ v


def pca_panel(reps: int, rng: np.random.Generator) -> list[dict]:
    sphere = Sphere(PCA_DIM - 1)
    rows = []
    for n in tracked(PCA_SIZES, "Figure 1a (PCA)"):
        risk = {"DP-RGD (paper)": [], "DP-PGD (paper)": [], "DP-RGD (sound, clip = L0)": []}
        for _ in range(reps):
            z = pca_data(n, rng)
            a = z.T @ z / n
            lam, vecs = np.linalg.eigh(a)
            l0 = float(np.max(np.sum(z * z, axis=1)))
            steps = max(1, int(math.log(n**2 * EPSILON**2 / (PCA_DIM * l0**2 * math.log(1 / DELTA)))))
            sigma = math.sqrt(steps * math.log(1 / DELTA)) * l0 / (n * EPSILON)
            init = sphere.project(rng.standard_normal(PCA_DIM))

            def excess(w):
                return float(lam[-1] - w @ a @ w)

            risk["DP-RGD (paper)"].append(excess(paper_rgd(sphere, pca_gradients, z, sigma, steps,
                                                           PCA_STEP, init, rng)))
            risk["DP-PGD (paper)"].append(excess(dp_pgd(
                sphere, lambda w, b: -2.0 * (b @ w)[:, None] * b, z, sigma, steps, PCA_STEP, init, rng)))
            sound = dp_rsgd(sphere, pca_gradients, z, EPSILON, DELTA, steps, lr=PCA_STEP, init=init,
                            clip=l0, rng=rng, progress=False)
            risk["DP-RGD (sound, clip = L0)"].append(excess(sound.value))
        for method, values in risk.items():
            v = np.array(values)
            rows.append({"panel": "PCA", "n": n, "method": method, "excess_risk": v.mean(),
                         "se": v.std(ddof=1) / math.sqrt(reps) if reps > 1 else 0.0,
                         "steps": steps})
    return rows


def spd_data(n: int, rng: np.random.Generator) -> np.ndarray:
    m = SPD(2)
    out = np.empty((0, 2, 2))
    while len(out) < n:
        g = rng.standard_normal((4 * n, 2, 2)) / math.sqrt(2.0)
        w = g @ np.swapaxes(g, 1, 2)
        out = np.concatenate([out, w[m.dist(np.eye(2), w) <= SPD_DIAMETER / 2]])
    return out[:n]


def spd_panel(reps: int, rng: np.random.Generator) -> list[dict]:
    m = SPD(2)
    rows = []

    def grads(w, batch):
        return -2.0 * m.log(w[None], batch)

    for n in tracked(SPD_SIZES, "Figure 1b (SPD(2))"):
        risk = {"DP-RGD (paper)": [], "DP-FM (Laplace, paper)": [], "DP-RGD (sound, clip = 2D)": [],
                "DP-RGD (geodp defaults)": []}
        laplace_feasible = True
        for _ in range(reps):
            x = spd_data(n, rng)
            opt = frechet_mean(m, x, tol=1e-13, max_iter=10_000).mean

            def excess(w):
                return float(np.mean(m.dist(w, x) ** 2) - np.mean(m.dist(opt, x) ** 2))

            sigma = math.sqrt(n * math.log(1 / DELTA)) * SPD_DIAMETER / (n * EPSILON)
            risk["DP-RGD (paper)"].append(excess(paper_rgd(m, grads, x, sigma, n, SPD_STEP,
                                                           np.eye(2), rng)))
            try:
                fm = RiemannianLaplace(m, 2 * SPD_DIAMETER / n / EPSILON, allow_approximate=True,
                                       chain_ball=(np.eye(2), SPD_DIAMETER)).sample(opt, rng=rng)
                risk["DP-FM (Laplace, paper)"].append(excess(fm))
            except NotNormalisableError:
                laplace_feasible = False
            sound = dp_rsgd(m, grads, x, EPSILON, DELTA, n, lr=SPD_STEP, init=np.eye(2),
                            clip=2 * SPD_DIAMETER, rng=rng, progress=False)
            risk["DP-RGD (sound, clip = 2D)"].append(excess(sound.value))
            default = private_frechet_mean(m, x, EPSILON, np.eye(2), SPD_DIAMETER / 2,
                                           mechanism="dp-rgd", delta=DELTA, rng=rng)
            risk["DP-RGD (geodp defaults)"].append(excess(default.value))
        for method, values in risk.items():
            v = np.array(values) if values else np.array([np.nan])
            rows.append({"panel": "SPD(2) mean", "n": n, "method": method,
                         "excess_risk": float(np.mean(v)),
                         "se": float(v.std(ddof=1) / math.sqrt(len(v))) if len(v) > 1 else 0.0,
                         "note": "" if method != "DP-FM (Laplace, paper)" or laplace_feasible else
                         "Riemannian Laplace not normalisable at this scale: the paper's target "
                         "was improper"})
    return rows


def real_data(reps: int, rng: np.random.Generator) -> list[dict]:
    rows = []
    hist, sphere = datasets.load("digits-histograms")  # unit vectors of R^17: S^16 is their sphere
    lam, vecs = np.linalg.eigh(hist.T @ hist / len(hist))
    for eps in (0.1, 1.0):
        cos = [abs(private_pca(sphere, hist, eps, 1e-5, norm_bound=1.0, steps=50, lr=0.5, rng=rng,
                               progress=False).value @ vecs[:, -1]) for _ in range(reps)]
        rows.append({"data": "digit histograms (n = 1797, R^17)", "task": "PCA, DP-RGD",
                     "epsilon": eps, "delta": 1e-5, "metric": "|cos| with the top eigenvector",
                     "value": float(np.mean(cos))})
    ds = datasets.load("digits-covariance")
    center, radius = ds.public_ball()
    mean = frechet_mean(ds.manifold, ds.points).mean
    for eps in (0.1, 1.0):
        for mech, kw in (("dp-rgd", {"delta": 1e-5}), ("laplace", {})):
            try:
                errs = [float(ds.manifold.dist(private_frechet_mean(
                    ds.manifold, ds.points, eps, center, radius, mechanism=mech, rng=rng, **kw).value,
                    mean)) for _ in range(reps)]
                value = float(np.mean(errs))
            except NotNormalisableError:
                value = float("nan")
            rows.append({"data": "digit covariance descriptors (n = 1797, SPD(5))",
                         "task": f"Fréchet mean, {mech}", "epsilon": eps,
                         "delta": kw.get("delta", 0.0), "metric": "distance to the mean",
                         "value": value})
    return rows


def plot(path: Path, pca: list[dict], spd: list[dict]) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.2))
    for ax, rows, title in ((axes[0], pca, "(a) leading eigenvector, d + 1 = 50"),
                            (axes[1], spd, "(b) Fréchet mean on SPD(2)")):
        for method in dict.fromkeys(r["method"] for r in rows):
            sel = [r for r in rows if r["method"] == method]
            ax.errorbar([r["n"] for r in sel], [r["excess_risk"] for r in sel],
                        [2 * r["se"] for r in sel], marker="o", ms=3, capsize=2, label=method)
        ax.set(xscale="log", yscale="log", xlabel="n", ylabel="expected excess risk",
               title=f"{title}, eps = 0.1, delta = 1e-3")
        ax.xaxis.set_minor_formatter(plt.NullFormatter())
        ax.legend(fontsize=7)
    return save_figure(fig, path)


def run(out: Path, reps: int = 20, seed: int = 0) -> dict:
    """Regenerate Figure 1 (both panels) and the real-data rows; PNG + CSV in ``out``."""
    if reps < 1:
        raise ValueError(f"reps must be a positive integer, got {reps}")
    rng = np.random.default_rng(seed)
    pca, spd = pca_panel(reps, rng), spd_panel(reps, rng)
    real = real_data(max(1, reps // 4), rng)
    out = Path(out)
    write_csv(out / "figure1a_pca.csv", pca)
    write_csv(out / "figure1b_spd_mean.csv", spd)
    write_csv(out / "real_data.csv", real)
    plotted = plot(out / "figure1.png", pca, spd)

    def risk(rows, method, n):
        return next(r["excess_risk"] for r in rows if r["method"] == method and r["n"] == n)

    small = SPD_SIZES[0]
    return {
        "output": str(out), "png": plotted, "replicates": reps,
        "claims": [
            {"claim": "Figure 1a: DP-RGD has lower excess risk than DP-PGD",
             "measured": {n: {"DP-RGD": risk(pca, "DP-RGD (paper)", n),
                              "DP-PGD": risk(pca, "DP-PGD (paper)", n)} for n in PCA_SIZES}},
            {"claim": "Figure 1b: DP-RGD better than DP-FM, particularly at small n",
             "measured": {n: {"DP-RGD": risk(spd, "DP-RGD (paper)", n),
                              "DP-FM": risk(spd, "DP-FM (Laplace, paper)", n)} for n in SPD_SIZES},
             "note": f"at n = {small} the Laplace scale 2D/(n eps) exceeds SPD(2)'s normalisability "
                     f"limit, so DP-FM has no valid release there (null)"},
            {"claim": "sound release (geodp accountant, clipping) at the same budget",
             "measured": {"PCA": {n: risk(pca, "DP-RGD (sound, clip = L0)", n) for n in PCA_SIZES},
                          "SPD(2)": {n: risk(spd, "DP-RGD (sound, clip = 2D)", n) for n in SPD_SIZES}}},
        ],
        "real_data": real,
        "note": ("The paper's sigma takes c = 1 and no clipping, with L0 read off the data: no "
                 "proof covers it. The sound rows clip at the same L0 (a public choice) and take "
                 "sigma from the accountant for the same (epsilon, delta) and steps."),
    }
