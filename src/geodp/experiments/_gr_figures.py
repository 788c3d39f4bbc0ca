"""The figures of the geodesic-regression reproduction (``geodesic_regression.run``): matplotlib
on the Agg backend, one PNG per figure of Kulkarni & Soto, each beside a CSV of its numbers."""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import numpy as np

from ._output import pyplot, save_figure

COLORS = ("C0", "C1", "C2", "C3", "C4")
YLABEL = "log of average MSE\n(MSE in squared geodesic distance)"


def _band(ax, xs, rows, key, color):
    """+-2 standard errors of the log average MSE (``se_`` column), shaded."""
    mid = np.array([r[key] for r in rows])
    se = np.array([r.get(f"se_{key}", 0.0) for r in rows])
    ax.fill_between(xs, mid - 2 * se, mid + 2 * se, color=color, alpha=0.15, lw=0)


def _budget_axis(ax, rows, allocation: str, sound: list[dict] | None, uniform: bool) -> None:
    sizes = list(dict.fromkeys(r["n"] for r in rows))
    for color, n in zip(COLORS, sizes):
        sel = [r for r in rows if r["n"] == n and r["allocation"] == allocation]
        xs = np.arange(len(sel))
        ax.plot(xs, [r["log_avg_mse_paper"] for r in sel], "-o", color=color, ms=4,
                label=f"n = {n}: paper's sampler (from the fit)")
        _band(ax, xs, sel, "log_avg_mse_paper", color)
        if uniform:
            ax.plot(xs, [r["log_avg_mse_uniform_start"] for r in sel], ":", marker="x", color=color,
                    ms=4, label=f"n = {n}: same chains from uniform starts")
        ax.axhline(sel[0]["log_mse_nonprivate"], color=color, ls="--", lw=0.9,
                   label=f"n = {n}: non-private log energy")
    if sound and allocation == "equal":
        ax.plot(np.arange(len(sound)), [r["log_avg_mse_sound_joint"] for r in sound], "s",
                color="k", mfc="none", ms=6,
                label=f"n = {sound[0]['n']}: geodp's sound joint release (total budget)")
    labels = [f"{r['eps_p']:g} / {r['eps_v']:g}" for r in rows
              if r["n"] == sizes[0] and r["allocation"] == allocation]
    ax.set_xticks(np.arange(len(labels)), labels)
    ax.set(xlabel="budget split  eps_p / eps_v" + ("  (total 1)" if allocation == "unequal" else
                                                   "  (total = 2 eps_p)"),
           ylabel=YLABEL)
    ax.grid(True, alpha=0.3)


def plot_budgets(path: Path, rows: list[dict], title: str, sound: list[dict] | None = None) -> bool:
    """The paper's Figures 1, 2, 7: unequal splits (top) and equal splits (bottom)."""
    plt = pyplot()
    if plt is None:
        return False
    uniform = "log_avg_mse_uniform_start" in rows[0]
    fig, axes = plt.subplots(2, 1, figsize=(8, 8.5))
    for ax, allocation in zip(axes, ("unequal", "equal")):
        _budget_axis(ax, rows, allocation, sound, uniform)
        ax.set_title(f"{title}: {allocation} split")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=2, fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, 0.01 + 0.022 * math.ceil(len(labels) / 2), 1, 1))
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_equal_panels(path: Path, panels: dict[str, list[dict]], title: str, key: str = "n") -> bool:
    """Equal splits only, one panel per entry (Figure 6: noise levels; the trilobite sizes)."""
    plt = pyplot()
    if plt is None:
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.6), squeeze=False)
    for ax, (name, rows) in zip(axes[0], panels.items()):
        for color, group in zip(COLORS, dict.fromkeys(r[key] for r in rows)):
            sel = [r for r in rows if r[key] == group]
            xs = np.arange(len(sel))
            label = f"{key} = {group}" if key != "label" else group
            ax.plot(xs, [r["log_avg_mse_paper"] for r in sel], "-o", color=color, ms=4, label=label)
            _band(ax, xs, sel, "log_avg_mse_paper", color)
            ax.axhline(sel[0]["log_mse_nonprivate"], color=color, ls="--", lw=0.9)
        ax.set_xticks(xs, [f"{r['eps_p'] + r['eps_v']:g}" for r in sel])
        ax.set(title=name, xlabel="total budget eps_p + eps_v (equal split)", ylabel=YLABEL)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7, title="dashed: non-private", title_fontsize=7)
    if len(panels) > 1:
        fig.suptitle(title, fontsize=10)
    else:
        axes[0, 0].set_title(textwrap.fill(title, 70), fontsize=10)
    return save_figure(fig, path)


def _tangent_coordinates(manifold, base, points):
    """Log-map coordinates at ``base`` (an azimuthal equidistant map of the sphere)."""
    return manifold.to_coords(np.broadcast_to(base, points.shape), manifold.log(base, points))


def _broken(path: np.ndarray, jump: float = 0.5) -> np.ndarray:
    """The path with NaN rows where consecutive points jump (across the cut locus of the map)."""
    gaps = np.linalg.norm(np.diff(path, axis=0), axis=1) > jump
    return np.insert(path, np.flatnonzero(gaps) + 1, np.nan, axis=0)


def plot_sphere_geodesics(path: Path, cases: list[dict]) -> bool:
    """Figure 5: data, non-private geodesic and private geodesics (equal splits, coloured by
    total budget) in Log-map coordinates at the non-private footpoint; right: zoomed."""
    plt = pyplot()
    if plt is None:
        return False
    from matplotlib import cm

    fig, axes = plt.subplots(len(cases), 2, figsize=(11, 4.8 * len(cases)), squeeze=False)
    t = np.linspace(0.0, 1.0, 400)
    for row, case in zip(axes, cases):
        m, base = case["manifold"], case["p"]
        data = _tangent_coordinates(m, base, case["y"])
        curve = _tangent_coordinates(m, base, m.exp(base, t[:, None] * case["v"]))
        budgets = case["budgets"]
        colors = cm.viridis(np.linspace(0.0, 0.9, len(budgets)))
        for ax in row:
            ax.scatter(*data.T, s=6, color="0.6", label="data")
            for (total, p, v), color in zip(budgets, colors):
                path_ = _broken(_tangent_coordinates(m, base, m.exp(p, t[:, None] * v)))
                ax.plot(*path_.T, color=color, lw=1.2, label=f"private, total eps = {total:g}")
            ax.plot(*curve.T, color="C3", lw=2.2, label="non-private")
            ax.set(xlabel="Log-map coordinate 1 at the fitted footpoint (rad)",
                   ylabel="coordinate 2 (rad)", aspect="equal")
            ax.grid(True, alpha=0.3)
        lo, hi = data.min(axis=0), data.max(axis=0)
        pad = 0.15 * (hi - lo).max()
        row[1].set(xlim=(lo[0] - pad, hi[0] + pad), ylim=(lo[1] - pad, hi[1] + pad),
                   title="zoomed on the data")
        row[0].set_title(f"S^2, noise sd {case['noise']:g}, n = {len(case['y'])}, equal splits")
        row[0].legend(fontsize=7, loc="best")
    return save_figure(fig, path)


def _ellipse(ax, matrix, center, color, lw, alpha=1.0):
    lam, vec = np.linalg.eigh(matrix)
    s = np.linspace(0, 2 * np.pi, 90)
    pts = (vec * lam) @ np.stack([np.cos(s), np.sin(s)])
    ax.plot(center[0] + pts[0], center[1] + pts[1], color=color, lw=lw, alpha=alpha)


def plot_spd_ellipses(path: Path, manifold, p, v, private: list[tuple], covariates, budget) -> bool:
    """Figure 8: predictions Exp_p(x v) on SPD(2) as ellipses (semi-axes the eigenvalues,
    along the eigenvectors), non-private (blue) and private (magenta), at the given covariates."""
    plt = pyplot()
    if plt is None:
        return False
    xs = np.asarray(covariates)
    preds = manifold.exp(np.broadcast_to(p, (len(xs),) + p.shape), xs[:, None, None] * v)
    private_preds = [manifold.exp(np.broadcast_to(q, preds.shape), xs[:, None, None] * w)
                     for q, w in private]
    spacing = 2.3 * max(np.linalg.eigvalsh(a).max() for a in [*preds, *np.concatenate(private_preds)])
    fig, ax = plt.subplots(figsize=(2.3 * len(xs) + 1, 3.4))
    for i in range(len(xs)):
        for pp in private_preds:
            _ellipse(ax, pp[i], (i * spacing, 0.0), "m", 1.0, 0.7)
        _ellipse(ax, preds[i], (i * spacing, 0.0), "C0", 2.0)
    ax.set_xticks([i * spacing for i in range(len(xs))], [f"x = {x:g}" for x in xs])
    ax.set(aspect="equal", ylabel="matrix entries' scale",
           title=f"Figure 8: SPD(2) predictions Exp_p(x v) as ellipses (semi-axes = eigenvalues)\n"
                 f"blue: non-private; magenta: {len(private)} private draws of the paper's "
                 f"procedure at eps_p / eps_v = {budget}")
    ax.plot([], [], "C0", lw=2, label="non-private")
    ax.plot([], [], "m", label="private")
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
    return save_figure(fig, path)


def _aligned(z_ref: np.ndarray, z: np.ndarray) -> np.ndarray:
    """z rotated onto z_ref (planar shapes as complex vectors): exp(-i arg<z_ref, z>) z."""
    return z * np.exp(-1j * np.angle(np.vdot(z_ref, z)))


def plot_shapes(path: Path, manifold, p, v, private: list[tuple], covariates, labels, budget) -> bool:
    """Figure 3: predicted shapes Exp_p(x v) (16 landmarks), non-private (blue) against private
    draws (magenta), each private shape rotated onto the non-private one, grey segments joining
    corresponding landmarks; every panel turned so that the non-private shape's long axis lies
    horizontal."""
    plt = pyplot()
    if plt is None:
        return False
    fig, axes = plt.subplots(1, len(covariates), figsize=(3.8 * len(covariates), 3.3))
    for ax, x, label in zip(axes, covariates, labels):
        ref = manifold.exp(p, x * v)
        z_ref = ref[:, 0] + 1j * ref[:, 1]
        turn = np.exp(-0.5j * np.angle(np.sum(z_ref**2)))
        z_ref = z_ref * turn
        for q, w in private:
            s = manifold.exp(q, x * w)
            z = _aligned(z_ref, s[:, 0] + 1j * s[:, 1])
            for a, b in zip(z_ref, z):
                ax.plot([a.real, b.real], [a.imag, b.imag], color="0.7", lw=0.6)
            ax.plot(z.real, z.imag, ".", color="m", ms=5)
        ax.plot(z_ref.real, z_ref.imag, "o", color="C0", ms=5)
        ax.set(aspect="equal", title=label, xlabel="preshape coordinate (unit total size)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("preshape coordinate")
    axes[0].plot([], [], "o", color="C0", label="non-private landmarks")
    axes[0].plot([], [], ".", color="m", label="private (rotated onto it)")
    axes[0].legend(fontsize=7, loc="best")
    fig.suptitle(f"Figure 3: predicted trilobite cephala (16 landmarks) at three covariates, "
                 f"{len(private)} private draws of the paper's procedure at eps_p / eps_v = {budget}",
                 fontsize=10)
    return save_figure(fig, path)


def plot_ratios(path: Path, rows: list[dict], title: str) -> bool:
    """Figures 9 and 10: theoretical / empirical sensitivity per n, footpoint and shooting
    vector, for the paper's neighbours (two definitions of tau) and the supremum-attaining ones."""
    plt = pyplot()
    if plt is None:
        return False
    from matplotlib.ticker import FuncFormatter

    sizes = sorted({r["n"] for r in rows})
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4), sharey=True)
    kinds = (("", "paper's neighbours, tau over all n + 1", "C0"),
             ("_pair_tau", "same, tau of the two differing records", "C1"))
    for ax, part in zip(axes, ("footpoint", "shooting_vector")):
        for j, (suffix, label, color) in enumerate(kinds):
            data = [[r[f"ratio_{part}{suffix}"] for r in rows if r["n"] == n] for n in sizes]
            pos = np.arange(len(sizes)) * 3 + j
            box = ax.boxplot(data, positions=pos, widths=0.8, patch_artist=True,
                             flierprops={"markersize": 3})
            for patch in box["boxes"]:
                patch.set(facecolor=color, alpha=0.4)
            ax.plot([], [], "s", color=color, alpha=0.5, label=label)
        worst = [[r[f"ratio_{part}_worst"] for r in rows if r["n"] == n] for n in sizes]
        for i, w in enumerate(worst):
            ax.plot(np.full(len(w), i * 3 + 2), w, "D", color="C3", ms=3, alpha=0.6)
        ax.plot([], [], "D", color="C3", label="supremum-seeking neighbours (x = 1, residuals +-tau)")
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(np.arange(len(sizes)) * 3 + 1, [f"n = {n}" for n in sizes])
        ax.set(yscale="log", title=part.replace("_", " "),
               ylabel="theoretical / empirical sensitivity (log scale)")
        ax.yaxis.set_major_formatter(FuncFormatter(lambda y, _: f"{y:g}"))
        ax.yaxis.set_minor_formatter(FuncFormatter(lambda y, _: ""))
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)
