"""Writing experiment results: CSV always, PNG through matplotlib's Agg backend when installed."""

from __future__ import annotations

import csv
from pathlib import Path


def write_csv(path: Path, rows: list[dict]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def pyplot():
    """matplotlib.pyplot on the Agg backend, or None when matplotlib is not installed."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig, path: Path, dpi: int = 120) -> bool:
    """Lay out, write as PNG and close a matplotlib figure; True (the figure was written)."""
    import matplotlib.pyplot as plt

    fig.tight_layout()
    fig.savefig(path, dpi=dpi)
    plt.close(fig)
    return True


VERDICTS = ("agree", "partly", "disagree", "not reproduced")


def write_summary(out: Path, title: str, findings: list[dict],
                  sections: dict[str, str] | None = None) -> Path:
    """Write ``summary.md``: the paper's value or claim beside geodp's, figure by figure.

    Parameters
    ----------
    out : Path
        The reproduction's output directory.
    title : str
        The paper, as the heading of the summary.
    findings : list of dict
        One per figure (or table), with keys ``figure`` (e.g. ``"Figure 1a"``; its files are
        named ``fig1a.png`` / ``fig1a.csv``), ``paper`` (the paper's value or claim), ``geodp``
        (what this run found), ``verdict`` (one of :data:`VERDICTS`) and ``why``.
    sections : dict of str to str, optional
        Sections after the table (heading -> text), e.g. the setting a reproduction chose.

    Returns
    -------
    Path
        The summary file.
    """
    for f in findings:
        if f["verdict"] not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}, got {f['verdict']!r}")
    lines = [f"# {title}", "", "| figure | paper | geodp | verdict | why |", "|---|---|---|---|---|"]
    lines += [f"| {f['figure']} | {f['paper']} | {f['geodp']} | {f['verdict']} | {f['why']} |"
              for f in findings]
    for heading, text in (sections or {}).items():
        lines += ["", f"## {heading}", "", text]
    out.mkdir(parents=True, exist_ok=True)
    path = out / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path
