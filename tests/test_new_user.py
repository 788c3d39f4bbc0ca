"""What a new user trips over (issue 32): no tracebacks, no silent coercions, messages that name
the user's own parameter (the CLI flag or the Python keyword) and never quote data statistics."""

from __future__ import annotations

import numpy as np
import pytest

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
    assert status == 2 and "row 1 is not numeric; a header line is not allowed" in err
    assert "x,y,z" not in err


def test_nan_errors_name_the_record(tmp_path, capsys):
    x = _sphere_points()
    x[3, 1] = np.nan
    np.save(tmp_path / "n.npy", x)
    np.savetxt(tmp_path / "n.csv", x, delimiter=",")
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "n.npy", *BALL, "--epsilon", 1)
    assert "record 3 (index from 0) contains NaN" in err
    _, _, err = _cli(capsys, "release", "mean", tmp_path / "n.csv", *BALL, "--epsilon", 1)
    assert "row 4 contains NaN" in err
    with pytest.raises(ValueError, match=r"point 3 \(from 0\) contains NaN"):
        Sphere(2).check_point(x)
