"""What kind of customer message this is, read at intake before any search: one small learned
classifier, not word lists.

A multinomial logistic regression over the MiniLM sentence vector the turn computes anyway,
fitted by ``training/message_kind.py`` on messages we wrote and on hand-labelled turns of the
doc2dial training pack (``examples/intents/``); weights and model card ship in
``storage/kb/assets/message_kind/``. Its labels (:data:`LABELS`): a question, a problem
report, a follow-up that leans on the conversation, a greeting, thanks (courtesy that closes:
a goodbye among it, read apart by its words, ``tasks.courtesy.says_farewell``, so it gets a
goodbye and not "happy to help"), yes, no, a request for a person, contact details. A message
asks for a person when the whole message or one of its sentences does ("My invoice is wrong
again. I want a human.").

The assistant's offer ("...shall I connect you with a support agent?") is a state of the
conversation: the turn that made it is stored with ``offered_handoff``, and the next message is
read against it (:func:`kind_for`): yes accepts (the turn hands off), no declines (a polite
close). Anything that says more ("yes, and what about annual plans?") reads as a follow-up, and
the offer lapses.

Usage::

    kinds = load_message_kinds(encoders)
    reading = kinds.read("and how do I ask for it?")
    reading.label                                  # 'follow_up'
    kind_for(kinds.read("yes please"), offer_pending=True)    # 'accept'
    kind_for(kinds.read("Thanks!"), offer_pending=False)       # 'courtesy'
    kind_for(kinds.read("Thanks, bye!"), offer_pending=False)  # 'goodbye'
    asked_something({"user": "thanks", "kind": "courtesy"})  # False
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from storage.text import split_sentences
from tasks.courtesy import asks_something, says_farewell
from tasks.schemas import HistoryTurn, MessageKind

Label = Literal[
    "question", "problem", "follow_up", "greeting", "thanks", "yes", "no", "person", "contact"
]
LABELS: tuple[Label, ...] = get_args(Label)
KINDS: tuple[MessageKind, ...] = get_args(MessageKind)
MODEL_FILE = (
    Path(__file__).resolve().parents[1] / "storage" / "kb" / "assets" / "message_kind" / "model.json"
)
COURTESY_LABELS = ("greeting", "thanks")
# the labels of a message that asks something: searched alike (a question at intake)
QUESTION_LABELS: tuple[Label, ...] = ("question", "problem", "follow_up")
# the labels of messages that say nothing to search: with a farewell in them, a goodbye
LEAVING_LABELS: tuple[Label, ...] = ("thanks", "yes", "no", "greeting")
# contact details hold an address or a number: a message without either is another label
CONTACT_DIGITS = 7
# what each label is at intake when no offer of a person is pending
_KIND: dict[Label, MessageKind] = {
    "question": "question",
    "problem": "question",
    "follow_up": "question",
    "greeting": "greeting",
    "thanks": "courtesy",
    "yes": "courtesy",  # "ok" after an answer: the customer has it
    "no": "greeting",  # "no" to no offer: not helped, not leaving
    "person": "person",
    "contact": "contact",
}


def parts(message: str) -> list[str]:
    """What is read for a request for a person: the whole message and, when it has several,
    each sentence.

    >>> parts("My invoice is wrong. I want a human.")
    ['My invoice is wrong. I want a human.', 'My invoice is wrong.', 'I want a human.']
    """
    whole = " ".join(message.split())
    sentences = split_sentences(whole)
    return [whole, *sentences] if len(sentences) > 1 else [whole]


@dataclass(frozen=True)
class Reading:
    """One message read: its label, the probability that it asks for a person (its most
    asking part's), every label's probability for the whole message, and whether it takes
    leave ("bye": a courtesy label and a farewell, ``tasks.courtesy.says_farewell``)."""

    label: Label
    person: float
    probabilities: Mapping[Label, float]
    farewell: bool = False


class MessageKinds:
    """The fitted classifier over an encoder of pooled, L2-normalised MiniLM vectors."""

    def __init__(self, encoders: Any, fitted: Mapping[str, Any] | None = None) -> None:
        """``fitted``: the model file's content (default: the shipped file)."""
        if fitted is None:
            if not MODEL_FILE.exists():
                raise FileNotFoundError(
                    f"the message-kind model {MODEL_FILE} is missing: "
                    "run python -m training.message_kind"
                )
            fitted = json.loads(MODEL_FILE.read_text(encoding="utf-8"))
        self.encoders = encoders
        self.labels: list[Label] = list(fitted["labels"])
        self.weights = np.asarray(fitted["weights"], dtype=np.float32)
        self.bias = np.asarray(fitted["bias"], dtype=np.float32)
        self.person_at = float(fitted["person_at"])

    def probabilities(self, texts: Sequence[str]) -> np.ndarray:
        """Each text's probability of every label (rows in ``texts`` order, columns in
        ``self.labels`` order)."""
        vectors = np.stack([e.dense for e in self.encoders.dense.encode(list(texts))])
        logits = vectors @ self.weights.T + self.bias
        logits -= logits.max(axis=1, keepdims=True)
        exp = np.exp(logits)
        return np.asarray(exp / exp.sum(axis=1, keepdims=True))

    def read(self, message: str) -> Reading:
        """The message's label: ``person`` when any part asks for one, else the most probable
        other label of the whole message. An empty message is a greeting."""
        texts = parts(message)
        if not message.strip():
            return Reading("greeting", 0.0, {})
        table = self.probabilities(texts)
        person = float(table[:, self.labels.index("person")].max())
        whole: dict[Label, float] = dict(zip(self.labels, map(float, table[0]), strict=True))
        if person >= self.person_at:
            return Reading("person", person, whole)
        ruled_out = {"person"} if has_contact(message) else {"person", "contact"}
        label = most_probable(whole, ruled_out)
        return Reading(label, person, whole, label in LEAVING_LABELS and says_farewell(message))

    def courtesy(self, sentences: Sequence[str]) -> list[bool]:
        """Whether each sentence reads most as a greeting or thanks: courtesy alone ("Hi
        Maria,", "Best, Ana"), with nothing to ask or tell."""
        if not sentences:
            return []
        table = self.probabilities(sentences)
        return [self.labels[int(i)] in COURTESY_LABELS for i in table.argmax(axis=1)]

    def asks_for_person(self, message: str) -> bool:
        return self.read(message).label == "person"


def most_probable(whole: Mapping[Label, float], ruled_out: set[str]) -> Label:
    """The most probable label of those not ``ruled_out``, a question's three labels
    (question, problem, follow-up: one route, searched) weighed together first: a question
    whose probability the three share is not read as the one other label that beats each
    alone ("Do you ship to Mars?": no 0.38 against question, follow-up and problem 0.45).

    >>> most_probable({"no": 0.38, "follow_up": 0.26, "question": 0.18, "problem": 0.01}, set())
    'follow_up'
    >>> most_probable({"no": 0.5, "follow_up": 0.3, "question": 0.1}, set())
    'no'
    """
    kept = {name: p for name, p in whole.items() if name not in ruled_out}
    best = max((p, name) for name, p in kept.items())[1]
    asked = {name: p for name, p in kept.items() if name in QUESTION_LABELS}
    if best not in asked and asked and sum(asked.values()) > kept[best]:
        return max((p, name) for name, p in asked.items())[1]
    return best


def has_contact(message: str) -> bool:
    """Whether the message holds an email address or a phone-length run of digits.

    >>> has_contact("mail me: jo@example.com"), has_contact("call 020 7946 0958")
    (True, True)
    >>> has_contact("How do I change my email address?"), has_contact("error E-429")
    (False, False)
    """
    return "@" in message or sum(c.isdigit() for c in message) >= CONTACT_DIGITS


_LOADED: dict[int, MessageKinds] = {}


def load_message_kinds(encoders: Any) -> MessageKinds:
    """The shipped classifier over ``encoders`` (loaded once per encoders)."""
    if id(encoders) not in _LOADED:
        _LOADED[id(encoders)] = MessageKinds(encoders)
    return _LOADED[id(encoders)]


def offer_pending(history: Sequence[HistoryTurn]) -> bool:
    """Whether the assistant's last reply offered a person."""
    return bool(history) and history[-1].offered_handoff


def kind_for(reading: Reading, offer_pending: bool) -> MessageKind:
    """What the message is at intake; ``offer_pending``: the assistant's last reply offered a
    person.

    >>> kind_for(Reading("yes", 0.0, {}), True), kind_for(Reading("yes", 0.0, {}), False)
    ('accept', 'courtesy')
    >>> kind_for(Reading("no", 0.0, {}), True), kind_for(Reading("problem", 0.1, {}), True)
    ('decline', 'question')
    >>> kind_for(Reading("thanks", 0.0, {}, farewell=True), False)
    'goodbye'
    """
    if offer_pending and reading.label in ("yes", "no"):
        return "accept" if reading.label == "yes" else "decline"
    return "goodbye" if reading.farewell else _KIND[reading.label]


def says_goodbye(kind: MessageKind) -> bool:
    """The customer is leaving: thanks or goodbye, or no to the offer of a person (the chat
    then asks whether the problem was solved).

    >>> says_goodbye("courtesy"), says_goodbye("goodbye"), says_goodbye("decline")
    (True, True, True)
    >>> says_goodbye("greeting")
    False
    """
    return kind in ("courtesy", "goodbye", "decline")


def kind_of(turn: Mapping[str, Any]) -> MessageKind:
    """A stored turn's kind, as read at intake; a turn stored before kinds were is a question
    when it asks ("?") or holds more than small talk (``tasks/courtesy.asks_something``), else
    courtesy.

    >>> kind_of({"user": "Thanks, bye!"}), kind_of({"user": "Can I pay by card?"})
    ('courtesy', 'question')
    """
    stored = turn.get("kind")
    if stored in KINDS:
        return stored  # type: ignore[no-any-return]
    said = str(turn.get("user", ""))
    return "question" if "?" in said or asks_something(said) else "courtesy"


def asked_something(turn: Mapping[str, Any]) -> bool:
    """Whether a stored customer turn asked something: a question or a request for a person,
    not a greeting, thanks, a yes / no or contact details."""
    return bool(turn.get("user")) and kind_of(turn) in ("question", "person")
