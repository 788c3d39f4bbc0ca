"""One API vocabulary (issue 29): the manifold first in every estimator, refusals spelled in the
caller's interface, products on the command line, and public balls of the shipped data sets."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

import geodp
from geodp.cli import main
from geodp.learn import RecordsOutsideBound, private_pca, private_principal_subspace
from geodp.manifolds import Grassmann, Hyperbolic, Sphere, Stiefel


def vectors(n: int = 200, d: int = 6) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(n, d)) * np.linspace(2.0, 0.5, d) / 4


def test_pca_takes_the_sphere_first_and_refuses_another_manifold():
    z = vectors()
    rel = private_pca(Sphere(5), z, 1.0, 1e-5, 5.0, steps=3, rng=0)
    assert rel.value.shape == (6,)
    with pytest.raises(ValueError, match=r"manifold is Sphere\(4\) but data have 6 columns: pass "
                                         r"Sphere\(5\)"):
        private_pca(Sphere(4), z, 1.0, 1e-5, 5.0)
    with pytest.raises(ValueError, match=r"Hyperbolic\(5\), but private_pca releases a unit vector"
                                         r": pass Sphere\(5\)"):
        private_pca(Hyperbolic(5), z, 1.0, 1e-5, 5.0)
    with pytest.raises(ValueError, match=r"pass Sphere\(5\)"):
        private_pca(Sphere(5, curvature=4.0), z, 1.0, 1e-5, 5.0)
    with pytest.raises(TypeError, match="takes a Manifold first"):
        private_pca(z, Sphere(5), 1.0, 1e-5, 5.0)
    with pytest.raises(TypeError):  # the options are keyword-only
        private_pca(Sphere(5), z, 1.0, 1e-5, 5.0, 10)


def test_principal_subspace_takes_the_grassmann_manifold_first():
    z = vectors()
    rel = private_principal_subspace(Grassmann(6, 2), z, 1.0, 1e-5, 5.0, steps=3, rng=0)
    assert rel.value.shape == (6, 2) and rel.parameters["k"] == 2
    with pytest.raises(ValueError, match=r"Grassmann\(5, 2\) but data have 6 columns: pass "
                                         r"Grassmann\(6, k\) with 1 <= k < 6"):
        private_principal_subspace(Grassmann(5, 2), z, 1.0, 1e-5, 5.0)
    with pytest.raises(ValueError, match=r"Stiefel\(6, 2\), but private_principal_subspace "
                                         r"releases a subspace .*: pass Grassmann\(6, 2\)"):
        private_principal_subspace(Stiefel(6, 2), z, 1.0, 1e-5, 5.0)
    with pytest.raises(ValueError, match=r"pass Grassmann\(6, k\)"):
        private_principal_subspace(Sphere(5), z, 1.0, 1e-5, 5.0)


def test_cli_pca_on_the_sphere_or_the_grassmann_manifold(tmp_path, capsys):
    np.save(tmp_path / "z.npy", vectors())
    call = ["release", "pca", str(tmp_path / "z.npy"), "--epsilon", "1", "--delta", "1e-5",
            "--norm-bound", "5", "--steps", "3", "--seed", "0", "--quiet"]
    assert main(call) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["manifold"] == "Sphere(5)" and np.shape(out["value"]) == (6,)
    assert main(call + ["--manifold", "grassmann:6x2"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["manifold"] == "Grassmann(6, 2)" and np.shape(out["value"]) == (6, 2)


@pytest.mark.parametrize("spec", ["euclidean:6", "sphere:4", "hyperbolic:5", "stiefel:6x2",
                                  "grassmann:5x2", "spd:3"])
def test_cli_pca_refuses_a_manifold_that_does_not_match_the_data(tmp_path, capsys, spec):
    np.savetxt(tmp_path / "z.csv", vectors(), delimiter=",")
    assert main(["release", "pca", str(tmp_path / "z.csv"), "--manifold", spec, "--epsilon", "1",
                 "--delta", "1e-5", "--norm-bound", "5", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"--manifold {spec} does not match" in err
    assert "rows have length 6: pass --manifold sphere:5" in err and "grassmann:6xK" in err


def test_cli_pca_refuses_a_data_set_of_matrices(capsys):
    assert main(["release", "pca", "digits-covariance", "--epsilon", "1", "--delta", "1e-5",
                 "--norm-bound", "5", "--quiet"]) == 2
    assert "PCA needs vectors" in capsys.readouterr().err


def test_records_outside_the_bound_name_the_keyword_in_python_and_the_flag_on_the_cli(
        tmp_path, capsys):
    z = vectors() * 4
    with pytest.raises(RecordsOutsideBound) as refused:
        private_pca(Sphere(5), z, 1.0, 1e-5, 1.0)
    message = str(refused.value)
    assert "Pass clip_data=True" in message and "norm_bound = 1" in message
    assert "--" not in message
    cli = str(refused.value.spelled(lambda k: "--" + k.removesuffix("=True").replace("_", "-")))
    assert "Pass --clip-data" in cli and "--norm-bound = 1" in cli
    np.save(tmp_path / "z.npy", z)
    call = ["release", "pca", str(tmp_path / "z.npy"), "--epsilon", "1", "--delta", "1e-5",
            "--norm-bound", "1", "--steps", "2", "--seed", "0", "--quiet"]
    assert main(call) == 2
    err = capsys.readouterr().err
    assert "Pass --clip-data" in err and "--norm-bound = 1" in err and "clip_data" not in err
    assert main(call + ["--clip-data"]) == 0


def test_covariates_outside_the_range_name_the_keyword_or_the_flag(tmp_path, capsys):
    m = Sphere(2)
    x = np.linspace(0.0, 2.0, 20)
    y = m.exp(np.array([0.0, 0, 1]), x[:, None] * np.array([0.3, 0, 0]))
    with pytest.raises(RecordsOutsideBound, match=r"one or more covariates lie outside x_range = "
                                                  r"\(0, 1\).*Pass clip_data=True"):
        geodp.private_geodesic_regression(m, x, y, 1.0, 0.5, (0.0, 1.0), 1.0, rng=0)
    np.savez(tmp_path / "r.npz", x=x, y=y)
    assert main(["release", "regression", str(tmp_path / "r.npz"), "--manifold", "sphere:2",
                 "--epsilon", "1", "--tau", "0.5", "--v-max", "1", "--x-range", "0", "1",
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "outside --x-range = (0, 1)" in err and "Pass --clip-data" in err
    assert "clip_data" not in err and "x_range" not in err


def test_points_outside_the_ball_name_the_keyword_in_python():
    m = Sphere(2)
    x = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    with pytest.raises(RecordsOutsideBound, match="one or more points lie outside the ball of radius "
                                                  "0.5 around the center.*Pass clip_data=True"):
        geodp.private_frechet_mean(m, x, 1.0, np.array([0.0, 0, 1]), 0.5)


@pytest.mark.parametrize("spec,expected", [
    ("product:sphere:2+euclidean:3", "Product(Sphere(2), Euclidean(3))"),
    ("product:sphere:2,curvature=+4+stiefel:4x2", "Product(Sphere(2, curvature=4), Stiefel(4, 2))"),
    ("product:hyperbolic:2,curvature=-0.5+so:3",
     "Product(Hyperbolic(2, curvature=-0.5), SpecialOrthogonal(3))"),
    ("product:spd:2,metric=log-euclidean+grassmann:4x2+euclidean:1",
     "Product(SPD(2, metric='log-euclidean'), Grassmann(4, 2), Euclidean(1))"),
])
def test_a_product_is_spelled_factor_by_factor(spec, expected):
    from geodp.manifolds.spec import manifold_from_spec

    assert repr(manifold_from_spec(spec)) == expected


@pytest.mark.parametrize("spec,message", [
    ("product:sphere:x+euclidean:3", "cannot read manifold 'sphere:x': SIZE 'x'"),
    ("product:nope:3+euclidean:3", "cannot read manifold 'nope:3'"),
    ("sphere:2,radius=3", "no option 'radius'"),
])
def test_a_spec_that_cannot_be_read_says_which_part(spec, message):
    from geodp.manifolds.spec import manifold_from_spec

    with pytest.raises(ValueError, match=re.escape(f"cannot read manifold '{spec}'") + ".*"
                       + re.escape(message)):
        manifold_from_spec(spec)


def test_cli_releases_a_mean_on_a_product(tmp_path, capsys):
    from geodp.cli import build_parser
    from geodp.manifolds import Euclidean, Product

    m = Product(Sphere(2), Euclidean(3))
    center = m.origin()
    np.savetxt(tmp_path / "p.csv", m.random_ball(center, 0.3, 100, np.random.default_rng(0)),
               delimiter=",")
    assert main(["release", "mean", str(tmp_path / "p.csv"), "--manifold",
                 "product:sphere:2+euclidean:3", "--mechanism", "dp-rgd", "--epsilon", "1",
                 "--delta", "1e-5", "--center", ",".join(map(str, center)), "--radius", "0.5",
                 "--seed", "0", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["manifold"] == "Product(Sphere(2), Euclidean(3))" and len(out["value"]) == 6
    m.check_point(np.array(out["value"]))
    release = next(a for a in build_parser()._actions if a.dest == "command").choices["release"]
    mean = next(a for a in release._actions if a.dest == "release").choices["mean"]
    assert "product:sphere:2+euclidean:3" in mean.format_help().replace("\n", " ").replace("  ", "")


@pytest.mark.parametrize("name", geodp.datasets.names())
def test_every_data_set_ships_a_ball_holding_its_points_or_says_why_not(name, capsys):
    """A shipped ball holds every record and meets Assumption 1 (a release calibrates on it);
    without one, Python and the command line refuse and give the data set's reason."""
    from geodp.statistics.sensitivity import check_assumption_1

    ds = geodp.datasets.load(name)
    if ds.has_public_ball:
        center, radius = ds.public_ball()
        assert np.max(ds.manifold.dist(center, ds.points)) < radius
        check_assumption_1(ds.manifold, radius)
        return
    assert ds.no_public_ball
    with pytest.raises(ValueError, match=f"{name!r} has no public ball: " + re.escape(ds.no_public_ball)):
        ds.public_ball()
    assert main(["release", "mean", name, "--epsilon", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "--center and --radius are required" in err and ds.no_public_ball in err
