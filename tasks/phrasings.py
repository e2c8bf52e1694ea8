"""What the evidence gate judges: the phrasings of the customer's question the passages must
answer (the whole message, the one question it wraps, the code a problem statement names, or a
follow-up's resolution).

A model's rewrite helps the search but is never what the gate judges: a rewrite can drift to
another question.

Usage::

    first_turn_phrasings("Hi. My sync failed with E-429.")
    # ["Hi. My sync failed with E-429.", "What does error E-429 mean?"]
    grounded_phrasings(state)      # for a follow-up: its words with what they refer to
"""

from __future__ import annotations

from storage.text import split_sentences
from tasks.courtesy import asks_something, subject
from tasks.facts import asked_codes
from tasks.state import TurnState

MAX_QUESTIONS = 2  # the questions of a longer message judged alone, besides the whole of it


def asked_questions(message: str) -> list[str]:
    """The questions of a message of several sentences, each judged alone (at most
    ``MAX_QUESTIONS``): the one a message wraps in context, or each of two it asks ("are you a
    robot? anyways, how long does a refund take?": the page may answer only one).

    >>> asked_questions("My order X was charged twice. How long does a refund take?")
    ['How long does a refund take?']
    >>> asked_questions("How long does a refund take?")
    []
    """
    parts = split_sentences(" ".join(message.split()))
    if len(parts) < 2:
        return []
    return [p for p in parts if p.endswith("?") and asks_something(p)][:MAX_QUESTIONS]


def wrapped_question(message: str) -> str:
    """The one question of a message that wraps it in other sentences, else "".

    >>> wrapped_question("My order X was charged twice. How long does a refund take?")
    'How long does a refund take?'
    """
    asked = asked_questions(message)
    return asked[0] if len(asked) == 1 else ""


def problem_question(message: str) -> str:
    """A problem statement ("My backup on build-7 failed with E-429.") asks about its code.

    >>> problem_question("My backup on build-7 failed last night with error E-429.")
    'What does error E-429 mean?'
    >>> problem_question("Hi. Our sync got error E-429. Can you help me with that?")
    'What does error E-429 mean?'
    >>> problem_question("What does E-429 mean?")
    ''
    """
    named = sorted(asked_codes(message))
    if len(named) != 1 or "?" in subject(message):
        return ""
    return f"What does error {named[0]} mean?"


def first_turn_phrasings(message: str) -> list[str]:
    """What the gate judges for a message with no history: the whole message, the questions
    it asks among other sentences, and the question a problem statement asks about its code,
    if any."""
    extra = [*asked_questions(message), problem_question(message)]
    return [message, *(q for q in extra if q)]


def grounded_phrasings(state: TurnState) -> list[str]:
    """What the passages must answer: the customer's words or, for a follow-up, those words
    with what they refer to (the previous question's subject, a remembered entity).

    A message that wraps one question in context ("My order X was charged twice. How long
    does a refund take?") is also judged by that question alone.
    """
    named = [q for q in state.queries if q.startswith(state.message) and q != state.message]
    resolved = list(dict.fromkeys([*state.follow_up[:1], *named]))
    # a message that stands alone is judged by its own words: the conversation's subject terms
    # only brought its page into the search (a neighbour's words must not make it answer)
    if not resolved or not (state.follow_up_leans or named):
        return first_turn_phrasings(state.message)
    question = wrapped_question(state.message)  # the bare words of a follow-up do not stand alone
    extra = [f"{question}{r[len(state.message) :]}" for r in resolved] if question else []
    return [*resolved, *extra]
