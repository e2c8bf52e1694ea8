"""The pilot's stored records, one definition each: a session header as the pilot store
writes it (and the fields a move may change), and a customer's mark on a reply. They are
``TypedDict``s: what Qdrant hands back is the payload as written, so a record read is a plain
dict and these say which keys it holds (mypy checks every read and write of them).

Usage::

    header: SessionHeader = pilot.store.session("acme", session_id)
    header["status"]                      # "open" | "handoff" | "resolved"
    changes: SessionFields = {"taken_by": "ana", "taken_at": time.time()}
"""

from __future__ import annotations

from typing import Literal, Required, TypedDict


class SessionFields(TypedDict, total=False):
    """The fields of a session header that change over its life (each write one move of
    :mod:`service.session_state`, or the fields a move brings with it)."""

    status: str  # a :class:`service.session_state.Status` value
    handoff: bool  # in headers written before ``status``; removed at start (drop_handoff_flags)
    handoff_reason: str
    handoff_at: float
    taken_by: str  # the staff key holding the conversation
    taken_at: float
    resolution: str  # the resolving person's note (staff only)
    resolved_by: str
    resolved_at: float
    memory_written_at: float | None  # None: a message came since the memory was written
    contact_email: str  # left by the customer at the hand-off
    csat_solved: bool  # "Did we solve your problem today?"
    csat_at: float
    rev: str  # this write's revision (:mod:`storage.qdrant.revisions`)
    revs: list[str]  # the revisions it replaced, newest first


class SessionHeader(SessionFields, total=False):
    """Who owns a session (tenant, customer, the keys that may use it) and where it stands."""

    session_id: Required[str]
    tenant: Required[str]
    customer_id: Required[str]
    owner: Required[str]  # the hash of the keys that may use it (same tenant, slots, trust)
    slots: Required[dict[str, str]]  # the enforced slots its turns run under
    created: Required[float]
    key: str  # the owning key's name, in headers written before ``owner`` existed


class StoredMark(TypedDict):
    """A customer's thumbs up or down on one reply of a session."""

    tenant: str
    session_id: str
    turn_index: int
    rating: Literal["up", "down"]
    comment: str
    ts: float
    day: str  # UTC day of ``ts`` (the outcome report counts marks by day)
