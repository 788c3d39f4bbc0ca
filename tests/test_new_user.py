"""What a new user trips over (issue 32): no tracebacks, no silent coercions, messages that name
the user's own parameter (the CLI flag or the Python keyword) and never quote data statistics."""

from __future__ import annotations

import numpy as np
import pytest

import geodp

from geodp.manifolds.registry import FAMILIES


def _size_arguments(family):
    """The integer size arguments of one of the family's examples."""
    args, kwargs = next(iter(family.examples.values()))
    return list(args), kwargs


@pytest.mark.parametrize("name", sorted(set(FAMILIES) - {"product"}))
@pytest.mark.parametrize("bad", [2.5, 3.0, True, "3"])
def test_manifold_sizes_must_be_integers(name, bad):
    family = FAMILIES[name]
    args, kwargs = _size_arguments(family)
    for i in range(len(args)):
        wrong = args.copy()
        wrong[i] = bad
        with pytest.raises(TypeError, match="must be an integer"):
            family.build(*wrong, **kwargs)
    assert family.build(*[np.int64(a) for a in args], **kwargs).dim >= 1


# ---------------------------------------------------------------- data loading (parts A and C)
from geodp.cli import main  # noqa: E402
from geodp.manifolds import Sphere  # noqa: E402
from geodp.manifolds.base import InvalidPoints  # noqa: E402

BALL = ["--manifold", "sphere:2", "--center", "0,0,1", "--radius", "0.5"]


def _sphere_points(n=20, seed=0):
    return Sphere(2).random_ball(np.array([0.0, 0.0, 1.0]), 0.5, n, np.random.default_rng(seed))


def _cli(capsys, *argv):
    """(exit status, stdout, stderr) of ``geodp argv``; a traceback fails the test."""
    status = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return status, out, err


def test_a_zero_byte_npy_is_a_clear_error(tmp_path, capsys):
    (tmp_path / "empty.npy").write_bytes(b"")
    status, _, err = _cli(capsys, "release", "mean", tmp_path / "empty.npy", *BALL, "--epsilon", 1)
    assert status == 2 and "is empty (zero bytes)" in err


def test_a_directory_as_input_says_so(tmp_path, capsys):
    status, _, err = _cli(capsys, "release", "mean", tmp_path, *BALL, "--epsilon", 1)
    assert status == 2 and "is a directory; give a .npy or .csv file" in err


def test_workers_without_dask_names_the_extra(tmp_path, capsys, monkeypatch):
    import sys

    for module in ("dask", "dask.array", "distributed", "zarr"):
        monkeypatch.setitem(sys.modules, module, None)
    np.save(tmp_path / "x.npy", _sphere_points())
    status, _, err = _cli(capsys, "release", "mean", tmp_path / "x.npy", *BALL, "--epsilon", 1,
                          "--workers", 2)
    assert status == 2 and "pip install 'geodp[dask]'" in err and "--workers" in err


def test_float32_points_are_read_at_their_precision(tmp_path, capsys):
    x = _sphere_points().astype(np.float32)
    assert np.any(np.abs(np.linalg.norm(x.astype(float), axis=1) - 1) > 1e-8)
    np.save(tmp_path / "x32.npy", x)
    status, out, err = _cli(capsys, "release", "mean", tmp_path / "x32.npy", *BALL, "--epsilon", 1,
                            "--seed", 0)
    assert status == 0, err
    y = Sphere(2).check_point(x)
    assert y.dtype == np.float64 and np.allclose(Sphere(2).check_point(y), x, atol=1e-6)
    # far off the manifold is still refused at float32 precision
    with pytest.raises(ValueError, match="not on Sphere"):
        Sphere(2).check_point(x * np.float32(1.001))


def test_csv_with_a_byte_order_mark_and_quoted_numbers_is_read(tmp_path, capsys):
    x = _sphere_points()
    lines = [",".join(f'"{v!r}"' for v in map(float, row)) for row in x]
    (tmp_path / "q.csv").write_text("\n".join(lines), encoding="utf-8-sig")
    status, _, err = _cli(capsys, "release", "mean", tmp_path / "q.csv", *BALL, "--epsilon", 1)
    assert status == 0, err
    (tmp_path / "h.csv").write_text("x,y,z\n" + "\n".join(lines))
    status, _, err = _cli(capsys, "release", "mean", tmp_path / "h.csv", *BALL, "--epsilon", 1)
    assert status == 2 and "has a row that is not numeric; a header line is not allowed" in err
    assert "x,y,z" not in err


def test_nan_errors_name_no_record(tmp_path, capsys):
    """A record holding NaN is refused without its position (a statistic of the data, printed
    by the command line); the ``InvalidPoints`` error's ``bad`` mask says which, for the
    curator."""
    x = _sphere_points()
    x[3, 1] = np.nan
    np.save(tmp_path / "n.npy", x)
    np.savetxt(tmp_path / "n.csv", x, delimiter=",")
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "n.npy", *BALL, "--epsilon", 1)
    assert "one or more records contain NaN" in err and "3" not in err.split("n.npy")[1]
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "n.csv", *BALL, "--epsilon", 1)
    assert "one or more rows contain NaN" in err and "4" not in err.split("n.csv")[1]
    with pytest.raises(InvalidPoints, match=r"^one or more points contain NaN or infinite values$") as info:
        Sphere(2).check_point(x)
    assert np.flatnonzero(info.value.bad).tolist() == [3]


# ---------------------------------------------------------------- messages that name the parameter
import warnings  # noqa: E402

from geodp import private_frechet_mean  # noqa: E402
from geodp.learn.release import LargeDeltaWarning, NoiseDominatesWarning  # noqa: E402
from geodp.manifolds import SPD  # noqa: E402
from geodp.statistics import frechet_mean  # noqa: E402

NORTH = np.array([0.0, 0.0, 1.0])


@pytest.mark.parametrize("radius, error", [("0.5", TypeError), (np.array([0.5]), TypeError)])
def test_radius_of_the_wrong_kind_names_radius(radius, error):
    with pytest.raises(error, match="radius must be a number"):
        private_frechet_mean(Sphere(2), _sphere_points(), 1.0, NORTH, radius, rng=0)


def test_seed_and_rng_are_named(tmp_path, capsys):
    with pytest.raises(ValueError, match="^rng must be a non-negative integer seed"):
        private_frechet_mean(Sphere(2), _sphere_points(), 1.0, NORTH, 0.5, rng=-1)
    np.save(tmp_path / "x.npy", _sphere_points())
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "x.npy", *BALL, "--epsilon", 1, "--seed", -1)
    assert "error: --seed must be a non-negative integer seed" in err


def test_a_huge_radius_is_named_not_an_infinite_scale(tmp_path, capsys):
    np.save(tmp_path / "e.npy", np.zeros((5, 3)))
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "e.npy", "--manifold", "euclidean:3",
                     "--center", "0,0,0", "--radius", 1e308, "--epsilon", 1)
    assert "--radius = 1e+308 is too large" in err and "inf" not in err


def test_a_tiny_epsilon_releases_with_a_pure_noise_warning(tmp_path, capsys):
    np.save(tmp_path / "x.npy", _sphere_points())
    status, out, err = _cli(capsys, "release", "mean", tmp_path / "x.npy", *BALL,
                            "--epsilon", 1e-300, "--seed", 0)
    assert status == 0 and "mu must be positive" not in err
    assert "warning: the noise scale" in err and "--epsilon" in err and '"warnings"' in out


def test_a_radius_a_hair_below_its_bound_warns_of_pure_noise():
    with pytest.warns(NoiseDominatesWarning, match="exceeds the diameter"):
        rel = private_frechet_mean(Sphere(2), _sphere_points(), 1.0, NORTH, np.pi / 4 - 1e-9,
                                   clip_data=True, rng=0)
    assert "caveat: the noise scale" in rel.statement
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoiseDominatesWarning)
        private_frechet_mean(Sphere(2), _sphere_points(200), 1.0, NORTH, 0.5, rng=0)


def test_delta_at_least_one_over_n_warns_and_delta_one_is_refused(tmp_path, capsys):
    x = SPD(2).random_ball(np.eye(2), 0.5, 20, np.random.default_rng(0))
    with pytest.warns(LargeDeltaWarning, match=r"delta = 0.5 is at least 1/n = 0.05"):
        rel = private_frechet_mean(SPD(2), x, 1.0, np.eye(2), 0.5, mechanism="wrapped-gaussian",
                                   delta=0.5, rng=0)
    assert "caveat: delta = 0.5" in rel.statement
    with pytest.raises(ValueError, match=r"^delta must lie in \[0, 1\)"):
        private_frechet_mean(SPD(2), x, 1.0, np.eye(2), 0.5, mechanism="wrapped-gaussian", delta=1.0)
    np.save(tmp_path / "s.npy", x)
    spd = ["--manifold", "spd:2", "--center", "identity", "--radius", 0.5,
           "--mechanism", "wrapped-gaussian", "--epsilon", 1]
    status, out, err = _cli(capsys, "release", "mean", tmp_path / "s.npy", *spd, "--delta", 0.5)
    assert status == 0 and "warning: --delta = 0.5 is at least 1/n" in err and "caveat: --delta" in out
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "s.npy", *spd, "--delta", 1)
    assert "error: --delta must lie in [0, 1)" in err


def test_weights_of_the_wrong_length_are_named():
    with pytest.raises(ValueError, match="weights must hold one weight per record"):
        frechet_mean(Sphere(2), _sphere_points(), weights=np.ones(3))


# ---------------------------------------------------------------- the budget ledger
def test_a_read_only_ledger_is_not_called_foreign(tmp_path, capsys, monkeypatch):
    import os

    import geodp.privacy.ledger as ledger_module

    ledger = tmp_path / "l.db"
    assert _cli(capsys, "budget", "init", "--ledger", ledger, "--epsilon", 5)[0] == 0
    real_access = os.access
    monkeypatch.setattr(ledger_module.os, "access",
                        lambda p, mode: False if str(p) == str(tmp_path) else real_access(p, mode))
    _, _, err = _cli(capsys, "budget", "show", "--ledger", ledger)
    assert "cannot be written" in err and "is read-only" in err and "not a geodp" not in err


def test_every_release_with_a_ledger_prints_the_remaining_budget(tmp_path, capsys):
    import json

    ledger = tmp_path / "l.db"
    _cli(capsys, "budget", "init", "--ledger", ledger, "--epsilon", 5)
    np.save(tmp_path / "x.npy", _sphere_points())
    status, out, err = _cli(capsys, "release", "mean", tmp_path / "x.npy", *BALL, "--epsilon", 1,
                            "--ledger", ledger, "--seed", 0)
    assert status == 0, err
    assert json.loads(out)["ledger"] == {"remaining_epsilon": pytest.approx(4.0),
                                         "remaining_delta": 0.0}


# ---------------------------------------------------------------- options without effect
@pytest.mark.parametrize("flag, keyword, value", [("--footpoint-budget", "footpoint_budget", 0.3),
                                                  ("--steps", "steps", 5), ("--lr", "lr", 0.7)])
def test_options_without_effect_are_refused(tmp_path, capsys, flag, keyword, value):
    np.save(tmp_path / "x.npy", _sphere_points())
    status, _, err = _cli(capsys, "release", "mean", tmp_path / "x.npy", *BALL, "--epsilon", 1,
                          flag, value)
    assert status == 2 and f"error: {flag} applies to" in err and "leave it out" in err
    if keyword != "lr":  # the Python default 0.7 cannot be told from an explicit 0.7
        with pytest.raises(ValueError, match=f"^{keyword} applies to"):
            private_frechet_mean(Sphere(2), _sphere_points(), 1.0, NORTH, 0.5, **{keyword: value})


def test_option_values_are_validated_and_named(tmp_path, capsys):
    np.save(tmp_path / "x.npy", _sphere_points())
    dp_rgd = ["--mechanism", "dp-rgd", "--epsilon", 1, "--delta", 1e-5]
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "x.npy", *BALL, *dp_rgd, "--steps", 0)
    assert "error: --steps must be a positive integer" in err
    with pytest.raises(ValueError, match="^footpoint_budget must lie in"):
        private_frechet_mean(SPD(2), SPD(2).random_ball(np.eye(2), 0.5, 20, np.random.default_rng(0)),
                             1.0, np.eye(2), 0.5, mechanism="wrapped-laplace", footpoint="private",
                             footpoint_budget=1.5)


# ---------------------------------------------------------------- audits and Fréchet means
def test_an_audit_with_too_few_samples_is_inconclusive(capsys):
    import json

    for samples in (10, 100):
        status, out, _ = _cli(capsys, "audit", "laplace", "--epsilon", 1, "--samples", samples,
                              "--seed", 0)
        assert status == 0 and json.loads(out)["verdict"].startswith("inconclusive")
    _, out, _ = _cli(capsys, "audit", "laplace", "--epsilon", 1, "--samples", 5000, "--seed", 0)
    assert json.loads(out)["verdict"] == "consistent with the claim"


def test_antipodal_data_say_the_mean_is_not_unique_once():
    x = np.array([[0.0, 0.0, 1.0], [0.0, 0.0, -1.0]])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="mean of these data is not unique") as info:
            frechet_mean(Sphere(2), x)
    assert not caught and "overflow" not in str(info.value)


def test_footpoint_budget_without_a_sequential_regression_is_refused(tmp_path, capsys):
    """Issue 32: an option with no effect on the chosen release is refused, in the interface's
    spelling, before anything is read or charged."""
    from geodp.cli import main
    from geodp.manifolds import Sphere

    m = Sphere(2)
    x = np.linspace(0, 1, 20)
    y = m.exp(np.array([0.0, 0.0, 1.0]), x[:, None] * np.array([0.5, 0.0, 0.0]))
    with pytest.raises(ValueError, match="footpoint_budget applies to release 'sequential' only"):
        geodp.private_geodesic_regression(m, x, y, 1.0, 0.5, (0, 1), 1.0, footpoint_budget=0.3)
    np.savez(tmp_path / "r.npz", x=x, y=y)
    assert main(["release", "regression", str(tmp_path / "r.npz"), "--manifold", "sphere:2",
                 "--epsilon", "1", "--tau", "0.5", "--x-range", "0", "1", "--v-max", "1",
                 "--footpoint-budget", "0.3"]) == 2
    assert "--footpoint-budget applies to --release 'sequential' only" in capsys.readouterr().err


# ---------------------------------------------------------------- DP-RGD steps that void a release
from geodp.learn import private_pca  # noqa: E402


def _vectors(n=200, seed=0):
    return np.random.default_rng(seed).normal(size=(n, 6)) * [3, 2, 1, 1, 0.5, 0.5]


def test_so_many_steps_that_every_step_is_noise_are_refused_by_name(tmp_path, capsys):
    """Issue 32: --steps 100000 ran for minutes (NumPy-internal text on SPD) and released noise;
    it is refused from public parameters, naming the option and the largest useful count."""
    with pytest.raises(ValueError, match=r"^steps = 100000 gives every step noise .* more than "
                                         r"3.14.* at most about \d+ steps keep it below") as info:
        private_pca(Sphere(5), _vectors(), 1.0, 1e-5, 10.0, clip_data=True, steps=100_000, rng=0)
    most = int(str(info.value).split("at most about ")[1].split()[0])
    with warnings.catch_warnings():
        warnings.simplefilter("error", NoiseDominatesWarning)  # the bound itself is accepted
        private_pca(Sphere(5), _vectors(), 1.0, 1e-5, 10.0, clip_data=True, steps=most // 40, rng=0)
    np.save(tmp_path / "z.npy", _vectors())
    pca = ["release", "pca", tmp_path / "z.npy", "--epsilon", 1, "--delta", 1e-5, "--norm-bound",
           10, "--clip-data", "--quiet"]
    status, out, err = _cli(capsys, *pca, "--steps", 100_000)
    assert status == 2 and err.startswith("error: --steps = 100000 gives every step noise")
    assert "pass fewer --steps, or a smaller --lr" in err and "positive definite" not in err
    status, _, err = _cli(capsys, *pca, "--steps", 100_000, "--manifold", "grassmann:6x2")
    assert status == 2 and "--steps = 100000" in err and "Grassmann(6, 2)" in err
    status, _, err = _cli(capsys, "release", "mean", "digits-covariance", "--mechanism", "dp-rgd",
                          "--epsilon", 1, "--delta", 1e-5, "--steps", 100_000, "--quiet")
    assert status == 2 and "--steps = 100000" in err and "of the public ball" in err


def test_a_single_step_of_pure_noise_warns_and_says_so_in_the_statement(tmp_path, capsys):
    with pytest.warns(NoiseDominatesWarning, match="even a single DP-RGD step"):
        rel = private_pca(Sphere(5), _vectors(), 1e-3, 1e-5, 10.0, clip_data=True, steps=3, rng=0)
    assert "(caveat: even a single DP-RGD step" in rel.statement and "larger epsilon" in rel.statement
    np.save(tmp_path / "z.npy", _vectors())
    status, out, err = _cli(capsys, "release", "pca", tmp_path / "z.npy", "--epsilon", 1e-3,
                            "--delta", 1e-5, "--norm-bound", 10, "--clip-data", "--steps", 3,
                            "--quiet")
    assert status == 0 and "warning: even a single DP-RGD step" in err
    assert "larger --epsilon" in err and "larger --epsilon" in out and '"warnings"' in out


# ---------------------------------------------------------------- every refusal in the caller's spelling
def _inputs(tmp_path):
    np.save(tmp_path / "x.npy", _sphere_points())
    np.save(tmp_path / "z.npy", _vectors())
    (tmp_path / "empty.npy").write_bytes(b"")
    t = np.linspace(0, 1, 20)
    np.savez(tmp_path / "r.npz", x=t, y=Sphere(2).exp(NORTH, t[:, None] * np.array([0.5, 0, 0])))


MEAN_X = ["release", "mean", "{tmp}/x.npy", *BALL]
PCA_Z = ["release", "pca", "{tmp}/z.npy", "--delta", 1e-5, "--clip-data", "--steps", 3]
REGRESSION = ["release", "regression", "{tmp}/r.npz", "--manifold", "sphere:2", "--epsilon", 1,
              "--v-max", 1]


@pytest.mark.parametrize("argv, expected", [
    (MEAN_X + ["--epsilon", "nan"], "--epsilon must be positive and finite"),
    (MEAN_X + ["--epsilon", 1, "--delta", 1e-5],
     "the laplace mechanism needs exactly one of: --epsilon alone (epsilon-DP); got --delta, --epsilon"),
    (MEAN_X + ["--epsilon", 1, "--tangent-sensitivity", 0.1],
     "--footpoint and --tangent-sensitivity apply to the wrapped mechanisms only"),
    (MEAN_X + ["--epsilon", 1, "--secure"], "--secure (discrete Gaussian noise) applies to --mechanism"),
    (MEAN_X + ["--epsilon", 1, "--mechanism", "kng", "--restrict"], "--restrict applies to the"),
    (["release", "mean", "{tmp}/x.npy", "--manifold", "sphere:2", "--center", "0,0,1", "--radius",
      0.2, "--epsilon", 1], "or choose a larger public --radius"),
    (["release", "mean", "{tmp}/x.npy", "--manifold", "sphere:0", "--center", "0,0,1", "--radius",
      0.5, "--epsilon", 1], "cannot read manifold 'sphere:0': dim must be an integer >= 1"),
    (PCA_Z + ["--epsilon", 1, "--norm-bound", -1], "--norm-bound must be positive and finite"),
    (PCA_Z[:3] + ["--epsilon", 1, "--delta", 1e-5, "--norm-bound", 10, "--steps", 0],
     "--steps must be a positive integer"),
    (["release", "pca", "{tmp}/empty.npy", "--epsilon", 1, "--delta", 1e-5, "--norm-bound", 1],
     "'{tmp}/empty.npy' is empty (zero bytes)"),
    (REGRESSION + ["--tau", -0.5, "--x-range", 0, 1], "--tau must be positive and finite"),
    (REGRESSION + ["--tau", 0.5, "--x-range", 1, 0], "--x-range must be finite with lo < hi"),
    (REGRESSION + ["--tau", 0.5, "--x-range", 0, 1, "--radius", 0.5],
     "--radius was given without --center"),
    (REGRESSION + ["--tau", 0.5, "--x-range", 0, 1, "--max-steps", 0],
     "--max-steps = 0 must be at least the chains' first run"),
    (["budget", "init", "--ledger", "{tmp}/l.db", "--epsilon", -1], "--epsilon must be positive"),
    (["budget", "init", "--ledger", "{tmp}/l.db", "--epsilon", 1, "--delta", 1], "--delta must lie in"),
    (["audit", "laplace", "--epsilon", 1, "--samples", 0], "--samples must be an integer >= 10"),
    (["audit", "laplace", "--epsilon", 1, "--confidence", 1.5], "--confidence must lie in (0, 1)"),
    (["audit", "laplace", "--epsilon", -1], "--epsilon must be positive and finite"),
    (["audit", "kng-mean", "--epsilon", 1, "--n", 0], "--n must be a positive integer"),
    (["audit", "kng-mean", "--epsilon", 1, "--radius", 2], "the data --radius must satisfy 0 <"),
    (["audit", "wrapped-gaussian", "--manifold", "spd:2", "--mu", 1, "--delta", 1e-5],
     "needs exactly one of: --epsilon and --delta > 0 ((epsilon, delta)-DP); --mu alone (mu-GDP); "
     "--rdp-alpha with --rdp-epsilon (Rényi DP); got --delta, --mu"),
    (["audit", "dp-rgd-step", "--epsilon", 1, "--delta", 1e-5, "--rdp-alpha", 2],
     "--rdp-alpha and --rdp-epsilon go together"),
    (["mean", "{tmp}/x.npy", "--manifold", "sphere:2", "--tol", -1], "--tol must be positive"),
])
def test_command_line_refusals_name_the_flag(tmp_path, capsys, argv, expected):
    _inputs(tmp_path)
    argv = [str(a).format(tmp=tmp_path) for a in argv]
    status, _, err = _cli(capsys, *argv)
    assert status == 2 and err.startswith("error: ") and expected.format(tmp=tmp_path) in err, err


def test_python_refusals_name_the_keyword_and_internal_names_stay_as_they_are():
    from geodp.cli import build_parser, command_spelling
    from geodp.privacy import BudgetLedger

    with pytest.raises(ValueError, match="^total_epsilon must be positive"):
        BudgetLedger(":memory:", -1.0)
    with pytest.raises(ValueError, match="needs exactly one of: epsilon alone .*; got delta, epsilon"):
        private_frechet_mean(Sphere(2), _sphere_points(), 1.0, NORTH, 0.5, delta=1e-5)
    with pytest.raises(TypeError, match="^radius must be a number"):
        private_frechet_mean(Sphere(2), _sphere_points(), 1.0, NORTH, "0.5")
    spell = command_spelling(build_parser(), ["release", "mean", "x.npy"])
    assert [spell(k) for k in ("radius", "rng", "clip_data=True", "scale", "n_samples")] == [
        "--radius", "--seed", "--clip-data", "scale", "n_samples"]
    spell = command_spelling(build_parser(), ["budget", "init"])
    assert (spell("total_epsilon"), spell("total_delta")) == ("--epsilon", "--delta")


def test_pca_delta_at_least_one_over_n_warns_and_says_so():
    with pytest.warns(LargeDeltaWarning, match=r"delta = 0.5 is at least 1/n = 0.005"):
        rel = private_pca(Sphere(5), _vectors(), 1.0, 0.5, 10.0, clip_data=True, steps=3, rng=0)
    assert "caveat: delta = 0.5" in rel.statement


def test_allow_approximate_without_effect_is_refused(tmp_path, capsys):
    """Issue 32, options without effect: DP-RGD and the wrapped laws are always exact."""
    np.save(tmp_path / "x.npy", _sphere_points())
    status, _, err = _cli(capsys, "release", "mean", tmp_path / "x.npy", *BALL, "--epsilon", 1,
                          "--delta", 1e-5, "--mechanism", "dp-rgd", "--allow-approximate")
    assert status == 2 and err.startswith("error: --allow-approximate applies to a sampler that "
                                          "may need MCMC only") and "'dp-rgd' release" in err
    x = SPD(2).random_ball(np.eye(2), 0.5, 20, np.random.default_rng(0))
    with pytest.raises(ValueError, match="^allow_approximate applies to"):
        private_frechet_mean(SPD(2), x, 1.0, np.eye(2), 0.5, mechanism="wrapped-laplace",
                             allow_approximate=True)
    # where a private footpoint's Riemannian Laplace may need MCMC, it has an effect
    with pytest.raises(ValueError, match="private footpoint selection") as info:
        private_frechet_mean(SPD(2), x, 1.0, np.eye(2), 0.5, mechanism="wrapped-laplace",
                             footpoint="private", allow_approximate=True)
    assert "a larger footpoint_budget" in str(info.value)
    np.save(tmp_path / "s.npy", x)
    status, _, err = _cli(capsys, "release", "mean", tmp_path / "s.npy", "--manifold", "spd:2",
                          "--center", "identity", "--radius", 0.5, "--epsilon", 1, "--mechanism",
                          "wrapped-laplace", "--footpoint", "private")
    assert status == 2 and "a larger --footpoint-budget" in err and "public --footpoint" in err


def test_an_audit_sensitivity_beyond_the_injectivity_radius_is_refused(capsys):
    status, _, err = _cli(capsys, "audit", "laplace", "--epsilon", 1, "--sensitivity", 100)
    assert status == 2 and err.startswith("error: --sensitivity = 100 exceeds the injectivity "
                                          "radius 3.14159 of Sphere(2)")
    from geodp.audit import neighbouring_footpoints

    near, far, _ = neighbouring_footpoints(Sphere(2), NORTH, np.pi)
    assert Sphere(2).dist(near, far) == pytest.approx(np.pi)


# ---------------------------------------------------------------- Python inputs with NumPy-internal answers
def test_an_array_footpoint_is_accepted():
    """A public footpoint given as an array was compared with the string 'private' (NumPy's
    'truth value of an array is ambiguous')."""
    x = SPD(2).random_ball(np.eye(2), 0.5, 20, np.random.default_rng(0))
    rel = private_frechet_mean(SPD(2), x, 1.0, np.eye(2), 0.5, mechanism="wrapped-laplace",
                               footpoint=np.eye(2), rng=0)
    assert rel.parameters["footpoint"] == np.eye(2).tolist()


@pytest.mark.parametrize("call, error, message", [
    (lambda: private_frechet_mean(Sphere(2), np.zeros((0, 3)), 1.0, NORTH, 0.5), ValueError,
     "^points is empty"),
    (lambda: private_frechet_mean(Sphere(2), NORTH, 1.0, NORTH, 0.5), ValueError,
     r"^points must have shape \(n, 3\) \(one point per record\), got \(3,\)"),
    (lambda: private_pca(Sphere(5), np.zeros((0, 6)), 1.0, 1e-5, 10.0), ValueError, "^data is empty"),
    (lambda: private_frechet_mean(SPD(2), SPD(2).random_ball(np.eye(2), 0.5, 5, np.random.default_rng(0)),
                                  None, np.eye(2), 0.5, mechanism="wrapped-gaussian", rdp=(1.0,)),
     ValueError, r"^rdp must be a pair \(alpha, epsilon\)"),
    (lambda: private_frechet_mean(Sphere(2), _sphere_points(), 1.0, NORTH, 0.5, ledger="x.db"),
     TypeError, "^ledger must be a budget ledger"),
])
def test_python_refusals_instead_of_numpy_internals(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_estimators_refuse_bad_inputs_by_name():
    pytest.importorskip("sklearn")
    from geodp import estimators

    z = np.random.default_rng(0).normal(size=(50, 4))
    with pytest.raises(ValueError, match=r"^center must hold one value per feature, shape \(4,\)"):
        estimators.PrivatePCA(norm_bound=5, center=[0, 0]).fit(z)
    with pytest.raises(ValueError, match="^random_state must be a non-negative integer"):
        estimators.PrivatePCA(norm_bound=5, clip_data=True, random_state=-1).fit(z)
    x = SPD(2).random_ball(np.eye(2), 0.5, 40, np.random.default_rng(0))
    with pytest.raises(TypeError, match="^radius must be a number, got str '3'"):
        estimators.PrivateFrechetMean(manifold="spd", center=np.eye(2), radius="3").fit(x)
    mean = estimators.PrivateFrechetMean(manifold="spd", center=np.eye(2), radius=3.0,
                                         random_state=0).fit(x)
    with pytest.raises(ValueError, match=r"tangent coordinates of each record, shape \(n, 3\)"):
        mean.inverse_transform(np.zeros((3, 7)))
    with pytest.raises(ValueError, match=r"^delta must lie in \(0, 1\)"):
        estimators.PrivateMDM(center=np.eye(2), radius=3.0, delta=2, classes=[0, 1],
                              random_state=0).fit(x, np.arange(40) % 2)


def test_a_non_spd_record_is_refused_unnamed_and_refused_at_predict():
    """SPD.check_point refuses a matrix that is not positive definite quoting neither its
    position nor an eigenvalue (an error quotes no statistic of the data; the ``bad`` mask says
    which, for the curator); a fitted estimator refuses such a record at predict instead of
    returning a class."""
    pytest.importorskip("sklearn")
    from geodp.estimators import PrivateMDM
    from geodp.manifolds import SPD

    x = np.stack([np.eye(2), np.diag([1.0, -46.6]), np.eye(2)])
    with pytest.raises(InvalidPoints, match=r"one or more matrices are not positive definite;") as info:
        SPD(2).check_point(x)
    assert "46.6" not in str(info.value) and "smallest" not in str(info.value)
    assert not any(ch.isdigit() for ch in str(info.value)) and info.value.bad.tolist() == [0, 1, 0]
    rng = np.random.default_rng(0)
    train = SPD(2).exp(np.eye(2), SPD(2).from_coords(np.eye(2), rng.normal(0, 0.1, (40, 3))))
    est = PrivateMDM(manifold="spd", epsilon=5.0, radius=2.0, classes=[0, 1],
                     random_state=0).fit(train, np.repeat([0, 1], 20))
    with pytest.raises(ValueError, match="not positive definite"):
        est.predict(x)
