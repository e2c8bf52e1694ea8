"""The text primitives every layer shares: where sentences end, and what counts as a word.
One module, so a change to either is made (and tested) once; it sits in storage, the lowest
layer that reads text, so the chunker and the answer gates use the same rules.

Sentences end by one of two rules, the options the callers need:

- ``READER`` (the default): at ". " before a capital or a digit, and at "? " / "! " before a
  lower-case word too (customers write "are you a robot? anyways, how long ..."); "e.g. this"
  and "? (order 123)" do not end one. What answers are quoted and questions split by.
- ``CHUNKER``: at . ! ? (and closing quotes or brackets) before any whitespace, or at a line
  break: list items, table rows and headings stand alone. What chunks are cut at.

Usage::

    >>> split_sentences("Refunds take 5 days. Are you a robot? anyways, fine")
    ['Refunds take 5 days.', 'Are you a robot?', 'anyways, fine']
    >>> sentence_spans("One. two\\nthree", rule=CHUNKER)
    [(0, 4), (5, 8), (9, 14)]
    >>> TERM.findall("Re-send the API-key, please")
    ['Re-send', 'the', 'API-key', 'please']
"""

from __future__ import annotations

import re

READER = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[!?])\s+(?=[a-z])")
CHUNKER = re.compile(r"(?<=[.!?])[\"')\]]*\s+|\n+")

# words, each for what reads it
WORD_CHARS = re.compile(r"\w+")  # SQuAD-style answer tokens (evaluation)
TOKEN_PIECES = re.compile(r"\w+|[^\w\s]")  # the chunker's token estimate: words and marks
LETTERS = re.compile(r"[A-Za-z]+")  # spelling: words of letters only
TERM = re.compile(r"[A-Za-z0-9][A-Za-z0-9\-]*")  # search terms: "API-key", "2fa", "re-send"
WORD = re.compile(r"[A-Za-z][\w'’-]*")  # the support check's words: "customer's", "e-mail"
ALNUM = re.compile(r"[A-Za-z0-9]+")  # slugs: runs of letters and digits


def sentence_spans(
    text: str, start: int = 0, end: int | None = None, rule: re.Pattern[str] = READER
) -> list[tuple[int, int]]:
    """The (start, end) offsets of the sentences in ``text[start:end]``, blank ones left out."""
    end = len(text) if end is None else end
    spans, cursor = [], start
    for match in rule.finditer(text, start, end):
        if match.start() > cursor:
            spans.append((cursor, match.start()))
        cursor = match.end()
    if cursor < end and text[cursor:end].strip():
        spans.append((cursor, end))
    return [(s, e) for s, e in spans if text[s:e].strip()]


def split_sentences(text: str) -> list[str]:
    """The sentences of one line of text by the ``READER`` rule, each longer than two
    characters."""
    return [p.strip() for p in READER.split(text) if len(p.strip()) > 2]
