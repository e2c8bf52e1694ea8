"""The learned gate (``evidence.gate: learned``): a learned reading of the top-ranked pages.

Topic overlap is not an answer: a page about stolen plates shares words with "what if my vehicle
is recovered?" without saying anything about it. The reader looks for *one place* that answers:
windows of two adjacent units (sentences, list items, under their page title and headings) of
the top-ranked passages, the best few of each by a cheap pre-score, are read against the
customer's message in one batch by the answerability cross-encoder
(``tasks/answerability_model.py``, trained on SQuAD 2.0's adversarial unanswerables and
support-shaped pairs). A passage's probability is its best window's. Which passage answers
is part of the decision: retrieval's ranking stands unless a lower-ranked passage reads better
by more than ``evidence.learned.page_margin``. The gate compares the chosen passage's
probability with the operating points chosen on dev for ``evidence.target_precision``.

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

from config.settings import AnswerabilityGate
from tasks.answerability import Reading, closest_tokens
from tasks.answerability_model import Window, heading_context, read_as, windows
from tasks.evidence import EvidenceScorer
from tasks.facts import codes
from tasks.passage_text import Unit, split_units

FEATURES = ("answerable", "passage_relevance", "margin", "windows_read")
READ_PASSAGES = 4  # the top-ranked passages whose windows compete
MAX_WINDOWS = 16  # windows the model reads per phrasing: one ONNX batch
PAGE_MARGIN = AnswerabilityGate.model_fields["page_margin"].default
STRONG_SHARE = 0.75  # a unit this close to the best one's focus may start the quote


def _unit_best(units: list[Unit], spans: list[Window], probabilities: Sequence[float]) -> list[float]:
    """Per unit, the best probability of the windows that hold it."""
    best = [0.0] * len(units)
    for span, probability in zip(spans, probabilities, strict=True):
        for index in range(span.first, span.last):
            best[index] = max(best[index], probability)
    return best


def unit_focus(scorer: EvidenceScorer, question: str, units: list[Unit], title: str = "") -> list[float]:
    """How well each unit answers: its best window's probability plus its own, read alone
    under its headings (a heading or question unit reads only through its windows)."""
    spans = windows(units, title)
    singles = [Window(_alone_text(units, i, title), i, i + 1) for i, u in enumerate(units) if u.quotable]
    probabilities = scorer.answerable(question, [w.text for w in spans + singles])
    focus = _unit_best(units, spans, probabilities[: len(spans)])
    for single, probability in zip(singles, probabilities[len(spans) :], strict=True):
        focus[single.first] += probability
    return focus


def _alone_text(units: list[Unit], index: int, title: str) -> str:
    return read_as(heading_context(units, index, title), units[index].text)


def _prescored(
    scorer: EvidenceScorer,
    question: str,
    cut: dict[int, list[Unit]],
    spans: dict[int, list[Window]],
    limit: int,
) -> dict[int, list[Window]]:
    """At most ``limit`` windows in all, the best of each passage by a cheap pre-score (the
    MaxSim of the question's word pieces against the window's units, whose vectors the turn
    already holds), and at least the best two of every passage."""
    query = scorer.token_vectors([question])[0]
    scored: list[tuple[float, int, int]] = []
    for index, units in cut.items():
        closest = closest_tokens(query, scorer.token_vectors([u.text for u in units]))
        for position, span in enumerate(spans[index]):
            rows = closest[span.first : span.last]
            score = float(rows.max(axis=0).mean()) if rows.size else 0.0
            scored.append((score, index, position))
    scored.sort(reverse=True)
    kept: dict[int, list[int]] = {i: [] for i in cut}
    for _, index, position in scored:
        if len(kept[index]) < 2:
            kept[index].append(position)
    total = sum(len(v) for v in kept.values())
    for _, index, position in scored:
        if total >= limit:
            break
        if position not in kept[index]:
            kept[index].append(position)
            total += 1
    return {i: [spans[i][p] for p in sorted(kept[i])] for i in cut}


def first_strong(focus: Sequence[float], share: float = STRONG_SHARE) -> int:
    """Where the quote starts: the first unit, in the page's order, that answers nearly as
    well as the best one (pages say the general thing before the particulars).

    >>> first_strong([0.2, 1.5, 0.4, 1.6]), first_strong([0.2, 0.5, 0.4, 1.6]), first_strong([])
    (1, 3, 0)
    """
    if not focus:
        return 0
    top = max(focus)
    return next(i for i, f in enumerate(focus) if f >= share * top)


def choose_page(best: Sequence[float], margin: float) -> int:
    """Which candidate answers, in retrieval order: the top-ranked one, unless a lower-ranked
    one reads better by more than ``margin`` (retrieval ranks well; a passing mention on a
    neighbouring page reads well too).

    >>> choose_page([0.60, 0.65, 0.1], margin=0.1), choose_page([0.2, 0.9], margin=0.1)
    (0, 1)
    """
    chosen = 0
    for index, probability in enumerate(best):
        if probability > best[chosen] + margin:
            chosen = index
    return chosen


def read(
    scorer: EvidenceScorer,
    question: str,
    passages: Sequence[str],
    relevance: Sequence[float] | None = None,
    titles: Sequence[str] | None = None,
    quoting: bool = True,
    page_margin: float = PAGE_MARGIN,
) -> Reading:
    """The learned reading of the top-ranked passages (``passages`` in retrieval order):
    the best pre-scored windows of each, read in one batch; the chosen passage's best window
    is the probability that the passages answer. ``quoting`` also reads the answering
    passage's units alone, to pick what to quote (the gate needs only the windows)."""
    features = dict.fromkeys(FEATURES, 0.0)
    if not passages or not question.strip():
        return Reading(features)
    relevance = list(relevance) if relevance is not None else scorer.relevance(question, passages)
    titles = list(titles) if titles is not None else [""] * len(passages)
    candidates = list(range(min(READ_PASSAGES, len(passages))))
    cut = {i: split_units(passages[i]) for i in candidates}
    spans = _prescored(
        scorer, question, cut, {i: windows(cut[i], titles[i]) for i in candidates}, MAX_WINDOWS
    )
    texts = [w.text for i in candidates for w in spans[i]]
    probabilities = iter(scorer.answerable(question, texts))
    best = [max((next(probabilities) for _ in spans[i]), default=0.0) for i in candidates]
    chosen = choose_page(best, page_margin)
    reading = Reading(features, pages={i: round(p, 4) for i, p in zip(candidates, best, strict=True)})
    if spans[chosen]:
        focus = unit_focus(scorer, question, cut[chosen], titles[chosen]) if quoting else []
        reading = replace(
            reading, passage_index=chosen, units=cut[chosen], focus=focus, best_unit=first_strong(focus)
        )
    ranked = [*sorted(relevance, reverse=True), 0.0]
    features.update(
        answerable=best[chosen],
        passage_relevance=ranked[0],
        margin=ranked[0] - ranked[1],
        windows_read=float(len(texts)),
    )
    reading.features = {k: round(float(v), 4) for k, v in features.items()}
    return reading


def refocus(
    scorer: EvidenceScorer, reading: Reading, resolved: str, message: str, title: str = ""
) -> Reading:
    """When the gate read another phrasing than the customer's message (``resolved``: a
    follow-up's resolution, "And to PayPal? refund take", or the one question of a message
    that wraps it in context), the message's own words add their focus inside the passage
    that answers; unless the phrasing names a code the message does not (then the code alone
    decides which sentences answer)."""
    if reading.passage_index is None or codes(resolved) - codes(message):
        return reading
    own = unit_focus(scorer, message, reading.units, title)
    focus = [a + b for a, b in zip(reading.focus, own, strict=True)]
    return replace(reading, focus=focus, best_unit=first_strong(focus))
