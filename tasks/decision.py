"""The answer decision: which page answers this message, in this conversation, and whether it
does. One component, one reader, one threshold file, one fitting script.

    1. candidates  the passages retrieval ranks closest to each phrasing of the message, and
                   the page the conversation is about (``tasks/page_choice.candidate_indices``)
    2. reading     each candidate's best window, read for the message's terms and meaning
                   (``tasks/answerability.read``), and by the cross-encoder in one batch
                   (``tasks/page_choice.learned_reading``)
    3. page        a logistic score per candidate picks the page
                   (storage/kb/assets/decision/page_choice.yaml, ``training/page_choice.py``)
    4. probability a logistic model over the chosen page's features (its window reading, the
                   cross-encoder's probability, and whether it explains the code the message
                   asks about) gives one calibrated probability (storage/kb/assets/decision/gate.yaml,
                   ``training/gate.py``); nothing overwrites it afterwards
    5. action      at or above ``answer_at``: answer; below ``refuse_below``: refuse; in
                   between: a judge model weighs in or, without one, the page is suggested

The :class:`~tasks.schemas.Decision` is recorded in the trace with every candidate's features
and probability and each gate feature's contribution to the logit (what moved it).

Usage::

    decision = decide_page(scorer, settings, ["How long does a refund take?"], passages)
    decision.action, decision.source_id, decision.probability   # "answer", "billing/refunds.md", 0.97
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from config.settings import LEARNED_FEATURE, EvidenceSettings, Settings
from tasks.answerability import Reading, read
from tasks.evidence import EvidenceScorer
from tasks.facts import explained_codes, undocumented_codes
from tasks.judging import as_the_pages_read
from tasks.operating_points import linear_terms, logistic_probability, operating_points
from tasks.page_choice import candidate_indices, chooser, page_rows
from tasks.schemas import Decision, DecisionAction, EvidenceCall, Passage

CODE_EXPLAINED = "code_explained"  # 1: the page holds the documented code the message names
CODE_UNEXPLAINED = "code_unexplained"  # 1: the pages explain its family's codes, not this one
ACTIONS: dict[EvidenceCall, DecisionAction] = {
    "sufficient": "answer",
    "undecided": "suggest",
    "insufficient": "refuse",
}
_CALL_RANK = {"sufficient": 2, "undecided": 1, "insufficient": 0}


@dataclass(frozen=True)
class Evidence:
    """One phrasing's reading: the call, each passage's relevance and the page's reading."""

    call: EvidenceCall
    relevance: list[float]
    coverage: float
    probability: float = 0.0
    reading: Reading | None = None
    contributions: dict[str, float] | None = None

    @property
    def best(self) -> float:
        return max(self.relevance, default=0.0)


def code_features(question: str, answering: str, texts: Sequence[str]) -> dict[str, float]:
    """Whether the answering page holds the code the question names, and whether the pages
    explain other codes of its family but not this one (inputs of the gate).

    >>> code_features("What does PAY-407 mean?", "PAY-101: declined.", ["PAY-101: declined."])
    {'code_explained': 0.0, 'code_unexplained': 1.0}
    """
    return {
        CODE_EXPLAINED: float(bool(explained_codes(question, answering, texts))),
        CODE_UNEXPLAINED: float(bool(undocumented_codes(question, answering, texts))),
    }


def contributions(settings: EvidenceSettings, features: dict[str, float]) -> dict[str, float]:
    """Each gate feature's share of the logit, ``weight * (feature - mean) / scale``."""
    terms = linear_terms(settings.answerability, features)
    return {name: round(term, 3) for name, term in terms.items()}


def assess(
    scorer: EvidenceScorer,
    question: str,
    passages: list[Passage],
    thresholds: EvidenceSettings,
    subject: Sequence[str] = (),
    message: str = "",
) -> Evidence:
    """The decision on the passages for this phrasing of the question (``subject``: the pages
    the conversation is about, candidates of the page choice; ``message``: the customer's own
    words, the titles they name)."""
    if not passages:
        return Evidence("insufficient", [], 0.0)
    texts = [p.text for p in passages]
    question = as_the_pages_read(scorer, question, texts)
    relevance = scorer.relevance(question, texts)
    reading = choose_page(scorer, question, passages, relevance, thresholds, subject, message)
    answering = passages[reading.passage_index].text if reading.passage_index is not None else ""
    reading.features.update(code_features(question, answering, texts))
    probability = round(logistic_probability(thresholds.answerability, reading.features), 4)
    answer_at, refuse_below = operating_points(thresholds)
    call: EvidenceCall = (
        "sufficient"
        if probability >= answer_at
        else "insufficient"
        if probability < refuse_below
        else "undecided"
    )
    return Evidence(
        call,
        relevance,
        reading.features.get("coverage", 0.0),
        probability,
        reading,
        contributions(thresholds, reading.features),
    )


def choose_page(
    scorer: EvidenceScorer,
    question: str,
    passages: list[Passage],
    relevance: list[float],
    thresholds: EvidenceSettings,
    subject: Sequence[str] = (),
    message: str = "",
) -> Reading:
    """The reading of the page chosen among the candidates (``tasks/page_choice.py``), with
    the cross-encoder's probability for it (``learned``)."""
    candidates = candidate_indices(relevance, [p.source_id for p in passages], subject)
    needs_rows = thresholds.page_choice.weights or thresholds.reads_learned
    extra = (
        page_rows(scorer, question, passages, relevance, candidates, subject, message)
        if needs_rows
        else []
    )
    reading = read(
        scorer,
        question,
        [p.text for p in passages],
        relevance,
        candidates,
        chooser(thresholds.page_choice, extra),
    )
    for row in reading.candidates if extra else []:
        row.update(extra[int(row["position"])])  # with no chooser fitted, for the trace
        if row["passage"] == reading.passage_index:
            reading.features[LEARNED_FEATURE] = round(float(row["learned"]), 4)
    reading.pages = {int(r["passage"]): r.get("learned", 0.0) for r in reading.candidates}
    return reading


def decide_page(
    scorer: EvidenceScorer,
    settings: Settings,
    questions: list[str],
    passages: list[Passage],
    subject: Sequence[str] = (),
    message: str = "",
) -> Decision:
    """The decision over each phrasing of the question; the one the evidence supports best.

    ``subject``: the pages the conversation is about; ``message``: the customer's own words.
    A phrasing that one of them answers sufficiently wins over another page's, however strong
    (a follow-up belongs to the page the conversation is about); when none of them answers,
    the strongest reading decides.
    """
    decisions: list[Decision] = []
    for text in dict.fromkeys(q for q in questions if q and q.strip()):
        found = assess(scorer, text, passages, settings.evidence, subject, message)
        reading = found.reading
        index = reading.passage_index if reading else None
        pages: dict[str, float] = {}
        for candidate, probability in (reading.pages if reading else {}).items():
            source = passages[candidate].source_id
            pages[source] = max(pages.get(source, 0.0), probability)
        decisions.append(
            Decision(
                call=found.call,
                action=ACTIONS[found.call],
                relevance=found.relevance,
                coverage=found.coverage,
                probability=found.probability,
                features=reading.features if reading else {},
                contributions=found.contributions or {},
                question=text,
                pages=pages,
                source_id=passages[index].source_id if index is not None else "",
                passage_index=index,
                candidates=[
                    {"page": passages[int(c["passage"])].source_id, **c}
                    for c in (reading.candidates if reading else [])
                ],
            )
        )
    if not decisions:
        return Decision()
    on_subject = [d for d in decisions if d.source_id in subject and d.call == "sufficient"]
    return max(on_subject or decisions, key=lambda d: (_CALL_RANK[d.call], d.probability))
