"""``geodp --help`` and every subcommand's ``--help`` stay fast: they import neither NumPy nor
SciPy nor the library's numerical modules (checked on the modules a fresh interpreter has loaded,
not on a timing); ``import geodp`` keeps every public attribute, loaded on first use."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("numpy", "scipy", "threadpoolctl", "tqdm", "geodp.learn", "geodp.manifolds",
         "geodp.mechanisms", "geodp.privacy", "geodp.datasets", "geodp.statistics")

PROBE = """
import sys
from geodp.cli import main
try:
    main({argv!r})
except SystemExit:
    pass
print(",".join(sorted(m for m in sys.modules if m.split(".")[0] in ("numpy", "scipy", "threadpoolctl", "tqdm", "geodp"))))
"""


def _loaded(argv: list[str]) -> set[str]:
    res = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True,
                         text=True, check=True)
    return set(res.stdout.strip().splitlines()[-1].split(","))


@pytest.mark.parametrize("argv", [["--help"], ["-h"], ["--version"], []])
def test_top_level_help_imports_nothing_heavy(argv):
    loaded = _loaded(argv)
    assert not [m for m in loaded if m.startswith(HEAVY)], loaded


def test_the_entry_point_module_itself_is_light():
    res = subprocess.run([sys.executable, "-m", "geodp.cli", "--help"], capture_output=True,
                         text=True)
    assert res.returncode == 0 and "release" in res.stdout and "audit" in res.stdout


HELPS = [["release", "mean", "--help"], ["release", "regression", "-h"], ["release", "pca", "--help"],
         ["release", "--help"], ["mean", "--help"], ["audit", "--help"], ["budget", "--help"],
         ["datasets", "--help"], ["reproduce", "--help"], ["reproduce", "wrapped", "--help"]]
NUMERICAL = ("numpy", "scipy", "threadpoolctl", "tqdm", "geodp.learn", "geodp.privacy",
             "geodp.datasets", "geodp.statistics", "geodp.manifolds.base", "geodp.mechanisms.laplace")


@pytest.mark.parametrize("argv", HELPS, ids=" ".join)
def test_every_subcommand_help_imports_nothing_numerical(argv):
    loaded = _loaded(argv)
    assert not [m for m in loaded if m.startswith(NUMERICAL)], loaded


def test_subcommand_help_lists_the_registered_mechanisms(capsys):
    from geodp.cli import main
    from geodp.mechanisms.registry import MECHANISMS

    for argv in (["release", "mean", "--help"], ["audit", "--help"]):
        with pytest.raises(SystemExit):
            main(argv)
        text = "".join(capsys.readouterr().out.split())  # argparse wraps lines, also at hyphens
        outputs = [name for name, m in MECHANISMS.items() if m.perturbs == "output"]
        assert all(name in text for name in (MECHANISMS if argv[0] == "release" else outputs))
        assert argv[0] == "audit" or all("".join(m.summary.split()) in text
                                         for m in MECHANISMS.values())


def test_import_geodp_keeps_its_attributes():
    import geodp

    assert callable(geodp.private_frechet_mean) and callable(geodp.private_geodesic_regression)
    assert geodp.Release.__name__ == "Release"
    assert geodp.manifolds.Sphere(2).dim == 2 and "cells" in geodp.datasets.names()
    assert {"private_frechet_mean", "Release", "estimators"} <= set(dir(geodp))
    from geodp import Release, private_frechet_mean  # noqa: F401
    with pytest.raises(AttributeError):
        geodp.no_such_thing
