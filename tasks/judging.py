"""The judge's verdict over the decision (``tasks/decision.py``), and what of a message the
pages are asked (its words as the pages read them, the sentences that ask something).

Evidence first; the model's opinion only where the evidence is undecided.

Usage::

    verdict, note = judged(decision.action, judgement, asks_for_person=False)
    as_the_pages_read(scorer, "refnd for ORD-55812?", texts)     # "refund for ?"-ish
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from storage.text import split_sentences
from tasks.courtesy import asks_something
from tasks.entities import without_references
from tasks.evidence import EvidenceScorer
from tasks.schemas import DecisionAction, Judgement, JudgeVerdict
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


def as_the_pages_read(scorer: EvidenceScorer, text: str, texts: list[str]) -> str:
    """The customer's words as the gate reads them against the pages: their own references
    (an order id, an email) left out, typos spelt as the pages spell the word."""
    if not text:
        return text
    return respell(without_references(text, " ".join(texts)), texts, scorer.knows)


def judged(
    action: DecisionAction, judgement: Judgement | None, asks_for_person: bool
) -> tuple[JudgeVerdict, str]:
    """Combine the decision's action and the model's verdict; the note says who decided and
    why (``asks_for_person``: what the hand-off intent read in the message)."""
    model = judgement.verdict if judgement else None
    if asks_for_person:
        return "needs_human", "the customer asked for a person"
    if action == "answer":
        if model not in (None, "sufficient"):
            return "sufficient", f"evidence overrides the model's {model!r}"
        return "sufficient", "evidence is sufficient"
    if model == "needs_human":
        return "needs_human", "the model asked for a human and evidence is not sufficient"
    if action in ("refuse", "handoff"):
        if model == "out_of_scope":
            return "out_of_scope", "evidence is insufficient; the model calls it out of scope"
        if model == "sufficient":
            return "insufficient", "evidence overrides the model's 'sufficient'"
        return "insufficient", "evidence is insufficient"
    if model is None:
        return "insufficient", "evidence undecided and no model verdict"
    return model, f"evidence undecided; the model's {model!r} decides"
