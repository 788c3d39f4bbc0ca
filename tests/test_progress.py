"""Progress bars: on stderr, only on a terminal and when switched on; stdout stays clean."""

from __future__ import annotations

import io
import json

import numpy as np

from geodp import progress
from geodp.cli import main
from geodp.learn import dp_rsgd
from geodp.manifolds import Sphere


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def run_dp_rgd(**kwargs):
    m = Sphere(2)
    x = m.random_ball(np.array([0.0, 0, 1]), 0.3, 50, 0)
    return dp_rsgd(m, lambda w, b: -m.log(w, b), x, 1.0, 1e-5, 20, init=np.array([0.0, 0, 1]),
                   clip=1.0, rng=0, **kwargs)


def test_bars_only_when_switched_on_and_on_a_terminal(monkeypatch):
    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    run_dp_rgd()
    assert term.getvalue() == "", "the Python API is quiet by default"
    with progress.showing():
        run_dp_rgd()
    assert "DP-RGD" in term.getvalue() and "/20" in term.getvalue()
    pipe = io.StringIO()
    monkeypatch.setattr("sys.stderr", pipe)
    with progress.showing():
        run_dp_rgd()
    assert pipe.getvalue() == "", "no bar when stderr is not a terminal"
    monkeypatch.setattr("sys.stderr", term := Terminal())
    run_dp_rgd(progress=True)
    assert "DP-RGD" in term.getvalue()


def test_cli_shows_bars_on_stderr_unless_quiet(monkeypatch, capsys, tmp_path):
    term = Terminal()
    monkeypatch.setattr("sys.stderr", term)
    assert main(["release", "pca", "digits-histograms", "--epsilon", "1", "--delta", "1e-5",
                 "--norm-bound", "1", "--steps", "30", "--seed", "0"]) == 0
    json.loads(capsys.readouterr().out)
    assert "private PCA" in term.getvalue() and "/30" in term.getvalue()
    monkeypatch.setattr("sys.stderr", term := Terminal())
    assert main(["release", "pca", "digits-histograms", "--epsilon", "1", "--delta", "1e-5",
                 "--norm-bound", "1", "--steps", "30", "--seed", "0", "--quiet"]) == 0
    json.loads(capsys.readouterr().out)
    assert term.getvalue() == ""


def test_chunked_mean_counts_its_passes_and_in_memory_stays_quiet(monkeypatch):
    da = __import__("pytest").importorskip("dask.array")
    from geodp.statistics import frechet_mean

    m = Sphere(2)
    x = m.random_ball(np.array([0.0, 0, 1]), 0.3, 400, 0)
    monkeypatch.setattr("sys.stderr", term := Terminal())
    with progress.showing():
        frechet_mean(m, x)
    assert term.getvalue() == "", "in memory a pass takes milliseconds: no bar"
    with progress.showing():
        frechet_mean(m, da.from_array(x, chunks=100))
    assert "passes over the chunks" in term.getvalue()
