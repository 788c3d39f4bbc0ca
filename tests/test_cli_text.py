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


def _both(capsys, argv: list[str]) -> tuple[dict, list[str]]:
    """The JSON output of ``geodp argv`` and its ``--format text`` lines."""
    assert main(argv) == 0
    public = json.loads(capsys.readouterr().out)
    assert main(argv + ["--format", "text"]) == 0
    return public, capsys.readouterr().out.splitlines()


def test_budget_init_show_and_history_as_text(tmp_path, capsys):
    ledger = str(tmp_path / "l.db")
    assert main(["budget", "init", "--ledger", ledger, "--epsilon", "5", "--format", "text"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "total_epsilon: 5" in lines and "remaining_epsilon: 5" in lines
    assert main(MEAN + ["--ledger", ledger]) == 0
    capsys.readouterr()
    public, lines = _both(capsys, ["budget", "history", "--ledger", ledger])
    entry = public["entries"][0]
    at = lines.index(f"  - id: {entry['id']}")
    assert lines[at - 1] == "entries:" and f"    guarantee: {entry['guarantee']}" in lines[at:]
    assert f"remaining_epsilon: {public['remaining_epsilon']:.6g}" in lines
    public, lines = _both(capsys, ["budget", "show", "--ledger", ledger])
    assert f"spent_epsilon: {public['spent_epsilon']:.6g}" in lines and "entries:" not in lines


def test_audit_as_text_states_claim_bound_and_verdict(capsys):
    public, lines = _both(capsys, ["audit", "laplace", "--epsilon", "1", "--samples", "2000",
                                   "--seed", "0", "--quiet"])
    assert lines[:2] == ["mechanism: laplace", "manifold: Sphere(2)"]
    assert "claimed:" in lines and "  epsilon: 1" in lines
    assert f"audited_lower_bound: {public['audited_lower_bound']:.6g}" in lines
    assert f"verdict: {public['verdict']}" in lines


def test_datasets_as_text_one_block_per_data_set(capsys):
    public, lines = _both(capsys, ["datasets"])
    names = [line[len("  - name: "):] for line in lines if line.startswith("  - name: ")]
    assert names == [row["name"] for row in public["datasets"]]
    first = public["datasets"][0]
    assert lines[1:4] == [f"  - name: {first['name']}", f"    manifold: {first['manifold']}",
                          f"    n: {first['n']}"]


def test_every_subcommand_that_prints_json_takes_format_text():
    from geodp.cli import build_parser

    def leaves(parser, path=()):
        subs = [a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"]
        if not subs:
            yield path, parser
        for action in subs:
            for name, child in action.choices.items():
                yield from leaves(child, path + (name,))

    for path, parser in leaves(build_parser()):
        formats = [a for a in parser._actions if "--format" in a.option_strings]
        assert formats and formats[0].choices == ("json", "text"), path
