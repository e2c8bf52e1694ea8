"""Which page answers this message, in this conversation: chosen among the candidates, not
only judged.

The candidates are the passages retrieval ranks closest to the message (``TOP``) and the best
passage of the page the conversation is about (what its last answer cited), at most
``learned_answerability.READ_PASSAGES``. Each is described by

    reading       how well its best window holds and reads like the question (coverage of
                  the question's rare terms + MaxSim, headings counted; tasks/answerability)
    relevance     how close it reads to the phrasing read (the gate's relevance)
    learned       the cross-encoder's probability for its best window (all candidates'
                  windows in one ONNX batch; tasks/learned_answerability.read)
    title         how much of the customer's own message its page title names ("And for
                  annual plans?" names Annual plans, whatever the conversation was about)
    conversation  1 when it is the page the conversation is about
    behind        how far its relevance is behind the most relevant candidate's (0 for it)

(its retrieval ``rank`` and ``fused`` score are recorded beside them, not weighed), and a
logistic score fitted on the dev sets (``bench/fit_page_choice.py`` ->
config/page_choice.yaml) picks the one that answers. The trace lists every candidate's
features and score.

Usage::

    candidates = candidate_indices(relevance, [p.source_id for p in passages], subject)
    rows = page_rows(scorer, question, passages, relevance, candidates, subject)
    pick = chooser(settings.evidence.page_choice, rows)     # for tasks.answerability.read
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from config.settings import PageChoiceModel
from tasks import learned_answerability as learned
from tasks.answerability import title_coverage
from tasks.evidence import EvidenceScorer
from tasks.schemas import Passage

TOP = 3  # the most relevant passages that compete, besides the conversation's page
# weighed; ``rank`` and ``fused`` are only recorded: weighed too, the held-out choice fell from
# 314 to 311 of 320 dev turns and no threshold of the dev conversations reached precision 0.95
# (a 0/1 "most relevant" feature instead of ``behind`` chose SCIM provisioning for "How do I
# set up SAML SSO?" over a relevance gap of 0.011)
FEATURES = ("reading", "relevance", "learned", "title", "conversation", "behind")


def candidate_indices(
    relevance: Sequence[float], sources: Sequence[str], subject: Sequence[str] = ()
) -> list[int]:
    """The ``TOP`` most relevant passages, then the most relevant passage of each page the
    conversation is about that is not among them, at most ``learned.READ_PASSAGES``.

    >>> candidate_indices([0.9, 0.8, 0.7, 0.6, 0.1], ["a", "b", "c", "d", "e"], ["e"])
    [0, 1, 2, 4]
    """
    order = sorted(range(len(relevance)), key=lambda i: -relevance[i])
    chosen = order[:TOP]
    for page in subject:
        if not any(sources[i] == page for i in chosen):
            chosen += [i for i in order if sources[i] == page][:1]
    return chosen[: learned.READ_PASSAGES]


def page_rows(
    scorer: EvidenceScorer,
    question: str,
    passages: Sequence[Passage],
    relevance: Sequence[float],
    candidates: Sequence[int],
    subject: Sequence[str] = (),
    message: str = "",
) -> list[dict[str, float]]:
    """The features of each candidate that the window reading does not give (``rank``,
    ``fused``, ``learned``, ``title``, ``conversation``, ``behind``), in ``candidates`` order.
    ``passages`` are in retrieval's order (the conversation's page's passages last);
    ``message``: the customer's own words, when ``question`` is another phrasing of them."""
    if not candidates:
        return []
    chosen = [passages[i] for i in candidates]
    reading = learned.read(
        scorer,
        question,
        [p.text for p in chosen],
        [relevance[i] for i in candidates],
        [p.title for p in chosen],
        quoting=False,
    )
    titles = title_coverage(scorer, message or question, [p.title or p.source_id for p in chosen])
    best = max(relevance[i] for i in candidates)
    return [
        {
            "rank": round(1.0 / (1.0 + index), 4),
            "fused": round(float(passage.score), 4),
            "learned": float(reading.pages.get(position, 0.0)),
            "title": titles[position],
            "conversation": float(passage.source_id in subject),
            "behind": round(best - relevance[index], 4),
        }
        for position, (index, passage) in enumerate(zip(candidates, chosen, strict=True))
    ]


def score(model: PageChoiceModel, row: dict[str, float]) -> float:
    """The candidate's logistic score (its probability of being the page that answers).

    >>> model = PageChoiceModel(features=["title"], mean=[0.5], scale=[0.5], weights=[2.0])
    >>> round(score(model, {"title": 1.0}), 3), round(score(model, {"title": 0.0}), 3)
    (0.881, 0.119)
    """
    total = sum(
        w * (row.get(f, 0.0) - m) / s
        for f, m, s, w in zip(model.features, model.mean, model.scale, model.weights, strict=True)
    )
    return 1.0 / (1.0 + math.exp(-total))


def chooser(
    model: PageChoiceModel, extra: Sequence[dict[str, float]]
) -> Callable[[list[dict[str, float]]], int] | None:
    """What ``tasks.answerability.read`` calls to pick a candidate: the highest score over its
    reading features merged with ``extra`` (None when no chooser is fitted). Each row gets
    its ``score``, for the trace."""
    if not model.weights:
        return None

    def pick(rows: list[dict[str, float]]) -> int:
        for row in rows:
            row.update(extra[int(row["position"])])
            row["score"] = round(score(model, row), 4)
        return max(range(len(rows)), key=lambda i: rows[i]["score"])

    return pick
