"""Shipped data sets and the command line."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

import geodp.datasets as datasets
from geodp.cli import main


@pytest.mark.parametrize("name", datasets.names())
def test_datasets_load_onto_their_manifold(name):
    ds = datasets.load(name)
    points, manifold = ds
    manifold.check_point(points)
    assert len(ds.labels) == len(points) > 10
    assert ds.source


def test_every_family_has_real_data():
    families = {type(datasets.load(n).manifold).__name__ for n in datasets.names()}
    assert {"Euclidean", "Sphere", "Hyperbolic", "AffineInvariantSPD", "KendallShape"} <= families


def test_unknown_dataset_lists_names():
    with pytest.raises(KeyError, match="cities"):
        datasets.load("nope")


def test_cli_mean_dataset(capsys):
    main(["mean", "digits-covariance"])
    out = json.loads(capsys.readouterr().out)
    assert out["converged"] and out["manifold"].startswith("SPD(5")
    assert np.array(out["value"]).shape == (5, 5)


def test_cli_mean_csv_file(tmp_path, capsys):
    x = datasets.load("digits-gaussians").points[:50]
    np.savetxt(tmp_path / "h.csv", x, delimiter=",")
    main(["mean", str(tmp_path / "h.csv"), "--manifold", "hyperbolic:2,curvature=-0.5"])
    out = json.loads(capsys.readouterr().out)
    assert out["converged"] and out["warnings"] == []


def test_cli_mean_warns_in_json(capsys):
    main(["mean", "cities"])
    out = json.loads(capsys.readouterr().out)
    assert "may not be unique" in out["warnings"][0]


def _subcommands(parser, prefix=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield prefix + (name,)
                yield from _subcommands(sub, prefix + (name,))


def test_cli_help_on_every_subcommand():
    from geodp.cli import build_parser

    commands = list(_subcommands(build_parser()))
    assert ("release", "mean") in commands
    for cmd in commands:
        res = subprocess.run([sys.executable, "-m", "geodp.cli", *cmd, "--help"],
                             capture_output=True, text=True)
        assert res.returncode == 0 and "usage" in res.stdout, cmd


@pytest.mark.parametrize("name,size", [("connectomes", 28), ("emg-covariance", 8)])
def test_large_spd_data_sets_lie_in_their_public_balls(name, size):
    ds = datasets.load(name)
    assert ds.manifold.point_shape == (size, size)
    center, radius = ds.public_ball()
    assert np.max(ds.manifold.dist(center, ds.points)) < radius


def test_cli_release_regression_on_the_trilobites(capsys):
    import json
    import warnings

    from geodp.cli import main
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        refused = main(["release", "regression", "trilobites", "--epsilon", "1", "--tau", "0.5",
                        "--v-max", "0.5", "--seed", "0"])
        assert refused == 2 and "pass --allow-approximate" in capsys.readouterr().err
        code = main(["release", "regression", "trilobites", "--epsilon", "1", "--tau", "0.5",
                     "--v-max", "0.5", "--seed", "0", "--allow-approximate"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee"] == "1-DP (replace-one)" and set(out["value"]) == {"footpoint", "shooting_vector"}
    assert out["parameters"]["x_range"] == [-4.0, 2.0] and "diagnostics_not_private" not in out
    assert out["exact_sampler"] is False
    assert main(["release", "regression", "cities", "--epsilon", "1", "--tau", "1", "--v-max", "1"]) == 2
    assert "no covariate" in capsys.readouterr().err
    assert main(["release", "regression", "trilobites", "--epsilon", "1", "--tau", "0.5",
                 "--v-max", "0.5", "--max-steps", "100"]) == 2
    assert "--max-steps = 100 must be at least" in capsys.readouterr().err
