"""Does a passage answer the question? Question-focused evidence, read the way an agent would.

Topic overlap is not an answer: a page about stolen plates shares words with "what if my vehicle
is recovered?" without saying anything about it. The reader looks for *one place* that answers:
a window of two adjacent units (sentences, list items, an FAQ question and its answer) of one
passage that holds the question's rare terms (IDF-weighted, BM25 terms of the knowledge base)
and reads close to it (MaxSim of MiniLM token vectors). Headings count too: of two passages
that hold the words, the one under a heading about the question's subject answers ("Set up SAML
single sign-on"), not the one that mentions it in passing. Its features feed a logistic model
fitted on the training pack (``tasks/decision.py``); the model's probability decides.

The same reading picks what an extractive answer quotes: the best-focused quotable units of the
passage that answers, contiguous, after the FAQ question that introduces them.

Usage::

    readings, message = read(scorer, "How long does a refund take?", texts, relevance, [0, 1])
    readings[0].coverage, readings[0].score       # 0.92, 1.85
    quote(readings[0].focus, "How long does a refund take?")   # ["Refunds to cards take ..."]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np

from config.settings import EvidenceSettings
from tasks.courtesy import subject
from tasks.decision_features import MessageFeatures
from tasks.evidence import EvidenceScorer
from tasks.facts import codes
from tasks.page_features import coverage, subject_weights
from tasks.passage_text import WINDOW, Unit, split_units

FEATURES = (
    "window_coverage",
    "window_similarity",
    "section_coverage",
    "passage_relevance",
    "coverage",
    "missing_rare",
    "margin",
)
READ_PASSAGES = 3
ANSWER_WORDS = EvidenceSettings.model_fields["answer_words"].default
FOLLOW_SHARE = 0.5  # a following unit joins when its focus is at least this share of the best
SHORT_ANSWER = 25  # ... or when the answer so far is shorter than this many words
RANK_WEIGHT = 0.5  # the passage's own relevance counts this much in choosing the answering one
OWN_WORDS = 0.5  # a follow-up's own words lead its quote when a window holds this share of them
HEADING_WEIGHT = 0.25  # the share of the question's terms in the headings above a unit counts this much


@dataclass(frozen=True)
class Focus:
    """Where in one passage an answer would be: its units and each unit's focus on the
    question (what an extractive answer quotes from)."""

    passage: int  # its index among the turn's passages
    units: tuple[Unit, ...] = ()
    focus: tuple[float, ...] = ()

    @property
    def best_unit(self) -> int:
        return int(np.argmax(self.focus)) if self.focus else 0


@dataclass(frozen=True)
class PassageReading:
    """A candidate passage's best window: its score (coverage + MaxSim + headings), the
    window's coverage of the question's terms, its MaxSim, and its coverage with the headings
    above it; and the passage's :class:`Focus`."""

    score: float
    coverage: float
    similarity: float
    section: float
    focus: Focus


def _headings_above(units: list[Unit], terms: list[frozenset[int]]) -> list[frozenset[int]]:
    """Per unit, the terms of the headings it stands under: the passage's first heading and
    the last one up to it."""
    first: int | None = None
    last = 0
    above: list[frozenset[int]] = []
    for index, unit in enumerate(units):
        if unit.kind == "heading":
            first = index if first is None else first
            last = index
        above.append(frozenset() if first is None else terms[first] | terms[last])
    return above


def closest_tokens(query_tokens: np.ndarray, tokens: list[np.ndarray]) -> np.ndarray:
    """Per unit, per query word piece: its best cosine in the unit (one product for all
    units). A window's MaxSim is the mean of its units' row-wise maximum."""
    if len(query_tokens) == 0 or not tokens:
        return np.zeros((len(tokens), len(query_tokens)), dtype=np.float32)
    lengths = np.array([len(t) for t in tokens])
    if (lengths == 0).any():
        return np.stack(
            [
                (query_tokens @ t.T).max(axis=1)
                if len(t)
                else np.zeros(len(query_tokens), dtype=np.float32)
                for t in tokens
            ]
        )
    similarity = query_tokens @ np.concatenate(tokens).T
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return np.maximum.reduceat(similarity, starts, axis=1).T


def _passage_focus(
    scorer: EvidenceScorer, query_tokens: np.ndarray, weights: dict[int, float], units: list[Unit]
) -> tuple[list[float], float, float, float, float]:
    """Per-unit focus, and the best window's (score, coverage, similarity, coverage by the
    window and the headings above it together).

    A unit's focus is its coverage and MaxSim plus ``HEADING_WEIGHT`` times the coverage of the
    headings it stands under: under "## Pro", "It adds team roles" answers what Pro includes.
    """
    texts = [u.text for u in units]
    closest = closest_tokens(query_tokens, scorer.token_vectors(texts))
    terms = scorer.encoders.bm25.document_terms(texts)
    headings = _headings_above(units, terms)
    focus = [
        coverage(weights, t)
        + (float(c.mean()) if len(c) else 0.0)
        + HEADING_WEIGHT * coverage(weights, h)
        for t, c, h in zip(terms, closest, headings, strict=True)
    ]
    best = (0.0, 0.0, 0.0, 0.0)
    for start in range(max(1, len(units) - WINDOW + 1)):
        end = min(len(units), start + WINDOW)
        window = frozenset().union(*terms[start:end])
        held = coverage(weights, window)
        similarity = float(closest[start:end].max(axis=0).mean()) if closest.shape[1] else 0.0
        score = held + similarity + HEADING_WEIGHT * coverage(weights, headings[start])
        if score > best[0]:
            best = (score, held, similarity, coverage(weights, window | headings[start]))
    return focus, *best


def read(
    scorer: EvidenceScorer,
    question: str,
    passages: Sequence[str],
    relevance: Sequence[float],
    candidates: Sequence[int],
) -> tuple[list[PassageReading | None], MessageFeatures]:
    """The question-focused reading of each candidate passage (None for one with no units),
    and the question against all the passages (``MessageFeatures``)."""
    if not passages or not question.strip():
        return [None] * len(candidates), MessageFeatures()
    weights = subject_weights(scorer, question)
    query_tokens = scorer.token_vectors([subject(question)])[0]
    readings: list[PassageReading | None] = []
    for index in candidates:
        units = split_units(passages[index])
        if not units:
            readings.append(None)
            continue
        focus, score, held, similarity, section = _passage_focus(scorer, query_tokens, weights, units)
        readings.append(
            PassageReading(
                round(score, 4),
                round(held, 4),
                round(similarity, 4),
                round(section, 4),
                Focus(index, tuple(units), tuple(focus)),
            )
        )
    seen = frozenset().union(*scorer.encoders.bm25.document_terms(passages))
    ranked = [*sorted(relevance, reverse=True), 0.0]
    missing = [w for t, w in weights.items() if t not in seen]
    rarest = scorer.term_stats().idf(-1) or 1.0  # the weight of a term no chunk holds
    message = MessageFeatures(
        passage_relevance=round(float(ranked[0]), 4),
        margin=round(float(ranked[0] - ranked[1]), 4),
        coverage=round(coverage(dict.fromkeys(weights, 1.0), seen), 4),
        missing_rare=round(max(missing, default=0.0) / rarest, 4),
    )
    return readings, message


def focus_in(scorer: EvidenceScorer, question: str, text: str, index: int = 0) -> PassageReading | None:
    """The reading of one passage alone (None when it has no units)."""
    if not text:
        return None
    return read(scorer, question, [text], [1.0], [0])[0][0]


def title_coverage(scorer: EvidenceScorer, question: str, titles: Sequence[str]) -> list[float]:
    """How much of the question's subject (its terms, IDF-weighted) each title names: "I
    would like to learn about Teacher Loan Forgiveness" names the page of that title."""
    weights = subject_weights(scorer, question)
    return [coverage(weights, t) for t in scorer.encoders.bm25.document_terms(list(titles))]


def refocus(scorer: EvidenceScorer, focus: Focus, resolved: str, message: str, text: str) -> Focus:
    """When the gate read another phrasing than the customer's message (``resolved``: a
    follow-up's resolution, "And to PayPal? refund take", or the one question of a message
    that wraps it in context), the message's own words add their focus inside the passage
    that answers (``text``), where the passage has them. A code only the phrasing names (the
    conversation's "PAY-102") decides alone only when the message has no words of its own
    there ("how do I fix it?"); "how long until it retries?" still finds the retry sentence."""
    own = focus_in(scorer, message, text)
    if (
        own is None
        or own.coverage == 0
        or (codes(resolved) - codes(message) and own.coverage < OWN_WORDS)
    ):
        return focus
    return replace(focus, focus=tuple(a + b for a, b in zip(focus.focus, own.focus.focus, strict=True)))


def quote(focus: Focus, question: str = "", max_words: int = ANSWER_WORDS) -> list[str]:
    """Contiguous quotable units of the answering passage.

    Starts at the best-focused unit (or, when that is a heading or an FAQ question, at the
    first quotable unit after it), keeps a list's lead-in with its items, and goes on while the
    next unit is still about the question and the answer stays short. When the question names
    a code (``PAY-101``), a unit about another code ends the quote.
    """
    units, weights = focus.units, focus.focus
    if not units:
        return []
    start = focus.best_unit
    if not units[start].quotable:
        after = [i for i in range(start + 1, len(units)) if units[i].quotable]
        before = [i for i in range(start) if units[i].quotable]
        if not after and not before:
            return []
        start = after[0] if after else max(before, key=lambda i: weights[i])
    picked = [start]
    words = len(units[start].text.split())
    asked = codes(question)
    for index in range(start + 1, len(units)):
        unit = units[index]
        if not unit.quotable:
            break
        lead_in = units[picked[-1]].text.endswith(":") or (
            unit.kind == "item" and units[picked[-1]].kind == "item" and len(picked) > 1
        )
        about = weights[index] >= FOLLOW_SHARE * weights[start] or words < SHORT_ANSWER
        other_code = asked and bool(codes(unit.text) - asked)
        # a short opening ("Learn whether you qualify.") keeps the sentence that says it
        budget = 2 * max_words if words < SHORT_ANSWER else max_words
        if other_code or not (lead_in or about) or words + len(unit.text.split()) > budget:
            break
        picked.append(index)
        words += len(unit.text.split())
    return [units[i].text for i in picked]
