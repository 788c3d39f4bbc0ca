"""Smoke tests of the paper reproductions with few replicates: files written, claims reported."""

from __future__ import annotations

import csv
import importlib
import importlib.util

import numpy as np
import pytest

from geodp.experiments import dp_rgd, reimherr2021, wrapped
from geodp.experiments._output import VERDICTS

HAS_MPL = importlib.util.find_spec("matplotlib") is not None


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def summary_verdicts(path):
    """The verdict column of a summary.md table (checked against the contract's four)."""
    from geodp.experiments._output import VERDICTS

    rows = [line.split(" | ") for line in path.read_text().splitlines() if line.startswith("| ")]
    verdicts = [r[3] for r in rows[1:]]
    assert rows[0][3] == "verdict" and verdicts and set(verdicts) <= set(VERDICTS), verdicts
    return verdicts


def test_reimherr2021_quick(tmp_path):
    """Quick mode writes Figure 1 and Supplement Figure 2 with their CSVs and a summary with a
    valid verdict per figure; every replicate pair is below Theorem 2 (the sensitivity panels
    keep every replicate) and the utility rows hold all four series on S^2."""
    summary = reimherr2021.run(tmp_path, reps=1000, seed=1, quick=True)
    for name in ("fig1.csv", "fig1_sensitivity.csv", "figS2.csv", "summary.md"):
        assert (tmp_path / name).stat().st_size > 0
    for name in ("fig1.png", "figS2.png"):
        assert (tmp_path / name).exists() == HAS_MPL and summary["png"] == HAS_MPL
    assert len(summary_verdicts(tmp_path / "summary.md")) == 7
    assert "quick mode" in (tmp_path / "summary.md").read_text()
    sens = read(tmp_path / "fig1_sensitivity.csv")
    assert len(sens) == 2 * len(reimherr2021.QUICK_SIZES) * summary["sensitivity_replicates"]
    assert all(float(r["distance"]) <= float(r["theorem2_bound"]) for r in sens)
    util = read(tmp_path / "fig1.csv")
    assert {r["series"] for r in util if r["manifold"] == "S^2"} == {
        *reimherr2021.SERIES_S2, reimherr2021.EUCLIDEAN}
    assert {r["manifold"] for r in util} == {"SPD(2)", "S^2"}


def test_reimherr2021_empirical_bound():
    """Supplement B.1's bound: the refined maximum equals a brute-force fine grid, is about 0.806
    at r = pi/8, lies between 2r and 2r(2 - h) (Supplement Figure 2), and gives the B.1 scale
    empirical / (n h); tan(2r)/n = 1/n at pi/8."""
    r = np.pi / 8
    value = reimherr2021.tangent_diameter(r)
    phi = np.linspace(0, 2 * np.pi, 3000, endpoint=False)
    foot = reimherr2021._circle(r, 0.0)
    v = reimherr2021.Sphere(2).log(foot, reimherr2021._circle(r, phi))
    brute = max(np.linalg.norm(v - x, axis=1).max() for x in v)
    assert brute <= value + 1e-12 and value - brute < 1e-5 and abs(value - 0.8062) < 1e-4
    for row in reimherr2021.supplement_figure2([0.1, 0.3, r, 0.6, 0.75]):
        assert row["two_r"] < row["empirical_bound"] < row["theorem2_numerator"]
    scales = reimherr2021.sphere_scales(r, 10, value)
    assert np.isclose(scales[reimherr2021.EMPIRICAL], value / (10 * np.pi / 4))
    assert np.isclose(scales[reimherr2021.SERIES_S2[2]], 0.1)
    assert scales[reimherr2021.SERIES_S2[0]] > scales[reimherr2021.EMPIRICAL]


def test_wrapped_quick(tmp_path):
    """Quick mode writes Figures 1, 2, 3, 7 (PNG + CSV), Table 1 and a summary that states the
    chosen radius and grid; the real-data figures cover all ten digit classes with SE bands."""
    summary = wrapped.run(tmp_path, reps=100, seed=2, quick=True)
    for name in ("fig1", "fig2", "fig3", "fig7"):
        assert (tmp_path / f"{name}.csv").stat().st_size > 0
        assert (tmp_path / f"{name}.png").exists() == HAS_MPL and summary["png"] == HAS_MPL
    assert len(read(tmp_path / "table1.csv")) == 3
    text = (tmp_path / "summary.md").read_text()
    assert len(summary_verdicts(tmp_path / "summary.md")) == 8
    assert "Radius r = 1.5" in text and "quick mode" in text
    sim = read(tmp_path / "fig1.csv")
    status = {(r["d"], r["notion"], r["budget"]): r["riemannian_laplace_status"] for r in sim}
    assert status[("6", "eps-DP", "0.1")] == "not normalisable"
    assert status[("3", "eps-DP", "0.1")] == "draws beyond double precision"  # scale 0.75 on SPD(2)
    assert status[("3", "eps-DP", "0.5")] == "exact"
    assert {r["d"] for r in read(tmp_path / "fig7.csv")} == {"21"}
    real = read(tmp_path / "fig2.csv") + read(tmp_path / "fig3.csv")
    assert {r["class"] for r in real} == {str(c) for c in range(10)}
    assert all(float(r["wrapped_gaussian_public_footpoint_se"]) > 0 for r in real)


def test_eigen_metropolis_matches_exact_laplace():
    """The paper's eigenvalue Metropolis (used only where geodp's exact samplers refuse) draws
    the Riemannian Laplace's distance law: two-sample KS against the exact sampler on SPD(3)
    at scale 0.3, 800 draws each (fails when the sinh factor or the scale is wrong)."""
    from scipy import stats

    from geodp.manifolds import SPD
    from geodp.mechanisms import RiemannianLaplace

    rng = np.random.default_rng(5)
    chain, r_hat, acceptance = wrapped.eigen_metropolis_distances(3, 0.3, 800, 3000, rng)
    exact = SPD(3).dist(np.eye(3), RiemannianLaplace(SPD(3), 0.3).sample(np.eye(3), 800, rng=rng))
    assert stats.ks_2samp(chain, exact).pvalue > 1e-3
    assert r_hat < 1.05 and 0.2 < acceptance < 0.5


def test_reproduce_command_quick(tmp_path, capsys):
    """geodp reproduce PAPER --quick writes the summary and prints where; --reps is checked."""
    from geodp.cli import main

    assert main(["reproduce", "reimherr2021", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert '"quick": true' in out and (tmp_path / "summary.md").exists()
    assert main(["reproduce", "wrapped", "--reps", "0", "--out", str(tmp_path)]) == 2
    assert "--reps" in capsys.readouterr().err


@pytest.mark.slow
def test_reproduce_all_quick(tmp_path, capsys):
    """geodp reproduce all --quick runs the four reproductions, each into its own directory with
    a summary.md of valid verdicts."""
    import json

    from geodp.cli import REPRODUCTIONS, main

    assert main(["reproduce", "all", "--quick", "--quiet", "--out", str(tmp_path)]) == 0
    result = json.loads(capsys.readouterr().out)["reproductions"]
    assert set(result) == set(REPRODUCTIONS)
    for name in REPRODUCTIONS:
        summary_verdicts(tmp_path / name / "summary.md")
        assert sum(result[name]["verdicts"].values()) >= 1


def summary_table(path):
    """The rows of summary.md's table as (figure, paper, geodp, verdict, why)."""
    lines = [line for line in path.read_text().splitlines() if line.startswith("| ")][1:]
    return [tuple(cell.strip() for cell in line.strip("|").split(" | ")) for line in lines]


def check_outputs(out, figures, summary):
    """Every figure has its CSV (and PNG with matplotlib); summary.md has a valid verdict per row
    and a row for each figure."""
    for name in figures:
        assert (out / f"{name}.csv").stat().st_size > 0
        assert (out / f"{name}.png").exists() == HAS_MPL
    assert summary["png"] == HAS_MPL
    rows = summary_table(out / "summary.md")
    assert rows and all(len(r) == 5 and r[3] in VERDICTS for r in rows)
    return rows


def test_dp_rgd_quick(tmp_path):
    summary = dp_rgd.run(tmp_path, reps=20, seed=3, quick=True)
    rows = check_outputs(tmp_path, ("fig1a", "fig1b"), summary)
    assert [r[0] for r in rows] == ["Figure 1a", "Figure 1a (records rescaled by sqrt(n))", "Figure 1b"]
    assert summary["replicates"] == dp_rgd.QUICK["reps"]
    pca = read(tmp_path / "fig1a.csv")
    assert {r["construction"] for r in pca} == set(dp_rgd.CONSTRUCTIONS)

    def risk(construction, method):
        return np.array([float(r["excess_risk"]) for r in pca
                         if r["construction"] == construction and r["method"] == method])
    # the paper's construction: nothing moves (within 1%); the rescaled one: noiseless RGD
    # converges far below its start
    for method in (dp_rgd.PAPER_RGD, dp_rgd.PAPER_PGD, dp_rgd.SOUND_PCA, dp_rgd.NOISELESS):
        assert np.all(np.abs(risk("paper", method) / risk("paper", dp_rgd.START) - 1) < 0.01)
    assert np.all(risk("rescaled", dp_rgd.NOISELESS) < 0.05 * risk("rescaled", dp_rgd.START))
    spd = read(tmp_path / "fig1b.csv")
    fm = [r for r in spd if r["method"].startswith("DP-FM")]
    assert fm[0]["excess_risk"] == "nan" and "not normalisable" in fm[0]["note"]
    assert float(fm[1]["excess_risk"]) > 0


def test_haar_columns_orthonormal_and_uniform():
    """Orthonormal columns, and the first column uniform on the sphere: U_00 symmetric with
    U_00^2 ~ Beta(1/2, (n-1)/2) (KS over 4000 draws)."""
    from scipy import stats

    rng = np.random.default_rng(7)
    u = dp_rgd.haar_columns(30, 5, rng)
    assert np.allclose(u.T @ u, np.eye(5), atol=1e-12)
    first = np.array([dp_rgd.haar_columns(30, 5, rng)[0, 0] for _ in range(4000)])
    beta = stats.beta(0.5, 14.5)
    assert stats.kstest(first, lambda t: 0.5 + 0.5 * np.sign(t) * beta.cdf(t * t)).pvalue > 1e-3


def test_pca_data_is_u_sigma_v_from_the_same_draws():
    """Issue 31: Z formed as G (L^-T Sigma V) is the paper's U Sigma V with U = haar_columns."""
    z = dp_rgd.pca_data(300, np.random.default_rng(4))
    rng = np.random.default_rng(4)
    head = [1.0] + [1.0 - k * dp_rgd.EIGENGAP for k in (1.1, 1.2, 1.3, 1.4)]
    sigma = np.concatenate([head, np.abs(rng.standard_normal(45)) / 50])
    u = dp_rgd.haar_columns(300, 50, rng)
    assert np.allclose(z, (u * sigma) @ dp_rgd.haar_columns(50, 50, rng), rtol=0, atol=1e-14)


def test_geodesic_regression_quick(tmp_path):
    from geodp.experiments import geodesic_regression as gr

    summary = gr.run(tmp_path, reps=3, seed=0, quick=True)
    figures = ("fig1", "fig2", "fig2_sizes", "fig3", "fig5", "fig6", "fig7", "fig8", "fig9", "fig10")
    rows = check_outputs(tmp_path, figures, summary)
    assert {f"Figure {k}" for k in range(1, 11)} <= {r[0] for r in rows}
    for name in ("fig9", "fig10"):  # Appendix G: every ratio >= 1; the worst pairs attain ~1
        ratios = read(tmp_path / f"{name}.csv")
        for part in ("footpoint", "shooting_vector"):
            assert min(float(r[f"ratio_{part}"]) for r in ratios) >= 1.0
            worst = [float(r[f"ratio_{part}_worst"]) for r in ratios]
            assert 1.0 - 1e-9 <= min(worst) and max(worst) < (1.0 + 1e-9 if name == "fig9" else 1.6)
    budgets = read(tmp_path / "fig1.csv")
    assert all(float(r["log_avg_mse_paper"]) > float(r["log_mse_nonprivate"]) for r in budgets)


def test_random_walk_samples_its_target():
    """The experiments' vectorised random-walk Metropolis (no Hastings factor: symmetric
    proposals) draws the Laplace law exp(-|x|/s) on R: KS test of 3000 chains' final states."""
    from scipy import stats

    from geodp.experiments.geodesic_regression import random_walk

    rng = np.random.default_rng(11)
    s = 0.7
    start = rng.standard_normal(3000)

    def propose(x, radius):
        return x + radius * rng.uniform(-1.0, 1.0, len(x))

    x, rate = random_walk(start, lambda x: -np.abs(x) / s, propose, np.full(3000, 0.1), 400, rng)
    assert 0.15 < rate.mean() < 0.5
    assert stats.kstest(x, stats.laplace(scale=s).cdf).pvalue > 1e-3
