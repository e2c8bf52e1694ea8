"""The customer's question a conversation turns on: what a person who takes it over has to
solve (the queue row), what the agent's suggested reply answers, and what the conversation's
topic is named after.

It is the last question the assistant handled (never a message written to a person after
the hand-off), walking back past messages that ask the knowledge base nothing: a bare request
for a person ("I want a human"), a yes or no to the offer of a person, thanks, a goodbye,
contact details. A request that also asks something ("My refund has not arrived. I want a
human!") is read for its question. Only when the customer asked nothing before the hand-off
(the "Talk to a person" button at once) is it the first question they wrote to the person.

Usage::

    pages_of = pages_reader(load_message_kinds(encoders))
    behind = question_behind(turns, pages_of)
    behind.position, behind.question     # its place in ``turns``, what it asks the pages
    open_question(turns, pages_of)       # what still waits for an answer (None: nothing)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from storage.memory import WAITING_FOR_AGENT, StoredTurn
from tasks.judging import pages_question
from tasks.message_kind import MessageKinds, asked_something

PagesOf = Callable[[str], str]  # a message -> what it asks the pages ("" when nothing)


@dataclass(frozen=True)
class Behind:
    position: int  # in the turns read
    question: str  # what the message asks the pages (a request for a person left out)


def question_behind(turns: Sequence[StoredTurn], pages_of: PagesOf) -> Behind | None:
    """The question ``turns`` turn on (module docstring); None when the customer asked the
    pages nothing at all.

    >>> pages_of = lambda text: "" if "human" in text or text == "yes" else text
    >>> question_behind([{"user": "Student discount?", "kind": "question", "verdict": "idk"},
    ...                  {"user": "yes", "kind": "accept", "verdict": "handoff"},
    ...                  {"user": "I study at the OU.", "kind": "question",
    ...                   "status": "waiting_for_agent"}], pages_of)
    Behind(position=0, question='Student discount?')
    >>> question_behind([{"user": "", "verdict": "handoff", "kind": "person"},
    ...                  {"user": "Invoice 12 is wrong.", "kind": "question",
    ...                   "status": "waiting_for_agent"}], pages_of)
    Behind(position=1, question='Invoice 12 is wrong.')
    """
    written = [i for i, t in enumerate(turns) if asked_something(t)]
    before = [i for i in written if turns[i].get("status") != WAITING_FOR_AGENT]
    after = [i for i in written if turns[i].get("status") == WAITING_FOR_AGENT]
    for position in [*reversed(before), *after]:
        question = pages_of(str(turns[position]["user"]))
        if question:
            return Behind(position, question)
    return None


def open_question(turns: Sequence[StoredTurn], pages_of: PagesOf) -> Behind | None:
    """The question that still waits for an answer: since a person last replied, the first
    the customer wrote after it; before any reply, the question behind the hand-off unless
    the assistant answered it (the customer read that answer already). None: nothing waits.

    >>> same = lambda text: text
    >>> open_question([{"user": "Refund?", "kind": "question", "verdict": "idk"},
    ...                {"from": "agent", "answer": "Sent."}], same) is None
    True
    >>> open_question([{"user": "Refund?", "kind": "question", "verdict": "idk"},
    ...                {"from": "agent", "answer": "Sent."},
    ...                {"user": "And the invoice?", "kind": "question",
    ...                 "status": "waiting_for_agent"}], same)
    Behind(position=2, question='And the invoice?')
    """
    replies = [i for i, t in enumerate(turns) if t.get("from") == "agent"]
    start = replies[-1] + 1 if replies else 0
    behind = question_behind(turns[start:], pages_of)
    if behind is None or turns[start + behind.position].get("verdict") == "answered":
        return None
    return Behind(start + behind.position, behind.question)


_READERS: dict[int, PagesOf] = {}


def pages_reader(kinds: MessageKinds) -> PagesOf:
    """``message`` -> what it asks the pages (``tasks.judging.pages_question`` with the
    classifier's reading of a request for a person), remembered per message: the queue reads
    the same messages on every poll."""
    if id(kinds) not in _READERS:
        _READERS[id(kinds)] = lru_cache(maxsize=4096)(
            lambda message: pages_question(message, kinds.asks_for_person)
        )
    return _READERS[id(kinds)]
