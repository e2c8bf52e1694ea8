"""Which sentences of the answering passage to quote: a logistic model over each unit's
reading, fitted on the sentences real agents grounded their replies on.

The window reading (``tasks/answerability``) scores every unit by the question's rare terms
and how close its word pieces read; the cross-encoder rereads the windows around the
best-focused units (``REREAD``), the way it was trained (a window under its headings); the
quote model (quote.yaml in storage/kb/assets/decision/, ``training/quote_fit.py``) weighs both
per unit (:class:`~tasks.decision_features.UnitFeatures`) into the probability that the unit
is what an agent would quote, and ``tasks.answerability.quote`` quotes from the most probable
unit on. The decision has already read these windows for its gate (the scorer keeps them), so
a turn pays nothing more for the quote.

Usage::

    where = quote_focus(scorer, settings.evidence.quote, question, focus, title)
    quote(where, question)        # ["Card issuers sometimes need up to 10 business days ..."]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from config.settings import QuoteModel
from tasks.answerability import Focus
from tasks.answerability_model import windows
from tasks.decision_features import UnitFeatures
from tasks.evidence import EvidenceScorer
from tasks.facts import codes, names
from tasks.operating_points import logistic_probability

REREAD = 8  # the cross-encoder reads the windows that hold one of this many best-focused units


def learned_by_unit(scorer: EvidenceScorer, question: str, focus: Focus, title: str = "") -> list[float]:
    """Per unit, the cross-encoder's highest probability of a window that holds it (0 for a
    unit of no window read)."""
    ranked = sorted(range(len(focus.focus)), key=lambda i: -focus.focus[i])[:REREAD]
    best = set(ranked)
    spans = [w for w in windows(focus.units, title) if best.intersection(range(w.first, w.last))]
    learned = [0.0] * len(focus.units)
    if not spans:
        return learned
    for span, probability in zip(
        spans, scorer.answerable(question, [w.text for w in spans]), strict=True
    ):
        for index in range(span.first, span.last):
            learned[index] = max(learned[index], probability)
    return learned


def unit_features(focus: Focus, learned: Sequence[float], question: str = "") -> list[UnitFeatures]:
    """Each unit's features from its window-reading focus, its cross-encoder reading and
    the names it holds that ``question`` does not ("Refunds to PayPal ..." for a card).

    >>> from tasks.passage_text import split_units
    >>> units = tuple(split_units("Refunds take 5 days. PayPal takes 2."))
    >>> rows = unit_features(Focus(0, units, (1.0, 0.5)), [0.9, 0.3])
    >>> rows[0].best_reading, rows[1].reading, rows[1].learned_share
    (1.0, 0.5, 0.3333)
    """
    units = focus.units
    top_reading = max(focus.focus, default=0.0) or 1.0
    top_learned = max(learned, default=0.0) or 1.0
    best_reading = focus.best_unit
    last = max(1, len(units) - 1)
    asked = question.lower()
    return [
        UnitFeatures(
            reading=round(focus.focus[i] / top_reading, 4),
            best_reading=float(i == best_reading),
            learned=round(learned[i], 4),
            learned_share=round(learned[i] / top_learned, 4),
            best_learned=float(learned[i] >= top_learned and learned[i] > 0),
            item=float(unit.kind == "item"),
            after_lead_in=float(i > 0 and units[i - 1].text.endswith(":")),
            words=round(math.log1p(len(unit.text.split())), 4),
            position=round(i / last, 4),
            foreign_name=float(any(n.lower() not in asked for n in names(unit.text) | codes(unit.text))),
        )
        for i, unit in enumerate(units)
    ]


def unit_probabilities(model: QuoteModel, features: Sequence[UnitFeatures]) -> list[float]:
    """The model's probability per unit that it is what to quote."""
    return [round(logistic_probability(model, f), 4) for f in features]


def quote_focus(
    scorer: EvidenceScorer, model: QuoteModel, question: str, focus: Focus, title: str = ""
) -> Focus:
    """``focus`` with each unit's focus replaced by the quote model's probability (unchanged
    when no model is fitted)."""
    if not model.weights or not focus.units:
        return focus
    learned = learned_by_unit(scorer, question, focus, title)
    probabilities = unit_probabilities(model, unit_features(focus, learned, question))
    return replace(focus, focus=tuple(probabilities))
