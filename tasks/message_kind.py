"""What kind of customer message this is, read at intake before any search: a question (the
default), a request for a person (the learned hand-off intent, ``tasks/handoff_intent.py``),
courtesy alone, or a reply to the assistant's offer of a person.

The assistant's offer ("...shall I connect you with a support agent?") is a state of the
conversation: the turn that made it is stored with ``offers_handoff``, and the next message is
read against it. "yes", "ok", "please do" accept the offer (the turn hands off); "no",
"no thanks" decline it (a polite close). Anything that says more ("yes, and what about annual
plans?") is a question, and the offer lapses. A follow-up that leans on the answer before it
("and how do I ask for it?") is a question, never courtesy, even when its words are all
courtesy words.

Usage::

    read_kind("yes", offer_pending=True)                          # 'accept'
    read_kind("no thanks", offer_pending=True)                    # 'decline'
    read_kind("Thanks, bye!", offer_pending=False)                # 'courtesy'
    read_kind("and how do I ask for it?", offer_pending=False)    # 'question'
    asked_something({"user": "thanks", "kind": "courtesy"})      # False
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal, get_args

from tasks.courtesy import courtesy_only
from tasks.schemas import HistoryTurn, MessageKind

KINDS: tuple[MessageKind, ...] = get_args(MessageKind)

_WORD = re.compile(r"[a-z]+")


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


_YES = _set(
    "yes yeah yea yep yup ya y sure ok okay please do go ahead alright fine "
    "absolutely definitely certainly course connect"
)
_NO = _set("no nope nah not don dont never")
# words that fill a short yes or no without saying anything else ("yes please, that would be
# great", "no thank you, I'm fine")
_FILLER = _set(
    "please thanks thank you that thats would be great of it now i m im am good right "
    "all is s just let lets with someone somebody a an the person human agent me us "
    "will need t for to"
)
MAX_REPLY_WORDS = 8
_QUESTION_WORD = _set("how what when where why which who")
_REFERS_BACK = _set("it its that this those these them they one same")
_LEADS_ON = _set("and but so also")
_CLOSING = _set("thanks thank cheers bye goodbye great perfect awesome ok okay")


def _words(message: str) -> list[str]:
    return _WORD.findall(message.lower())


def reply_to_offer(message: str) -> Literal["accept", "decline"] | None:
    """A short yes or no (and nothing else), or None.

    >>> reply_to_offer("Yes"), reply_to_offer("please do"), reply_to_offer("no, thank you")
    ('accept', 'accept', 'decline')
    >>> reply_to_offer("yes, and what about annual plans?") is None
    True
    """
    words = _words(message)
    if not words or len(words) > MAX_REPLY_WORDS:
        return None
    if any(w not in _YES | _NO | _FILLER for w in words):
        return None
    if any(w in _NO for w in words):
        return "decline"
    return "accept" if any(w in _YES for w in words) else None


def leans_on_the_answer(message: str) -> bool:
    """A question that refers back to what was said ("and how do I ask for it?"): never small
    talk, whatever its words.

    >>> leans_on_the_answer("and how do I ask for it?"), leans_on_the_answer("How are you?")
    (True, False)
    """
    words = _words(message)
    asks = any(w in _QUESTION_WORD for w in words)
    return asks and (any(w in _REFERS_BACK for w in words) or bool(words and words[0] in _LEADS_ON))


def offer_pending(history: Sequence[HistoryTurn]) -> bool:
    """Whether the assistant's last reply offered a person."""
    return bool(history) and history[-1].offered_handoff


def read_kind(message: str, offer_pending: bool) -> MessageKind:
    """The message's kind; ``offer_pending``: the assistant's last reply offered a person.

    >>> read_kind("ok", offer_pending=True), read_kind("ok", offer_pending=False)
    ('accept', 'courtesy')
    """
    reply = reply_to_offer(message)
    if reply is not None:
        return reply if offer_pending else "courtesy"
    if courtesy_only(message) and not leans_on_the_answer(message):
        return "courtesy"
    return "question"


def closing(message: str) -> bool:
    """Thanks or goodbye: what a customer says when the answer did it.

    >>> closing("Thanks, bye!"), closing("Hi"), closing("Can you help me?")
    (True, False, False)
    """
    return any(w in _CLOSING for w in _words(message))


def says_goodbye(message: str, kind: MessageKind) -> bool:
    """The customer is leaving: thanks or goodbye alone, or no to the offer of a person (the
    chat then asks whether the problem was solved).

    >>> says_goodbye("Thanks, bye!", "courtesy"), says_goodbye("Can you help me?", "courtesy")
    (True, False)
    >>> says_goodbye("no thanks", "decline"), says_goodbye("thanks, and refunds?", "question")
    (True, False)
    """
    return kind == "decline" or (kind == "courtesy" and closing(message))


def kind_of(turn: Mapping[str, Any]) -> MessageKind:
    """A stored turn's kind: as read at intake, or (a turn stored before kinds were) read
    again from its words."""
    stored = turn.get("kind")
    if stored in KINDS:
        return stored  # type: ignore[no-any-return]
    return read_kind(str(turn.get("user", "")), offer_pending=False)


def asked_something(turn: Mapping[str, Any]) -> bool:
    """Whether a stored customer turn asked something: a question or a request for a person,
    not courtesy or a yes / no."""
    return bool(turn.get("user")) and kind_of(turn) in ("question", "person")
