"""The judge's verdict over the decision (``tasks/decision.py``), and the reading of the
chosen page that an extractive answer quotes from.

Evidence first; the model's opinion only where the evidence is undecided.

Usage::

    reading = read_passages(scorer, question, passages, None, message, only=decision.passage_index)
    verdict, note = decide(decision.call, judgement, asks_for_person=False)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace

from storage.text import split_sentences
from tasks.answerability import Reading, read, refocus
from tasks.courtesy import asks_something
from tasks.entities import without_references
from tasks.evidence import EvidenceScorer
from tasks.schemas import EvidenceCall, Judgement, JudgeVerdict, Passage
from tasks.spelling import respell


def _sentences_for_the_pages(message: str, asks_for_person: Callable[[str], bool]) -> Iterator[str]:
    return (
        s
        for s in split_sentences(" ".join(message.split()))
        if asks_something(s) and not asks_for_person(s)
    )


def asks_the_pages(message: str, asks_for_person: Callable[[str], bool]) -> bool:
    """Whether a message asks something a page could answer: more than a request for a
    person (``asks_for_person``: the hand-off intent), greetings and thanks ("I want to talk
    to a human." and "Thanks, bye!" do not; "My invoice is wrong. I want to talk to a
    human." does). Stops at the first sentence that does."""
    return next(_sentences_for_the_pages(message, asks_for_person), None) is not None


def pages_question(message: str, asks_for_person: Callable[[str], bool]) -> str:
    """What of a message the knowledge base could answer: its sentences that ask something,
    without the requests for a person ("" when there are none).

    >>> pages_question("My refund has not arrived. I want a human!", lambda s: "human" in s)
    'My refund has not arrived.'
    """
    return " ".join(_sentences_for_the_pages(message, asks_for_person))


def read_passages(
    scorer: EvidenceScorer,
    question: str,
    passages: list[Passage],
    relevance: list[float] | None,
    message: str = "",
    only: int | None = None,
) -> Reading:
    """The reading that picks what to quote; with ``message`` (the customer's own words,
    when ``question`` is another phrasing) they add their focus to what is quoted.
    ``only``: read that passage alone (the one the decision chose: what is quoted is from
    the page the decision chose). The customer's own references (an order id) are no words a
    page must hold."""
    if only is not None:
        one = read_passages(
            scorer,
            question,
            [passages[only]],
            [relevance[only]] if relevance else None,
            message,
        )
        return replace(one, passage_index=only) if one.passage_index is not None else one
    texts = [p.text for p in passages]
    return _read(
        scorer,
        as_the_pages_read(scorer, question, texts),
        passages,
        relevance,
        as_the_pages_read(scorer, message, texts),
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
    message: str,
) -> Reading:
    texts = [p.text for p in passages]
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
