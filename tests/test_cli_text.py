"""``--format text``: the same release for people — the value (a matrix as aligned rows), the
guarantee statement and the public parameters; diagnostics only with --diagnostics."""

from __future__ import annotations

import json

import numpy as np

from geodp.cli import main, render_text

MEAN = ["release", "mean", "digits-covariance", "--epsilon", "1", "--seed", "0", "--quiet"]


def _matrix_rows(lines: list[str], start: int, count: int) -> np.ndarray:
    rows = lines[start:start + count]
    return np.array([[float(v) for v in row.strip().strip("[]").split()] for row in rows])


def test_release_mean_as_text_shows_the_matrix_statement_and_public_parameters(capsys):
    assert main(MEAN) == 0
    public = json.loads(capsys.readouterr().out)
    assert main(MEAN + ["--format", "text"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "value:"
    value = _matrix_rows(lines, 1, 5)
    np.testing.assert_allclose(value, public["value"], rtol=1e-5)
    # rows aligned: every row has the same length and the columns end at the same place
    rows = lines[1:6]
    assert len({len(r) for r in rows}) == 1
    assert f"guarantee: {public['statement']}" in lines
    assert "public parameters:" in lines and "  n: 1797" in lines
    assert "diagnostics_not_private" not in text and "NOT PRIVATE" not in text


def test_text_diagnostics_only_on_request_and_marked_not_private(capsys):
    assert main(MEAN + ["--format", "text", "--diagnostics"]) == 0
    text = capsys.readouterr().out
    public, diagnostics = text.split("\ndiagnostics_not_private:\n")
    assert "frechet_iterations" not in public and "NOT PRIVATE" not in public
    assert "note: NOT PRIVATE" in diagnostics and "frechet_iterations: 3" in diagnostics


def test_json_stays_the_default(capsys):
    assert main(MEAN) == 0
    json.loads(capsys.readouterr().out)


def test_release_pca_vector_as_one_line(tmp_path, capsys):
    rng = np.random.default_rng(0)
    np.save(tmp_path / "z.npy", rng.normal(size=(200, 4)))
    call = ["release", "pca", str(tmp_path / "z.npy"), "--epsilon", "1", "--delta", "1e-5",
            "--norm-bound", "5", "--steps", "3", "--seed", "0", "--quiet", "--clip-data"]
    assert main(call) == 0
    public = json.loads(capsys.readouterr().out)
    assert main(call + ["--format", "text"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("value: [")
    np.testing.assert_allclose([float(v) for v in lines[0][len("value: ["):-1].split()],
                               public["value"], rtol=1e-5)
    assert lines[1] == f"guarantee: {public['statement']}"
    assert "public parameters:" in lines


def test_render_text_aligns_columns_and_names_missing_values():
    out = render_text({"value": [[1.0, -22.5], [300.25, 4.0]], "statement": "1-DP (replace-one)",
                       "parameters": {"n": 3, "ball": None}, "warnings": []})
    assert out.splitlines() == ["value:", "  [     1   -22.5]", "  [300.25       4]",
                                "guarantee: 1-DP (replace-one)", "public parameters:", "  n: 3",
                                "  ball: (none)", "warnings: (none)"]
