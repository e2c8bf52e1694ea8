"""Which page answers this message, in this conversation: chosen among the candidates, not
only judged.

The candidates are the passages retrieval ranks closest to the message (``TOP``) and the best
passage of the page the conversation is about (what its last answer cited), at most
``CANDIDATES``. Each is described by

    reading       how well its best window holds and reads like the question (coverage of
                  the question's rare terms + MaxSim, headings counted; tasks/answerability.py)
    relevance     how close it reads to the phrasing read (the gate's relevance)
    learned       the cross-encoder's probability for its best window (the best
                  pre-scored windows of all candidates, at most ``MAX_WINDOWS``, in one
                  ONNX batch: ``learned_reading``)
    title         how much of the customer's own message its page title names ("And for
                  annual plans?" names Annual plans, whatever the conversation was about)
    conversation  1 when it is the page the conversation is about
    behind        how far its relevance is behind the most relevant candidate's (0 for it)

(its retrieval ``rank`` and ``fused`` score are recorded beside them, not weighed), and a
logistic score fitted on the dev sets (``training/fit_decision.py`` ->
storage/kb/assets/decision/page_choice.yaml) picks the one that answers. The trace lists every
candidate's features and score.

Usage::

    candidates = candidate_indices(relevance, [p.source_id for p in passages], subject)
    rows = page_rows(scorer, question, passages, relevance, candidates, subject)
    pick = chooser(settings.evidence.page_choice, rows)     # for tasks.answerability.read
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from config.settings import PageChoiceModel
from tasks.answerability import closest_tokens, title_coverage
from tasks.answerability_model import Window, windows
from tasks.decision_features import CandidateFeatures
from tasks.evidence import EvidenceScorer
from tasks.operating_points import linear_terms, sigmoid
from tasks.passage_text import Unit, split_units
from tasks.schemas import Passage

TOP = 3  # the most relevant passages that compete, besides the conversation's page
CANDIDATES = 4  # at most, the conversation's page included
# windows the cross-encoder reads per phrasing (one ONNX batch), and at least this many of each
# candidate (the best by the pre-score). Refitted on the pack's folds with fewer, held-out pack
# precision stayed (4 and 1: 0.701, 8 and 2: 0.700, against 0.700), but the written sets' fell
# from 0.839 to 0.814 and near-misses were answered ("Do you have discounts for teachers?"
# from the student discount's page at 4): the readings are kept
MAX_WINDOWS = 16
PER_PASSAGE = 2
RANK_WEIGHT = 0.5  # with no chooser fitted, a passage's relevance counts this much beside its reading
# weighed; ``rank`` and ``fused`` are only recorded: weighed too, the held-out choice fell from
# 314 to 311 of 320 dev turns and no threshold of the dev conversations reached precision 0.95
# (a 0/1 "most relevant" feature instead of ``behind`` chose SCIM provisioning for "How do I
# set up SAML SSO?" over a relevance gap of 0.011)
FEATURES = (  # what the page choice weighs of each candidate (training/fit_decision.py fits it)
    "reading",
    "relevance",
    "learned",
    "title",
    "conversation",
    "behind",
    "window_coverage",
    "section_coverage",
    "page_coverage",
    "page_missing_rare",
    "page_phrases",
    "quote_coverage",
    "title_other",
    "navigation",
    "code_explained",
    "code_unexplained",
)


def candidate_indices(
    relevance: Sequence[float], sources: Sequence[str], subject: Sequence[str] = ()
) -> list[int]:
    """The ``TOP`` most relevant passages, then the most relevant passage of each page the
    conversation is about that is not among them, at most ``CANDIDATES``.

    >>> candidate_indices([0.9, 0.8, 0.7, 0.6, 0.1], ["a", "b", "c", "d", "e"], ["e"])
    [0, 1, 2, 4]
    """
    order = sorted(range(len(relevance)), key=lambda i: -relevance[i])
    chosen = order[:TOP]
    for page in subject:
        if not any(sources[i] == page for i in chosen):
            chosen += [i for i in order if sources[i] == page][:1]
    return chosen[:CANDIDATES]


def _prescored(
    scorer: EvidenceScorer, question: str, cut: list[list[Unit]], spans: list[list[Window]]
) -> list[list[Window]]:
    """At most ``MAX_WINDOWS`` windows in all, the best of each passage by a cheap pre-score
    (the MaxSim of the question's word pieces against the window's units, whose vectors the
    turn already holds), and at least the best ``PER_PASSAGE`` of every passage."""
    query = scorer.token_vectors([question])[0]
    scored: list[tuple[float, int, int]] = []
    for index, units in enumerate(cut):
        closest = closest_tokens(query, scorer.token_vectors([u.text for u in units]))
        for position, span in enumerate(spans[index]):
            rows = closest[span.first : span.last]
            scored.append((float(rows.max(axis=0).mean()) if rows.size else 0.0, index, position))
    scored.sort(reverse=True)
    kept: list[list[int]] = [[] for _ in cut]
    for _, index, position in scored:
        if len(kept[index]) < PER_PASSAGE:
            kept[index].append(position)
    total = sum(len(k) for k in kept)
    for _, index, position in scored:
        if total >= MAX_WINDOWS:
            break
        if position not in kept[index]:
            kept[index].append(position)
            total += 1
    return [[spans[i][p] for p in sorted(k)] for i, k in enumerate(kept)]


def learned_reading(
    scorer: EvidenceScorer, question: str, texts: Sequence[str], titles: Sequence[str]
) -> list[float]:
    """The cross-encoder's probability for each passage: its best window's (windows of two
    adjacent units under the page title and headings, ``tasks/answerability_model.py``), the
    best pre-scored windows of all passages read in one batch. A page that mentions the
    subject in passing shares words with the question; only a window that answers reads high."""
    if not texts or not question.strip():
        return [0.0] * len(texts)
    cut = [split_units(text) for text in texts]
    spans = _prescored(
        scorer, question, cut, [windows(units, title) for units, title in zip(cut, titles, strict=True)]
    )
    probabilities = iter(scorer.answerable(question, [w.text for page in spans for w in page]))
    return [round(max((next(probabilities) for _ in page), default=0.0), 4) for page in spans]


@dataclass(frozen=True)
class PageExtras:
    """What the window reading does not give of a candidate (``page_rows``)."""

    rank: float
    fused: float
    learned: float
    title: float
    conversation: float
    behind: float


def page_rows(
    scorer: EvidenceScorer,
    question: str,
    passages: Sequence[Passage],
    relevance: Sequence[float],
    candidates: Sequence[int],
    subject: Sequence[str] = (),
    message: str = "",
) -> list[PageExtras]:
    """The features of each candidate that the window reading does not give, in
    ``candidates`` order. ``passages`` are in retrieval's order (the conversation's page's
    passages last); ``message``: the customer's own words, when ``question`` is another
    phrasing of them."""
    if not candidates:
        return []
    chosen = [passages[i] for i in candidates]
    learned = learned_reading(scorer, question, [p.text for p in chosen], [p.title for p in chosen])
    titles = title_coverage(scorer, message or question, [p.title or p.source_id for p in chosen])
    best = max(relevance[i] for i in candidates)
    return [
        PageExtras(
            rank=round(1.0 / (1.0 + index), 4),
            fused=round(float(passage.score), 4),
            learned=learned[position],
            title=titles[position],
            conversation=float(passage.source_id in subject),
            behind=round(best - relevance[index], 4),
        )
        for position, (index, passage) in enumerate(zip(candidates, chosen, strict=True))
    ]


def score(model: PageChoiceModel, features: CandidateFeatures) -> float:
    """The candidate's logistic score (its probability of being the page that answers).

    >>> model = PageChoiceModel(features=["title"], mean=[0.5], scale=[0.5], weights=[2.0])
    >>> round(score(model, CandidateFeatures(title=1.0)), 3), round(score(model, CandidateFeatures()), 3)
    (0.881, 0.119)
    """
    return sigmoid(sum(linear_terms(model, features).values()))


def choose(model: PageChoiceModel, candidates: Sequence[CandidateFeatures]) -> tuple[int, list[float]]:
    """The candidate that answers and every candidate's score: the highest logistic score
    of the fitted model; with none fitted, the best window reading, a lower-ranked passage
    counting ``RANK_WEIGHT`` of its relevance less.

    >>> choose(PageChoiceModel(), [CandidateFeatures(reading=1.2, relevance=0.8),
    ...                            CandidateFeatures(reading=1.5, relevance=0.3)])
    (1, [1.6, 1.65])
    """
    if model.weights:
        scores = [round(score(model, c), 4) for c in candidates]
    else:
        scores = [round(c.reading + RANK_WEIGHT * c.relevance, 4) for c in candidates]
    return max(range(len(scores)), key=lambda i: scores[i]), scores
