"""Passage text as units an answer can quote: sentences, list items, headings, table rows.

Markdown emphasis and code marks are removed whole (no dangling ``**``), link markers such as
``[1 ]`` dropped, table separator rows skipped and table rows read as "cell: cell". Headings
(``#`` lines, short lines without an end mark) and questions (FAQ pages ask before they answer)
help to find where an answer is but are never quoted.

Usage::

    >>> units = split_units("## Refunds\\nRefunds take **5 to 7** days.\\n- By card: 5 days")
    >>> [(u.kind, u.text) for u in units]
    [('heading', 'Refunds'), ('sentence', 'Refunds take 5 to 7 days.'), ('item', 'By card: 5 days')]
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Literal

from storage.text import split_sentences

UnitKind = Literal["sentence", "item", "heading", "question", "table"]

WINDOW = 2  # adjacent sentence units in one window, for both answer gates
_EMPHASIS = re.compile(r"\*\*|__|`")
_SINGLE_STAR = re.compile(r"(?<!\w)\*(?=\S)([^*\n]+?)(?<=\S)\*(?!\w)")
_LINK_MARK = re.compile(r"\s*\[\d+\s*\]")
_MD_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")
_ITEM = re.compile(r"^(?:[-*+•]|\d{1,2}[.)])\s+")
_TABLE_RULE = re.compile(r"^\|?[\s:\-|]+\|?$")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,;:.!?])")
HEADING_MAX_WORDS = 10


@dataclass(frozen=True)
class Unit:
    text: str
    kind: UnitKind

    @property
    def quotable(self) -> bool:
        """Whether an answer may quote this unit (headings, questions, table rows: no)."""
        return self.kind in ("sentence", "item")


def clean(text: str) -> str:
    """Emphasis, code marks and link markers removed; spacing before punctuation fixed."""
    text = _MD_LINK.sub(r"\1", text)
    text = _SINGLE_STAR.sub(r"\1", _EMPHASIS.sub("", text))
    text = _LINK_MARK.sub("", text)
    return _SPACE_BEFORE_PUNCT.sub(r"\1", " ".join(text.split())).strip()


def _table_row(line: str) -> Unit | None:
    if _TABLE_RULE.match(line):
        return None
    cells = [clean(c) for c in line.strip("|").split("|")]
    cells = [c for c in cells if c]
    return Unit(": ".join(cells), "table") if cells else None


def _line_units(line: str) -> list[Unit]:
    if line.startswith("#"):
        text = clean(line.lstrip("#"))
        return [Unit(text, "heading")] if text else []
    if line.startswith("|"):
        row = _table_row(line)
        return [row] if row else []
    item = _ITEM.match(line)
    body = clean(line[item.end() :] if item else line)
    if not body:
        return []
    parts = split_sentences(body)
    if (
        not item
        and len(parts) == 1
        and body[-1] not in ".!?:;"
        and len(body.split()) <= HEADING_MAX_WORDS
    ):
        return [Unit(body, "heading")]
    if parts and parts[-1].endswith("?") and not item:  # an FAQ line asks, the next ones answer
        return [Unit(part, "question") for part in parts]
    return [
        Unit(part, "item" if item and index == 0 else "sentence") for index, part in enumerate(parts)
    ]


def split_units(text: str) -> list[Unit]:
    """The units of a passage, in order (every turn reads the same passages: split once)."""
    return list(_units_of(text))


@functools.lru_cache(maxsize=4096)
def _units_of(text: str) -> tuple[Unit, ...]:
    units: list[Unit] = []
    for raw in text.splitlines():
        line = raw.strip()
        if line:
            units.extend(_line_units(line))
    return tuple(units)
