"""What the assistant says when nothing was searched: the polite reply to a message that asks
nothing (a greeting, thanks, a goodbye, contact details, a "no" to the offer of a person), and
what the customer reads after answering the closing question "Did we solve your problem
today?" (thanks for a yes; for a no, the offer of a person: a next step, never a dead end).
The words are the configured ``messages``; the web chat, the widget, the terminal chat and
kickoff scripts all say them from here.

Usage::

    polite_reply(settings.messages, "goodbye")   # "Goodbye, and thanks for contacting us. ..."
    reply = closing_reply(settings.messages, solved=False)
    reply.answer, reply.offers_person             # ("Sorry we did not solve it. ...", True)
"""

from __future__ import annotations

from dataclasses import dataclass

from config.settings import Messages
from tasks.schemas import MessageKind


def polite_reply(messages: Messages, kind: MessageKind) -> str:
    """The reply to a message of ``kind`` that asks nothing (thanks, and any other kind, get
    the courtesy reply).

    >>> m = Messages()
    >>> polite_reply(m, "goodbye") == m.goodbye, polite_reply(m, "courtesy") == m.courtesy
    (True, True)
    >>> polite_reply(m, "decline") == m.declined, polite_reply(m, "contact") == m.contact
    (True, True)
    """
    said = {"decline": messages.declined, "contact": messages.contact, "goodbye": messages.goodbye}
    return said.get(kind, messages.courtesy)


@dataclass(frozen=True)
class ClosingReply:
    """What the customer reads after answering the closing question; ``offers_person``: the
    chat offers a person with it (its "Talk to a person" button)."""

    answer: str
    offers_person: bool


def closing_reply(messages: Messages, solved: bool) -> ClosingReply:
    """The reply to the closing answer: thanks for a yes; for a no, sorry and a person.

    >>> closing_reply(Messages(), solved=False).offers_person
    True
    >>> closing_reply(Messages(), solved=True).answer
    'Thanks for telling us: glad we could help.'
    """
    if solved:
        return ClosingReply(messages.solved, offers_person=False)
    return ClosingReply(messages.not_solved, offers_person=True)
