"""Follow-ups resolved without a model: what "it", "that error code" or "what should I do?"
refer to, from the conversation and entity memory.

A typed reference ("that error code", "my order") resolves to the most recent entity of that
type, from this conversation's messages first, then from the customer's entity memory. A
message that leans on the previous one ("how do I fix it?", "and for annual plans?") gets the
previous question's subject terms. Any other message of a conversation ("what are the
requirements to be eligible") gets the conversation's subject terms as one more phrasing, and
the page the conversation is about (``subject_pages``) is the gate's prior; the bare message is
still judged, so a clear change of topic is answered from its own page. The result is *added*
to the customer's words as one more query; the model's rewrite, when there is one, is another
addition.

Usage::

    follow_up = resolve_follow_up("How do I fix it?", history, entities)
    follow_up.query    # "How do I fix it? payment failed error PAY-102"
    follow_up.source   # "the previous question" (or the entity it names)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from storage.memory import RememberedEntity
from storage.text import TERM
from tasks.courtesy import content_words
from tasks.entities import extract, referenced
from tasks.schemas import HistoryTurn

_LEANS_BACK = re.compile(
    r"\b(it|its|that|this|those|these|they|them|there|same)\b"
    r"|\b(the|this|that) (\w+ )?ones?\b"
    r"|^(and|but|so|also|what about|how about)\b"
    r"|\bwhat (should|do|can) i do\b|\bhow (do|can) i (fix|solve|change) (it|that|this)\b",
    re.IGNORECASE,
)
SUBJECT_TERMS = 8
SHORT_FOLLOW_UP = 6  # words: a message this short, mid-conversation, leans on the one before
# the message-kind labels of a whole question ("How do I export my data?"): short, it still
# stands alone unless a word of it points back (``_LEANS_BACK``) or the classifier gives its
# follow_up label at least ``LEANS_AT`` ("how long is an invitation valid?" 0.37 in a
# conversation about team members; "How do I export my data?" 0.04): chosen on our dev
# conversations (examples/kickoff/kb-dev-conversations.yaml, conversations.yaml)
STANDS_ALONE = ("question", "problem")
LEANS_AT = 0.1


def stands_alone(label: str, follow_up: float) -> bool:
    """Whether the classifier read a whole question: ``label`` one of :data:`STANDS_ALONE`
    and its ``follow_up`` probability under :data:`LEANS_AT`.

    >>> stands_alone("question", 0.04), stands_alone("question", 0.37), stands_alone("follow_up", 0.0)
    (True, False, False)
    """
    return label in STANDS_ALONE and follow_up < LEANS_AT


@dataclass(frozen=True)
class FollowUp:
    """One more query for a message of a conversation. ``leans`` says the message does not
    stand alone (a pronoun, a short message): its bare words are then never judged alone."""

    query: str
    source: str
    leans: bool = True


def conversation_entities(
    history: list[HistoryTurn], memory: list[RememberedEntity]
) -> list[RememberedEntity]:
    """Entities most recent first: this conversation's messages, then entity memory."""
    said = [
        RememberedEntity(type=e.type, value=e.value)
        for turn in reversed(history)
        for e in reversed(extract(turn.user))
    ]
    return said + [e for e in memory if (e.type, e.value) not in {(s.type, s.value) for s in said}]


def subject_terms(text: str) -> list[str]:
    """The content words of a message in order, entity values kept as written."""
    values = [e.value for e in extract(text)]
    keep = content_words(text)
    words = [w for w in TERM.findall(text) if w.lower() in keep and w not in values]
    return list(dict.fromkeys([*values, *words]))[:SUBJECT_TERMS]


def named(entities: list[RememberedEntity]) -> str:
    """'order ORD-55812, error code PAY-102'."""
    return ", ".join(f"{e.type.replace('_', ' ')} {e.value}" for e in entities)


def leans_back(message: str) -> bool:
    return bool(_LEANS_BACK.search(message.strip())) or len(message.split()) <= SHORT_FOLLOW_UP


def resolve_follow_up(
    message: str,
    history: list[HistoryTurn],
    entities: list[RememberedEntity],
    *,
    reads_alone: bool = False,
) -> FollowUp | None:
    """One more query for a message that refers back, or None when it stands alone.
    ``reads_alone``: the message-kind classifier read a whole question (``stands_alone``), so
    being short does not make it lean on the one before; a word that points back still does.

    >>> earlier = [HistoryTurn(user="How long does a refund take?", answer="5 days.")]
    >>> resolve_follow_up("How do I export my data?", earlier, []).leans
    True
    >>> resolve_follow_up("How do I export my data?", earlier, [], reads_alone=True).leans
    False
    """
    pointed = referenced(message, conversation_entities(history, entities))
    if pointed:
        return FollowUp(f"{message} ({named(pointed)})", named(pointed))
    short_only = reads_alone and not _LEANS_BACK.search(message.strip())
    if history and leans_back(message) and not short_only:
        terms = carried_over(message, history[-1].user)
        if terms:
            return FollowUp(f"{message} {' '.join(terms)}", "the previous question")
    if history:  # "what are the requirements to be eligible": about the conversation's subject
        terms = carried_over(message, subject_message(history))
        if terms:
            return FollowUp(f"{message} {' '.join(terms)}", "the conversation's subject", leans=False)
    return None


def carried_over(message: str, earlier: str) -> list[str]:
    """The subject terms of an ``earlier`` message that a follow-up takes on: not those it
    says itself, nor a value of a kind it names anew ("and what about SSO-104?" after error
    SSO-102 asks about SSO-104 alone).

    >>> carried_over("and what about SSO-104?", "Sign-in fails with error SSO-102")
    ['Sign-in', 'fails', 'error']
    """
    named = {e.type for e in extract(message)}
    replaced = {e.value for e in extract(earlier) if e.type in named}
    return [t for t in subject_terms(earlier) if t.lower() not in message.lower() and t not in replaced]


def subject_message(history: list[HistoryTurn]) -> str:
    """The conversation's message that says its subject: its latest message that was answered
    with a citation, else its latest message."""
    answered = [t for t in history if t.sources]
    return (answered or history)[-1].user


def subject_pages(history: list[HistoryTurn]) -> list[str]:
    """The pages the conversation is about: what its latest cited answer cited."""
    answered = [t for t in history if t.sources]
    return list(answered[-1].sources) if answered else []
