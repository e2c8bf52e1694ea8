"""Misspelt words read as the pages spell them, before the gate weighs the question's terms.

A customer's typo ("disablilty") is a term no chunk of the knowledge base holds, so the gate
weighs it as the rarest term of all and finds it missing from every page: the question is
refused although the page that answers was retrieved. A word that is neither in the knowledge
base nor a whole word of the encoder's vocabulary (``EvidenceScorer.knows``: "event" is a word
spelt right even where no page uses it) is read as the closest word of the retrieved pages
instead, when one is close enough to be a slip of the keyboard (Damerau-Levenshtein distance
1, or 2 for words of 8 letters or more, same first letter). Short words, words with digits and
capitalised names inside a sentence ("Dropbox") are never changed: an unknown product name is
a real reason to refuse.

Usage::

    respell("How much will I receive for disablilty?", ["... your disability benefit ..."],
            known=lambda word: word in {"receive"})
    # 'How much will I receive for disability?'
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence

from rapidfuzz import process
from rapidfuzz.distance import DamerauLevenshtein

from storage.text import LETTERS

_WORD = LETTERS
MIN_LETTERS = 5
LONG_WORD = 8  # from this length two slips are allowed


def _allowed_slips(word: str) -> int:
    return 2 if len(word) >= LONG_WORD else 1


def _may_change(question: str, start: int, word: str) -> bool:
    if len(word) < MIN_LETTERS:
        return False
    if word.islower():
        return True
    opens_sentence = not question[:start].strip() or question[:start].rstrip()[-1] in ".!?"
    return opens_sentence and word[1:].islower()


def respell(question: str, passages: Sequence[str], known: Callable[[str], bool]) -> str:
    """``question`` with each word the knowledge base does not know (``known`` is False)
    replaced by the nearest word of ``passages`` within a slip or two; unchanged otherwise.

    >>> respell("Whats the deadine to apply?", ["The deadline to apply is May 1."],
    ...         known=lambda w: w.lower() not in {"deadine"})
    'Whats the deadline to apply?'
    >>> respell("Can I import from Dropbx?", ["Import from Dropbox in Settings."],
    ...         known=lambda w: False)
    'Can I import from Dropbx?'
    """
    vocabulary: Counter[str] | None = None
    pieces, position = [], 0
    for match in _WORD.finditer(question):
        word = match.group()
        if not _may_change(question, match.start(), word) or known(word.lower()):
            continue
        if vocabulary is None:
            vocabulary = Counter(
                w.lower() for text in passages for w in _WORD.findall(text) if len(w) >= MIN_LETTERS - 1
            )
        lowered = word.lower()
        if lowered in vocabulary:
            continue
        candidates = [w for w in vocabulary if w[0] == lowered[0]]
        found = process.extract(
            lowered,
            candidates,
            scorer=DamerauLevenshtein.distance,
            score_cutoff=_allowed_slips(lowered),
            limit=None,
        )
        if not found:
            continue
        best = min(found, key=lambda hit: (hit[1], -vocabulary[hit[0]], hit[0]))[0]
        replacement = best.capitalize() if word[0].isupper() else best
        pieces += [question[position : match.start()], replacement]
        position = match.end()
    return "".join(pieces) + question[position:] if pieces else question
