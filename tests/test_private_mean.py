"""Theorem 2 sensitivity, the private Fréchet mean and its command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import geodp
from geodp.cli import main
from geodp.manifolds import SPD, Hyperbolic, KendallShape, Sphere
from geodp.privacy import BudgetExceededError, BudgetLedger, PureDP
from geodp.statistics import frechet_mean, frechet_mean_sensitivity


def test_theorem_2_values():
    r, n = np.pi / 8, 10
    h = 2 * r / np.tan(2 * r)
    assert frechet_mean_sensitivity(Sphere(2), r, n) == pytest.approx(2 * r * (2 - h) / (n * h))
    assert frechet_mean_sensitivity(Sphere(2), r, n) == pytest.approx((2 - np.pi / 4) / 10)
    # not the tan(2r)/n of public code
    assert frechet_mean_sensitivity(Sphere(2), r, n) != pytest.approx(np.tan(2 * r) / n)
    assert frechet_mean_sensitivity(SPD(2), 1.5, 20) == pytest.approx(2 * 1.5 / 20)
    assert frechet_mean_sensitivity(Hyperbolic(3), 2.0, 10) == pytest.approx(0.4)
    # curvature 4 on Kendall's space: r* = pi/8
    with pytest.raises(ValueError, match="r\\* = .*0.392699"):
        frechet_mean_sensitivity(KendallShape(5), 0.4, 10)


def test_sensitivity_bounds_simulated_neighbours():
    m, r, n = Sphere(2), np.pi / 8, 8
    c = np.array([0.0, 0.0, 1.0])
    rng = np.random.default_rng(0)
    delta = frechet_mean_sensitivity(m, r, n)
    worst = 0.0
    for _ in range(200):
        d = m.random_ball(c, r, n, rng)
        d2 = d.copy()
        d2[-1] = m.random_ball(c, r, 1, rng)[0]
        worst = max(worst, float(m.dist(frechet_mean(m, d).mean, frechet_mean(m, d2).mean)))
    assert worst <= delta
    assert worst > 0.3 * delta


def test_private_mean_release_fields_and_ledger(tmp_path):
    m = SPD(3)
    x = m.random_ball(np.eye(3), 1.0, 40, np.random.default_rng(1))
    ledger = BudgetLedger(tmp_path / "l.db", total_epsilon=1.5)
    rel = geodp.private_frechet_mean(m, x, 1.0, np.eye(3), 1.2, ledger=ledger, rng=3)
    m.check_point(rel.value)
    assert rel.guarantee == PureDP(1.0)
    assert rel.sensitivity == pytest.approx(2 * 1.2 / 40) and rel.scale == rel.sensitivity
    assert rel.exact_sampler and rel.diagnostics["sampler"]["exact"]
    assert ledger.spent() == (1.0, 0.0) and ledger.history()[0]["status"] == "done"
    with pytest.raises(BudgetExceededError):
        geodp.private_frechet_mean(m, x, 1.0, np.eye(3), 1.2, ledger=ledger, rng=3)
    assert ledger.spent() == (1.0, 0.0)
    same = geodp.private_frechet_mean(m, x, 1.0, np.eye(3), 1.2, rng=3)
    assert np.allclose(same.value, rel.value)


def test_points_outside_the_ball_raise_or_are_clipped():
    m = Sphere(2)
    c = np.array([0.0, 0.0, 1.0])
    x = m.random_ball(c, 0.3, 30, np.random.default_rng(0))
    far = m.exp(c, np.array([0.6, 0.0, 0.0]))
    x[:2] = far
    with pytest.raises(ValueError, match="one or more points lie outside the ball of radius 0.4") as err:
        geodp.private_frechet_mean(m, x, 1.0, c, 0.4)
    assert "0.6" not in str(err.value) and "2 " not in str(err.value)  # no data statistic
    assert err.value.count == 2  # for the curator
    with pytest.warns(UserWarning, match="more than 5% of the records"):
        rel = geodp.private_frechet_mean(m, x, 1.0, c, 0.4, clip_data=True, rng=0)
    assert rel.diagnostics["clipped"] == {"records_clipped": 2, "fraction": 2 / 30}


def test_restricted_release_doubles_scale_and_stays_in_ball():
    m = Hyperbolic(2)
    c = np.array([1.0, 0.0, 0.0])
    x = m.random_ball(c, 1.0, 10, np.random.default_rng(0))
    rel = geodp.private_frechet_mean(m, x, 0.1, c, 1.0, restrict=True, rng=1)
    assert rel.scale == pytest.approx(2 * rel.sensitivity / 0.1)
    assert m.dist(c, rel.value) <= 1.0
    with pytest.raises(ValueError, match="normalisable only for scale < 1/\\(\\(d-1\\)"):
        geodp.private_frechet_mean(m, x, 0.1, c, 1.0, restrict=False, rng=1)


def test_cli_release_mean_with_dataset_bound_and_ledger(tmp_path, capsys):
    main(["budget", "init", "--ledger", str(tmp_path / "b.db"), "--epsilon", "1.0"])
    capsys.readouterr()
    main(["release", "mean", "digits-covariance", "--epsilon", "0.6", "--seed", "1",
          "--ledger", str(tmp_path / "b.db")])
    out = json.loads(capsys.readouterr().out)
    assert out["guarantee"] == "0.6-DP (replace-one)" and out["exact_sampler"]
    assert out["relation"] == "replace-one" and "Theorem 2" in out["theorem"]
    assert "diagnostics_not_private" not in out and "frechet_iterations" not in json.dumps(out)
    assert "public bound" in out["ball"]
    assert main(["release", "mean", "digits-covariance", "--epsilon", "0.6",
                 "--ledger", str(tmp_path / "b.db")]) == 2
    assert "would spend" in capsys.readouterr().err
    main(["budget", "history", "--ledger", str(tmp_path / "b.db")])
    shown = json.loads(capsys.readouterr().out)
    assert shown["relation"] == "replace-one" and shown["entries"][0]["relation"] == "replace-one"


def test_cli_release_mean_requires_a_public_ball(capsys):
    assert main(["release", "mean", "cities", "--epsilon", "1"]) == 2
    assert "--center and --radius are required" in capsys.readouterr().err


def test_cli_refusal_names_the_flag_not_the_keyword(tmp_path, capsys):
    """A record outside the ball: Python callers read clip_data=True, the CLI --clip-data."""
    x = np.array([[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    np.save(tmp_path / "x.npy", x)
    call = ["release", "mean", str(tmp_path / "x.npy"), "--manifold", "sphere:2", "--epsilon", "1",
            "--center", "0,0,1", "--radius", "0.5"]
    assert main(call) == 2
    err = capsys.readouterr().err
    assert "--clip-data" in err and "clip_data=True" not in err
    assert main(call + ["--clip-data", "--seed", "0"]) == 0
