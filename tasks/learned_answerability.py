"""The learned gate (``evidence.gate: learned``): a learned reading of question-focused windows.

Topic overlap is not an answer: a page about stolen plates shares words with "what if my vehicle
is recovered?" without saying anything about it. The reader looks for *one place* that answers:
each window of two adjacent units (sentences, list items, under their headings) of the closest
passages is read against the customer's whole message by the answerability cross-encoder
(``tasks/answerability_model.py``, trained on SQuAD 2.0's adversarial unanswerables). The best
window's probability is the passage's; the gate compares it with the operating point chosen on
dev for ``evidence.target_precision``.

The same reading picks what an extractive answer quotes (``tasks.answerability.quote``): inside
the passage that answers each unit is read alone too, and the quote starts at the unit whose
windows and own reading answer best.

Usage::

    reading = read(scorer, "How long does a refund take?", [p.text for p in passages])
    reading.features["answerable"]              # 0.97: the best window's probability
    quote(reading, "How long does a refund take?")   # [(sentence, passage index), ...]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from tasks.answerability import READ_PASSAGES, Reading
from tasks.answerability_model import Window, heading_context, read_as, windows
from tasks.evidence import EvidenceScorer
from tasks.facts import codes
from tasks.passage_text import Unit, split_units

FEATURES = ("answerable", "passage_relevance", "margin", "windows_read")
RANK_WEIGHT = 0.1      # the passage's own relevance breaks near-ties between answering passages


def _unit_best(units: list[Unit], spans: list[Window], probabilities: Sequence[float]
               ) -> list[float]:
    """Per unit, the best probability of the windows that hold it."""
    best = [0.0] * len(units)
    for span, probability in zip(spans, probabilities, strict=True):
        for index in range(span.first, span.last):
            best[index] = max(best[index], probability)
    return best


def unit_focus(scorer: EvidenceScorer, question: str, units: list[Unit], title: str = ""
               ) -> list[float]:
    """How well each unit answers: its best window's probability plus its own, read alone
    under its headings (a heading or question unit reads only through its windows)."""
    spans = windows(units, title)
    singles = [Window(_alone_text(units, i, title), i, i + 1)
               for i, u in enumerate(units) if u.quotable]
    probabilities = scorer.answerable(question, [w.text for w in spans + singles])
    focus = _unit_best(units, spans, probabilities[:len(spans)])
    for single, probability in zip(singles, probabilities[len(spans):], strict=True):
        focus[single.first] += probability
    return focus


def _alone_text(units: list[Unit], index: int, title: str) -> str:
    return read_as(heading_context(units, index, title), units[index].text)


def read(scorer: EvidenceScorer, question: str, passages: Sequence[str],
         relevance: Sequence[float] | None = None, titles: Sequence[str] | None = None,
         quoting: bool = True) -> Reading:
    """The learned reading of the passages closest to the question; ``quoting`` also reads the
    answering passage's units alone, to pick what to quote (the gate needs only the windows)."""
    features = dict.fromkeys(FEATURES, 0.0)
    if not passages or not question.strip():
        return Reading(features)
    relevance = list(relevance) if relevance is not None else scorer.relevance(question, passages)
    titles = list(titles) if titles is not None else [""] * len(passages)
    closest = sorted(range(len(passages)), key=lambda i: -relevance[i])[:READ_PASSAGES]
    cut = {i: split_units(passages[i]) for i in closest}
    spans = {i: windows(cut[i], titles[i]) for i in closest}
    texts = [w.text for i in closest for w in spans[i]]
    probabilities = iter(scorer.answerable(question, texts))
    best: tuple[float, float, int | None] = (-1.0, 0.0, None)
    for index in closest:
        found = [next(probabilities) for _ in spans[index]]
        top = max(found, default=0.0)
        if top + RANK_WEIGHT * relevance[index] > best[0]:
            best = (top + RANK_WEIGHT * relevance[index], top, index)
    reading = Reading(features)
    _, answerable, chosen = best
    if chosen is not None and spans[chosen]:
        focus = unit_focus(scorer, question, cut[chosen], titles[chosen]) if quoting else []
        reading = Reading(features, chosen, cut[chosen], focus,
                          int(np.argmax(focus)) if focus else 0)
    ranked = [*sorted(relevance, reverse=True), 0.0]
    features.update(answerable=answerable, passage_relevance=ranked[0],
                    margin=ranked[0] - ranked[1], windows_read=float(len(texts)))
    reading.features = {k: round(float(v), 4) for k, v in features.items()}
    return reading


def refocus(scorer: EvidenceScorer, reading: Reading, resolved: str, message: str,
            title: str = "") -> Reading:
    """When the gate read another phrasing than the customer's message (``resolved``: a
    follow-up's resolution, "And to PayPal? refund take", or the one question of a message
    that wraps it in context), the message's own words add their focus inside the passage
    that answers; unless the phrasing names a code the message does not (then the code alone
    decides which sentences answer)."""
    if reading.passage_index is None or codes(resolved) - codes(message):
        return reading
    own = unit_focus(scorer, message, reading.units, title)
    focus = [a + b for a, b in zip(reading.focus, own, strict=True)]
    return replace(reading, focus=focus, best_unit=int(np.argmax(focus)))
