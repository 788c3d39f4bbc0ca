"""``geodp --help`` stays fast: it imports neither NumPy nor SciPy nor the library's modules
(checked on the modules a fresh interpreter has loaded, not on a timing); ``import geodp`` keeps
every public attribute, loaded on first use."""

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


def test_a_subcommand_still_sees_the_whole_library():
    loaded = _loaded(["release", "mean", "--help"])
    assert "scipy" in {m.split(".")[0] for m in loaded}  # the mechanisms' registry was read


def test_import_geodp_keeps_its_attributes():
    import geodp

    assert callable(geodp.private_frechet_mean) and callable(geodp.private_geodesic_regression)
    assert geodp.Release.__name__ == "Release"
    assert geodp.manifolds.Sphere(2).dim == 2 and "cells" in geodp.datasets.names()
    assert {"private_frechet_mean", "Release", "estimators"} <= set(dir(geodp))
    from geodp import Release, private_frechet_mean  # noqa: F401
    with pytest.raises(AttributeError):
        geodp.no_such_thing
