"""The judge's verdict: evidence first, the model's opinion where evidence is undecided.

The evidence call comes from the answerability gate: the fitted logistic model over the
question-focused features (tasks/answerability.py, the default) or the learned cross-encoder
(tasks/learned_answerability.py, ``evidence.gate: learned``), against its operating points.

Usage::

    evidence = assess(scorer, question, passages, settings.evidence)
    evidence.call, evidence.probability        # "sufficient", 0.93
    reading = read_passages(scorer, question, passages, None, settings.evidence, message)
    verdict, note = decide(evidence.call, judgement, asks_for_person=False)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from config.settings import LEARNED_FEATURE, EvidenceSettings
from tasks import learned_answerability as learned
from tasks.answerability import Reading, read, refocus
from tasks.courtesy import asks_something
from tasks.entities import without_references
from tasks.evidence import EvidenceScorer
from tasks.facts import explained_codes, undocumented_codes
from tasks.operating_points import logistic_probability, operating_points
from tasks.page_choice import candidate_indices, chooser, page_rows
from tasks.passage_text import split_sentences
from tasks.schemas import EvidenceCall, Judgement, JudgeVerdict, Passage
from tasks.spelling import respell


@dataclass(frozen=True)
class Evidence:
    call: EvidenceCall
    relevance: list[float]
    coverage: float
    probability: float = 0.0
    reading: Reading | None = None

    @property
    def best(self) -> float:
        return max(self.relevance, default=0.0)


def asks_the_pages(message: str, asks_for_person: Callable[[str], bool]) -> bool:
    """Whether a message asks something a page could answer: more than a request for a
    person (``asks_for_person``: the hand-off intent), greetings and thanks ("I want to talk
    to a human." and "Thanks, bye!" do not; "My invoice is wrong. I want to talk to a
    human." does)."""
    return any(
        asks_something(s) and not asks_for_person(s) for s in split_sentences(" ".join(message.split()))
    )


def assess(
    scorer: EvidenceScorer,
    question: str,
    passages: list[Passage],
    thresholds: EvidenceSettings,
    subject: Sequence[str] = (),
    message: str = "",
) -> Evidence:
    """The answerability gate's call on the passages for this phrasing of the question
    (``subject``: the pages the conversation is about, candidates of the page choice;
    ``message``: the customer's own words, the titles they name)."""
    if not passages:
        return Evidence("insufficient", [], 0.0)
    texts = [p.text for p in passages]
    question = as_the_pages_read(scorer, question, texts)
    relevance = scorer.relevance(question, texts)
    if thresholds.gate == "learned":
        reading = _read(scorer, question, passages, relevance, thresholds, "", quoting=False)
        probability = reading.features["answerable"]
    else:
        reading = choose_page(scorer, question, passages, relevance, thresholds, subject, message)
        probability = round(logistic_probability(thresholds.answerability, reading.features), 4)
    answer_at, refuse_below = operating_points(thresholds)
    if reading.passage_index is not None:
        answering = passages[reading.passage_index].text
        if undocumented_codes(question, answering, texts):
            probability = 0.0  # the pages explain other codes of its family, not this one
        elif explained_codes(question, answering):
            probability = max(probability, answer_at)  # the page explains the code named
    call: EvidenceCall = (
        "sufficient"
        if probability >= answer_at
        else "insufficient"
        if probability < refuse_below
        else "undecided"
    )
    return Evidence(call, relevance, reading.features.get("coverage", 0.0), probability, reading)


def choose_page(
    scorer: EvidenceScorer,
    question: str,
    passages: list[Passage],
    relevance: list[float],
    thresholds: EvidenceSettings,
    subject: Sequence[str] = (),
    message: str = "",
) -> Reading:
    """The default gate's reading of the page chosen among the candidates
    (``tasks/page_choice.py``), with the cross-encoder's probability for it (``learned``)."""
    candidates = candidate_indices(relevance, [p.source_id for p in passages], subject)
    needs_rows = thresholds.page_choice.weights or LEARNED_FEATURE in thresholds.answerability.features
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


def read_passages(
    scorer: EvidenceScorer,
    question: str,
    passages: list[Passage],
    relevance: list[float] | None,
    thresholds: EvidenceSettings,
    message: str = "",
    quoting: bool = True,
    only: int | None = None,
) -> Reading:
    """The reading of the gate in use (``evidence.gate``); with ``message`` (the customer's
    own words, when ``question`` is another phrasing) they add their focus to what is quoted.
    ``quoting=False``: only where the answer is and how well, not which units to quote.
    ``only``: read that passage alone (the one the gate chose: what is quoted is from the
    page the decision chose). The customer's own references (an order id) are no words a
    page must hold."""
    if only is not None:
        one = read_passages(
            scorer,
            question,
            [passages[only]],
            [relevance[only]] if relevance else None,
            thresholds,
            message,
            quoting,
        )
        return replace(one, passage_index=only) if one.passage_index is not None else one
    texts = [p.text for p in passages]
    return _read(
        scorer,
        as_the_pages_read(scorer, question, texts),
        passages,
        relevance,
        thresholds,
        as_the_pages_read(scorer, message, texts),
        quoting,
    )


def as_the_pages_read(scorer: EvidenceScorer, text: str, texts: list[str]) -> str:
    """The customer's words as the gate reads them against the pages: their own references
    (an order id, an email) left out, typos spelt as the pages spell the word."""
    if not text:
        return text
    return respell(without_references(text, " ".join(texts)), texts, scorer.knows)


def _read(
    scorer: EvidenceScorer,
    question: str,
    passages: list[Passage],
    relevance: list[float] | None,
    thresholds: EvidenceSettings,
    message: str,
    quoting: bool,
) -> Reading:
    texts = [p.text for p in passages]
    if thresholds.gate == "learned":
        titles = [p.title for p in passages]
        reading = learned.read(
            scorer,
            question,
            texts,
            relevance,
            titles,
            quoting=quoting,
            page_margin=thresholds.learned.page_margin,
        )
        if message and message != question and reading.passage_index is not None:
            reading = learned.refocus(scorer, reading, question, message, titles[reading.passage_index])
        return reading
    reading = read(scorer, question, texts, relevance)
    return (
        refocus(scorer, reading, question, message, texts)
        if message and message != question
        else reading
    )


def decide(
    evidence_call: EvidenceCall, judgement: Judgement | None, asks_for_person: bool
) -> tuple[JudgeVerdict, str]:
    """Combine evidence and the model's verdict; the note says who decided and why
    (``asks_for_person``: what the hand-off intent read in the message)."""
    model = judgement.verdict if judgement else None
    if asks_for_person:
        return "needs_human", "the customer asked for a person"
    if evidence_call == "sufficient":
        if model not in (None, "sufficient"):
            return "sufficient", f"evidence overrides the model's {model!r}"
        return "sufficient", "evidence is sufficient"
    if model == "needs_human":
        return "needs_human", "the model asked for a human and evidence is not sufficient"
    if evidence_call == "insufficient":
        if model == "out_of_scope":
            return "out_of_scope", "evidence is insufficient; the model calls it out of scope"
        if model == "sufficient":
            return "insufficient", "evidence overrides the model's 'sufficient'"
        return "insufficient", "evidence is insufficient"
    if model is None:
        return "insufficient", "evidence undecided and no model verdict"
    return model, f"evidence undecided; the model's {model!r} decides"
