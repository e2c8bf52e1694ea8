"""How the benches and the training scripts report: a Markdown table, and results written to
bench/results/<name>.md and .json (the figures the docs render from, ``make docs``).

Usage::

    lines = ["# Title", "", *table(["set", "right"], [("dev", 0.9)])]
    write_results("page_choice", lines, {"accuracy": 0.9})
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
# the shared datasets sit beside the repository (never copied into it)
DATASETS = ROOT.parent / "shared" / "datasets"


def table(columns: Sequence[str], rows: Iterable[Sequence[object]]) -> list[str]:
    """A Markdown table.

    >>> table(["a", "b"], [(1, 2)])
    ['| a | b |', '|---|---|', '| 1 | 2 |']
    """
    return [
        "| " + " | ".join(columns) + " |",
        "|---" * len(columns) + "|",
        *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows),
    ]


def write_results(name: str, lines: list[str], data: object) -> None:
    """Print the Markdown and write bench/results/<name>.md and .json."""
    print("\n".join(lines))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.md").write_text("\n".join(lines) + "\n")
    (RESULTS / f"{name}.json").write_text(json.dumps(data, indent=1) + "\n")
