"""Input files: one record is one point, never reshaped across rows (a privacy bug otherwise: a
record split over two points would be released with the sensitivity of twice the records)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from geodp.cli import main, read_points
from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere, Stiefel
from geodp.manifolds.spec import manifold_from_spec

FAMILIES = {
    "euclidean:3": Euclidean(3),
    "sphere:2": Sphere(2),
    "hyperbolic:2": Hyperbolic(2),
    "spd:2": SPD(2),
    "kendall:4": KendallShape(4),
    "stiefel:4x2": Stiefel(4, 2),
}


def points(m, n=6):
    rng = np.random.default_rng(0)
    if isinstance(m, Euclidean):
        return rng.normal(size=(n, 3))
    if isinstance(m, SPD):
        return m.random_ball(np.eye(2), 0.5, n, rng)
    if isinstance(m, (KendallShape, Stiefel)):
        return m.project(rng.normal(size=(n, 4, 2)))
    base = m.project(np.array([1.0, 0.2, 0.1]) if isinstance(m, Hyperbolic) else np.ones(3))
    return m.random_ball(base, 0.3, n, rng)


@pytest.mark.parametrize("spec", sorted(FAMILIES))
def test_each_reader_keeps_one_point_per_record(spec, tmp_path):
    m = manifold_from_spec(spec)
    x = points(m)
    np.save(tmp_path / "x.npy", x)
    np.savetxt(tmp_path / "x.csv", x.reshape(len(x), -1), delimiter=",")
    for name in ("x.npy", "x.csv"):
        got, _ = read_points(str(tmp_path / name), m)
        assert got.shape == x.shape and np.allclose(got, x)
    # a wrong row length or array shape is refused, with the shapes found and expected
    np.savetxt(tmp_path / "bad.csv", x.reshape(len(x), -1)[:, :-1], delimiter=",")
    with pytest.raises(SystemExit, match="needs .* per row"):
        read_points(str(tmp_path / "bad.csv"), m)
    np.save(tmp_path / "bad.npy", x.reshape(-1))
    with pytest.raises(SystemExit, match="needs \\(n, "):
        read_points(str(tmp_path / "bad.npy"), m)


def test_the_issue_examples_are_refused(tmp_path):
    np.savetxt(tmp_path / "a.csv", np.random.default_rng(1).normal(size=(20, 3)), delimiter=",")
    for spec in ("euclidean:2", "euclidean:4"):
        with pytest.raises(SystemExit, match="has rows of 3 comma-separated values"):
            read_points(str(tmp_path / "a.csv"), manifold_from_spec(spec))
    np.save(tmp_path / "b.npy", np.random.default_rng(2).normal(size=(10, 3, 3)))
    with pytest.raises(SystemExit, match=r"shape \(10, 3, 3\)"):
        read_points(str(tmp_path / "b.npy"), Euclidean(3))


def test_headers_ragged_rows_and_empty_files_are_clear_errors(tmp_path, capsys):
    (tmp_path / "h.csv").write_text("x,y,z\n1,2,3\n")
    (tmp_path / "r.csv").write_text("1,2,3\n4,5\n")
    (tmp_path / "e.csv").write_text("\n")
    for name, message in [("h.csv", "not numeric"), ("r.csv", "a row without 3 comma-separated values"), ("e.csv", "empty")]:
        for command in (["mean"], ["release", "mean"]):
            args = command + [str(tmp_path / name), "--manifold", "euclidean:3"]
            if command[0] == "release":
                args += ["--epsilon", "1", "--center", "0,0,0", "--radius", "10"]
            assert main(args) == 2
            err = capsys.readouterr().err
            assert err.startswith("error:") and message in err and "Traceback" not in err


def test_cli_errors_are_one_line_naming_the_option(tmp_path, capsys):
    bad = tmp_path / "bad.db"
    bad.write_text("not a database")
    other = tmp_path / "other.db"
    import sqlite3
    con = sqlite3.connect(other)
    con.execute("create table users(x)")
    con.commit()
    con.close()
    before = other.read_bytes()
    cases = [
        (["budget", "show", "--ledger", str(bad)], "not a geodp budget ledger"),
        (["budget", "init", "--ledger", str(other), "--epsilon", "1"], "already exists"),
        (["budget", "init", "--ledger", str(tmp_path / "none" / "l.db"), "--epsilon", "1"],
         "does not exist"),
        (["budget", "init", "--ledger", str(tmp_path / "l.db"), "--epsilon", "-1"],
         "--epsilon must be positive"),
        (["release", "mean", "cities", "--epsilon", "1", "--center", "0,0,2", "--radius", "1"],
         "--center is not a point"),
        (["release", "mean", "cities", "--epsilon", "1", "--center", str(tmp_path / "c.npy"),
          "--radius", "1"], "cannot read --center"),
        (["mean", "iris", "--tol", "-1"], "tol"),
        (["reproduce", "dp-rgd", "--reps", "0"], "--reps"),
        (["reproduce", "dp-rgd", "--out", str(bad)], "--out"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.startswith("error:") and message in err and err.count("\n") == 1, (args, err)
    assert bad.read_text() == "not a database" and other.read_bytes() == before
    assert main(["release", "mean", "iris", "--epsilon", "1", "--center", "5,3,4,1",
                 "--radius", "10", "--seed", "0"]) == 0



def test_python_api_refuses_strings_and_prints_short_reprs():
    import geodp
    from geodp.datasets import load

    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    with pytest.raises(TypeError, match="epsilon must be a number"):
        geodp.private_frechet_mean(ds.manifold, ds.points, "1", center, radius)
    rel = geodp.private_frechet_mean(ds.manifold, ds.points, 1.0, center, radius, rng=0)
    assert len(repr(rel)) < 200 and len(repr(ds)) < 200


def test_one_argument_order_the_old_one_deprecated():
    import geodp
    from geodp.datasets import load
    from geodp.statistics import frechet_mean

    ds = load("digits-covariance")
    center, radius = ds.public_ball()
    new = geodp.private_frechet_mean(ds.manifold, ds.points, 1.0, center, radius, rng=0)
    assert new.exact_sampler
    with pytest.raises(TypeError, match=r"takes a Manifold first.*got ndarray, AffineInvariantSPD"):
        geodp.private_frechet_mean(ds.points, ds.manifold, 1.0, center, radius, rng=0)
    with pytest.raises(TypeError, match=r"takes a Manifold first.*got ndarray, ndarray"):
        geodp.private_frechet_mean(ds.points, ds.points, 1.0, center, radius)
    with pytest.raises(TypeError, match="takes a Manifold first"):
        frechet_mean(ds.points, ds.points)


def test_every_data_set_has_a_public_ball_or_says_why():
    from geodp import datasets

    for name in datasets.names():
        ds = datasets.load(name)
        if ds.has_public_ball:
            center, radius = ds.public_ball()
            assert np.max(ds.manifold.dist(center, ds.points)) < radius
        else:
            with pytest.raises(ValueError, match=f"{name!r} has no public ball: .+"):
                ds.public_ball()


def test_heavy_clipping_warns_and_restrict_needs_the_laplace():
    import geodp
    from geodp.learn.data_ball import ClippingWarning

    x = np.random.default_rng(0).normal(size=(50, 2)) * 3
    with pytest.warns(ClippingWarning, match="onto the boundary"):
        rel = geodp.private_frechet_mean(Euclidean(2), x, 1.0, np.zeros(2), 0.5, clip_data=True, rng=0)
    assert rel.diagnostics["clipped"]["fraction"] > 0.05
    with pytest.raises(ValueError, match="restrict applies to the Riemannian Laplace"):
        geodp.private_frechet_mean(Euclidean(2), x, 1.0, np.zeros(2), 10.0,
                                   mechanism="wrapped-laplace", restrict=True)


def test_release_json_carries_the_guarantee_as_numbers(capsys):
    import json

    assert main(["release", "mean", "digits-covariance", "--mechanism", "wrapped-gaussian",
                 "--mu", "1.5", "--seed", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee_parameters"] == {"notion": "gdp", "mu": 1.5, "relation": "replace-one"}


@pytest.mark.parametrize("spec, says", [
    ("spd:3x3", "SIZE '3x3' gives 2 integers where this family takes 1"),
    ("grassmann:4", "SIZE '4' gives 1 integer where this family takes 2"),
    ("sphere:2,curvature", "option 'curvature' needs a value"),
    ("sphere:2,curvature=abc", "option curvature='abc' is not a valid float"),
])
def test_a_manifold_specification_with_the_wrong_sizes_or_an_empty_option_says_so(spec, says):
    with pytest.raises(ValueError, match=re.escape(says)):
        manifold_from_spec(spec)


def test_a_warning_that_depends_on_the_data_is_published_only_with_diagnostics(tmp_path, capsys):
    """Adversarial review: a warning whose raising depends on the data without noise (heavy
    clipping; an MCMC sampler failing its convergence checks, with R-hat and ESS in its text) was
    printed on stderr and put in the default JSON's "warnings". It now appears, on stderr and
    under diagnostics_not_private, only with --diagnostics."""
    import json

    path = tmp_path / "far.npy"
    np.save(path, np.random.default_rng(0).normal(size=(50, 2)) * 3)
    args = ["release", "mean", str(path), "--manifold", "euclidean:2", "--center", "0,0",
            "--radius", "0.5", "--clip", "--epsilon", "1", "--seed", "0"]
    assert main(args) == 0
    out, err = capsys.readouterr()
    assert "onto the boundary" not in out + err and json.loads(out)["warnings"] == []
    assert main(args + ["--diagnostics"]) == 0
    out, err = capsys.readouterr()
    assert "onto the boundary" in err
    assert any("onto the boundary" in w for w in json.loads(out)["diagnostics_not_private"]["warnings"])
