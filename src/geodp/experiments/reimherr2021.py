"""Figure 1 and Supplement Figure 2 of Reimherr, Bharath & Soto (2021).

Data follow the supplement: SPD(2) from the Wishart W(I/2, 2) retained when rho(X, I) < r = 1.5
(A.2.1); S^2 with polar angle uniform on [0, pi/8] and azimuth uniform (A.3.1). The Euclidean
release adds l2-Laplace noise in R^3 (vech on SPD) at the ambient sensitivity 2 r_E / n
(r_E = e^r - 1 on SPD, 2 sin(r/2) on S^2; A.2.2, A.3.2). Utility is the Euclidean distance between
the Fréchet mean and the release (vech / chordal), +- 2 SE, as in the paper's panels 2 and 4.

The intrinsic release on SPD(2) uses Theorem 2's sensitivity 2r/n. On S^2 Supplement B.1 says the
paper's simulations replaced Theorem 2's numerator 2r(2 - h) by an *empirical* bound, the largest
|Log_x1 xi - Log_x1 xj| over a grid of the boundary of B_r (``tangent_diameter``, about 0.806
at r = pi/8, against 2r(2 - h) = 0.954). That bound has no proof: it is used here only to
reproduce the paper's figure, labelled as such; geodp's releases keep Theorem 2. Both are drawn,
and so is tan(2r)/n, the scale of the authors' earlier S^2 script
(otosjc/DifferentialPrivacyManifolds, main_compare_Sphere_Euclid_with_rejection_Sampler.m), each
with fresh noise around the same Fréchet means.

Sample sizes: the paper's text does not list them; the authors' scripts run n = 20-500, which
``SIZES`` spans (with n = 20, 30, 40 for the paper's SPD statement about those sizes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from scipy import optimize

from ..manifolds import SPD, Manifold, Sphere
from ..mechanisms import EuclideanLaplace, RiemannianLaplace, ambient_radius
from ..progress import tracked
from ..statistics import curvature_factor, frechet_mean, frechet_mean_sensitivity
from ._output import pyplot, save_figure, write_csv, write_summary

EPSILON = 1.0
SIZES = (20, 30, 40, 50, 75, 100, 150, 200, 300, 400, 500)
QUICK_SIZES = (20, 40, 100, 500)
SMALL_N, LARGE_N = 50, 300  # "smaller" sample sizes: n <= 50; "larger": n >= 300
PAPER_REDUCTION = {"small": 0.168, "large": 0.12}  # Section 5.2
EMPIRICAL = "paper's empirical bound (B.1), reproduction only"
SERIES_S2 = ("Theorem 2 (proven)", EMPIRICAL, "tan(2r)/n (authors' earlier script)")
EUCLIDEAN = "Euclidean (ambient Laplace)"
SETTING_NOTE = (
    "The text lists no sample sizes; the authors' scripts (otosjc/DifferentialPrivacyManifolds) "
    "run n = 20-500, so n in {sizes} here, and 'smaller' / 'larger' sample sizes are read as "
    "n <= {small} / n >= {large}. Utility: {reps} replicates per n (the paper's 1000). "
    "Sensitivity: {sens} independent neighbouring pairs per n (the authors' sphere script "
    "replaces the last point of one data set 100 times). Epsilon = 1, r = 1.5 (SPD(2)) and pi/8 "
    "(S^2), as in the paper. The S^2 series at B.1's empirical bound reproduces the paper's "
    "figure only: that bound is not proven, and geodp's releases use Theorem 2.")


@dataclass(frozen=True)
class Setting:
    name: str
    manifold: Manifold
    center: np.ndarray
    radius: float

    @property
    def ambient_radius(self) -> float:
        """r_E of suppl. A.2.2 / A.3.2: e^r - 1 on SPD around I, 2 sin(r/2) on the unit sphere."""
        return ambient_radius(self.manifold, self.center, self.radius)


SPD_SETTING = Setting("SPD(2)", SPD(2), np.eye(2), 1.5)
SPHERE_SETTING = Setting("S^2", Sphere(2), np.array([0.0, 0.0, 1.0]), np.pi / 8)


def sample_data(setting: Setting, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
    """Data of the supplement (A.2.1 Wishart with rejection; A.3.1 polar angles)."""
    count = int(np.prod(shape))
    if setting.name == "S^2":
        theta = rng.uniform(0.0, setting.radius, count)
        return _circle(theta, rng.uniform(0.0, 2 * np.pi, count)).reshape(shape + (3,))
    m = setting.manifold
    out = np.empty((0, 2, 2))
    while len(out) < count:
        g = rng.standard_normal((2 * count, 2, 2)) / np.sqrt(2.0)
        w = g @ np.swapaxes(g, 1, 2)
        with np.errstate(divide="ignore"):  # a draw singular in double precision: at infinity
            out = np.concatenate([out, w[m.dist(setting.center, w) < setting.radius]])
    return out[:count].reshape(shape + (2, 2))


def _circle(theta, phi) -> np.ndarray:
    """Points of S^2 at polar angle theta and azimuth phi, shape broadcast(theta, phi) + (3,)."""
    theta, phi = np.broadcast_arrays(np.asarray(theta, float), np.asarray(phi, float))
    return np.stack([np.sin(theta) * np.cos(phi), np.sin(theta) * np.sin(phi), np.cos(theta)], -1)


def tangent_diameter(radius: float, grid: int = 720) -> float:
    """Supplement B.1's empirical bound: max over i, j of |Log_x1(x_i) - Log_x1(x_j)| for x_i on
    the boundary circle of B_radius(north pole) of the unit sphere, x_1 one of them.

    A grid of ``grid`` equally spaced boundary points (B.1), then the best pair refined by
    Nelder-Mead on its two azimuths (so the value does not depend on the grid). Not a proven
    bound: B.1 fixes the footpoint x_1 on the boundary, while Theorem 2 needs every footpoint of
    the ball.
    """
    m = Sphere(2)
    foot = _circle(radius, 0.0)

    def log_at(phi):
        return m.log(foot, _circle(radius, phi))

    phi = np.linspace(0.0, 2 * np.pi, grid, endpoint=False)
    v = log_at(phi)
    d = np.linalg.norm(v[:, None] - v[None], axis=-1)
    i, j = np.unravel_index(np.argmax(d), d.shape)
    res = optimize.minimize(lambda p: -np.linalg.norm(np.subtract(*log_at(p))), [phi[i], phi[j]],
                            method="Nelder-Mead", options={"xatol": 1e-10, "fatol": 1e-14})
    return float(max(d[i, j], -res.fun))


def sphere_scales(radius: float, n: int, empirical: float) -> dict[str, float]:
    """Sensitivity of the S^2 Fréchet mean under each series: Theorem 2, 2r(2-h)/(nh); the
    paper's B.1 bound, empirical / (nh); the authors' earlier script, tan(2r)/n."""
    h = curvature_factor(radius, 1.0)
    return {SERIES_S2[0]: frechet_mean_sensitivity(Sphere(2), radius, n),
            SERIES_S2[1]: empirical / (n * h), SERIES_S2[2]: np.tan(2 * radius) / n}


def sensitivity_panel(setting: Setting, sizes, reps: int, rng: np.random.Generator,
                      empirical: float | None = None) -> list[dict]:
    """rho(mean(D), mean(D')) of every replicate pair of neighbouring data sets (independent
    data sets; the last point replaced), beside Theorem 2 (and B.1's bound on S^2)."""
    m = setting.manifold
    rows = []
    for n in tracked(sizes, f"Figure 1 sensitivity {setting.name}"):
        d = sample_data(setting, (reps, n), rng)
        d2 = d.copy()
        d2[:, -1] = sample_data(setting, (reps,), rng)
        dist = m.dist(frechet_mean(m, d, init=setting.center).mean,
                      frechet_mean(m, d2, init=setting.center).mean)
        bounds = {"theorem2_bound": frechet_mean_sensitivity(m, setting.radius, n)}
        if empirical is not None:
            bounds["empirical_bound"] = sphere_scales(setting.radius, n, empirical)[EMPIRICAL]
        rows += [{"manifold": setting.name, "n": n, "replicate": k, "distance": float(x), **bounds}
                 for k, x in enumerate(dist)]
    return rows


def _error_row(setting: Setting, n: int, series: str, scale: float, err: np.ndarray) -> dict:
    se = err.std(ddof=1) / np.sqrt(len(err))
    return {"manifold": setting.name, "n": n, "series": series, "scale": scale,
            "mean_error": float(err.mean()), "two_se": float(2 * se), "replicates": len(err)}


def utility_panel(setting: Setting, sizes, reps: int, rng: np.random.Generator,
                  empirical: float | None = None) -> list[dict]:
    """Mean Euclidean error +- 2 SE of each intrinsic series and of the ambient release, fresh
    noise for each around the same Fréchet means; the share of ambient releases off the
    manifold (at 2 r_E / n, and at 4 r_E / n, the scale of the authors' SPD script)."""
    m = setting.manifold
    axes = tuple(range(1, len(m.point_shape) + 1))
    rows = []
    for n in tracked(sizes, f"Figure 1 utility {setting.name}"):
        means = frechet_mean(m, sample_data(setting, (reps, n), rng), init=setting.center).mean
        scales = ({SERIES_S2[0]: frechet_mean_sensitivity(m, setting.radius, n)}
                  if empirical is None else sphere_scales(setting.radius, n, empirical))
        for series, delta in scales.items():
            draws = RiemannianLaplace(m, delta / EPSILON).sample(means, rng=rng)
            rows.append(_error_row(setting, n, series, delta / EPSILON,
                                   np.sqrt(np.sum((draws - means) ** 2, axis=axes))))
        euclid = EuclideanLaplace(m, 2 * setting.ambient_radius / n / EPSILON, project=False)
        draws = euclid.sample(means, rng=rng)
        row = _error_row(setting, n, EUCLIDEAN, euclid.scale,
                         np.sqrt(np.sum((draws - means) ** 2, axis=axes)))
        doubled = EuclideanLaplace(m, 2 * euclid.scale, project=False)
        doubled.sample(means, rng=rng)
        rows.append({**row, "off_manifold": euclid.last_info.as_dict()["fraction_off_manifold"],
                     "off_manifold_at_4rE_over_n":
                         doubled.last_info.as_dict()["fraction_off_manifold"]})
    return _with_reductions(rows)


def _with_reductions(rows: list[dict]) -> list[dict]:
    """Add 1 - error / Euclidean error (and 2 SE, delta method) to each intrinsic row."""
    ref = {r["n"]: r for r in rows if r["series"] == EUCLIDEAN}
    for r in rows:
        e = ref[r["n"]]
        ratio = r["mean_error"] / e["mean_error"]
        rel = np.hypot(r["two_se"] / r["mean_error"], e["two_se"] / e["mean_error"])
        r["reduction_vs_euclidean"] = 1 - ratio
        r["reduction_two_se"] = ratio * rel
    return rows


def supplement_figure2(radii) -> list[dict]:
    """2r, Theorem 2's 2r(2 - h) and B.1's empirical bound against the radius (kappa = 1)."""
    return [{"radius": float(r), "two_r": 2 * r,
             "theorem2_numerator": 2 * r * (2 - curvature_factor(r, 1.0)),
             "empirical_bound": tangent_diameter(r)} for r in tracked(radii, "Supplement Figure 2")]


def _uniform(rows: list[dict]) -> list[dict]:
    """Rows with the union of their keys (missing cells empty), for one CSV."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return [{k: r.get(k, "") for k in keys} for r in rows]


def _series(rows: list[dict], name: str, series: str) -> tuple[np.ndarray, ...]:
    sel = [r for r in rows if r["manifold"] == name and r["series"] == series]
    return tuple(np.array([r[k] for r in sel], dtype=float)
                 for k in ("n", "mean_error", "two_se", "reduction_vs_euclidean", "reduction_two_se"))


STYLE = {SERIES_S2[0]: ("tab:blue", "-o"), EMPIRICAL: ("tab:green", "-^"),
         SERIES_S2[2]: ("tab:purple", ":s"), EUCLIDEAN: ("tab:red", "-D")}
LABEL = {SERIES_S2[0]: "intrinsic Laplace, Theorem 2 sensitivity (proven)",
         EMPIRICAL: "intrinsic Laplace, paper's empirical bound\n(Suppl. B.1; reproduction only)",
         SERIES_S2[2]: "intrinsic Laplace, tan(2r)/n\n(authors' earlier script)",
         EUCLIDEAN: "Euclidean Laplace in R^3, 2 r_E / n"}


def _sensitivity_axes(ax, rows: list[dict], name: str, ylabel: str) -> None:
    sel = [r for r in rows if r["manifold"] == name]
    n = np.array([r["n"] for r in sel], dtype=float)
    d = np.array([r["distance"] for r in sel])
    ax.scatter(n, d, s=4, color="tab:blue", alpha=0.35, lw=0, label="each replicate pair")
    sizes = np.unique(n)
    ax.plot(sizes, [d[n == k].mean() for k in sizes], "-", color="navy", lw=1.8,
            label="mean over replicates")
    first = {int(r["n"]): r for r in sel}
    ax.plot(sizes, [first[k]["theorem2_bound"] for k in sizes], "r-", lw=1.8,
            label="Theorem 2 bound")
    if "empirical_bound" in sel[0]:
        ax.plot(sizes, [first[k]["empirical_bound"] for k in sizes], "--", color="tab:green",
                lw=1.8, label="paper's empirical bound (B.1),\nreproduction only")
    ax.set(yscale="log", xlabel="sample size n", ylabel=ylabel,
           title=f"{name}: sensitivity (neighbouring data sets)")
    ax.legend(fontsize=7, loc="upper right")


def _utility_axes(ax, rows: list[dict], name: str, series, ylabel: str) -> None:
    for s in series:
        n, y, band, _, _ = _series(rows, name, s)
        color, style = STYLE[s]
        ax.plot(n, y, style, color=color, ms=3, lw=1.3, label=LABEL[s])
        ax.fill_between(n, y - band, y + band, color=color, alpha=0.25, lw=0)
    ax.set(yscale="log", xlabel="sample size n", ylabel=ylabel,
           title=f"{name}: utility, epsilon = {EPSILON:g} (bands +- 2 SE)")
    ax.legend(fontsize=7)


def plot_figure1(path: Path, sens: list[dict], util: list[dict]) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    fig, axes = plt.subplots(2, 3, figsize=(17, 9.5))
    _sensitivity_axes(axes[0, 0], sens, "SPD(2)", "affine-invariant distance rho(x, x')")
    _utility_axes(axes[0, 1], util, "SPD(2)", (SERIES_S2[0], EUCLIDEAN),
                  "|vech(mean) - vech(release)|")
    ax = axes[0, 2]
    euc = [r for r in util if r["manifold"] == "SPD(2)" and r["series"] == EUCLIDEAN]
    n = [r["n"] for r in euc]
    ax.plot(n, [100 * r["off_manifold"] for r in euc], "r-D", ms=3, label="at 2 r_E / n (paper's text)")
    ax.plot(n, [100 * r["off_manifold_at_4rE_over_n"] for r in euc], "-s", color="darkorange",
            ms=3, label="at 4 r_E / n (authors' SPD script)")
    ax.hlines(25, 20, 40, colors="k", lw=3, label="paper: about 25% at n = 20-40")
    ax.set(xlabel="sample size n", ylabel="Euclidean releases not positive definite (%)",
           title="SPD(2): ambient releases off the manifold")
    ax.legend(fontsize=7)
    _sensitivity_axes(axes[1, 0], sens, "S^2", "geodesic distance rho(x, x') (rad)")
    _utility_axes(axes[1, 1], util, "S^2", (*SERIES_S2, EUCLIDEAN), "chordal distance |mean - release|")
    _reduction_axes(axes[1, 2], util)
    sizes = sorted({r["n"] for r in util})
    labelled = [k for k in sizes if k not in (75, 150, 400)]
    for ax in axes.ravel():
        ax.set_xscale("log")
        ax.set_xticks(sizes, [str(k) if k in labelled else "" for k in sizes])
        ax.minorticks_off()
    return save_figure(fig, path)


def _reduction_axes(ax, util: list[dict]) -> None:
    top = 0.0
    for s in SERIES_S2:
        n, _, _, red, band = _series(util, "S^2", s)
        color, style = STYLE[s]
        ax.plot(n, 100 * red, style, color=color, ms=3)
        ax.fill_between(n, 100 * (red - band), 100 * (red + band), color=color, alpha=0.25, lw=0)
        top = max(top, float(np.max(100 * (red + band))))
    ax.axhline(0, color="grey", lw=0.8)
    ax.hlines(100 * PAPER_REDUCTION["small"], 20, SMALL_N, colors="k", lw=3,
              label=f"paper: {100 * PAPER_REDUCTION['small']:.1f}% at smaller n")
    ax.hlines(100 * PAPER_REDUCTION["large"], LARGE_N, 500, colors="dimgrey", lw=3,
              label=f"paper: {100 * PAPER_REDUCTION['large']:.0f}% at larger n")
    ax.set_ylim(top=top + 12)
    ax.set(xlabel="sample size n", ylabel="error reduction vs Euclidean release (%)",
           title="S^2: intrinsic vs Euclidean (bands +- 2 SE)")
    ax.legend(fontsize=7, loc="upper left", ncol=2,
              title="series coloured as in the utility panel", title_fontsize=7)


def plot_supplement_figure2(path: Path, rows: list[dict]) -> bool:
    plt = pyplot()
    if plt is None:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.8))
    r = np.array([x["radius"] for x in rows])
    ax.plot(r, [x["two_r"] for x in rows], "-", color="tab:blue", label="2r")
    ax.plot(r, [x["theorem2_numerator"] for x in rows], "-", color="tab:red",
            label="2r (2 - h(r, 1))  (Lemma 1, Theorem 2)")
    ax.plot(r, [x["empirical_bound"] for x in rows], "-", color="goldenrod", lw=2,
            label="max |Log_x1 xi - Log_x1 xj| on the boundary (B.1)")
    at = tangent_diameter(np.pi / 8)
    ax.axvline(np.pi / 8, color="grey", ls=":", lw=1)
    ax.plot([np.pi / 8], [at], "o", color="goldenrod", ms=5)
    ax.annotate(f"r = pi/8: {at:.4f}", (np.pi / 8, at), xytext=(0.05, 1.6), fontsize=8,
                arrowprops={"arrowstyle": "->", "color": "grey"})
    ax.set(xlabel="radius r of the ball B_r(m0) on the unit sphere (rad)",
           ylabel="bound on |Log_m x - Log_m y| (rad)",
           title="Supplement Figure 2: tangent-space distances on S^2")
    ax.legend(fontsize=8, loc="upper left")
    return save_figure(fig, path)


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _verdict_reduction(small: tuple[float, float], large: tuple[float, float]) -> str:
    """agree: both within max(2 SE, 2 points) of the paper's 16.8% / 12%; partly: both positive
    and within 6 points; disagree otherwise."""
    gaps = [abs(v - PAPER_REDUCTION[k]) for k, (v, _) in (("small", small), ("large", large))]
    tol = [max(s, 0.02) for _, s in (small, large)]
    if all(g <= t for g, t in zip(gaps, tol)):
        return "agree"
    if min(small[0], large[0]) > 0 and max(gaps) <= 0.06:
        return "partly"
    return "disagree"


def _reduction_at(util: list[dict], series: str, small: bool) -> tuple[float, float]:
    """Mean reduction over the smaller (n <= SMALL_N) or larger (n >= LARGE_N) sizes, 2 SE."""
    sel = [r for r in util if r["manifold"] == "S^2" and r["series"] == series
           and (r["n"] <= SMALL_N if small else r["n"] >= LARGE_N)]
    return (float(np.mean([r["reduction_vs_euclidean"] for r in sel])),
            float(np.sqrt(np.sum([r["reduction_two_se"] ** 2 for r in sel])) / len(sel)))


def first_order_reduction(scale_times_n: float) -> float:
    """1 - E|intrinsic| / E|Euclidean| to first order in the scales: a Laplace on the 2-sphere
    moves Gamma(2, s) (mean 2s), the l2 Laplace in R^3 Gamma(3, s_E), s_E = 2 r_E / n."""
    return 1 - 2 * scale_times_n / (3 * 2 * SPHERE_SETTING.ambient_radius)


def _sphere_findings(util: list[dict], empirical: float) -> list[dict]:
    r = SPHERE_SETTING.radius
    paper = (f"intrinsic release about 15% closer than the Euclidean one: "
             f"{_pct(PAPER_REDUCTION['small'])} at smaller n, {_pct(PAPER_REDUCTION['large'])} "
             f"at larger n")
    why = {
        EMPIRICAL: (f"the paper's setting (B.1): fresh draws at sensitivity {empirical:.4f} / (n h); "
                    "both noise scales are proportional to 1/n, so the reduction is flat in n "
                    "(first-order value {pred}), and fresh exact draws show no 16.8/12 split "
                    "between smaller and larger n (the paper drew by Metropolis, A.5). The bound "
                    "is unproven: a reproduction only, never used by geodp's releases"),
        SERIES_S2[0]: ("not the paper's setting: with the proven sensitivity 2r(2-h)/(nh) "
                       f"(numerator {2 * r * (2 - curvature_factor(r, 1.0)):.4f}, 18% above "
                       "B.1's) the intrinsic release loses its advantage at r = pi/8 (first-order "
                       "value {pred}); geodp's releases use this bound"),
        SERIES_S2[2]: ("tan(2r)/n = 1/n at r = pi/8, the scale of the authors' earlier script "
                       "(otosjc/DifferentialPrivacyManifolds, main_compare_Sphere_Euclid_with_"
                       "rejection_Sampler.m), below both bounds (first-order value {pred})"),
    }
    out = []
    for series in SERIES_S2:
        small, large = _reduction_at(util, series, True), _reduction_at(util, series, False)
        n_scale = [x["scale"] * x["n"] * EPSILON for x in util
                   if x["manifold"] == "S^2" and x["series"] == series][0]
        out.append({"figure": f"Figure 1, panel 4 ({series})", "paper": paper,
                    "geodp": f"{_pct(small[0])} +- {_pct(small[1])} at n <= {SMALL_N}, "
                             f"{_pct(large[0])} +- {_pct(large[1])} at n >= {LARGE_N} (2 SE)",
                    "verdict": _verdict_reduction(small, large),
                    "why": why[series].format(pred=_pct(first_order_reduction(n_scale)))})
    return out


def _sensitivity_finding(sens: list[dict], name: str, panel: int) -> dict:
    sel = [r for r in sens if r["manifold"] == name]
    sizes = sorted({r["n"] for r in sel})
    ratio = [max(r["distance"] for r in sel if r["n"] == n) / next(
        r["theorem2_bound"] for r in sel if r["n"] == n) for n in sizes]
    mean = [np.mean([r["distance"] for r in sel if r["n"] == n]) / next(
        r["theorem2_bound"] for r in sel if r["n"] == n) for n in sizes]
    holds = max(ratio) <= 1
    text = (f"largest of {len(sel) // len(sizes)} replicate pairs per n at "
            f"{min(ratio):.2f}-{max(ratio):.2f} of the bound, mean at {min(mean):.2f}-{max(mean):.2f}")
    if "empirical_bound" in sel[0]:
        over = sum(r["distance"] > r["empirical_bound"] for r in sel)
        text += f"; {over} of {len(sel)} pairs above B.1's empirical bound"
    return {"figure": f"Figure 1, panel {panel} ({name} sensitivity)",
            "paper": "every rho(mean, mean') below Theorem 2's bound; the empirical sensitivity "
                     "'quite close' to it (Section 6)",
            "geodp": text, "verdict": "agree" if holds else "disagree",
            "why": ("the bound holds for every pair; random pairs (the paper's design) reach only "
                    "part of it: they seldom put the replaced points at opposite ends of the "
                    "ball, where the supremum lies" if holds else
                    "a replicate pair exceeds the proven bound")}


def _spd_utility_finding(util: list[dict]) -> dict:
    sel = [r for r in util if r["manifold"] == "SPD(2)"]
    red = [r["reduction_vs_euclidean"] for r in sel if r["series"] == SERIES_S2[0]]
    small = [r for r in sel if r["series"] == EUCLIDEAN and 20 <= r["n"] <= 40]
    off2 = float(np.mean([r["off_manifold"] for r in small]))
    off4 = float(np.mean([r["off_manifold_at_4rE_over_n"] for r in small]))
    better = min(red) > 0
    close = abs(off2 - 0.25) <= 0.05
    between = min(off2, off4) <= 0.25 <= max(off2, off4)
    return {"figure": "Figure 1, panel 2 (SPD(2) utility)",
            "paper": "intrinsic release closer than the Euclidean one at every n; about 25% of "
                     "Euclidean releases not positive definite at n = 20-40",
            "geodp": f"intrinsic error {_pct(min(red))}-{_pct(max(red))} lower; not positive "
                     f"definite at n = 20-40: {_pct(off2)} at 2 r_E/n, {_pct(off4)} at 4 r_E/n",
            "verdict": "agree" if better and close else ("partly" if better else "disagree"),
            "why": "the utility gain reproduces. The off-manifold share depends on the ambient "
                   "scale: the text's 2 r_E / n gives the first figure, the authors' SPD script "
                   "(main_compare_SPDM_SM.m) uses 4 r / n for both releases, with r the data's "
                   "largest radius, and gives about the second"
                   + ("; the paper's 25% lies between" if between else "")}


def _supplement_finding(supp: list[dict], empirical: float) -> dict:
    inner = [x for x in supp if x["radius"] > 0.05]
    holds = sum(x["two_r"] < x["empirical_bound"] < x["theorem2_numerator"] for x in inner)
    r = SPHERE_SETTING.radius
    return {"figure": "Supplement Figure 2",
            "paper": "2r < empirical bound < 2r(2 - h) for every radius; the empirical bound "
                     "used in the sphere simulations",
            "geodp": f"ordering holds at {holds} of {len(inner)} radii in (0.05, pi/4]; at "
                     f"r = pi/8: 2r = {2 * r:.4f} < {empirical:.4f} < "
                     f"{2 * r * (2 - curvature_factor(r, 1.0)):.4f}",
            "verdict": "agree" if holds == len(inner) else "partly",
            "why": "B.1's grid maximum, refined to machine precision; the curvature inflation is "
                   "smaller than Lemma 1's, as the paper says (below r = 0.05 the three agree to "
                   "plotting accuracy)"}


def run(out: Path, *, reps: int = 1000, seed: int = 0, quick: bool = False) -> dict:
    """Regenerate Figure 1 (fig1.png) and Supplement Figure 2 (figS2.png) with their CSVs and
    summary.md in ``out``. ``reps`` replicates per n for utility, reps/10 (at least 20) for the
    sensitivity panels; ``quick`` runs 4 sample sizes and at most 200 replicates (a smoke test)."""
    rng = np.random.default_rng(seed)
    sizes = QUICK_SIZES if quick else SIZES
    reps = min(reps, 200) if quick else reps
    sens_reps = max(20, reps // 10)
    empirical = tangent_diameter(SPHERE_SETTING.radius)
    sens = (sensitivity_panel(SPD_SETTING, sizes, sens_reps, rng)
            + sensitivity_panel(SPHERE_SETTING, sizes, sens_reps, rng, empirical))
    util = (utility_panel(SPD_SETTING, sizes, reps, rng)
            + utility_panel(SPHERE_SETTING, sizes, reps, rng, empirical))
    supp = supplement_figure2(np.linspace(0.01, np.pi / 4, 12 if quick else 40))
    out = Path(out)
    write_csv(out / "fig1.csv", _uniform(util))
    write_csv(out / "fig1_sensitivity.csv", _uniform(sens))
    write_csv(out / "figS2.csv", supp)
    png = plot_figure1(out / "fig1.png", sens, util)
    png = plot_supplement_figure2(out / "figS2.png", supp) and png
    findings = [_sensitivity_finding(sens, "SPD(2)", 1), _spd_utility_finding(util),
                _sensitivity_finding(sens, "S^2", 3), *_sphere_findings(util, empirical),
                _supplement_finding(supp, empirical)]
    title = "Reimherr, Bharath & Soto (2021): Figure 1 and Supplement Figure 2"
    if quick:
        title += f" (quick mode: n in {sizes}, {reps} replicates; not the paper's counts)"
    summary = write_summary(out, title, findings, {"Setting": SETTING_NOTE.format(
        sizes=", ".join(map(str, sizes)), small=SMALL_N, large=LARGE_N, reps=reps, sens=sens_reps)})
    return {"output": str(out), "png": png, "summary": str(summary), "quick": quick,
            "replicates": reps, "sensitivity_replicates": sens_reps,
            "empirical_bound_pi_over_8": empirical, "findings": findings}
