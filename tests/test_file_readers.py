"""Input files: one record is one point, never reshaped across rows (a privacy bug otherwise: a
record split over two points would be released with the sensitivity of twice the records)."""

from __future__ import annotations

import numpy as np
import pytest

from geodp.cli import main, read_points
from geodp.manifolds import SPD, Euclidean, Hyperbolic, KendallShape, Sphere
from geodp.manifolds.spec import manifold_from_spec

FAMILIES = {
    "euclidean:3": Euclidean(3),
    "sphere:2": Sphere(2),
    "hyperbolic:2": Hyperbolic(2),
    "spd:2": SPD(2),
    "kendall:4": KendallShape(4),
}


def points(m, n=6):
    rng = np.random.default_rng(0)
    if isinstance(m, Euclidean):
        return rng.normal(size=(n, 3))
    if isinstance(m, SPD):
        return m.random_ball(np.eye(2), 0.5, n, rng)
    if isinstance(m, KendallShape):
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
        with pytest.raises(SystemExit, match="has 3 comma-separated values"):
            read_points(str(tmp_path / "a.csv"), manifold_from_spec(spec))
    np.save(tmp_path / "b.npy", np.random.default_rng(2).normal(size=(10, 3, 3)))
    with pytest.raises(SystemExit, match=r"shape \(10, 3, 3\)"):
        read_points(str(tmp_path / "b.npy"), Euclidean(3))


def test_headers_ragged_rows_and_empty_files_are_clear_errors(tmp_path, capsys):
    (tmp_path / "h.csv").write_text("x,y,z\n1,2,3\n")
    (tmp_path / "r.csv").write_text("1,2,3\n4,5\n")
    (tmp_path / "e.csv").write_text("\n")
    for name, message in [("h.csv", "not numeric"), ("r.csv", "row 2 has 2"), ("e.csv", "empty")]:
        with pytest.raises(SystemExit, match=message):
            main(["release", "mean", str(tmp_path / name), "--manifold", "euclidean:3",
                  "--epsilon", "1", "--center", "[0,0,0]", "--radius", "10"])
