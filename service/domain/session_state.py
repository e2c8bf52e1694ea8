"""A pilot session's life, written once: which verb may move a session from which status, and
who may use it.

    open --hand_off--> handoff --resolve--> resolved
      \\                    \\--leave-------/
       \\-------------------------resolve----/

``take`` gives a waiting conversation to one person (an admin may take it from another);
``leave`` is the customer starting a new conversation while this one waits for a person: the
hand-off is closed as left by the customer (the queue no longer shows it);
``reply`` needs the conversation taken by the person replying; ``message`` and ``feedback``
(the customer) and ``remember`` (the idle sweep) change no status but are refused once the
session is resolved; ``satisfaction`` (the customer's closing answer) changes none either and
is taken in every status, a resolved session's above all.
:class:`service.stores.pilot_store.PilotStore` applies a move as one compare-and-set on the session's
revision, so a racing writer gets a conflict and re-reads.

Usage::

    changes = move(header, "take", role="agent", actor="ana")   # the fields to write
    move(resolved_header, "hand_off", role="customer", actor="")  # raises SessionConflict
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from service.domain.records import SessionFields, SessionHeader, Status

Verb = Literal[
    "hand_off", "take", "reply", "resolve", "leave", "message", "feedback", "satisfaction", "remember"
]
Role = Literal["customer", "assistant", "agent", "admin", "sweep"]
STAFF: frozenset[str] = frozenset({"agent", "admin"})
RESOLVED_FOR_CUSTOMER = "this conversation was resolved by our support team: start a new session"


@dataclass(frozen=True)
class Move:
    allowed_from: frozenset[Status]
    to: Status | None  # None: the status stays
    roles: frozenset[str]


_LIVE = frozenset({Status.OPEN, Status.HANDOFF})
MOVES: dict[Verb, Move] = {
    "hand_off": Move(_LIVE, Status.HANDOFF, frozenset({"customer", "assistant"})),
    "take": Move(_LIVE, Status.HANDOFF, STAFF),
    "reply": Move(frozenset({Status.HANDOFF}), None, STAFF),
    "resolve": Move(_LIVE, Status.RESOLVED, STAFF),
    # the customer leaves a conversation that waits for a person (and starts another)
    "leave": Move(frozenset({Status.HANDOFF}), Status.RESOLVED, frozenset({"customer"})),
    "message": Move(_LIVE, None, frozenset({"customer"})),
    "feedback": Move(_LIVE, None, frozenset({"customer"})),
    # the closing "did we solve your problem?": also, and mostly, once a person resolved it
    "satisfaction": Move(_LIVE | {Status.RESOLVED}, None, frozenset({"customer"})),
    "remember": Move(_LIVE, None, frozenset({"sweep"})),
}


class SessionConflict(Exception):
    """The move does not apply to the session as it is now (the service answers 409)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def status_of(header: SessionHeader) -> Status:
    """The session's status: the stored one; a header in the format before ``status`` (a
    ``handoff`` flag, no status: restored from a backup, or written by a worker still on the
    version before) reads as its flag says, resolved when it has a resolution time.

    >>> status_of({"status": "resolved"}), status_of({"handoff": True}), status_of({})
    (<Status.RESOLVED: 'resolved'>, <Status.HANDOFF: 'handoff'>, <Status.OPEN: 'open'>)
    """
    stored = header.get("status")
    if stored:
        return Status(stored)
    if header.get("resolved_at"):
        return Status.RESOLVED
    return Status.HANDOFF if header.get("handoff") else Status.OPEN


def current_format(header: SessionHeader) -> SessionHeader:
    """``header`` as this version reads and writes it: its status stored, no ``handoff`` flag
    (the next write of a header read in the old format stores it so).

    >>> current_format({"session_id": "s", "handoff": True})
    {'session_id': 's', 'status': <Status.HANDOFF: 'handoff'>}
    """
    if header.get("status") and "handoff" not in header:
        return header
    kept: SessionHeader = {**header, "status": status_of(header)}
    kept.pop("handoff", None)
    return kept


def waiting_for_a_person(header: SessionHeader) -> bool:
    """Whether the session is with people (handed off, not resolved): the one test of it."""
    return status_of(header) is Status.HANDOFF


def move(header: SessionHeader, verb: Verb, role: Role, actor: str) -> SessionFields:
    """The header fields ``verb`` changes, or :class:`SessionConflict` when the session's
    status or holder does not allow it. ``actor`` names the person (their key) for staff."""
    rule = MOVES[verb]
    if role not in rule.roles:
        raise SessionConflict("wrong_role", f"a {role} cannot {verb.replace('_', ' ')} a session")
    status = status_of(header)
    if status not in rule.allowed_from:
        if status is Status.RESOLVED:
            raise SessionConflict(
                "session_resolved",
                RESOLVED_FOR_CUSTOMER if role == "customer" else "this conversation is already resolved",
            )
        raise SessionConflict(
            "not_handed_off",
            "this conversation does not wait for a person"
            if verb == "leave"
            else "take this conversation before replying",
        )
    holder = header.get("taken_by")
    if role in STAFF and verb in ("take", "resolve") and holder and holder != actor and role != "admin":
        raise SessionConflict("taken", f"{holder} has this conversation; an admin can reassign it")
    if verb == "reply" and holder != actor:
        raise SessionConflict(
            "taken" if holder else "not_taken",
            f"{holder} has this conversation" if holder else "take this conversation before replying",
        )
    changes: SessionFields = {}
    if rule.to is not None and rule.to != status:
        changes["status"] = rule.to
    if verb == "take":
        changes["taken_by"] = actor
    return changes
