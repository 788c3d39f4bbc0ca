"""Optional: geodp's geodesic regression agrees with geomstats 2.8.0's ``GeodesicRegression``.

geomstats 2.8.0 does not import with NumPy >= 2.4, so it runs in its own environment: the Python
named by ``GEODP_GEOMSTATS_PYTHON``, or the one ``benchmarks/bench_geometry.py`` creates in
``benchmarks/.geomstats-venv``. Skipped when neither exists. geomstats' Riemannian method needs an
autodiff backend; its extrinsic method runs on NumPy and minimises the same energy.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

from geodp.manifolds import Sphere
from geodp.statistics import geodesic_regression

VENV_PYTHON = Path(__file__).resolve().parents[1] / "benchmarks" / ".geomstats-venv" / "bin" / "python"

SCRIPT = """
import sys
import numpy as np
from geomstats.geometry.hypersphere import Hypersphere
from geomstats.learning.geodesic_regression import GeodesicRegression

data = np.load(sys.argv[1])
np.random.seed(0)  # geomstats draws its initial shooting vector from NumPy's global generator
fit = GeodesicRegression(Hypersphere(2), center_X=False, method="extrinsic",
                         initialization="warm_start").fit(data["x"], data["y"])
np.savez(sys.argv[2], p=np.asarray(fit.intercept_), v=np.asarray(fit.coef_))
"""


def geomstats_python() -> Path | None:
    named = os.environ.get("GEODP_GEOMSTATS_PYTHON")
    python = Path(named) if named else VENV_PYTHON
    return python if python.exists() else None


def test_geodesic_regression_agrees_with_geomstats(tmp_path):
    python = geomstats_python()
    if python is None:
        pytest.skip("no geomstats 2.8.0 environment (set GEODP_GEOMSTATS_PYTHON)")
    rng = np.random.default_rng(0)
    m = Sphere(2)
    x = rng.uniform(0.0, 1.0, 200)
    p0 = m.project(np.array([0.2, -0.1, 1.0]))
    v0 = m.to_tangent(p0, np.array([0.6, 0.3, 0.0]))
    fitted = m.exp(p0, x[:, None] * v0)
    y = m.exp(fitted, m.from_coords(fitted, 0.05 * rng.standard_normal((200, 2))))
    np.savez(tmp_path / "in.npz", x=x, y=y)
    (tmp_path / "fit.py").write_text(SCRIPT)
    run = subprocess.run([str(python), str(tmp_path / "fit.py"), str(tmp_path / "in.npz"),
                          str(tmp_path / "out.npz")], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    theirs = np.load(tmp_path / "out.npz")
    ours = geodesic_regression(m, x, y, tol=1e-12)
    # geomstats stops at scipy's default tolerance: from its seeded start 4e-7 here (unseeded, its
    # random start left it 2e-8 to 4e-5 away over runs)
    assert np.max(np.abs(theirs["p"] - ours.footpoint)) < 1e-6
    assert np.max(np.abs(theirs["v"] - ours.shooting_vector)) < 1e-6
    assert np.max(np.abs(theirs["p"] - p0)) > 1e-3  # the data are noisy: not a trivial agreement
