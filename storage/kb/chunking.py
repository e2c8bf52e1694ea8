"""Split a document into overlapping chunks that respect headings and sentences.

Every chunk's text is an exact slice ``doc.text[start:start + len(text)]``, so neighbouring
chunks can be merged back without duplication (see :mod:`storage.retrieval.window`).

Usage::

    chunks = chunk_text(doc.text, max_tokens=200, overlap_sentences=1)
    chunks[0].split_id, chunks[0].start, chunks[0].section
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.text import CHUNKER, TOKEN_PIECES, sentence_spans

_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Chunk:
    split_id: int
    start: int
    text: str
    section: str


def estimate_tokens(text: str) -> int:
    """A cheap word-piece estimate: words and punctuation marks, long words counted twice."""
    return sum(2 if len(p) > 9 else 1 for p in TOKEN_PIECES.findall(text))


def _sections(text: str) -> list[tuple[int, int, str]]:
    """(start, end, heading) spans; a heading line opens a new section."""
    marks = [(m.start(), m.group(1)) for m in _HEADING.finditer(text)]
    if not marks or marks[0][0] != 0:
        marks.insert(0, (0, ""))
    spans = []
    for i, (start, heading) in enumerate(marks):
        end = marks[i + 1][0] if i + 1 < len(marks) else len(text)
        spans.append((start, end, heading))
    return spans


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    # a chunk's sentences end at . ! ? before whitespace, or at a line break (list items,
    # table rows and headings stand alone)
    return sentence_spans(text, start, end, rule=CHUNKER)


def _split_long(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """Cut one over-long sentence at word boundaries."""
    pieces, cursor, count, piece_start = [], start, 0, start
    for match in re.finditer(r"\S+", text[start:end]):
        words = estimate_tokens(match.group())
        if count and count + words > max_tokens:
            pieces.append((piece_start, cursor))
            piece_start, count = start + match.start(), 0
        count += words
        cursor = start + match.end()
    pieces.append((piece_start, cursor))
    return pieces


def _cost(text: str, spans: list[tuple[int, int]]) -> int:
    return sum(estimate_tokens(text[s:e]) for s, e in spans)


def chunk_text(text: str, max_tokens: int = 200, overlap_sentences: int = 1) -> list[Chunk]:
    """Chunk ``text``: never across a heading, whole sentences, ``overlap_sentences`` repeated.

    A section's heading line opens its first chunk; a section with no body is dropped.
    """
    chunks: list[Chunk] = []
    for sec_start, sec_end, heading in _sections(text):
        body_start = text.find("\n", sec_start, sec_end) + 1 if heading else sec_start
        if heading and body_start == 0:
            continue
        sentences: list[tuple[int, int]] = []
        for s, e in _sentences(text, body_start, sec_end):
            if estimate_tokens(text[s:e]) > max_tokens:
                sentences.extend(_split_long(text, s, e, max_tokens))
            else:
                sentences.append((s, e))
        i = 0
        while i < len(sentences):
            j, budget = i, estimate_tokens(heading) if i == 0 else 0
            while j < len(sentences):
                cost = estimate_tokens(text[sentences[j][0] : sentences[j][1]])
                if j > i and budget + cost > max_tokens:
                    break
                budget += cost
                j += 1
            start = sec_start if i == 0 else sentences[i][0]
            end = sentences[j - 1][1]
            chunks.append(Chunk(len(chunks), start, text[start:end], heading))
            if j >= len(sentences):
                break
            following = max(i + 1, j - overlap_sentences)
            if _cost(text, sentences[following : j + 1]) > max_tokens:
                following = j
            i = following
    return chunks
