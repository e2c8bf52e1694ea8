"""Figures in README.md and docs/ that come from a bench, rendered from bench/results/*.json.

A figure is written once, in its results file; the page holds a marker around it:

    turns per second | <!-- bench:service/now/turns_per_second -->15.2<!-- /bench -->

``service`` is ``bench/results/service.json``, the rest a path into it (``/`` between keys,
list indices as numbers); ``|SPEC`` after the path formats the value (``|,`` thousands,
``|.0%`` a percentage, ``|x`` a ratio as ``1.04x``). A whole table has one marker, its spec
in JSON (a cell's path is ``cell`` filled in, ``{row}/{column}`` unless given; ``|SPEC`` as
above, on a column or a row), so the Markdown between reads as a plain table:

    <!-- bench-table {"file": "service", "rows": {"now": "now", "before": "baseline"},
         "columns": {"turns/s": "turns_per_second|.1f", "p95 s": "turn_p95_s"}} -->
    |  | turns/s | p95 s |
    |---|---|---|
    | now | 15.2 | 1.9 |
    | before | 14.8 | 2.0 |
    <!-- /bench-table -->

``make docs`` rewrites every marker's text from the results; ``--check`` (and
``tests/unit/test_docs_figures.py``) fails naming every figure that disagrees, so a rerun
bench cannot leave a page behind.

    python -m bench.render_docs            # rewrite the pages
    python -m bench.render_docs --check    # exit 1 on any stale figure
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from functools import cache
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
MARKER = re.compile(
    r"<!-- bench:(?P<file>[\w-]+)/(?P<path>[^|>]+?)(?:\|(?P<spec>[^ >]*))? -->"
    r"(?P<text>.*?)<!-- /bench -->"
)

TABLE = re.compile(
    r"<!-- bench-table (?P<spec>\{.*?\}) -->\n(?P<text>.*?)<!-- /bench-table -->", re.DOTALL
)


class StaleFigure(ValueError):
    """A marker whose path is not in its results file."""


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


@cache
def results(name: str, folder: Path = RESULTS) -> Any:
    path = folder / f"{name}.json"
    if not path.exists():
        raise StaleFigure(f"no results file {path.relative_to(ROOT)}")
    return json.loads(path.read_text(encoding="utf-8"))


def value_at(name: str, path: str) -> Any:
    value = results(name)
    for key in path.split("/"):
        try:
            value = value[int(key)] if isinstance(value, list) else value[key]
        except (KeyError, IndexError, ValueError, TypeError):
            raise StaleFigure(f"bench/results/{name}.json has no {path!r} (stops at {key!r})") from None
    return value


def formatted(value: Any, spec: str | None) -> str:
    """
    >>> formatted(12229, ","), formatted(0.9853, ".0%"), formatted(1.04, "x"), formatted(0.2, None)
    ('12,229', '99%', '1.04x', '0.2')
    """
    if spec == "x":
        return f"{value:g}x"
    return format(value, spec) if spec else str(value)


def table(spec_text: str) -> str:
    """The Markdown table a ``bench-table`` marker's JSON spec describes (ending in a newline).

    >>> print(table('{"file": "service", "rows": {"now": "now"}, '
    ...             '"columns": {"workers": "now/workers"}}'), end="")  # doctest: +SKIP
    |  | workers |
    |---|---|
    | now | 2 |
    """
    try:
        spec = json.loads(spec_text)
        name, rows, columns = spec["file"], dict(spec["rows"]), dict(spec["columns"])
        cell = str(spec.get("cell", "{row}/{column}"))
    except (ValueError, KeyError, TypeError) as exc:
        problem = f"a bench-table marker is not a valid spec ({exc}): {spec_text[:80]}"
        raise StaleFigure(problem) from None
    lines = ["|  | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    for label, row_spec in rows.items():
        row, _, row_format = str(row_spec).partition("|")
        cells = []
        for column_spec in columns.values():
            column, _, column_format = str(column_spec).partition("|")
            path = cell.format(row=row, column=column)
            cells.append(formatted(value_at(name, path), column_format or row_format or None))
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def render(text: str) -> str:
    """``text`` with every marker's figure (and every table marker's table) taken from the
    results."""

    def figure(match: re.Match[str]) -> str:
        value = formatted(value_at(match["file"], match["path"]), match["spec"])
        return match.group(0).replace(f"-->{match['text']}<!--", f"-->{value}<!--", 1)

    def whole_table(match: re.Match[str]) -> str:
        return f"<!-- bench-table {match['spec']} -->\n{table(match['spec'])}<!-- /bench-table -->"

    return TABLE.sub(whole_table, MARKER.sub(figure, text))


def shown(page: Path) -> str:
    return str(page.relative_to(ROOT)) if page.is_relative_to(ROOT) else str(page)


def stale(page: Path) -> list[str]:
    """Each figure of ``page`` that disagrees with its results: 'page: path shows X, results Y'."""
    found = []
    text = page.read_text(encoding="utf-8")
    for tabled in TABLE.finditer(text):
        try:
            expected = table(tabled["spec"])
        except StaleFigure as exc:
            found.append(f"{shown(page)}: {exc}")
            continue
        if tabled["text"] != expected:
            found.append(f"{shown(page)}: a bench-table from {tabled['spec'][:60]}... is stale")
    for match in MARKER.finditer(text):
        try:
            expected = formatted(value_at(match["file"], match["path"]), match["spec"])
        except StaleFigure as exc:
            found.append(f"{shown(page)}: {exc}")
            continue
        if match["text"] != expected:
            found.append(
                f"{shown(page)}: {match['file']}/{match['path']} shows "
                f"{match['text']!r}, the results say {expected!r}"
            )
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 on a stale figure")
    args = parser.parse_args()
    if args.check:
        problems = [problem for page in pages() for problem in stale(page)]
        for problem in problems:
            print(problem, file=sys.stderr)
        raise SystemExit(1 if problems else 0)
    for page in pages():
        text = page.read_text(encoding="utf-8")
        rendered = render(text)
        if rendered != text:
            page.write_text(rendered, encoding="utf-8")
            print(f"rendered {page.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
